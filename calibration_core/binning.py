"""The one binning engine behind every metric and every reliability diagram.

Conventions (the dashboard states them too)
-------------------------------------------
Equal width (``scheme="width"``)
    Bin ``m`` of ``M`` is ``[m/M, (m+1)/M)``; a score of exactly 1.0 falls in
    the last bin. A score ``s`` goes to bin ``min(floor(s * M), M - 1)``,
    computed in float64; the sorted (re-binning) path uses the exact float64
    thresholds of that rule, so both paths assign every score identically.
Equal frequency (``scheme="frequency"``)
    With ``N`` sorted scores ``s_(0) <= ... <= s_(N-1)``, the interior edges
    are ``e_m = s_(floor(m * N / M))`` for ``m = 1..M-1``, the outer edges are
    0 and 1, and bin ``m`` is ``[e_m, e_{m+1})`` (the last bin includes 1.0).
    Without ties every bin holds ``floor(N/M)`` or ``ceil(N/M)`` scores. Ties
    are never split: all scores equal to an edge go to the bin above it, so
    heavy ties can leave some bins empty. The result does not depend on row
    order.
Empty bins
    Are kept (statistics are fixed-length ``M``): their count and sums are 0
    and their mean score and observed frequency are NaN, never 0. They add
    nothing to ECE and are ignored by MCE.

Statistics are counts and sums, so statistics of chunks with the same edges
merge by addition (``stats_a + stats_b``), without touching rows again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .errors import CalibrationInputError

Scheme = Literal["width", "frequency"]
SCHEMES: tuple[str, ...] = ("width", "frequency")
MAX_BINS = 10_000


def check_binning_args(n_bins, scheme) -> tuple[int, str]:
    """Validate a bin count and scheme name, returning them normalised."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)):
        raise CalibrationInputError(
            f"n_bins must be a whole number between 1 and {MAX_BINS}, got {n_bins!r}."
        )
    if not 1 <= int(n_bins) <= MAX_BINS:
        raise CalibrationInputError(f"n_bins must be between 1 and {MAX_BINS}, got {n_bins}.")
    if scheme not in SCHEMES:
        raise CalibrationInputError(
            f"scheme must be 'width' (equal-width bins) or 'frequency' (equal-count bins), "
            f"got {scheme!r}."
        )
    return int(n_bins), str(scheme)


def width_thresholds(n_bins: int) -> np.ndarray:
    """Exact float64 thresholds of the rule ``bin = min(floor(s * M), M - 1)``.

    Returns
    -------
    numpy.ndarray, shape (M - 1,)
        ``t[m-1]`` is the smallest float64 ``x`` with ``x * M >= m`` (in
        float64 arithmetic), so ``s >= t[m-1]`` exactly when the rule puts
        ``s`` in bin ``m`` or above. It equals ``m / M`` or differs by an ulp.
    """
    m = np.arange(1, n_bins, dtype=np.float64)
    t = m / n_bins
    # Walk down while the float product still reaches m, then up until it does.
    for _ in range(4):
        lower = np.nextafter(t, -np.inf)
        t = np.where(lower * n_bins >= m, lower, t)
    for _ in range(4):
        t = np.where(t * n_bins >= m, t, np.nextafter(t, np.inf))
    return t


