"""Plotly figures from core results: plain functions, testable without a browser.

* :mod:`app.figures.common`: the pieces every figure shares (text helpers,
  the Okabe-Ito palette and font, the template, :func:`empty_figure` and
  :func:`graph_config`);
* :mod:`app.figures.grid`: the panel grid every diagram of one model is
  drawn in (cells, axes, panel titles and notes);
* :mod:`app.figures.reliability`: one model's grid of reliability diagrams;
* :mod:`app.figures.curve_grid`: the grid of the binning-free diagrams
  (:mod:`app.figures.smooth`, :mod:`app.figures.cumulative`);
* :mod:`app.figures.diagnostics`: the figures of the Diagnostics section.

Import names from the module that defines them.
"""
