"""Every equal-width bin count from one pass: the cell grid and :class:`CellStatistics`.

The equal-width rule puts a score ``s`` in bin ``min(floor(s * M), M - 1)``
(float64), and :func:`~calibration_core.binning.width_thresholds` gives the
exact float at which that bin changes. The union of those thresholds for
``M = 2..MAX_CELL_BINS`` (:data:`CELL_THRESHOLDS`, 3,097 distinct floats for
100; close to, but not equal to, the Farey fractions of order 100) cuts [0, 1]
into cells. A score's cell is the number of thresholds at or below it, so the
bin of every ``M`` in 1..100 is a function of the cell alone: the statistics of
any such ``M`` are sums of consecutive cells, and every score lands in exactly
the bin the in-memory core gives it (bit for bit: the same thresholds). Counts
and positives are therefore equal; score sums are equal up to the order of
float additions (well below 1e-12).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..binning import BinStatistics, check_binning_args, width_thresholds
from ..binning.width import width_edges
from ..errors import CalibrationInputError

__all__ = [
    "CELL_THRESHOLDS",
    "MAX_CELL_BINS",
    "CellStatistics",
    "cell_bounds",
    "cell_index",
]

#: Largest equal-width bin count the cells answer exactly (every M in 1..100).
MAX_CELL_BINS = 100


def _union_thresholds(max_bins: int) -> np.ndarray:
    parts = [width_thresholds(m) for m in range(2, max_bins + 1)]
    union = np.unique(np.concatenate(parts))
    union.flags.writeable = False
    return union


#: Sorted distinct thresholds of every M in 2..:data:`MAX_CELL_BINS`; cells are
#: ``[T[c-1], T[c])`` with ``T[-1] = -inf`` and ``T[C] = +inf`` (C + 1 cells).
CELL_THRESHOLDS: np.ndarray = _union_thresholds(MAX_CELL_BINS)
N_CELLS = CELL_THRESHOLDS.shape[0] + 1


#: Grid of the cell lookup: ``floor(s * 2**16)`` is exact (a power of two).
GRID = 1 << 16


def _lookup() -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Cell of every grid point, the grid steps holding a threshold, padded thresholds, steps."""
    points = np.arange(GRID + 1, dtype=np.float64) / GRID
    table = np.searchsorted(CELL_THRESHOLDS, points, side="right").astype(np.intp)
    # Step g, [g / GRID, (g + 1) / GRID), holds a threshold when the next grid point's
    # cell differs; only values in such steps (under 5 % of the grid) need a comparison.
    near = np.append(table[1:] != table[:-1], False)
    padded = np.append(CELL_THRESHOLDS, np.inf)
    # A grid step holds at most this many thresholds (ulp-apart twins of one fraction
    # count apart), so that many ``s >= T[c]`` steps give the exact cell.
    steps = int(np.max(table[1:] - table[:-1]))
    return table, near, padded, steps


_TABLE, _NEAR, _PADDED, _STEPS = _lookup()


def cell_index(values: np.ndarray) -> np.ndarray:
    """The cell of every value: the number of :data:`CELL_THRESHOLDS` at or below it.

    Equal to ``np.searchsorted(CELL_THRESHOLDS, values, side="right")``, several
    times faster: the cell of the grid point ``floor(s * 2**16) / 2**16`` below each
    value, then, only for values whose grid step holds a threshold, at most a few
    exact comparisons with the next thresholds.

    Parameters
    ----------
    values : numpy.ndarray
        Validated scores in [0, 1], any shape.

    Returns
    -------
    numpy.ndarray of intp, same shape, values in ``0..C``
    """
    grid = np.multiply(values, GRID).astype(np.intp)
    cell = _TABLE.take(grid)
    near = np.flatnonzero(_NEAR.take(grid))
    if near.size:
        flat = cell.reshape(-1)
        exact = np.ravel(values).take(near)
        fix = flat.take(near)
        for _ in range(_STEPS):
            fix += exact >= _PADDED.take(fix)
        flat[near] = fix
    return cell


