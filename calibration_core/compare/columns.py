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
#: The values each metric column can take, ``(least, greatest)``: the Brier score is
#: summed over classes (:func:`~calibration_core.metrics.brier_score`), the log-loss unbounded.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    "accuracy": (0.0, 1.0),
    "confidence_ece": (0.0, 1.0),
    "confidence_mce": (0.0, 1.0),
    "classwise_ece": (0.0, 1.0),
    "classwise_mce": (0.0, 1.0),
    "brier_score": (0.0, 2.0),
    "log_loss": (0.0, float("inf")),
}
#: All columns of :attr:`Comparison.table` (its index is named ``map``).
TABLE_COLUMNS: tuple[str, ...] = (*METRIC_COLUMNS, "fit_seconds", "converged", "error")
