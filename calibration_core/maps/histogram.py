"""Empirical histogram binning (survey §5.3, eq. 3-4), one-vs-rest for K > 2.

The score range [0, 1] is cut into ``n_bins`` bins by the core
:class:`~calibration_core.binning.Binning` engine (equal width, or equal
frequency with edges taken from the fit scores; its conventions for edges and
ties apply), and every score in bin ``m`` is mapped to the bin value::

    a_m = (positives_m + alpha) / (count_m + 2 alpha)

``alpha = 0`` (default) is the survey's empirical frequency of positives in
the bin; ``alpha > 0`` is Laplace smoothing towards 1/2 (PyCalib uses
``alpha = 1``).

Empty bins (no fit score fell in them)
    With ``alpha > 0`` the formula gives 1/2, the prior mean of the smoothing.
    With ``alpha = 0`` the bin takes the value of the nearest non-empty bin
    (by bin index; the mean of both neighbours when they are equally near),
    which keeps the map as monotone as the data allow. A pooled base rate or
    1/2 would put an arbitrary step into the reliability curve where the fit
    had no data (for example between two high-confidence bins).

Outputs are clipped to ``[eps, 1 - eps]``: an empirical bin of negatives
only would otherwise predict exactly 0.

Sample weights
    With ``sample_weight``, ``count_m`` and ``positives_m`` are the summed
    weights of the bin's rows and of its positive rows (a weighted
    ``bincount``), and equal-frequency edges are the weighted order
    statistics: the edge at position ``floor(m W / M)`` of the scores sorted
    with each one repeated by its weight (W the total weight), so that
    integer weights bin exactly like repeated rows.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np

from ..binning import Binning, Scheme
from ..errors import CalibrationInputError
from .binary_columns import BinaryColumns, warn_few_rows
from .counts import one_vs_rest_parameters
from .onevsrest import OneVsRestMap, check_eps
from .registry import register
from .state import score_columns, state_array

__all__ = ["HistogramBinning"]


def weighted_frequency_edges(scores: np.ndarray, weights: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-frequency edges of weighted scores, shape (M + 1,).

    The unweighted rule (the order statistics at positions ``m N // M``,
    :meth:`~calibration_core.binning.Binning.edges`) applied to the scores
    repeated by their weights: position ``floor(m W / M)`` of the cumulative
    weight of the sorted scores.
    """
    order = np.argsort(scores, kind="stable")
    cumulative = np.cumsum(weights[order])
    total = cumulative[-1]
    positions = np.floor(np.arange(1, n_bins) * total / n_bins)
    at = np.minimum(np.searchsorted(cumulative, positions, side="right"), scores.shape[0] - 1)
    return np.concatenate(([0.0], scores[order][at], [1.0]))


