"""Calibration over time: :func:`drift_report`.

Windows (days, weeks, months, or every N rows) are groups
(:func:`~calibration_core.slices.times.window_index`), so their ECE, accuracy
and mean confidence come from the same grouped pass and bootstrap as slices.
The reference period is the first ``reference`` windows (default 1), measured
as one block with its own interval; a window is flagged when the lower bound
of its ECE interval lies above the upper bound of the reference's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import Binning
from ..errors import CalibrationInputError
from ..predictions import Predictions
from .groups import GroupIndex
from .report import SliceReport, slice_report


@dataclass(frozen=True, eq=False)
class DriftReport:
    """ECE, accuracy and mean confidence per window, against a reference period.

    Attributes
    ----------
    windows : SliceReport
        One group per window, in time order (no homogeneity test).
    reference : SliceReport
        The reference period as a single group.
    n_reference : int
        Number of leading windows in the reference.
    flagged : numpy.ndarray of bool, shape (W,)
        Windows whose ECE interval lies above the reference's upper bound.
    """

    windows: SliceReport
    reference: SliceReport
    n_reference: int
    flagged: np.ndarray

    @property
    def reference_upper(self) -> float:
        """Upper bound of the reference period's ECE (NaN without intervals)."""
        if self.reference.intervals is None:
            return float("nan")
        return float(self.reference.intervals["ece"].upper[0])

    def to_dict(self) -> dict:
        """The ``time`` object of the evaluate JSON (docs/evaluate-json-schema.md)."""
        rows = self.windows.rows()
        for row, flag in zip(rows, self.flagged, strict=True):
            row["window"] = row.pop("group")
            row["flagged"] = bool(flag)
        return {
            "reference_windows": self.n_reference,
            "reference": self.reference.rows()[0] | {"window": None},
            "level": self.windows.level,
            "windows": rows,
        }


def drift_report(
    pred: Predictions,
    windows: GroupIndex,
    *,
    reference: int = 1,
    binning: Binning | None = None,
    notion: str = "confidence",
    class_index: int | None = None,
    n_resamples: int = 200,
    level: float = 0.95,
    seed=0,
) -> DriftReport:
    """Calibration per time window against a reference period.

    Parameters
    ----------
    pred : Predictions
    windows : GroupIndex
        Windows in time order (:func:`~calibration_core.slices.window_index`).
    reference : int
        How many leading windows form the reference period.
    binning : Binning, optional
    notion : {"confidence", "binary", "class"}
        The notion of the ECE (``class_index`` for "class"), as :func:`slice_report`.
    class_index : int, optional
    n_resamples : int
        Bootstrap resamples; 0 for point estimates only (no intervals, nothing
        flagged: the flags need intervals).
    level : float
    seed : int or None

    Returns
    -------
    DriftReport
    """
    if not 1 <= int(reference) < windows.n_groups:
        raise CalibrationInputError(
            f"the reference period must be between 1 and {windows.n_groups - 1} windows (there "
            f"are {windows.n_groups}), got {reference}; choose a shorter window or reference."
        )
    common = {"binning": binning, "notion": notion, "class_index": class_index, "seed": seed,
              "n_resamples": n_resamples, "level": level, "bootstrap_whole": False}  # fmt: skip
    per_window = slice_report(pred, windows, test_resamples=0, **common)
    in_reference = windows.codes < int(reference)
    ref_rows = np.flatnonzero(in_reference)
    block = GroupIndex(np.zeros(ref_rows.size, np.intp), ("reference",), ("time",), 0)
    ref = slice_report(pred.subset(ref_rows), block, test_resamples=0, **common)
    if not n_resamples:
        return DriftReport(per_window, ref, int(reference), np.zeros(windows.n_groups, bool))
    upper = ref.intervals["ece"].upper[0]
    lower = per_window.intervals["ece"].lower
    flagged = (lower > upper) & (np.arange(windows.n_groups) >= int(reference))
    return DriftReport(per_window, ref, int(reference), flagged)
