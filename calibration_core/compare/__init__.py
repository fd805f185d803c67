"""Held-out comparison of calibration maps.

- :mod:`~calibration_core.compare.run`: :func:`compare_maps`, which fits each map
  on some rows and scores it on others (cross-fitting or train/test).
- :mod:`~calibration_core.compare.folds`: which rows fit and which rows score.
- :mod:`~calibration_core.compare.results`: the table's columns, how a row is
  scored, and :class:`Comparison`.
- :mod:`~calibration_core.compare.verdict`: the best map by held-out log-loss,
  an interval of its advantage that holds the noise of fitting the maps, and
  the simplest map within that noise (:func:`choose_map`, :class:`Verdict`).
"""

from .results import METRIC_COLUMNS, TABLE_COLUMNS, Comparison, score_probs
from .run import CancelCallback, ComparisonCancelled, ProgressCallback, compare_maps
from .verdict import (
    UNCALIBRATED,
    Contender,
    Verdict,
    choose_map,
    format_difference,
    map_parameters,
    parameter_words,
)

__all__ = [
    "METRIC_COLUMNS",
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
