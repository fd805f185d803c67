"""Calibration over time: :func:`drift_report`.

Windows (days, weeks, months, or every N rows) are groups
(:func:`~calibration_core.slices.times.window_index`), so their ECE, accuracy
and mean confidence come from the same grouped pass and bootstrap as slices.
The reference period is chosen by the user
(:func:`~calibration_core.slices.reference.parse_reference`: the first K
windows, the default K = 1; windows A to B; or dates START:END), measured as
one block with its own interval. The windows holding any of its rows are
reference windows; any other window is flagged when the lower bound of its ECE
interval lies above the upper bound of the reference's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import Binning
from ..errors import CalibrationInputError
from ..predictions import Predictions
from .groups import GroupIndex
from .reference import ReferencePeriod, parse_reference, reference_rows
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
    period : ReferencePeriod
        The reference period as chosen.
    in_reference : numpy.ndarray of bool, shape (W,)
        Reference windows (holding rows of the period): not judged.
    flagged : numpy.ndarray of bool, shape (W,)
        Other windows whose ECE interval lies above the reference's upper bound.
    """

    windows: SliceReport
    reference: SliceReport
    period: ReferencePeriod
    in_reference: np.ndarray
    flagged: np.ndarray

    @property
    def n_reference(self) -> int:
        """Number of reference windows."""
        return int(self.in_reference.sum())

    @property
    def reference_upper(self) -> float:
        """Upper bound of the reference period's ECE (NaN without intervals)."""
        if self.reference.intervals is None:
            return float("nan")
        return float(self.reference.intervals["ece"].upper[0])

    def to_dict(self) -> dict:
        """The ``time`` object of the evaluate JSON (docs/evaluate-json-schema.md)."""
        rows = self.windows.rows()
        for row, flag, ref in zip(rows, self.flagged, self.in_reference, strict=True):
            row["window"] = row.pop("group")
            row["flagged"] = bool(flag)
            row["reference"] = bool(ref)
        return {
            "reference_period": self.period.text,
            "reference_description": self.period.describe(),
            "reference_windows": self.n_reference,
            "reference": self.reference.rows()[0] | {"window": None},
            "level": self.windows.level,
            "windows": rows,
        }


def check_windows_left(period: ReferencePeriod, in_reference: np.ndarray) -> None:
    """Refuse a reference period that holds rows of every window (none left to judge)."""
    if in_reference.all():
        raise CalibrationInputError(
            f"the reference period {period.text!r} ({period.describe()}) covers all "
            f"{in_reference.shape[0]} windows, leaving none to compare with it; choose a "
            "shorter period or shorter windows."
        )


def drift_report(
    pred: Predictions,
    windows: GroupIndex,
    *,
    reference: int | str | ReferencePeriod = 1,
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
        Windows in time order (:func:`~calibration_core.slices.window_index`;
        a period in dates needs its ``times``).
    reference : int, str or ReferencePeriod
        The reference period (:func:`~calibration_core.slices.parse_reference`):
        K, the first K windows; ``"A:B"``, windows A to B (from 1, both
        included); ``"2024-01-01:2024-01-31"``, the rows of those dates (both
        days included; an end may be left out).
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
    period = parse_reference(reference)
    in_period = reference_rows(period, windows)
    in_reference = np.bincount(windows.codes[in_period], minlength=windows.n_groups) > 0
    check_windows_left(period, in_reference)
    common = {"binning": binning, "notion": notion, "class_index": class_index, "seed": seed,
              "n_resamples": n_resamples, "level": level, "bootstrap_whole": False}  # fmt: skip
    per_window = slice_report(pred, windows, test_resamples=0, **common)
    ref_rows = np.flatnonzero(in_period)
    block = GroupIndex(np.zeros(ref_rows.size, np.intp), ("reference",), ("time",), 0)
    ref = slice_report(pred.subset(ref_rows), block, test_resamples=0, **common)
    flagged = np.zeros(windows.n_groups, bool)
    if ref.intervals is not None and per_window.intervals is not None:  # n_resamples > 0
        upper = ref.intervals["ece"].upper[0]
        flagged = (per_window.intervals["ece"].lower > upper) & ~in_reference
    return DriftReport(per_window, ref, period, in_reference, flagged)
