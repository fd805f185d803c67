"""Load-time sorted scores for re-binning in O(M log N): :class:`SortedScores`.

Sorting once costs O(N log N); afterwards every change of bin count or scheme
is ``M`` binary searches and differences of cumulative sums. Equal-width bins
are searched with the exact float64 thresholds of the floor rule
(:func:`~calibration_core.binning.width.width_thresholds`), so the statistics
equal those of a one-off pass (:meth:`calibration_core.binning.Binning.statistics`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .statistics import BinStatistics
from .width import padded_width_thresholds, width_edges

if TYPE_CHECKING:
    from .engine import Binning


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
        # so their order does not matter: the default (SIMD) argsort, not a
        # slower stable one.
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
            edges = width_edges(binning.n_bins)  # shared, read-only
            thresholds = padded_width_thresholds(binning.n_bins)
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
