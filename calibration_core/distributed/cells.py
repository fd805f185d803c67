"""Every equal-width bin count from one pass: the cell grid and :class:`CellStatistics`.

The equal-width rule puts a score ``s`` in bin ``min(floor(s * M), M - 1)``
(float64), and :func:`~calibration_core.binning.width_thresholds` gives the
exact float at which that bin changes. The union of those thresholds for
``M = 2..MAX_CELL_BINS`` (:data:`CELL_THRESHOLDS`, 3,097 distinct floats for
100; close to, but not equal to, the Farey fractions of order 100) cuts [0, 1]
into cells. A score's cell is the number of thresholds at or below it
(:func:`~.kernel.cell_index`, compiled with the rest of a block's work), so the
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
    "N_CELLS",
    "CellStatistics",
    "bin_sums",
    "cell_bounds",
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


def bin_sums(cells: np.ndarray, n_bins: int) -> np.ndarray:
    """Per-cell sums (last axis: the C + 1 cells) added up into the ``n_bins`` equal-width bins."""
    starts = cell_bounds(n_bins)
    empty = np.append(starts[1:] == starts[:-1], False)
    sums = np.add.reduceat(cells, starts, axis=-1)
    sums[..., empty] = 0  # reduceat gives a[start] for an empty range
    return sums


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
        """Statistics of one score column, shape (n,), against 0/1 targets, shape (n,).

        Compiled (:func:`~.kernel.score_cells`): needs Numba (the ``dask`` extra).
        """
        from .kernel import score_cells

        out = cls.empty()
        score_cells(np.ravel(scores), np.ravel(targets), *out._arrays())
        return out

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
        count, sum_score, positives = (bin_sums(a, n_bins) for a in self._arrays())
        edges = width_edges(n_bins)
        if count.ndim == 2:
            edges = np.broadcast_to(edges, (count.shape[0], n_bins + 1))
        return BinStatistics(edges.copy(), count, sum_score, positives.astype(np.float64))

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.count, self.sum_score, self.positives
