r"""The Brier and log-loss decompositions of a dataset, from mergeable per-bin sums.

:mod:`calibration_core.measures.decomposition` splits a score into calibration,
refinement and a binning residual, estimating ``c = E[Y | S]`` per class
column (one vs rest; for K = 2 the positive column, ``c_i0 = 1 - c_i1``) by
the frequency of the class in the score's bin. Here the same numbers come
from sums over the rows of each bin, which merge by addition like every other
statistic of :class:`~.summary.ModelSummary`; :class:`PartSums` holds the sums
beyond a column's count ``n_b``, score sum ``S_b`` and positives ``P_b``.

Brier, any K
------------
With ``c_b`` the frequency of bin ``b`` and ``Q_b`` the sum of the scores of
its positives (rows labelled with the column), summed over columns and bins:

* ``refinement = sum n_b c_b (1 - c_b) / N``;
* ``residual = -2 sum n_b cov_b(s, y) / N = 2 sum (c_b S_b - Q_b) / N``;
* ``calibration = (sum_ij s_ij^2 - 2 sum c_b S_b + sum n_b c_b^2) / N``, where
  ``sum_ij s_ij^2 = brier_sum + 2 sum_i s_{i y_i} - N`` comes from the Brier
  total and ``sum_i s_{i y_i} = sum Q_b``.

For K = 2 the core bins the positive column for both columns, so column 0
needs its own sums over the bins of ``p1``: ``sum p0`` and the sum of ``p0``
over the rows labelled 0 (:attr:`PartSums.binary`; with ``p0 = 1 - p1`` they
would follow from column 1's, but rows used as stored may sum to 1 only within
the loader's exact tolerance of 1e-12, and deriving them would be off by
``2 mean cov_b(p0 + p1 - 1, y_0)``, up to that tolerance).

Log-loss, K = 2 only
--------------------
The core renormalises each row's ``c_i`` over the classes (``z_i = sum_j c_ij``)
and takes logs of it: ``calibration = mean(A_i / z_i - ln z_i)`` with
``A_i = sum_j c_ij ln(c_ij / max(s_ij, eps))``, ``refinement = mean(ln z_i - ln
c_{i y_i})``. For K = 2, ``c_i0 = 1 - c_i1`` depends on the bin of ``p1`` alone,
so every term is a sum over that bin: its count, positives, and the sums of
``ln max(p0, eps)`` and ``ln max(p1, eps)`` (:attr:`PartSums.binary`).
For K > 2, ``z_i`` and ``c_{i y_i} / z_i`` depend on the bins of all K columns of
row ``i`` at once (a cell of the K-dimensional grid, ``M^K`` of them), not on
per-column bins, so no per-cell sum gives them: the log-loss parts of a
dataset with more than two classes are ``None`` (:data:`LOG_LOSS_PARTS_K2`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import BinStatistics
from ..errors import CalibrationInputError
from ..metrics import LOG_LOSS_EPS
from .cells import bin_sums

__all__ = ["LOG_LOSS_PARTS_K2", "PartSums", "parts_from_sums"]

#: Why the log-loss parts of a dataset are given for two classes only.
LOG_LOSS_PARTS_K2 = (
    "a dataset's log-loss parts are computed for two classes only, because for K > 2 they "
    "renormalise each row's estimated class frequencies over its K bins at once, which no "
    "per-bin sum of one class column gives"
)


@dataclass(frozen=True, eq=False)
class PartSums:
    """Sums over the rows of each bin (or cell) that the decompositions need; they add up.

    The last axis is the bins of one binning, or the C + 1 cells of the
    Dask engine (:meth:`in_bins` adds them up into equal-width bins).

    Attributes
    ----------
    positive_score : numpy.ndarray of float64, shape (K, B)
        Per class column ``j`` and bin of that column: the sum of ``s_ij`` over
        the rows labelled ``j``.
    binary : numpy.ndarray of float64, shape (4, B), or None unless K = 2
        Per bin of the positive column ``p1``: sums of ``p0``, of ``p0`` over the
        rows labelled 0, of ``ln max(p0, eps)`` and of ``ln max(p1, eps)``.
    """

    positive_score: np.ndarray
    binary: np.ndarray | None

    def __add__(self, other: PartSums) -> PartSums:
        if not isinstance(other, PartSums):
            return NotImplemented
        if self.positive_score.shape != other.positive_score.shape:
            raise CalibrationInputError(
                f"part sums of shapes {self.positive_score.shape} and "
                f"{other.positive_score.shape} cannot be merged: the partitions disagree on "
                "the number of classes."
            )
        binary = None if self.binary is None else self.binary + other.binary
        return PartSums(self.positive_score + other.positive_score, binary)

    def in_bins(self, n_bins: int) -> PartSums:
        """The sums of per-cell sums in the ``n_bins`` equal-width bins (1..100)."""
        binary = None if self.binary is None else bin_sums(self.binary, n_bins)
        return PartSums(bin_sums(self.positive_score, n_bins), binary)

    @classmethod
    def of_rows(
        cls, probs: np.ndarray, labels: np.ndarray, edges: list[np.ndarray], positive_score
    ) -> PartSums:
        """The sums of validated rows (N, K) in bins of explicit per-column ``edges``.

        ``positive_score`` (K, M) is given (the bin counters have it,
        :meth:`~calibration_core.binning.ScoreBinCounter.positive_score`); the
        binary sums are computed here on the bins of ``edges[1]`` (scores equal to
        an interior edge go up, as in the core).
        """
        if probs.shape[1] != 2:
            return cls(np.asarray(positive_score), None)
        edge = edges[1]
        idx = np.searchsorted(edge[1:-1], probs[:, 1], side="right")
        p0 = probs[:, 0]
        weights = (
            p0,
            np.where(labels == 0, p0, 0.0),
            np.log(np.maximum(p0, LOG_LOSS_EPS)),
            np.log(np.maximum(probs[:, 1], LOG_LOSS_EPS)),
        )
        m = edge.shape[0] - 1
        binary = np.stack([np.bincount(idx, weights=w, minlength=m) for w in weights])
        return cls(np.asarray(positive_score), binary)


def _groupings(classwise: BinStatistics, sums: PartSums):
    """Per grouping column and bin: count, ``c``, score sum, positives' score sum.

    For K = 2 the two columns of the positive column's bins (``c_0 = 1 - c_1``).
    """
    count = classwise.count.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        freq = np.where(count > 0, classwise.sum_target / count, 0.0)
    if sums.binary is None:
        return count, freq, classwise.sum_score, sums.positive_score
    n1, f1 = count[1], freq[1]
    return (
        np.stack([n1, n1]),
        np.stack([1.0 - f1, f1]),
        np.stack([sums.binary[0], classwise.sum_score[1]]),
        np.stack([sums.binary[1], sums.positive_score[1]]),
    )


def brier_parts(
    classwise: BinStatistics, sums: PartSums, n_samples: int, brier_sum: float
) -> tuple[float, float, float]:
    """``(calibration, refinement, residual)`` of the Brier score (module docstring)."""
    count, c, score, positive_score = _groupings(classwise, sums)
    true_score = float(positive_score.sum())  # sum_i s_{i y_i}
    squares = brier_sum + 2.0 * true_score - n_samples  # sum_ij s_ij^2
    cross = float((c * score).sum())
    spread = float((count * c * c).sum())
    calibration = (squares - 2.0 * cross + spread) / n_samples
    refinement = float((count * c * (1.0 - c)).sum()) / n_samples
    residual = 2.0 * (cross - true_score) / n_samples
    return calibration, refinement, residual


def log_loss_parts(classwise: BinStatistics, sums: PartSums, n_samples: int) -> tuple[float, float]:
    """``(calibration, refinement)`` of the log-loss of a binary model (module docstring)."""
    if sums.binary is None:
        raise ValueError("the log-loss parts need the sums of a binary model (K = 2)")
    used = classwise.count[1] > 0
    n = classwise.count[1][used].astype(np.float64)
    p = classwise.sum_target[1][used]
    c1 = p / n
    c0 = 1.0 - c1
    z = c0 + c1  # as the core adds them: 1 up to rounding
    log_z = np.log(z)
    log0, log1 = sums.binary[2][used], sums.binary[3][used]
    with np.errstate(divide="ignore", invalid="ignore"):
        kl0 = np.where(c0 > 0, c0 * (n * np.log(c0) - log0), 0.0)
        kl1 = np.where(c1 > 0, c1 * (n * np.log(c1) - log1), 0.0)
        true0 = np.where(c0 > 0, (n - p) * np.log(c0), 0.0)
        true1 = np.where(c1 > 0, p * np.log(c1), 0.0)
    calibration = float(((kl0 + kl1) / z - n * log_z).sum()) / n_samples
    refinement = float((n * log_z - true0 - true1).sum()) / n_samples
    return calibration, refinement


def parts_from_sums(
    classwise: BinStatistics, sums: PartSums, n_samples: int, brier_sum: float
) -> dict[str, float | None]:
    """The four parts of :data:`~calibration_core.measures.decomposition.PART_FIELDS` of a model.

    Parameters
    ----------
    classwise : BinStatistics
        The classwise statistics (K, M) of the binning.
    sums : PartSums
        The part sums of the same bins.
    n_samples : int
        N.
    brier_sum : float
        The sum of the rows' Brier scores.

    Returns
    -------
    dict
        Equal to :func:`~calibration_core.score_parts` on the same rows and bins
        (to float rounding); the log-loss parts are None for K > 2
        (:data:`LOG_LOSS_PARTS_K2`).
    """
    calibration, refinement, _ = brier_parts(classwise, sums, n_samples, brier_sum)
    loss: tuple[float | None, float | None] = (None, None)
    if sums.binary is not None:
        loss = log_loss_parts(classwise, sums, n_samples)
    return {
        "brier_calibration": calibration,
        "brier_refinement": refinement,
        "log_loss_calibration": loss[0],
        "log_loss_refinement": loss[1],
    }
