"""Per-bin statistics of scores against 0/1 targets: :class:`BinStatistics`.

Statistics are counts and sums, so statistics of chunks with the same edges
merge by addition (``stats_a + stats_b``), without touching rows again. Empty
bins are kept (the arrays are fixed-length ``M``): their count and sums are 0
and their mean score and observed frequency are NaN, never 0. They add
nothing to ECE and are ignored by MCE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CalibrationInputError


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
        """Expected calibration error ``sum_m |B_m|/N * |freq_m - mean_m|`` (:func:`ece_from_sums`).

        Returns a float for one column, an array of shape (K,) for stacked ones.
        Empty bins add nothing.
        """
        value = ece_from_sums(self.count, self.sum_score, self.sum_target)
        return float(value) if np.ndim(value) == 0 else value

    def mce(self):
        """Maximum calibration error: the largest gap over non-empty bins (:func:`mce_from_sums`).

        Returns a float for one column, an array of shape (K,) for stacked ones; NaN
        when every bin is empty.
        """
        value = mce_from_sums(self.count, self.sum_score, self.sum_target)
        value = np.where(np.isneginf(value), np.nan, value)
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


def ece_from_sums(count, sum_score, sum_target) -> np.ndarray:
    """ECE of per-bin sums over the last axis: ``sum_m |sum_target_m - sum_score_m| / N``.

    The one ECE formula of the core: :meth:`BinStatistics.ece` and the resampling
    paths of :mod:`~calibration_core.bootstrap` and :mod:`~calibration_core.measures.significance`
    (arrays of shape (R, ..., M)) all use it. ``N`` is the count summed over the last
    axis; ``count`` may have fewer leading axes than the sums (it broadcasts).
    """
    return np.abs(sum_target - sum_score).sum(axis=-1) / np.sum(count, axis=-1)


def mce_from_sums(count, sum_score, sum_target) -> np.ndarray:
    """MCE of per-bin sums over the last axis: the largest ``|sum_target - sum_score| / count``.

    Empty bins are skipped; where every bin is empty the result is ``-inf``.
    """
    diff = np.abs(sum_target - sum_score)
    return np.where(count > 0, diff / np.maximum(count, 1), -np.inf).max(axis=-1)


def stack_statistics(parts: list[BinStatistics]) -> BinStatistics:
    """Stack per-class statistics (each of shape (M,)) into arrays of shape (K, M)."""
    return BinStatistics(
        np.stack([p.edges for p in parts]),
        np.stack([p.count for p in parts]),
        np.stack([p.sum_score for p in parts]),
        np.stack([p.sum_target for p in parts]),
    )
