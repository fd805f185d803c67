"""Per-group metrics in one grouped pass over the binning engine.

Every row gets its group ``g`` and its bin ``b`` (the engine's rule:
:meth:`~calibration_core.binning.Binning.assign_with_edges`; equal-frequency
edges are the order statistics of each group's own scores, as the metric of
that group alone would use), then one ``np.bincount`` over the cells
``g * M + b`` gives every group's per-bin count and sums
(:class:`~calibration_core.binning.BinStatistics` stacked as (G, M)), and one
``np.bincount`` over ``g`` per row-mean metric gives accuracy, mean
confidence, Brier score and log-loss. No Python loop runs over groups or rows.

Intervals (:func:`grouped_bootstrap`) resample rows *within* each group
(group sizes fixed), with the core's default interval
(:data:`~calibration_core.bootstrap.DEFAULT_INTERVAL`); bins keep the edges of
the original rows (a fixed-edge bootstrap for equal-frequency bins).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import Binning, BinStatistics
from ..binning.statistics import ece_from_sums, mce_from_sums
from ..bootstrap import DEFAULT_INTERVAL, METRIC_RANGE, interval_bounds
from ..metrics import log_loss_per_row
from ..notions import notion_scores, top_label
from ..predictions import Predictions
from ..validation import check_level, check_seed, check_whole_number

#: Metrics of every group, in table order.
GROUP_METRICS = ("accuracy", "confidence", "ece", "mce", "brier_score", "log_loss")
#: Metrics that are means over rows (summed per group, then divided by its rows).
ROW_MEANS = ("accuracy", "confidence", "brier_score", "log_loss")
_RANGE = {"confidence": (0.0, 1.0), "ece": (0.0, np.inf), "mce": (0.0, 1.0)}


@dataclass(frozen=True, eq=False)
class RowValues:
    """What the grouped pass needs of every row, computed once (vectorised over rows).

    Attributes
    ----------
    scores, targets : numpy.ndarray, shape (N,)
        The notion's scores and 0/1 targets.
    means : dict of str to numpy.ndarray, shape (N,)
        Per-row values of the row-mean metrics (correct, top confidence,
        Brier, log-loss).
    """

    scores: np.ndarray
    targets: np.ndarray
    means: dict


def row_values(pred: Predictions, notion: str = "confidence", class_index=None) -> RowValues:
    """Per-row scores, targets and row-mean values of one model."""
    p = pred.probs
    confidence, correct = top_label(p, pred.labels)  # once: the confidence notion reuses it
    if notion == "confidence":
        scores, targets = confidence, correct
    else:
        scores, targets = notion_scores(p, pred.labels, notion, class_index)
    true_p = p[np.arange(p.shape[0]), pred.labels]
    means = {
        "accuracy": correct.astype(np.float64),
        "confidence": confidence,
        "brier_score": np.einsum("ij,ij->i", p, p) - 2.0 * true_p + 1.0,
        "log_loss": log_loss_per_row(p, pred.labels),
    }
    return RowValues(scores, targets.astype(np.int64), means)


def grouped_bins(
    scores: np.ndarray, codes: np.ndarray, n_groups: int, binning: Binning
) -> tuple[np.ndarray, np.ndarray]:
    """Bin of every row (N,) and every group's edges (G, M + 1), in one vectorised step.

    Equal-frequency edges are each group's order statistics (as
    :meth:`~calibration_core.binning.Binning.edges_from_sorted` of that group's
    scores), and a score equal to an interior edge goes to the bin above it,
    the engine's rule. Memory is O(N + G M): one sort by (group, score), then
    a row's bin is the number of its group's edges whose first tied position
    it has reached.
    """
    m = binning.n_bins
    if binning.scheme == "width":
        bins, edges = binning.assign_with_edges(scores)
        return bins, np.broadcast_to(edges, (n_groups, m + 1))
    n = scores.shape[0]
    order = np.lexsort((scores, codes))
    s, g = scores[order], codes[order]
    sizes = np.bincount(codes, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    positions = starts[:, None] + (np.arange(1, m) * sizes[:, None]) // m
    positions = np.minimum(positions, n - 1)
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = (s[1:] != s[:-1]) | (g[1:] != g[:-1])
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(n), 0))
    first = run_start[positions[sizes > 0].ravel()]  # first position tied with each edge
    reached = np.cumsum(np.bincount(first, minlength=n))
    before = np.where(starts > 0, reached[np.maximum(starts - 1, 0)], 0)
    bins = np.empty(n, dtype=np.intp)
    bins[order] = reached - before[g]
    interior = s[positions]
    ends = np.column_stack((np.zeros(n_groups), interior, np.ones(n_groups)))
    return bins, ends


@dataclass(frozen=True, eq=False)
class GroupedPass:
    """Rows assigned to cells ``group * M + bin``, ready for one bincount per sum.

    Build it with :meth:`build`; :meth:`sums` gives the statistics of the rows
    (or of a resample of them).
    """

    cells: np.ndarray
    codes: np.ndarray
    edges: np.ndarray
    values: RowValues
    n_groups: int
    n_bins: int

    @classmethod
    def build(
        cls,
        values: RowValues,
        codes: np.ndarray,
        n_groups: int,
        binning: Binning,
        shared_edges: bool = False,
    ):
        """Assign every row to its group's bin.

        ``shared_edges``: bin every group with the edges of all rows (equal-frequency
        edges of the pooled scores), so that bin b means the same scores in every
        group (the homogeneity test needs it).
        """
        if shared_edges:
            bins, pooled = binning.assign_with_edges(values.scores)
            edges = np.broadcast_to(pooled, (n_groups, pooled.shape[0]))
        else:
            bins, edges = grouped_bins(values.scores, codes, n_groups, binning)
        cells = codes * binning.n_bins + bins
        return cls(cells, codes, edges, values, n_groups, binning.n_bins)

    def statistics(self, rows: np.ndarray | None = None) -> BinStatistics:
        """Stacked per-group bin statistics, arrays of shape (G, M)."""
        cells = self.cells if rows is None else self.cells[rows]
        s = self.values.scores if rows is None else self.values.scores[rows]
        t = self.values.targets if rows is None else self.values.targets[rows]
        size = self.n_groups * self.n_bins
        shape = (self.n_groups, self.n_bins)
        count = np.bincount(cells, minlength=size).reshape(shape)
        sum_score = np.bincount(cells, weights=s, minlength=size).reshape(shape)
        sum_target = np.bincount(cells, weights=t, minlength=size).reshape(shape)
        return BinStatistics(self.edges, count, sum_score, sum_target)

    def metrics(self, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Every metric of :data:`GROUP_METRICS` per group, shape (G,) each."""
        codes = self.codes if rows is None else self.codes[rows]
        n = np.bincount(codes, minlength=self.n_groups)
        sums = {}
        for name in ROW_MEANS:
            v = self.values.means[name] if rows is None else self.values.means[name][rows]
            sums[name] = np.bincount(codes, weights=v, minlength=self.n_groups)
        return metrics_from_sums(self.statistics(rows), n, sums)


