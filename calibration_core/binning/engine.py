"""The binning engine: :class:`Binning` and the check of its arguments.

The contract it implements (edges, ties, empty bins, mergeable sums) is stated
once, in :mod:`calibration_core.binning`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import CalibrationInputError
from .counters import ClasswiseBinCounter, ScoreBinCounter
from .sorted import SortedScores
from .statistics import BinStatistics, stack_statistics
from .width import width_edges

__all__ = ["MAX_BINS", "SCHEMES", "Binning", "Scheme", "check_binning_args"]

Scheme = Literal["width", "frequency"]
SCHEMES: tuple[Scheme, ...] = ("width", "frequency")
MAX_BINS = 10_000


def check_binning_args(n_bins, scheme) -> tuple[int, Scheme]:
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
    return int(n_bins), "width" if scheme == "width" else "frequency"


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
    def edges(self, scores: np.ndarray | None = None) -> np.ndarray:
        """Bin edges for these scores, shape (M + 1,).

        For equal width the edges do not depend on the scores, which may be left out.
        """
        if self.scheme == "width":
            return width_edges(self.n_bins).copy()
        if scores is None:
            raise CalibrationInputError(
                "equal-frequency edges are order statistics of the scores: pass the scores."
            )
        scores = np.asarray(scores, dtype=np.float64)
        positions = self._frequency_positions(scores.shape[0])
        if not positions.size:
            return np.array([0.0, 1.0])
        # The M - 1 order statistics, by a full (SIMD) sort: faster than
        # np.partition with many kth values; both copy the scores once.
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
            scores equal to an interior edge go to the bin above it. By default
            the scheme's (equal width: the floor rule, not a search of edges).
        """
        if edges is not None:
            return np.searchsorted(edges[1:-1], scores, side="right").astype(np.intp, copy=False)
        return self.assign_with_edges(scores)[0]

    def assign_with_edges(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bin index of every score (N,) and the scheme's edges for these scores (M + 1,).

        The edges are computed once (one sort for equal frequency) and returned
        for callers that also need them, e.g. for :meth:`statistics_from_index`.
        """
        edges = self.edges(scores)
        if self.scheme == "frequency":
            return self.assign(scores, edges), edges
        idx = np.multiply(scores, self.n_bins).astype(np.intp)
        np.minimum(idx, self.n_bins - 1, out=idx)
        return idx, edges

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
            sum_target: np.ndarray = both[:, 1].astype(np.float64)
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
