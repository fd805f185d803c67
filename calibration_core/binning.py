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

Modules
-------
This module holds :class:`Binning` and the argument check; the parts it uses
live beside it and are re-exported here, so ``from calibration_core.binning
import X`` works for all of them:

- :mod:`~calibration_core.binning_statistics`: :class:`BinStatistics` and
  :func:`stack_statistics`.
- :mod:`~calibration_core.binning_counters`: the one-pass block counters
  :class:`ScoreBinCounter` and :class:`ClasswiseBinCounter`, block sizes
  (:data:`BLOCK_ELEMENTS`, :func:`block_rows`).
- :mod:`~calibration_core.binning_sorted`: :class:`SortedScores`, re-binning
  in O(M log N) from scores sorted once.
- :mod:`~calibration_core.binning_width`: the equal-width rule's exact
  thresholds (:func:`width_thresholds`) and cached edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .binning_counters import (
    BLOCK_ELEMENTS,
    MAX_BLOCK_ELEMENTS,
    MIN_BLOCK_ROWS,
    ClasswiseBinCounter,
    ScoreBinCounter,
    block_rows,
)
from .binning_sorted import SortedScores
from .binning_statistics import BinStatistics, stack_statistics
from .binning_width import width_edges, width_thresholds
from .errors import CalibrationInputError

__all__ = [
    "BLOCK_ELEMENTS",
    "MAX_BINS",
    "MAX_BLOCK_ELEMENTS",
    "MIN_BLOCK_ROWS",
    "SCHEMES",
    "BinStatistics",
    "Binning",
    "ClasswiseBinCounter",
    "Scheme",
    "ScoreBinCounter",
    "SortedScores",
    "block_rows",
    "check_binning_args",
    "stack_statistics",
    "width_thresholds",
]

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
            return width_edges(self.n_bins).copy()
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
            return width_edges(self.n_bins).copy()
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