def metrics_from_sums(stats: BinStatistics, n: np.ndarray, sums: dict) -> dict[str, np.ndarray]:
    """Every metric of :data:`GROUP_METRICS` per group from the groups' sums.

    Parameters
    ----------
    stats : BinStatistics
        Per-group bins, arrays of shape (G, M).
    n : numpy.ndarray, shape (G,)
        Rows per group.
    sums : dict of str to numpy.ndarray, shape (G,)
        Per-group sums of the row values of :data:`ROW_MEANS`.

    Returns
    -------
    dict of str to numpy.ndarray, shape (G,)
        NaN where a group has no row (an MCE also where every bin is empty).
    """
    out = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for name in ROW_MEANS:
            out[name] = sums[name] / n
        out["ece"] = ece_from_sums(stats.count, stats.sum_score, stats.sum_target)
        mce = mce_from_sums(stats.count, stats.sum_score, stats.sum_target)
    out["mce"] = np.where(np.isneginf(mce), np.nan, mce)
    return {name: out[name] for name in GROUP_METRICS}


def stratified_rows(rng: np.random.Generator, order: np.ndarray, starts, sizes) -> np.ndarray:
    """One resample: as many rows drawn with replacement within each group as it holds."""
    group_of = np.repeat(np.arange(sizes.shape[0]), sizes)
    offsets = (rng.random(order.shape[0]) * sizes[group_of]).astype(np.intp)
    return order[starts[group_of] + offsets]


@dataclass(frozen=True)
class Interval:
    """Bounds per group of one metric, shape (G,) each (NaN where undefined)."""

    lower: np.ndarray
    upper: np.ndarray


def grouped_bootstrap(
    grouped: GroupedPass,
    estimates: dict[str, np.ndarray],
    *,
    n_resamples: int = 200,
    level: float = 0.95,
    seed=0,
) -> dict[str, Interval]:
    """Bootstrap intervals of every metric of every group (resampling within groups).

    Parameters
    ----------
    grouped : GroupedPass
    estimates : dict
        :meth:`GroupedPass.metrics` of the original rows.
    n_resamples : int
    level : float
    seed : None, int or numpy.random.Generator

    Returns
    -------
    dict of str to Interval
        The :data:`~calibration_core.bootstrap.DEFAULT_INTERVAL` interval per metric.
    """
    r = check_whole_number(n_resamples, "n_resamples")
    level = check_level(level)
    rng = check_seed(seed)
    order = np.argsort(grouped.codes, kind="stable")
    sizes = np.bincount(grouped.codes, minlength=grouped.n_groups)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    samples = {name: np.empty((r, grouped.n_groups)) for name in GROUP_METRICS}
    for i in range(r):
        resampled = grouped.metrics(stratified_rows(rng, order, starts, sizes))
        for name in GROUP_METRICS:
            samples[name][i] = resampled[name]
    return {name: _bounds(name, estimates[name], samples[name], level) for name in GROUP_METRICS}


def _bounds(name, estimate, samples, level) -> Interval:
    low, high = _RANGE.get(name) or METRIC_RANGE[name]
    lower, upper = np.full(estimate.shape, np.nan), np.full(estimate.shape, np.nan)
    for g in np.flatnonzero(np.isfinite(estimate)):
        column = samples[:, g][np.isfinite(samples[:, g])]
        if column.size:
            bounds = interval_bounds(float(estimate[g]), column, level, DEFAULT_INTERVAL)
            lower[g], upper[g] = np.clip(bounds, low, high)
    return Interval(lower, upper)
