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

Speed and memory
----------------
One-off passes go through :class:`ScoreBinCounter` and
:class:`ClasswiseBinCounter`, which walk the rows in cache-sized blocks of
:data:`BLOCK_ELEMENTS` values: per block one multiply and one cast give the
bin, ``2 * bin + target`` is one key, and two ``np.bincount`` calls (one
unweighted for counts and positives, one weighted for score sums) give all
three statistics. A score of exactly 1.0 lands in an extra key that is folded
into the last bin, so no clipping pass is needed. Temporary memory is a few
blocks, independent of N.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from .errors import CalibrationInputError

Scheme = Literal["width", "frequency"]
SCHEMES: tuple[str, ...] = ("width", "frequency")
MAX_BINS = 10_000
#: Values per block of the one-off passes (256 KiB of float64: stays in cache).
BLOCK_ELEMENTS = 1 << 15
#: Wide rows: at least this many rows per block (fewer Python calls per row) ...
MIN_BLOCK_ROWS = 4096
#: ... unless that exceeds this many values (4 MiB of float64, still in L3 cache).
MAX_BLOCK_ELEMENTS = 1 << 19


def block_rows(n_columns: int) -> int:
    """Rows per block of an (N, K) pass: cache-sized, but not so few that Python overhead shows."""
    k = max(1, int(n_columns))
    return max(1, BLOCK_ELEMENTS // k, min(MIN_BLOCK_ROWS, MAX_BLOCK_ELEMENTS // k))


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


@lru_cache(maxsize=256)
def width_thresholds(n_bins: int) -> np.ndarray:
    """Exact float64 thresholds of the rule ``bin = min(floor(s * M), M - 1)``.

    Returns
    -------
    numpy.ndarray, shape (M - 1,), read-only
        ``t[m-1]`` is the smallest float64 ``x`` with ``x * M >= m`` (in
        float64 arithmetic), so ``s >= t[m-1]`` exactly when the rule puts
        ``s`` in bin ``m`` or above. It equals ``m / M`` or differs by an ulp.
        Cached per M (re-binning calls it on every change of bin count).
    """
    m = np.arange(1, n_bins, dtype=np.float64)
    t = m / n_bins
    # Walk down while the float product still reaches m, then up until it does.
    for _ in range(4):
        lower = np.nextafter(t, -np.inf)
        t = np.where(lower * n_bins >= m, lower, t)
    for _ in range(4):
        t = np.where(t * n_bins >= m, t, np.nextafter(t, np.inf))
    t.flags.writeable = False
    return t


@lru_cache(maxsize=256)
def _width_edges(n_bins: int) -> np.ndarray:
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    edges.flags.writeable = False
    return edges


@lru_cache(maxsize=256)
def _padded_width_thresholds(n_bins: int) -> np.ndarray:
    """``[-inf, t_1, ..., t_{M-1}, inf]``: one search gives all M + 1 bin bounds."""
    padded = np.concatenate(([-np.inf], width_thresholds(n_bins), [np.inf]))
    padded.flags.writeable = False
    return padded


class ScoreBinCounter:
    """Accumulates per-bin statistics of (score, 0/1 target) blocks, in one pass.

    Parameters
    ----------
    n_bins : int
        M.
    edges : numpy.ndarray, shape (M + 1,), optional
        Explicit edges (scores equal to an interior edge go to the bin above);
        by default the equal-width floor rule ``min(floor(s * M), M - 1)``.

    Notes
    -----
    Scores must be validated (in [0, 1], no NaN); targets 0/1 integers or
    booleans (float targets are used as weights, slower).
    """

    def __init__(self, n_bins: int, edges: np.ndarray | None = None) -> None:
        self.n_bins = int(n_bins)
        self.edges = None if edges is None else np.asarray(edges, dtype=np.float64)
        # Key 2 * bin + target; the width rule needs one extra bin for s == 1.0.
        self._bins = self.n_bins + 1 if edges is None else self.n_bins
        self._count2 = np.zeros(2 * self._bins, dtype=np.int64)
        self._sum2 = np.zeros(2 * self._bins)
        self._sum_target = None
        self._weighted = None  # float targets (weights) or 0/1 integers, fixed by the first add
        self._fbuf = self._ibuf = np.empty(0)

    def _keys(self, scores: np.ndarray, n: int) -> np.ndarray:
        if self._ibuf.shape[0] < n:  # block buffers, never larger than the input
            self._fbuf = np.empty(n)
            self._ibuf = np.empty(n, dtype=np.intp)
        key = self._ibuf[:n]
        if self.edges is None:
            f = np.multiply(scores, self.n_bins, out=self._fbuf[:n], dtype=np.float64)
            np.copyto(key, f, casting="unsafe")  # truncation == floor for s >= 0
        else:
            key[...] = np.searchsorted(self.edges[1:-1], scores, side="right")
        return key

    def add(self, scores: np.ndarray, targets: np.ndarray) -> ScoreBinCounter:
        """Add a block of scores, shape (n,), and targets, shape (n,)."""
        n_total = scores.shape[0]
        for start in range(0, n_total, BLOCK_ELEMENTS):
            s = scores[start : start + BLOCK_ELEMENTS]
            t = targets[start : start + BLOCK_ELEMENTS]
            n = s.shape[0]
            key = self._keys(s, n)
            weighted = t.dtype.kind not in "biu"
            if self._weighted is None:
                self._weighted = weighted
            elif weighted != self._weighted:
                raise TypeError("mix of 0/1 integer and float targets in one ScoreBinCounter")
            if not weighted:
                np.left_shift(key, 1, out=key)
                np.add(key, t, out=key, casting="unsafe")
                self._count2 += np.bincount(key, minlength=2 * self._bins)
                self._sum2 += np.bincount(key, weights=s, minlength=2 * self._bins)
            else:  # float targets: used as weights
                if self._sum_target is None:
                    self._sum_target = np.zeros(self._bins)
                self._count2[: self._bins] += np.bincount(key, minlength=self._bins)
                self._sum2[: self._bins] += np.bincount(key, weights=s, minlength=self._bins)
                self._sum_target += np.bincount(key, weights=t, minlength=self._bins)
        return self

    def statistics(self, edges: np.ndarray) -> BinStatistics:
        """The accumulated :class:`BinStatistics` (reported with ``edges``)."""
        m, b = self.n_bins, self._bins
        if self._sum_target is None:
            both = self._count2.reshape(b, 2)
            count = both.sum(axis=1)
            sum_target = both[:, 1].astype(np.float64)
            sum_score = self._sum2.reshape(b, 2).sum(axis=1)
        else:
            count = self._count2[:b].copy()
            sum_target = self._sum_target.copy()
            sum_score = self._sum2[:b].copy()
        if b > m:  # fold the scores equal to 1.0 into the last bin
            count[m - 1] += count[m]
            sum_target[m - 1] += sum_target[m]
            sum_score[m - 1] += sum_score[m]
            count, sum_target, sum_score = count[:m], sum_target[:m], sum_score[:m]
        return BinStatistics(edges, count, sum_score, sum_target)


class ClasswiseBinCounter:
    """Accumulates stacked one-vs-rest equal-width statistics of probability rows.

    Parameters
    ----------
    n_classes : int
        K.
    n_bins : int
        M.

    Notes
    -----
    Rows must be validated. Per block: one multiply and cast give every
    cell's bin, offset by class; one ``bincount`` counts, one weighted by the
    probabilities sums the scores, and one over the true class's cell of each
    row counts the positives.
    """

    def __init__(self, n_classes: int, n_bins: int) -> None:
        self.n_classes, self.n_bins = int(n_classes), int(n_bins)
        stride = self.n_bins + 1  # an extra bin per class for probabilities of 1.0
        self._size = self.n_classes * stride
        self._offsets = np.arange(self.n_classes, dtype=np.intp) * stride
        self._count = np.zeros(self._size, dtype=np.int64)
        self._sum_score = np.zeros(self._size)
        self._sum_target = np.zeros(self._size, dtype=np.int64)
        self.rows_per_block = block_rows(self.n_classes)
        self._fbuf = self._ibuf = self._row_starts = np.empty(0, dtype=np.intp)

    def add(self, probs: np.ndarray, labels: np.ndarray) -> ClasswiseBinCounter:
        """Add probability rows, shape (n, K) float64, and their labels, shape (n,)."""
        k, step = self.n_classes, self.rows_per_block
        rows = min(step, probs.shape[0])
        if self._row_starts.shape[0] < rows:  # block buffers, never larger than the input
            self._fbuf = np.empty(rows * k)
            self._ibuf = np.empty(rows * k, dtype=np.intp)
            self._row_starts = np.arange(0, rows * k, k, dtype=np.intp)
        for start in range(0, probs.shape[0], step):
            block = probs[start : start + step]
            y = labels[start : start + step]
            n = block.shape[0]
            f = np.multiply(
                block, self.n_bins, out=self._fbuf[: n * k].reshape(n, k), dtype=np.float64
            )
            key = self._ibuf[: n * k].reshape(n, k)
            np.copyto(key, f, casting="unsafe")
            key += self._offsets
            flat = key.reshape(-1)
            self._count += np.bincount(flat, minlength=self._size)
            self._sum_score += np.bincount(flat, weights=block.reshape(-1), minlength=self._size)
            true_cells = flat.take(self._row_starts[:n] + y)
            self._sum_target += np.bincount(true_cells, minlength=self._size)
        return self

    def statistics(self) -> BinStatistics:
        """The accumulated stacked statistics, arrays of shape (K, M)."""
        k, m = self.n_classes, self.n_bins
        out = []
        for acc in (self._count, self._sum_score, self._sum_target):
            a = acc.reshape(k, m + 1)
            folded = a[:, :m].copy()
            folded[:, m - 1] += a[:, m]
            out.append(folded)
        edges = np.broadcast_to(_width_edges(m), (k, m + 1))
        return BinStatistics(edges, out[0], out[1], out[2].astype(np.float64))


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
        if self.count.ndim == 1:
            return float(np.abs(self.sum_target - self.sum_score).sum() / self.count.sum())
        return np.abs(self.sum_target - self.sum_score).sum(axis=-1) / self.count.sum(axis=-1)

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
            return _width_edges(self.n_bins).copy()
        scores = np.asarray(scores, dtype=np.float64)
        positions = self._frequency_positions(scores.shape[0])
        if not positions.size:
            return np.array([0.0, 1.0])
        # The M - 1 order statistics. A full (SIMD) sort beats np.partition with
        # many kth values by 2-5x in numpy 2.x; both copy the scores once.
        interior = np.sort(scores)[positions]
        return np.concatenate(([0.0], interior, [1.0]))

    def _frequency_positions(self, n: int) -> np.ndarray:
        return (np.arange(1, self.n_bins, dtype=np.int64) * n) // self.n_bins

    def edges_from_sorted(self, sorted_scores: np.ndarray) -> np.ndarray:
        """Bin edges from already sorted scores, shape (M + 1,)."""
        if self.scheme == "width":
            return _width_edges(self.n_bins).copy()
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
            return ScoreBinCounter(self.n_bins).add(scores, targets).statistics(self.edges(scores))
        if edges is None:
            edges = self.edges(scores)
        return ScoreBinCounter(self.n_bins, edges).add(scores, targets).statistics(edges)

    def counter(self, edges: np.ndarray | None = None) -> ScoreBinCounter:
        """A :class:`ScoreBinCounter` for blocks of scores (width rule, or ``edges``)."""
        if edges is None and self.scheme == "frequency":
            raise CalibrationInputError(
                "equal-frequency bins need their edges before rows can be counted block by "
                "block; pass edges (e.g. Binning.edges of all scores)."
            )
        return ScoreBinCounter(self.n_bins, edges)

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
    def classwise_counter(self, n_classes: int) -> ClasswiseBinCounter:
        """A :class:`ClasswiseBinCounter` for blocks of probability rows (width only)."""
        if self.scheme != "width":
            raise CalibrationInputError(
                "block-by-block classwise counting needs equal-width bins; equal-frequency "
                "edges depend on every score of each class."
            )
        return ClasswiseBinCounter(n_classes, self.n_bins)

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
        k = probs.shape[1]
        if self.scheme == "width":
            return ClasswiseBinCounter(k, self.n_bins).add(probs, labels).statistics()
        return stack_statistics(
            [self.statistics(np.ascontiguousarray(probs[:, j]), labels == j) for j in range(k)]
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
    cum_target : numpy.ndarray, shape (N + 1,), float64
        Number of positives among the ``i`` smallest scores (exact integers
        below 2**53, stored beside ``cum_score`` so one gather serves both).
    """

    __slots__ = ("_cum", "scores")

    def __init__(self, scores: np.ndarray, targets: np.ndarray) -> None:
        # Ties are never split by a threshold (equal scores go to the same bin),
        # so their order does not matter: the default (SIMD) argsort is 3-4x
        # faster than a stable one.
        order = np.argsort(scores)
        self.scores = scores[order]
        n = self.scores.shape[0]
        # Both running sums side by side: one gather and one diff per re-binning.
        # Target counts below 2**53 are exact in float64.
        self._cum = np.zeros((n + 1, 2))
        np.cumsum(self.scores, out=self._cum[1:, 0])
        np.cumsum(targets[order], out=self._cum[1:, 1], dtype=np.float64)

    @property
    def cum_score(self) -> np.ndarray:
        """Running sum of the sorted scores, shape (N + 1,), starting at 0."""
        return self._cum[:, 0]

    @property
    def cum_target(self) -> np.ndarray:
        """Running count of positives, shape (N + 1,), float64 (exact integers), from 0."""
        return self._cum[:, 1]

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    def statistics(self, binning: Binning) -> BinStatistics:
        """Per-bin statistics of ``binning`` from the sorted scores."""
        if binning.scheme == "width":
            edges = _width_edges(binning.n_bins)  # shared, read-only
            thresholds = _padded_width_thresholds(binning.n_bins)
        else:
            edges = binning.edges_from_sorted(self.scores)
            thresholds = np.concatenate(([-np.inf], edges[1:-1], [np.inf]))
        # Bin m holds the scores in [t_m, t_{m+1}); a score equal to a threshold goes
        # up. The padding makes the first and last bounds 0 and N.
        bounds = np.searchsorted(self.scores, thresholds, side="left")
        count = bounds[1:] - bounds[:-1]
        # An empty bin differences one cumulative value with itself: exactly +0.0.
        cum = self._cum[bounds]
        sums = cum[1:] - cum[:-1]
        return BinStatistics(edges, count, sums[:, 0], sums[:, 1])


def stack_statistics(parts: list[BinStatistics]) -> BinStatistics:
    """Stack per-class statistics (each of shape (M,)) into arrays of shape (K, M)."""
    return BinStatistics(
        np.stack([p.edges for p in parts]),
        np.stack([p.count for p in parts]),
        np.stack([p.sum_score for p in parts]),
        np.stack([p.sum_target for p in parts]),
    )
