"""One-pass bin counters: :class:`ScoreBinCounter` and :class:`ClasswiseBinCounter`.

Speed and memory
----------------
One-off passes walk the rows in cache-sized blocks of :data:`BLOCK_ELEMENTS`
values: per block one multiply and one cast give the bin, ``2 * bin + target``
is one key, and two ``np.bincount`` calls (one unweighted for counts and
positives, one weighted for score sums) give all three statistics. A score of
exactly 1.0 lands in an extra key that is folded into the last bin, so no
clipping pass is needed. Temporary memory is a few blocks, independent of N.
"""

from __future__ import annotations

import numpy as np

from .statistics import BinStatistics
from .width import width_edges

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
        self._sum_target: np.ndarray | None = None
        # Float targets (weights) or 0/1 integers, fixed by the first add.
        self._weighted: bool | None = None
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

    def positive_score(self) -> np.ndarray:
        """Sum of the scores whose target is 1, per bin, shape (M,) (0/1 targets only).

        With the bin's score sum, count and positives it gives the within-bin
        covariance of score and target (the Brier decomposition's residual).
        """
        if self._sum_target is not None:
            raise TypeError("float targets (weights) keep no sum of the positives' scores")
        m, b = self.n_bins, self._bins
        sums = self._sum2.reshape(b, 2)[:, 1].copy()
        if b > m:  # the scores equal to 1.0 belong to the last bin
            sums[m - 1] += sums[m]
        return sums[:m]


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
        edges = np.broadcast_to(width_edges(m), (k, m + 1))
        return BinStatistics(edges, out[0], out[1], out[2].astype(np.float64))
