"""Calibration per slice: :func:`slice_report` (per-group table, worst group, homogeneity test).

The per-group point estimates come from one grouped pass
(:mod:`~calibration_core.slices.grouped`); intervals from the grouped bootstrap;
"the same calibration in every group" from
:func:`~calibration_core.slices.homogeneity.homogeneity_test`. Groups under the
minimum size are in the table, flagged ``small``, and never the worst group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import Binning, BinStatistics
from ..predictions import Predictions
from .grouped import GROUP_METRICS, GroupedPass, Interval, grouped_bootstrap, row_values
from .groups import GroupIndex
from .homogeneity import HomogeneityResult, homogeneity_test


@dataclass(frozen=True, eq=False)
class SliceReport:
    """Metrics of every group of one model, with the whole for comparison.

    Attributes
    ----------
    groups : GroupIndex
    metrics : dict of str to numpy.ndarray, shape (G,)
        :data:`~calibration_core.slices.grouped.GROUP_METRICS` per group.
    intervals : dict of str to Interval, or None
        Bootstrap intervals (None when ``n_resamples=0``).
    whole : dict of str to float
        The same metrics on all rows.
    whole_intervals : dict of str to Interval, or None
        Shape (1,) bounds of the whole.
    statistics : BinStatistics
        Per-group bins, shape (G, M): the small-multiple reliability diagrams.
    worst : int or None
        The judged group (not small) with the largest ECE; None when all are small.
    homogeneity : HomogeneityResult or None
    level : float
    """

    groups: GroupIndex
    metrics: dict
    intervals: dict | None
    whole: dict
    whole_intervals: dict | None
    statistics: BinStatistics
    worst: int | None
    homogeneity: HomogeneityResult | None
    level: float

    @property
    def worst_gap(self) -> float | None:
        """ECE of the worst group minus the ECE of the whole."""
        if self.worst is None:
            return None
        return float(self.metrics["ece"][self.worst] - self.whole["ece"])

    def rows(self) -> list[dict]:
        """One JSON-ready dict per group (metrics, bounds, size, flags)."""
        out = []
        sizes, small = self.groups.sizes, self.groups.small
        for g, label in enumerate(self.groups.labels):
            row = {"group": label, "rows": int(sizes[g]), "small": bool(small[g])}
            for name in GROUP_METRICS:
                row[name] = _num(self.metrics[name][g])
                if self.intervals is not None:
                    row[f"{name}_lower"] = _num(self.intervals[name].lower[g])
                    row[f"{name}_upper"] = _num(self.intervals[name].upper[g])
            out.append(row)
        return out

    def to_dict(self) -> dict:
        """The ``slices`` object of the evaluate JSON (docs/evaluate-json-schema.md)."""
        whole = {name: _num(v) for name, v in self.whole.items()}
        if self.whole_intervals is not None:
            for name, bounds in self.whole_intervals.items():
                whole[f"{name}_lower"] = _num(bounds.lower[0])
                whole[f"{name}_upper"] = _num(bounds.upper[0])
        return {
            "columns": list(self.groups.columns),
            "min_rows": self.groups.min_rows,
            "level": self.level,
            "whole": whole,
            "groups": self.rows(),
            "worst": None if self.worst is None else self.groups.labels[self.worst],
            "worst_gap": self.worst_gap,
            "homogeneity": None if self.homogeneity is None else self.homogeneity.to_dict(),
        }


def _num(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def slice_report(
    pred: Predictions,
    groups: GroupIndex,
    *,
    binning: Binning | None = None,
    notion: str = "confidence",
    class_index: int | None = None,
    n_resamples: int = 200,
    level: float = 0.95,
    test_resamples: int = 1000,
    seed=0,
    bootstrap_whole: bool = True,
) -> SliceReport:
    """Per-group calibration of one model.

    Parameters
    ----------
    pred : Predictions
    groups : GroupIndex
        From :func:`~calibration_core.slices.group_index` or
        :func:`~calibration_core.slices.window_index`.
    binning : Binning, optional
        Default 15 equal-width bins.
    notion : {"confidence", "binary", "class"}
        The notion of the ECE/MCE columns (``class_index`` for "class").
    n_resamples : int
        Bootstrap resamples of the intervals; 0 for point estimates only.
    level : float
    test_resamples : int
        Null resamples of the homogeneity test; 0 to skip the test.
    seed : int or None
    bootstrap_whole : bool
        Bootstrap the whole too (False: ``whole_intervals`` is None; the time
        windows do not show it, and it costs as much as the groups' intervals).

    Returns
    -------
    SliceReport
    """
    binning = binning or Binning()
    values = row_values(pred, notion, class_index)
    grouped = GroupedPass.build(values, groups.codes, groups.n_groups, binning)
    metrics = grouped.metrics()
    whole_pass = GroupedPass.build(values, np.zeros(pred.n_samples, np.intp), 1, binning)
    whole = whole_pass.metrics()
    intervals = whole_intervals = None
    if n_resamples:
        intervals = grouped_bootstrap(grouped, metrics, n_resamples=n_resamples, level=level,
                                      seed=seed)  # fmt: skip
        if bootstrap_whole:
            whole_intervals = grouped_bootstrap(
                whole_pass, whole, n_resamples=n_resamples, level=level, seed=seed
            )
    test = None
    if test_resamples and groups.n_groups > 1:
        shared = GroupedPass.build(values, groups.codes, groups.n_groups, binning, True)
        test = homogeneity_test(shared.statistics(), n_resamples=test_resamples, seed=seed)
    return SliceReport(
        groups=groups,
        metrics=metrics,
        intervals=intervals,
        whole={name: float(v[0]) for name, v in whole.items()},
        whole_intervals=whole_intervals,
        statistics=grouped.statistics(),
        worst=worst_group(metrics["ece"], groups.small),
        homogeneity=test,
        level=float(level),
    )


def worst_group(ece: np.ndarray, small: np.ndarray) -> int | None:
    """The judged group (not small) with the largest ECE, or None."""
    judged = np.where(small | ~np.isfinite(ece), -np.inf, ece)
    return None if not np.isfinite(judged).any() else int(np.argmax(judged))


def interval_of(intervals: dict | None, name: str, g: int) -> tuple[float, float]:
    """``(lower, upper)`` of one metric of one group; NaN when there are no intervals."""
    if intervals is None:
        return np.nan, np.nan
    bounds: Interval = intervals[name]
    return float(bounds.lower[g]), float(bounds.upper[g])
