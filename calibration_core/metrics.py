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

from .binning import Binning, BinStatistics, Scheme, stack_statistics
from .notions import top_label_block
from .validation import (
    check_labels,
    check_scores,
    prob_array,
    prob_blocks,
    raise_prob_error,
)

#: Default lower clip for the log-loss.
LOG_LOSS_EPS = 1e-15

# Every function below reads its input once, in cache-sized blocks that are
# validated and used while they are in cache (see validation.prob_blocks).


def _probs_labels(probs, labels) -> tuple[np.ndarray, np.ndarray, int]:
    """Shape-checked probabilities (not yet value-checked), checked labels, and K."""
    arr = prob_array(probs)
    k = 2 if arr.ndim == 1 else arr.shape[1]
    return arr, check_labels(labels, arr.shape[0], k), k


def _binary_inputs(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(scores)
    if arr.ndim == 2 and arr.shape[1] == 2:
        for _ in prob_blocks(arr):  # validate the rows, then keep the positive column
            pass
        s = np.ascontiguousarray(arr[:, 1], dtype=np.float64)
    else:
        s = check_scores(arr)
    return s, check_labels(labels, s.shape[0], 2)


def _column(arr: np.ndarray, j: int) -> np.ndarray:
    """Class ``j``'s column as contiguous float64 (``1 - s`` or ``s`` for binary scores)."""
    if arr.ndim == 1:
        s = arr.astype(np.float64, copy=False)
        return 1.0 - s if j == 0 else s
    return np.ascontiguousarray(arr[:, j], dtype=np.float64)


# ----------------------------------------------------------- bin statistics
def binary_statistics(
    scores, labels, *, n_bins: int = 15, scheme: Scheme = "width"
) -> BinStatistics:
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
    probs, labels, *, n_bins: int = 15, scheme: Scheme = "width"
) -> BinStatistics:
    """Per-bin statistics of top-label confidence against correctness.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
    labels : array-like, shape (N,)
    """
    arr, y, _ = _probs_labels(probs, labels)
    binning = Binning(scheme, n_bins)
    n = arr.shape[0]
    if scheme == "width":
        counter = binning.counter()
    else:  # the edges need every confidence first
        confidence = np.empty(n)
        correct = np.empty(n, dtype=np.bool_)
    # The row maximum is the confidence: check it instead of a separate max pass.
    for start, block in prob_blocks(arr, check_max=False):
        stop = start + block.shape[0]
        conf, ok = top_label_block(block, y[start:stop])
        if not conf.max() <= 1.0:
            raise_prob_error(arr)
        if scheme == "width":
            counter.add(conf, ok)
        else:
            confidence[start:stop] = conf
            correct[start:stop] = ok
    if scheme == "width":
        return counter.statistics(binning.edges())
    return binning.statistics(confidence, correct)


def classwise_statistics(
    probs, labels, *, n_bins: int = 15, scheme: Scheme = "width"
) -> BinStatistics:
    """Stacked one-vs-rest statistics, arrays of shape (K, M).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
    labels : array-like, shape (N,)
    """
    arr, y, k = _probs_labels(probs, labels)
    binning = Binning(scheme, n_bins)
    if scheme == "width":
        counter = binning.classwise_counter(k)
        for start, block in prob_blocks(arr):
            counter.add(block, y[start : start + block.shape[0]])
        return counter.statistics()
    for _ in prob_blocks(arr):  # validate; each class's column is then binned on its own
        pass
    return stack_statistics([binning.statistics(_column(arr, j), y == j) for j in range(k)])


# ------------------------------------------------------------------ errors
def binary_ece(scores, labels, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
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


def binary_mce(scores, labels, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
    """Binary maximum calibration error (survey def. 2): the largest bin gap.

    Parameters and conventions as :func:`binary_ece`; empty bins are ignored.
    """
    return binary_statistics(scores, labels, n_bins=n_bins, scheme=scheme).mce()


def classwise_ece(probs, labels, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
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


def classwise_mce(probs, labels, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
    """Classwise MCE (survey def. 5): the largest bin gap over all classes and bins.

    Parameters as :func:`classwise_ece`.
    """
    return float(np.max(classwise_statistics(probs, labels, n_bins=n_bins, scheme=scheme).mce()))


def confidence_ece(probs, labels, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
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


def confidence_mce(probs, labels, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
    """Confidence (top-label) MCE: the largest bin gap of :func:`confidence_ece`."""
    return confidence_statistics(probs, labels, n_bins=n_bins, scheme=scheme).mce()


# ----------------------------------------------------------- scoring rules
def _true_class_prob(block: np.ndarray, y: np.ndarray) -> np.ndarray:
    n, k = block.shape
    return block.reshape(-1).take(y + np.arange(0, n * k, k))


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
    arr, y, _ = _probs_labels(probs, labels)
    total = 0.0
    for start, block in prob_blocks(arr):
        # sum_j (p_j - y_j)^2 = sum_j p_j^2 - 2 p_true + 1, summed over the block's rows
        p_true = _true_class_prob(block, y[start : start + block.shape[0]])
        per_row = np.einsum("ij,ij->i", block, block)
        per_row -= 2.0 * p_true
        per_row += 1.0
        total += float(per_row.sum())
    return total / arr.shape[0]


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
    arr, y, _ = _probs_labels(probs, labels)
    total = 0.0
    for start, block in prob_blocks(arr):
        p_true = _true_class_prob(block, y[start : start + block.shape[0]])
        total += float(np.log(np.clip(p_true, eps, 1.0, out=p_true), out=p_true).sum())
    return -total / arr.shape[0]


def log_loss_per_row(probs, labels, *, eps: float = LOG_LOSS_EPS) -> np.ndarray:
    """Each row's log-loss ``-ln p_{i, y_i}`` (clipped as in :func:`log_loss`).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
    labels : array-like, shape (N,)
    eps : float
        Lower clip of the true-class probability.

    Returns
    -------
    numpy.ndarray, shape (N,)
        Per-row losses whose mean is :func:`log_loss`; paired comparisons of
        two calibrated versions of the same rows (and bootstrap resamples)
        work on these.
    """
    arr, y, _ = _probs_labels(probs, labels)
    out = np.empty(arr.shape[0], dtype=np.float64)
    for start, block in prob_blocks(arr):
        stop = start + block.shape[0]
        p_true = _true_class_prob(block, y[start:stop])
        out[start:stop] = -np.log(np.clip(p_true, eps, 1.0))
    return out


def accuracy(probs, labels) -> float:
    """Share of rows whose top class (ties to the lowest index) is the label."""
    arr, y, _ = _probs_labels(probs, labels)
    hits = 0
    for start, block in prob_blocks(arr):
        hits += int(np.count_nonzero(top_label_block(block, y[start : start + block.shape[0]])[1]))
    return hits / arr.shape[0]
