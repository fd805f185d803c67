"""Plotly figures from core results: plain functions, testable without a browser.

* :mod:`app.figures.common`: the pieces every figure shares (text helpers,
  the Okabe-Ito palette and font, the template, :func:`empty_figure` and
  :func:`graph_config`);
* :mod:`app.figures.reliability`: one model's grid of reliability diagrams;
* :mod:`app.figures.diagnostics`: the figures of the Diagnostics section.

Import names from the module that defines them.
"""
