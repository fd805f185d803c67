"""Plotly figures from core results: plain functions, testable without a browser.

This module gathers, under their historical names, the figure pieces that
live in two smaller modules:

* :mod:`app.figures_common`: the shared pieces of every figure (text
  helpers :func:`plot_text`, :func:`wrapped_text`, :func:`safe_file_stem`,
  :func:`view_title`; the Okabe-Ito palette and :data:`FONT`; the template;
  :func:`empty_figure` and :func:`graph_config`);
* :mod:`app.figures_reliability`: :func:`reliability_figure` (and
  :func:`reliability_figure_dict`), one model's grid of reliability
  diagrams, with its axis and panel labels.

The diagnostics figures are in :mod:`app.figures_diagnostics`.
"""

from __future__ import annotations

from .figures_common import (
    _AXIS_STYLE,
    CALIBRATED_COLOUR,
    FONT,
    OKABE_ITO,
    UNCALIBRATED_COLOUR,
    _template,
    empty_figure,
    graph_config,
    plot_text,
    safe_file_stem,
    view_title,
    wrapped_text,
)
from .figures_reliability import (
    CONSISTENCY_FILL,
    HISTOGRAM_COLOUR,
    PANEL_HEIGHT,
    frequency_axis_label,
    panel_title,
    reliability_figure,
    reliability_figure_dict,
    score_axis_label,
)

__all__ = [
    "CALIBRATED_COLOUR",
    "CONSISTENCY_FILL",
    "FONT",
    "HISTOGRAM_COLOUR",
    "OKABE_ITO",
    "PANEL_HEIGHT",
    "UNCALIBRATED_COLOUR",
    "_AXIS_STYLE",
    "_template",
    "empty_figure",
    "frequency_axis_label",
    "graph_config",
    "panel_title",
    "plot_text",
    "reliability_figure",
    "reliability_figure_dict",
    "safe_file_stem",
    "score_axis_label",
    "view_title",
    "wrapped_text",
]