@lru_cache(maxsize=128)
def cell_bounds(n_bins: int) -> np.ndarray:
    """First cell of each of the ``M`` equal-width bins, shape (M,), read-only.

    Bin ``m >= 1`` starts at the cell just above threshold ``t_m`` (scores equal to
    the threshold go up, as ``floor(s * M) >= m`` exactly when ``s >= t_m``).
    """
    if not 1 <= n_bins <= MAX_CELL_BINS:
        raise CalibrationInputError(
            f"the cell statistics answer equal-width bin counts 1..{MAX_CELL_BINS}, got "
            f"{n_bins}; use at most {MAX_CELL_BINS} bins with the Dask engine."
        )
    inner = np.searchsorted(CELL_THRESHOLDS, width_thresholds(n_bins)) + 1
    bounds = np.concatenate(([0], inner)).astype(np.intp)
    bounds.flags.writeable = False
    return bounds


@dataclass(frozen=True, eq=False)
class CellStatistics:
    """Per-cell counts and sums of scores against 0/1 targets; they merge by addition.

    One score column gives arrays of shape (C + 1,); stacked one-vs-rest columns
    (classwise) give (K, C + 1).

    Attributes
    ----------
    count : numpy.ndarray of int64
        Scores per cell.
    sum_score : numpy.ndarray of float64
        Sum of the scores per cell.
    positives : numpy.ndarray of int64
        Targets equal to 1 per cell.
    """

    count: np.ndarray
    sum_score: np.ndarray
    positives: np.ndarray

    @classmethod
    def empty(cls, n_columns: int | None = None) -> CellStatistics:
        """All-zero statistics of one column (``None``) or of ``n_columns`` stacked ones."""
        shape = (N_CELLS,) if n_columns is None else (n_columns, N_CELLS)
        zeros = np.zeros(shape, dtype=np.int64)
        return cls(zeros, np.zeros(shape), zeros.copy())

    @classmethod
    def of_scores(cls, scores: np.ndarray, targets: np.ndarray) -> CellStatistics:
        """Statistics of one score column, shape (n,), against 0/1 targets, shape (n,)."""
        key = cell_index(scores) * 2 + targets.astype(np.intp, copy=False)
        both = np.bincount(key, minlength=2 * N_CELLS).reshape(N_CELLS, 2)
        sum_score = np.bincount(key >> 1, weights=scores, minlength=N_CELLS)
        return cls(both.sum(axis=1), sum_score, both[:, 1].copy())

    @classmethod
    def of_classes(cls, probs: np.ndarray, labels: np.ndarray) -> CellStatistics:
        """Stacked one-vs-rest statistics of probability rows (n, K) and labels (n,)."""
        n, k = probs.shape
        key = cell_index(probs)
        key += np.arange(k, dtype=np.intp) * N_CELLS
        flat = key.reshape(-1)
        size = k * N_CELLS
        count = np.bincount(flat, minlength=size)
        sum_score = np.bincount(flat, weights=probs.reshape(-1), minlength=size)
        positives = np.bincount(flat.take(np.arange(n) * k + labels), minlength=size)
        shape = (k, N_CELLS)
        return cls(count.reshape(shape), sum_score.reshape(shape), positives.reshape(shape))

    def __add__(self, other: CellStatistics) -> CellStatistics:
        if not isinstance(other, CellStatistics):
            return NotImplemented
        if self.count.shape != other.count.shape:
            raise CalibrationInputError(
                f"cell statistics of shapes {self.count.shape} and {other.count.shape} cannot "
                "be merged: the partitions disagree on the number of classes."
            )
        return CellStatistics(
            self.count + other.count,
            self.sum_score + other.sum_score,
            self.positives + other.positives,
        )

    def bins(self, n_bins: int) -> BinStatistics:
        """The equal-width :class:`~calibration_core.binning.BinStatistics` of ``n_bins``.

        Equal to ``Binning("width", n_bins).statistics`` of the same rows: the same
        counts and positives, score sums to float rounding. Arrays of shape (M,), or
        (K, M) for stacked columns.
        """
        n_bins, _ = check_binning_args(n_bins, "width")
        starts = cell_bounds(n_bins)
        empty = np.append(starts[1:] == starts[:-1], False)
        sums = [np.add.reduceat(a, starts, axis=-1) for a in self._arrays()]
        for a in sums:  # reduceat gives a[start] for an empty range: zero it
            a[..., empty] = 0
        count, sum_score, positives = sums
        edges = width_edges(n_bins)
        if count.ndim == 2:
            edges = np.broadcast_to(edges, (count.shape[0], n_bins + 1))
        return BinStatistics(edges.copy(), count, sum_score, positives.astype(np.float64))

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.count, self.sum_score, self.positives