def weighted_bin_statistics(
    binning: Binning, columns: BinaryColumns
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(edges (C, M + 1), summed weight (C, M), positive weight (C, M))`` per column.

    One weighted ``bincount`` over (column, bin) pairs; the bins of a score are
    those of :meth:`~calibration_core.binning.Binning.assign` (the floor rule
    for equal width, weighted order statistics for equal frequency). Columns
    without weights count every row once.
    """
    scores, m = columns.scores, binning.n_bins
    n_cols = scores.shape[0]
    weights = np.ones(scores.shape[1]) if columns.weights is None else columns.weights
    if binning.scheme == "width":
        edges = np.tile(binning.edges(scores[0]), (n_cols, 1))
        idx = binning.assign(scores)
    else:
        edges = np.empty((n_cols, m + 1))
        idx = np.empty(scores.shape, np.intp)
        for c in range(n_cols):
            column = np.ascontiguousarray(scores[c])
            edges[c] = weighted_frequency_edges(column, weights, m)
            idx[c] = binning.assign(column, edges[c])
    flat = (idx + m * np.arange(n_cols)[:, None]).ravel()
    positive = np.stack([columns.targets(c) for c in range(n_cols)]).ravel()
    row_weight = np.tile(weights, n_cols)
    count = np.bincount(flat, weights=row_weight, minlength=n_cols * m)
    positives = np.bincount(flat, weights=row_weight * positive, minlength=n_cols * m)
    return edges, count.reshape(n_cols, m), positives.reshape(n_cols, m)


def fill_empty_bins(values: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Give every empty bin the value of the nearest non-empty bin, shape (C, M).

    Parameters
    ----------
    values : numpy.ndarray, shape (C, M)
        Bin values (anything where ``count == 0``).
    count : numpy.ndarray, shape (C, M)
        Scores per bin; every row has a non-empty bin.
    """
    n_cols, m = values.shape
    idx = np.broadcast_to(np.arange(m), (n_cols, m))
    full = count > 0
    left = np.maximum.accumulate(np.where(full, idx, -1), axis=1)
    right = np.minimum.accumulate(np.where(full, idx, m)[:, ::-1], axis=1)[:, ::-1]
    d_left = np.where(left >= 0, idx - left, np.iinfo(np.int64).max)
    d_right = np.where(right < m, right - idx, np.iinfo(np.int64).max)
    v_left = np.take_along_axis(values, np.clip(left, 0, m - 1), axis=1)
    v_right = np.take_along_axis(values, np.clip(right, 0, m - 1), axis=1)
    nearest = np.where(
        d_left < d_right, v_left, np.where(d_right < d_left, v_right, 0.5 * (v_left + v_right))
    )
    return np.where(full, values, nearest)


@register
class HistogramBinning(OneVsRestMap):
    """Histogram binning, one-vs-rest for K > 2 (registry name ``"histogram"``).

    Parameters
    ----------
    n_bins : int
        Number of bins M.
    scheme : {"width", "frequency"}
        Equal-width bins, or equal-frequency bins whose edges are order
        statistics of each column's fit scores.
    alpha : float
        Laplace smoothing ``>= 0`` (0: the empirical frequency).
    eps : float
        Outputs are clipped to ``[eps, 1 - eps]``.
    input : {"probs", "logits"}
        What ``X`` holds; logits are turned into probabilities by a softmax.

    Attributes
    ----------
    edges_ : numpy.ndarray, shape (C, M + 1)
        Bin edges per fitted column (C = 1 for K = 2, the positive class; else K).
    values_ : numpy.ndarray, shape (C, M)
        Bin values ``a_m`` (empty bins filled, see the module docstring).
    counts_ : numpy.ndarray, shape (C, M)
        Fit scores per bin: int64 counts, or their summed weights (float64)
        when fitted with ``sample_weight``.
    n_parameters_ : int
        Bins times columns, ``M C`` (one fitted value per bin; the edges are
        not counted).
    """

    name = "histogram"

    def __init__(
        self,
        n_bins: int = 10,
        scheme: Scheme = "width",
        alpha: float = 0.0,
        eps: float = 1e-7,
        input: str = "probs",
    ) -> None:
        self.n_bins = n_bins
        self.scheme = scheme
        self.alpha = alpha
        self.eps = eps
        self.input = input

    def _binning(self) -> Binning:
        return Binning(scheme=self.scheme, n_bins=self.n_bins)

    def _check_params(self) -> None:
        if (
            isinstance(self.alpha, bool)
            or not isinstance(self.alpha, Real)
            or not (0.0 <= float(self.alpha) < np.inf)
        ):
            raise CalibrationInputError(
                f"HistogramBinning alpha (Laplace smoothing) must be a number >= 0, "
                f"got {self.alpha!r}."
            )
        check_eps(self.eps, "HistogramBinning")

    def _output_eps(self) -> float:
        return float(self.eps)

    def _fit_columns(self, columns: BinaryColumns) -> None:
        binning = self._binning()
        self._check_params()
        warn_few_rows(type(self).__name__, columns.n_rows, binning.n_bins)
        columns.warn_one_sided(type(self).__name__)
        if columns.weights is not None:
            edges, count, positives = weighted_bin_statistics(binning, columns)
        else:
            if columns.n_classes == 2:
                scores = np.ascontiguousarray(columns.scores[0])
                stats = binning.statistics(scores, columns.targets(0))
            else:
                stats = binning.classwise_statistics(columns.probs, columns.labels)
            edges = stats.edges
            count = np.atleast_2d(stats.count).astype(np.int64)
            positives = np.atleast_2d(stats.sum_target)
        alpha = float(self.alpha)
        with np.errstate(invalid="ignore", divide="ignore"):
            values = (positives + alpha) / (count + 2.0 * alpha)
        if alpha == 0.0:
            values = fill_empty_bins(values, count)
        self.edges_ = np.array(np.atleast_2d(edges), dtype=np.float64)
        self.values_ = values
        self.counts_ = count

    def _predict_columns(self, scores: np.ndarray) -> np.ndarray:
        binning = self._binning()
        if binning.scheme == "width":
            idx = binning.assign(scores)
        else:
            idx = np.empty(scores.shape, np.intp)
            for c in range(scores.shape[0]):
                idx[c] = binning.assign(scores[c], self.edges_[c])
        return np.take_along_axis(self.values_, idx, axis=1)

    def _count_parameters(self) -> int:
        return int(self.values_.size)

    def planned_parameters(self, n_classes: int) -> int | None:
        """``n_bins`` per score column (:meth:`CalibrationMap.planned_parameters`)."""
        return one_vs_rest_parameters(int(self.n_bins), n_classes)

    def _fitted_state(self) -> dict[str, Any]:
        return {
            "edges": self.edges_.tolist(),
            "values": self.values_.tolist(),
            "counts": self.counts_.tolist(),
        }

    def _load_fitted_state(self, state: dict[str, Any]) -> None:
        columns = score_columns(self.n_classes_)
        self.edges_ = state_array(state, "edges", (None, None))
        self.values_ = state_array(state, "values", (columns, None))
        counts = np.asarray(state_array(state, "counts", (columns, None), dtype=None))
        self.counts_ = counts.astype(np.int64 if counts.dtype.kind in "iu" else np.float64)
