"""The columns of a comparison table (:attr:`~calibration_core.compare.Comparison.table`).

Plain names, apart from :mod:`.results` (pandas and the maps), so that naming the
metrics (the command line's ``check --max METRIC=VALUE``) loads nothing else.
"""

from __future__ import annotations

#: Metric columns of :attr:`Comparison.table`, named after the core metric functions.
METRIC_COLUMNS: tuple[str, ...] = (
    "accuracy",
    "confidence_ece",
    "confidence_mce",
    "classwise_ece",
    "classwise_mce",
    "brier_score",
    "log_loss",
)
#: All columns of :attr:`Comparison.table` (its index is named ``map``).
TABLE_COLUMNS: tuple[str, ...] = (*METRIC_COLUMNS, "fit_seconds", "converged", "error")