@dataclass(frozen=True, eq=False)
class BinStatistics:
    """Fixed-length per-bin statistics of scores against 0/1 targets.

    One score column gives 1-D arrays of shape (M,); the classwise engine
    stacks K columns into arrays of shape (K, M) (``stats[k]`` is class k).

    Attributes
    ----------
    edges : numpy.ndarray, shape (M + 1,) or (K, M + 1)
        Bin edges, ``edges[..., 0] = 0`` and ``edges[..., -1] = 1``.
    count : numpy.ndarray, shape (M,) or (K, M), int64
        Number of scores in each bin.
    sum_score : numpy.ndarray, shape (M,) or (K, M), float64
        Sum of the scores in each bin.
    sum_target : numpy.ndarray, shape (M,) or (K, M), float64
        Sum of the targets (positives) in each bin.
    """

    edges: np.ndarray
    count: np.ndarray
    sum_score: np.ndarray
    sum_target: np.ndarray

    @property
    def n_bins(self) -> int:
        """M, the number of bins."""
        return int(self.count.shape[-1])

    @property
    def total(self) -> int:
        """N, the number of scores binned."""
        return int(self.count.sum())

    @property
    def mean_score(self) -> np.ndarray:
        """Mean score per bin, shape (M,); NaN for an empty bin."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, self.sum_score / self.count, np.nan)

    @property
    def frequency(self) -> np.ndarray:
        """Observed frequency of positives per bin, shape (M,); NaN for an empty bin."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, self.sum_target / self.count, np.nan)

    @property
    def gap(self) -> np.ndarray:
        """``|freq_m - mean_m|`` per bin, as ``|sum_target - sum_score| / count``; NaN if empty."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(
                self.count > 0, np.abs(self.sum_target - self.sum_score) / self.count, np.nan
            )

    def ece(self):
        """Expected calibration error ``sum_m |B_m|/N * |freq_m - mean_m|``.

        Returns a float for one column, an array of shape (K,) for stacked ones.
        Empty bins add nothing.
        """
        value = np.abs(self.sum_target - self.sum_score).sum(axis=-1) / self.count.sum(axis=-1)
        return float(value) if np.ndim(value) == 0 else value

    def mce(self):
        """Maximum calibration error: the largest gap over non-empty bins.

        Returns a float for one column, an array of shape (K,) for stacked ones.
        """
        value = np.nanmax(self.gap, axis=-1)
        return float(value) if np.ndim(value) == 0 else value

    def __getitem__(self, k) -> BinStatistics:
        if self.count.ndim != 2:
            raise TypeError("only stacked (classwise) statistics can be indexed by class")
        return BinStatistics(self.edges[k], self.count[k], self.sum_score[k], self.sum_target[k])

    def __add__(self, other: BinStatistics) -> BinStatistics:
        if not isinstance(other, BinStatistics):
            return NotImplemented
        if self.edges.shape != other.edges.shape or not np.array_equal(self.edges, other.edges):
            raise CalibrationInputError(
                "bin statistics can only be merged when their edges are identical; "
                "bin every chunk with the same Binning (equal width) or the same explicit edges."
            )
        return BinStatistics(
            self.edges,
            self.count + other.count,
            self.sum_score + other.sum_score,
            self.sum_target + other.sum_target,
        )


@dataclass(frozen=True)
class Binning:
    """A binning scheme: equal-width or equal-frequency bins on [0, 1].

    Parameters
    ----------
    scheme : {"width", "frequency"}
        Equal-width bins ``[m/M, (m+1)/M)`` or equal-count bins whose edges
        are order statistics of the scores (see the module docstring for the
        exact rule, ties and edges).
    n_bins : int
        M, the number of bins (1..10000).
    """

    scheme: Scheme = "width"
    n_bins: int = 15

    def __post_init__(self) -> None:
        check_binning_args(self.n_bins, self.scheme)

    def __str__(self) -> str:
        kind = "equal-width" if self.scheme == "width" else "equal-frequency"
        return f"{self.n_bins} {kind} bins"

    # ----------------------------------------------------------------- edges
    def edges(self, scores: np.ndarray) -> np.ndarray:
        """Bin edges for these scores, shape (M + 1,).

        For equal width the edges do not depend on the scores.
        """
        if self.scheme == "width":
            return np.linspace(0.0, 1.0, self.n_bins + 1)
        scores = np.asarray(scores, dtype=np.float64)
        positions = self._frequency_positions(scores.shape[0])
        # Only the M - 1 order statistics are needed: a partial sort, O(N).
        interior = np.partition(scores, positions)[positions] if positions.size else positions
        return np.concatenate(([0.0], interior, [1.0]))

    def _frequency_positions(self, n: int) -> np.ndarray:
        return (np.arange(1, self.n_bins, dtype=np.int64) * n) // self.n_bins

    def edges_from_sorted(self, sorted_scores: np.ndarray) -> np.ndarray:
        """Bin edges from already sorted scores, shape (M + 1,)."""
        if self.scheme == "width":
            return np.linspace(0.0, 1.0, self.n_bins + 1)
        positions = self._frequency_positions(sorted_scores.shape[0])
        return np.concatenate(([0.0], sorted_scores[positions], [1.0]))

    # --------------------------------------------------------------- one-off
    def assign(self, scores: np.ndarray, edges: np.ndarray | None = None) -> np.ndarray:
        """Bin index of every score, shape (N,), values in ``0..M-1``.

        Parameters
        ----------
        scores : numpy.ndarray, shape (N,)
            Scores in [0, 1] (float64, already validated).
        edges : numpy.ndarray, shape (M + 1,), optional
            Explicit edges (e.g. global equal-frequency edges shared by chunks);
            scores equal to an interior edge go to the bin above it.
        """
        if edges is None and self.scheme == "width":
            idx = np.multiply(scores, self.n_bins).astype(np.intp)
            np.minimum(idx, self.n_bins - 1, out=idx)
            return idx
        if edges is None:
            edges = self.edges(scores)
        return np.searchsorted(edges[1:-1], scores, side="right").astype(np.intp, copy=False)

    def statistics(
        self, scores: np.ndarray, targets: np.ndarray, edges: np.ndarray | None = None
    ) -> BinStatistics:
        """Per-bin statistics of one pass over the rows.

        Parameters
        ----------
        scores : numpy.ndarray, shape (N,)
            Scores in [0, 1], float64.
        targets : numpy.ndarray, shape (N,)
            0/1 targets (integer or bool; float 0/1 works too).
        edges : numpy.ndarray, shape (M + 1,), optional
            Explicit edges; by default those of the scheme.

        Returns
        -------
        BinStatistics
        """
        if edges is None and self.scheme == "width":
            # The floor rule (not a search of the rounded linspace edges), so that
            # this path and SortedScores put every score in the same bin.
            idx = self.assign(scores)
            edges = self.edges(scores)
        else:
            if edges is None:
                edges = self.edges(scores)
            idx = self.assign(scores, edges)
        return self.statistics_from_index(idx, scores, targets, edges)

    def statistics_from_index(
        self, idx: np.ndarray, scores: np.ndarray, targets: np.ndarray, edges: np.ndarray
    ) -> BinStatistics:
        """Per-bin statistics given each row's bin index (shape (N,))."""
        m = edges.shape[0] - 1
        sum_score = np.bincount(idx, weights=scores, minlength=m)
        if targets.dtype.kind in "biu":
            # One unweighted pass gives counts of negatives and positives per bin.
            both = np.bincount(idx * 2 + targets, minlength=2 * m).reshape(m, 2)
            count = both.sum(axis=1)
            sum_target = both[:, 1].astype(np.float64)
        else:
            count = np.bincount(idx, minlength=m)
            sum_target = np.bincount(idx, weights=targets, minlength=m)
        return BinStatistics(edges, count.astype(np.int64), sum_score, sum_target)

    # ------------------------------------------------------------ classwise
    def classwise_statistics(self, probs: np.ndarray, labels: np.ndarray) -> BinStatistics:
        """Stacked one-vs-rest statistics of every class column in one pass.

        Parameters
        ----------
        probs : numpy.ndarray, shape (N, K)
            Validated probability rows.
        labels : numpy.ndarray, shape (N,)
            Validated class indices.

        Returns
        -------
        BinStatistics
            Arrays of shape (K, M); ``stats[k]`` is class k against the rest.
        """
        n, k = probs.shape
        m = self.n_bins
        if self.scheme == "frequency":
            parts = [
                self.statistics(np.ascontiguousarray(probs[:, j]), (labels == j).astype(np.intp))
                for j in range(k)
            ]
            return BinStatistics(
                np.stack([p.edges for p in parts]),
                np.stack([p.count for p in parts]),
                np.stack([p.sum_score for p in parts]),
                np.stack([p.sum_target for p in parts]),
            )
        count = np.zeros(k * m, dtype=np.int64)
        sum_score = np.zeros(k * m)
        sum_target = np.zeros(k * m)
        offsets = np.arange(k, dtype=np.intp) * m
        # Row chunks keep the index array cache-sized and the memory bounded.
        step = max(1, (1 << 20) // k)
        for start in range(0, n, step):
            block = probs[start : start + step]
            idx = np.multiply(block, m).astype(np.intp)
            np.minimum(idx, m - 1, out=idx)
            idx += offsets
            flat = idx.ravel()
            count += np.bincount(flat, minlength=k * m)
            sum_score += np.bincount(flat, weights=block.ravel(), minlength=k * m)
            rows = np.arange(block.shape[0])
            sum_target += np.bincount(idx[rows, labels[start : start + step]], minlength=k * m)
        edges = np.broadcast_to(np.linspace(0.0, 1.0, m + 1), (k, m + 1))
        return BinStatistics(
            edges, count.reshape(k, m), sum_score.reshape(k, m), sum_target.reshape(k, m)
        )

    # ---------------------------------------------------------- re-binning
    def statistics_sorted(self, sorted_scores: SortedScores) -> BinStatistics:
        """Per-bin statistics from a load-time :class:`SortedScores`, in O(M log N)."""
        return sorted_scores.statistics(self)


class SortedScores:
    """Scores sorted once with cumulative sums, for re-binning without a pass over rows.

    Built once at load time (O(N log N)); afterwards the statistics of any
    binning are found with ``M`` binary searches and differences of the
    cumulative sums, in O(M log N).

    Parameters
    ----------
    scores : numpy.ndarray, shape (N,)
        Scores in [0, 1].
    targets : numpy.ndarray, shape (N,)
        0/1 targets.

    Attributes
    ----------
    scores : numpy.ndarray, shape (N,)
        Sorted scores.
    cum_score : numpy.ndarray, shape (N + 1,)
        ``cum_score[i]`` is the sum of the ``i`` smallest scores.
    cum_target : numpy.ndarray, shape (N + 1,), int64
        Number of positives among the ``i`` smallest scores.
    """

    __slots__ = ("cum_score", "cum_target", "scores")

    def __init__(self, scores: np.ndarray, targets: np.ndarray) -> None:
        order = np.argsort(scores, kind="stable")
        self.scores = scores[order]
        self.cum_score = np.concatenate(([0.0], np.cumsum(self.scores)))
        self.cum_target = np.concatenate(([0], np.cumsum(targets[order], dtype=np.int64)))

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    def statistics(self, binning: Binning) -> BinStatistics:
        """Per-bin statistics of ``binning`` from the sorted scores."""
        m = binning.n_bins
        edges = binning.edges_from_sorted(self.scores)
        thresholds = width_thresholds(m) if binning.scheme == "width" else edges[1:-1]
        # Bin m holds the scores in [t_{m}, t_{m+1}); a score equal to a threshold goes up.
        cuts = np.searchsorted(self.scores, thresholds, side="left")
        bounds = np.concatenate(([0], cuts, [len(self)]))
        count = np.diff(bounds).astype(np.int64)
        sum_score = np.diff(self.cum_score[bounds])
        sum_target = np.diff(self.cum_target[bounds]).astype(np.float64)
        # Differences of a cumulative sum can leave -0.0 or 1e-17 in empty bins.
        sum_score[count == 0] = 0.0
        return BinStatistics(edges, count, sum_score, sum_target)
