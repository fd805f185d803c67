"""Reliability curves: per-bin mean score against observed frequency.

Points sit at each bin's **mean score**, never at the bin centre (survey
§4.1, fig. 6): perfectly calibrated scores can sit up to half a bin width
away from the centre and would look miscalibrated there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .binning import Binning, BinStatistics, Scheme
from .validation import check_binary_targets, check_scores


@dataclass(frozen=True, eq=False)
class ReliabilityCurve:
    """A reliability curve of fixed length M (empty bins are NaN, never dropped).

    Attributes
    ----------
    x : numpy.ndarray, shape (M,)
        Mean score in each bin (NaN if empty).
    y : numpy.ndarray, shape (M,)
        Observed frequency of positives in each bin (NaN if empty).
    count : numpy.ndarray, shape (M,), int64
        Scores in each bin.
    edges : numpy.ndarray, shape (M + 1,)
        Bin edges.
    stats : BinStatistics
        The engine's statistics the curve was read from.
    binning : Binning
        The scheme and bin count.
    """

    x: np.ndarray
    y: np.ndarray
    count: np.ndarray
    edges: np.ndarray
    stats: BinStatistics
    binning: Binning

    @classmethod
    def from_statistics(cls, stats: BinStatistics, binning: Binning) -> ReliabilityCurve:
        """Read a curve off the engine's statistics."""
        return cls(stats.mean_score, stats.frequency, stats.count, stats.edges, stats, binning)

    @property
    def positives(self) -> np.ndarray:
        """Number of positives per bin, shape (M,), int64."""
        return np.rint(self.stats.sum_target).astype(np.int64)

    @property
    def ece(self) -> float:
        """The ECE of these bins (the same number the metrics report)."""
        return self.stats.ece()

    @property
    def mce(self) -> float:
        """The MCE of these bins."""
        return self.stats.mce()


def reliability_curve(
    scores, targets, *, n_bins: int = 15, scheme: Scheme = "width"
) -> ReliabilityCurve:
    """The reliability curve of scores against 0/1 targets.

    Works for all three notions: pass the positive-class score (binary), one
    class's column against ``label == k`` (one vs rest), or the top-label
    confidence against correctness (see :func:`calibration_core.notion_scores`).

    Parameters
    ----------
    scores : array-like, shape (N,)
        Scores in [0, 1].
    targets : array-like, shape (N,)
        0/1 outcomes.
    n_bins : int
        Number of bins M.
    scheme : {"width", "frequency"}

    Returns
    -------
    ReliabilityCurve
        x = mean score per bin, y = observed frequency, counts and edges.
    """
    s = check_scores(scores)
    t = check_binary_targets(targets, s.shape[0])
    binning = Binning(scheme, n_bins)
    return ReliabilityCurve.from_statistics(binning.statistics(s, t), binning)
