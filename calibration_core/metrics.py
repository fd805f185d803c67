"""Calibration errors and proper scoring rules (survey arXiv 2112.10327, §3-§4).

All ECE/MCE functions bin through :class:`calibration_core.binning.Binning`
(see its module docstring for edges, ties and empty bins), so that the
metrics table and the reliability diagrams can never disagree.

* ``binary_ece`` / ``binary_mce`` (defs. 1-2): the positive-class score
  against the 0/1 label.
* ``classwise_ece`` (def. 4): the mean over the K classes of the one-vs-rest
  ECE; ``classwise_mce`` (def. 5): the largest bin gap over all classes and
  bins.
* ``confidence_ece`` / ``confidence_mce`` (def. 6): the top probability
  against whether the top class is right (ties to the lowest class index).
* ``brier_score`` (eq. 1): **summed over classes**, averaged over instances,
  so it lies in [0, 2]. For a binary problem it is twice scikit-learn's
  ``brier_score_loss``, which scores the positive column only.
* ``log_loss`` (eq. 2): mean negative log-probability of the true class, the
  probability clipped below at ``eps``.
"""

from __future__ import annotations

import numpy as np

from .binning import Binning, BinStatistics
from .notions import top_label
from .validation import check_labels, check_prob_matrix, check_scores

#: Default lower clip for the log-loss.
LOG_LOSS_EPS = 1e-15


def _probs_labels(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    p = check_prob_matrix(probs)
    y = check_labels(labels, p.shape[0], p.shape[1])
    return p, y


def _binary_inputs(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(scores)
    if arr.ndim == 2 and arr.shape[1] == 2:
        s = check_prob_matrix(arr)[:, 1].copy()
    else:
        s = check_scores(arr)
    return s, check_labels(labels, s.shape[0], 2)


# ----------------------------------------------------------- bin statistics
def binary_statistics(scores, labels, *, n_bins: int = 15, scheme: str = "width") -> BinStatistics:
    """Per-bin statistics of a binary problem's positive-class scores.

    Parameters
    ----------
    scores : array-like, shape (N,) or (N, 2)
        Positive-class scores, or two-column probability rows.
    labels : array-like, shape (N,)
        0/1 labels.
    n_bins, scheme
        See :class:`~calibration_core.binning.Binning`.
    """
    s, y = _binary_inputs(scores, labels)
    return Binning(scheme, n_bins).statistics(s, y)


def confidence_statistics(
    probs, labels, *, n_bins: int = 15, scheme: str = "width"
) -> BinStatistics:
    """Per-bin statistics of top-label confidence against correctness.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
    labels : array-like, shape (N,)
    """
    p, y = _probs_labels(probs, labels)
    confidence, correct = top_label(p, y)
    return Binning(scheme, n_bins).statistics(confidence, correct)


def classwise_statistics(
    probs, labels, *, n_bins: int = 15, scheme: str = "width"
) -> BinStatistics:
    """Stacked one-vs-rest statistics, arrays of shape (K, M).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
    labels : array-like, shape (N,)
    """
    p, y = _probs_labels(probs, labels)
    return Binning(scheme, n_bins).classwise_statistics(p, y)


# ------------------------------------------------------------------ errors
def binary_ece(scores, labels, *, n_bins: int = 15, scheme: str = "width") -> float:
    """Binary expected calibration error (survey def. 1).

    Parameters
    ----------
    scores : array-like, shape (N,) or (N, 2)
        Positive-class scores in [0, 1], or two-column probability rows.
    labels : array-like, shape (N,)
        0/1 labels.
    n_bins : int
        Number of bins M.
    scheme : {"width", "frequency"}
        Equal-width or equal-frequency bins.

    Returns
    -------
    float
        ``sum_m |B_m|/N * |ybar(B_m) - sbar(B_m)|``, in [0, 1].
    """
    return binary_statistics(scores, labels, n_bins=n_bins, scheme=scheme).ece()


def binary_mce(scores, labels, *, n_bins: int = 15, scheme: str = "width") -> float:
    """Binary maximum calibration error (survey def. 2): the largest bin gap.

    Parameters and conventions as :func:`binary_ece`; empty bins are ignored.
    """
    return binary_statistics(scores, labels, n_bins=n_bins, scheme=scheme).mce()


def classwise_ece(probs, labels, *, n_bins: int = 15, scheme: str = "width") -> float:
    """Classwise ECE (survey def. 4): the mean over classes of one-vs-rest ECE.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
        Probability rows, or positive-class scores of a binary problem.
    labels : array-like, shape (N,)
        Class indices in 0..K-1.
    n_bins, scheme
        As :func:`binary_ece`; each class column is binned on its own.

    Returns
    -------
    float
    """
    return float(np.mean(classwise_statistics(probs, labels, n_bins=n_bins, scheme=scheme).ece()))


def classwise_mce(probs, labels, *, n_bins: int = 15, scheme: str = "width") -> float:
    """Classwise MCE (survey def. 5): the largest bin gap over all classes and bins.

    Parameters as :func:`classwise_ece`.
    """
    return float(np.max(classwise_statistics(probs, labels, n_bins=n_bins, scheme=scheme).mce()))


def confidence_ece(probs, labels, *, n_bins: int = 15, scheme: str = "width") -> float:
    """Confidence (top-label) ECE (survey def. 6).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
        Probability rows, or positive-class scores of a binary problem.
    labels : array-like, shape (N,)
        Class indices in 0..K-1.
    n_bins, scheme
        As :func:`binary_ece`, applied to the top probability.

    Returns
    -------
    float
        ``sum_m |B_m|/N * |acc(B_m) - conf(B_m)|``.
    """
    return confidence_statistics(probs, labels, n_bins=n_bins, scheme=scheme).ece()


def confidence_mce(probs, labels, *, n_bins: int = 15, scheme: str = "width") -> float:
    """Confidence (top-label) MCE: the largest bin gap of :func:`confidence_ece`."""
    return confidence_statistics(probs, labels, n_bins=n_bins, scheme=scheme).mce()


# ----------------------------------------------------------- scoring rules
def _true_class_prob(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.take_along_axis(p, y[:, None], axis=1)[:, 0]


def brier_score(probs, labels) -> float:
    """Multiclass Brier score (survey eq. 1), summed over classes.

    ``(1/N) sum_i sum_j (p_ij - y_ij)^2`` with ``y`` one-hot, in [0, 2].
    For binary problems this is twice scikit-learn's ``brier_score_loss``.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
    labels : array-like, shape (N,)

    Returns
    -------
    float
    """
    p, y = _probs_labels(probs, labels)
    squares = np.einsum("ij,ij->i", p, p)
    return float(np.mean(squares - 2.0 * _true_class_prob(p, y) + 1.0))


def log_loss(probs, labels, *, eps: float = LOG_LOSS_EPS) -> float:
    """Log-loss (survey eq. 2): mean of ``-ln p_{i, y_i}``.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
    labels : array-like, shape (N,)
    eps : float
        True-class probabilities are clipped to ``[eps, 1]`` so that a
        confident mistake costs ``-ln(eps)`` (34.5 for 1e-15), not infinity.

    Returns
    -------
    float
    """
    p, y = _probs_labels(probs, labels)
    return float(-np.mean(np.log(np.clip(_true_class_prob(p, y), eps, 1.0))))


def accuracy(probs, labels) -> float:
    """Share of rows whose top class (ties to the lowest index) is the label."""
    p, y = _probs_labels(probs, labels)
    return float(np.mean(p.argmax(axis=1) == y))
