"""Held-out comparison of calibration maps.

- :mod:`~calibration_core.compare.run`: :func:`compare_maps`, which fits each map
  on some rows and scores it on others (cross-fitting or train/test).
- :mod:`~calibration_core.compare.folds`: which rows fit and which rows score.
- :mod:`~calibration_core.compare.columns`: the table's columns.
- :mod:`~calibration_core.compare.results`: how a row is scored, and
  :class:`Comparison`.
- :mod:`~calibration_core.compare.verdict`: the best map by held-out log-loss,
  an interval of its advantage that holds the noise of fitting the maps, and
  the simplest map within that noise (:func:`choose_map`, :class:`Verdict`).

The columns load with the package; the rest (pandas, scikit-learn) on first
use, so that naming the metrics stays cheap.
"""

from __future__ import annotations

from ..lazy import lazy_attributes
from .columns import METRIC_COLUMNS, METRIC_RANGES, TABLE_COLUMNS

#: Public name -> the module defining it, loaded on first use.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("Comparison", "score_probs"), "results"),
    **dict.fromkeys(
        ("CancelCallback", "ComparisonCancelled", "ProgressCallback", "compare_maps"), "run"
    ),
    **dict.fromkeys(
        (
            "UNCALIBRATED",
            "Contender",
            "Verdict",
            "choose_map",
            "format_difference",
            "map_parameters",
            "parameter_words",
        ),
        "verdict",
    ),
}

__all__ = [
    "METRIC_COLUMNS",
    "METRIC_RANGES",
    "TABLE_COLUMNS",
    "UNCALIBRATED",
    "CancelCallback",
    "Comparison",
    "ComparisonCancelled",
    "Contender",
    "ProgressCallback",
    "Verdict",
    "choose_map",
    "compare_maps",
    "format_difference",
    "map_parameters",
    "parameter_words",
    "score_probs",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
