"""Calibration errors and proper scoring rules (survey arXiv 2112.10327, §3-§4).

All ECE/MCE functions bin through :class:`calibration_core.binning.Binning`
(see its module docstring for edges, ties and empty bins), so that the
metrics table and the reliability diagrams can never disagree.

Every function takes ``f(probs, labels=None, *, ...)``: probability rows
(N, K), an (N,) vector read as P(class 1) of a binary problem, or a
:class:`~calibration_core.Predictions` (see
:func:`~calibration_core.predictions.measure_inputs`, the one rule of inputs
and notions of every measure).

* ``ece`` / ``mce``: any notion (``notion=None``: ``"binary"`` for an (N,)
  vector, ``"confidence"`` for probability rows); the functions below are the
  same measures with the notion in their name.
* ``binary_ece`` / ``binary_mce`` (defs. 1-2): the positive-class score
  against the 0/1 label.
* ``classwise_ece`` (def. 4): the mean over the K classes of the one-vs-rest
  ECE; ``classwise_mce`` (def. 5): the largest bin gap over all classes and
  bins.
* ``confidence_ece`` / ``confidence_mce`` (def. 6): the top probability
  against whether the top class is right (ties to the lowest class index).
  An (N,) vector is refused: it is P(class 1), not top-class confidences
  (for those, with a 0/1 correctness column, use ``binary_ece``).
* ``brier_score`` (eq. 1): **summed over classes**, averaged over instances,
  so it lies in [0, 2]. For a binary problem it is twice scikit-learn's
  ``brier_score_loss``, which scores the positive column only.
* ``log_loss`` (eq. 2): mean negative log-probability of the true class, the
  probability clipped below at ``eps``.
"""

from __future__ import annotations

import numpy as np

from .binning import Binning, BinStatistics, Scheme, stack_statistics
from .errors import CalibrationInputError
from .notions import check_ece_notion, notion_scores, top_label_block
from .predictions import measure_inputs
from .validation import check_prob_matrix, check_scores, prob_blocks, raise_prob_error

#: Default lower clip for the log-loss.
LOG_LOSS_EPS = 1e-15

# Every function below reads its input once, in cache-sized blocks that are
# validated and used while they are in cache (see validation.prob_blocks).


def _probs_labels(
    probs, labels, measure: str, notion: str | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Shape-checked probabilities (values not yet checked), checked labels, and K."""
    arr, y, _ = measure_inputs(probs, labels, notion=notion, measure=measure, validate=False)
    return arr, y, 2 if arr.ndim == 1 else arr.shape[1]


def _positive_scores(arr: np.ndarray, measure: str) -> np.ndarray:
    """The validated positive-class scores of (N,) scores or (N, 2) rows."""
    if arr.ndim == 1:
        return check_scores(arr)
    if arr.shape[1] != 2:
        raise CalibrationInputError(
            f"{measure} needs a binary problem (an (N,) score or 2 columns), these "
            f"predictions have {arr.shape[1]} classes; use the confidence or classwise "
            "notion (confidence_ece, classwise_ece, or notion=...)."
        )
    for _ in prob_blocks(arr):  # validate the rows, then keep the positive column
        pass
    return np.ascontiguousarray(arr[:, 1], dtype=np.float64)


def _column(arr: np.ndarray, j: int) -> np.ndarray:
    """Class ``j``'s column as contiguous float64 (``1 - s`` or ``s`` for binary scores)."""
    if arr.ndim == 1:
        s = arr.astype(np.float64, copy=False)
        return 1.0 - s if j == 0 else s
    return np.ascontiguousarray(arr[:, j], dtype=np.float64)


def _confidence_bins(arr: np.ndarray, y: np.ndarray, binning: Binning) -> BinStatistics:
    """Top-label statistics of checked (N, K) rows, validated block by block."""
    n = arr.shape[0]
    width = binning.scheme == "width"
    if width:
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
        if width:
            counter.add(conf, ok)
        else:
            confidence[start:stop] = conf
            correct[start:stop] = ok
    if width:
        return counter.statistics(binning.edges())
    return binning.statistics(confidence, correct)


def _binary_bins(probs, labels, measure: str, binning: Binning) -> BinStatistics:
    """Statistics of the positive-class score of a binary problem's input."""
    arr, y, _ = _probs_labels(probs, labels, measure, "binary")
    return binning.statistics(_positive_scores(arr, measure), y)


def _classwise_bins(arr: np.ndarray, y: np.ndarray, k: int, binning: Binning) -> BinStatistics:
    """Stacked one-vs-rest statistics of checked input, arrays of shape (K, M)."""
    if binning.scheme == "width":
        counter = binning.classwise_counter(k)
        for start, block in prob_blocks(arr):
            counter.add(block, y[start : start + block.shape[0]])
        return counter.statistics()
    for _ in prob_blocks(arr):  # validate; each class's column is then binned on its own
        pass
    return stack_statistics([binning.statistics(_column(arr, j), y == j) for j in range(k)])


# ----------------------------------------------------------- bin statistics
def binary_statistics(
    probs, labels=None, *, n_bins: int = 15, scheme: Scheme = "width"
) -> BinStatistics:
    """Per-bin statistics of a binary problem's positive-class scores.

    Parameters
    ----------
    probs : array-like, shape (N,) or (N, 2), or Predictions
        Positive-class scores P(class 1), or two-column probability rows.
    labels : array-like, shape (N,), optional
        0/1 labels; taken from ``probs`` when it is a Predictions.
    n_bins, scheme
        See :class:`~calibration_core.binning.Binning`.
    """
    return _binary_bins(probs, labels, "binary_statistics", Binning(scheme, n_bins))


def confidence_statistics(
    probs, labels=None, *, n_bins: int = 15, scheme: Scheme = "width"
) -> BinStatistics:
    """Per-bin statistics of top-label confidence against correctness.

    Parameters
    ----------
    probs : array-like, shape (N, K), or Predictions
        Probability rows (an (N,) vector is refused: see :func:`confidence_ece`).
    labels : array-like, shape (N,), optional
        Class indices; taken from ``probs`` when it is a Predictions.
    """
    arr, y, _ = _probs_labels(probs, labels, "confidence_statistics", "confidence")
    return _confidence_bins(arr, y, Binning(scheme, n_bins))


def classwise_statistics(
    probs, labels=None, *, n_bins: int = 15, scheme: Scheme = "width"
) -> BinStatistics:
    """Stacked one-vs-rest statistics, arrays of shape (K, M).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    """
    arr, y, k = _probs_labels(probs, labels, "classwise_statistics", "classwise")
    return _classwise_bins(arr, y, k, Binning(scheme, n_bins))


def calibration_statistics(
    probs,
    labels=None,
    *,
    notion: str | None = None,
    class_index: int | None = None,
    n_bins: int = 15,
    scheme: Scheme = "width",
) -> BinStatistics:
    """Per-bin statistics of any notion (the bins behind :func:`ece` and :func:`mce`).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
        Class indices; taken from ``probs`` when it is a Predictions.
    notion : {"confidence", "binary", "class", "classwise"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for rows.
    class_index : int, optional
        The class for ``notion="class"``.
    n_bins, scheme
        See :class:`~calibration_core.binning.Binning`.

    Returns
    -------
    BinStatistics
        Arrays of shape (M,), or (K, M) for ``"classwise"``.
    """
    return _notion_bins(
        probs, labels, notion, class_index, Binning(scheme, n_bins), "calibration_statistics"
    )


def _notion_bins(probs, labels, notion, class_index, binning: Binning, measure: str):
    """Bin statistics of any notion of checked input (see :func:`calibration_statistics`)."""
    arr, y, notion = measure_inputs(probs, labels, notion=notion, measure=measure, validate=False)
    k = 2 if arr.ndim == 1 else arr.shape[1]
    if check_ece_notion(notion) == "confidence":
        return _confidence_bins(arr, y, binning)
    if notion == "classwise":
        return _classwise_bins(arr, y, k, binning)
    if notion == "binary":
        return binning.statistics(_positive_scores(arr, f"{measure} (binary notion)"), y)
    scores, targets = notion_scores(check_prob_matrix(arr), y, "class", class_index)
    return binning.statistics(scores, targets)


# ------------------------------------------------------------------ errors
def binary_ece(probs, labels=None, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
    """Binary expected calibration error (survey def. 1).

    Parameters
    ----------
    probs : array-like, shape (N,) or (N, 2), or Predictions
        Positive-class scores in [0, 1], or two-column probability rows. For
        top-class confidences with a 0/1 correctness column (netcal's and
        torchmetrics' idiom), this is the top-label ECE.
    labels : array-like, shape (N,), optional
        0/1 labels; taken from ``probs`` when it is a Predictions.
    n_bins : int
        Number of bins M.
    scheme : {"width", "frequency"}
        Equal-width or equal-frequency bins.

    Returns
    -------
    float
        ``sum_m |B_m|/N * |ybar(B_m) - sbar(B_m)|``, in [0, 1].
    """
    return _binary_bins(probs, labels, "binary_ece", Binning(scheme, n_bins)).ece()


def binary_mce(probs, labels=None, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
    """Binary maximum calibration error (survey def. 2): the largest bin gap.

    Parameters and conventions as :func:`binary_ece`; empty bins are ignored.
    """
    return _binary_bins(probs, labels, "binary_mce", Binning(scheme, n_bins)).mce()


def classwise_ece(probs, labels=None, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
    """Classwise ECE (survey def. 4): the mean over classes of one-vs-rest ECE.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
        Probability rows, or P(class 1) of a binary problem.
    labels : array-like, shape (N,), optional
        Class indices in 0..K-1; taken from ``probs`` when it is a Predictions.
    n_bins, scheme
        As :func:`binary_ece`; each class column is binned on its own.

    Returns
    -------
    float
    """
    arr, y, k = _probs_labels(probs, labels, "classwise_ece", "classwise")
    return float(np.mean(_classwise_bins(arr, y, k, Binning(scheme, n_bins)).ece()))


def classwise_mce(probs, labels=None, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
    """Classwise MCE (survey def. 5): the largest bin gap over all classes and bins.

    Parameters as :func:`classwise_ece`.
    """
    arr, y, k = _probs_labels(probs, labels, "classwise_mce", "classwise")
    return float(np.max(_classwise_bins(arr, y, k, Binning(scheme, n_bins)).mce()))


def confidence_ece(probs, labels=None, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
    """Confidence (top-label) ECE (survey def. 6).

    Parameters
    ----------
    probs : array-like, shape (N, K), or Predictions
        Probability rows. An (N,) vector is refused with a
        :class:`~calibration_core.CalibrationInputError`: it means P(class 1) of
        a binary problem, not top-class confidences. For confidences with a 0/1
        correctness column use ``binary_ece(conf, correct)``; for a binary
        P(class 1) pass ``np.column_stack([1 - p, p])``.
    labels : array-like, shape (N,), optional
        Class indices in 0..K-1; taken from ``probs`` when it is a Predictions.
    n_bins, scheme
        As :func:`binary_ece`, applied to the top probability.

    Returns
    -------
    float
        ``sum_m |B_m|/N * |acc(B_m) - conf(B_m)|``.
    """
    arr, y, _ = _probs_labels(probs, labels, "confidence_ece", "confidence")
    return _confidence_bins(arr, y, Binning(scheme, n_bins)).ece()


def confidence_mce(probs, labels=None, *, n_bins: int = 15, scheme: Scheme = "width") -> float:
    """Confidence (top-label) MCE: the largest bin gap of :func:`confidence_ece`."""
    arr, y, _ = _probs_labels(probs, labels, "confidence_mce", "confidence")
    return _confidence_bins(arr, y, Binning(scheme, n_bins)).mce()


def ece(
    probs,
    labels=None,
    *,
    notion: str | None = None,
    class_index: int | None = None,
    n_bins: int = 15,
    scheme: Scheme = "width",
) -> float:
    """Binned expected calibration error of any notion.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
        Probability rows, or P(class 1) of a binary problem.
    labels : array-like, shape (N,), optional
        Class indices; taken from ``probs`` when it is a Predictions.
    notion : {"confidence", "binary", "class", "classwise"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for rows. The
        top-label notion of an (N,) vector is refused (see :func:`confidence_ece`).
    class_index : int, optional
        The class for ``notion="class"``.
    n_bins, scheme
        As :func:`binary_ece`.

    Returns
    -------
    float
        :func:`confidence_ece`, :func:`binary_ece`, the one-vs-rest ECE of
        ``class_index``, or :func:`classwise_ece`, as ``notion`` says.
    """
    stats = _notion_bins(probs, labels, notion, class_index, Binning(scheme, n_bins), "ece")
    return float(np.mean(stats.ece()))


def mce(
    probs,
    labels=None,
    *,
    notion: str | None = None,
    class_index: int | None = None,
    n_bins: int = 15,
    scheme: Scheme = "width",
) -> float:
    """Maximum calibration error of any notion: the largest bin gap.

    Parameters and notions as :func:`ece`; ``"classwise"`` takes the largest
    gap over all classes and bins (:func:`classwise_mce`).
    """
    stats = _notion_bins(probs, labels, notion, class_index, Binning(scheme, n_bins), "mce")
    return float(np.max(stats.mce()))


# ----------------------------------------------------------- scoring rules
def _true_class_prob(block: np.ndarray, y: np.ndarray) -> np.ndarray:
    n, k = block.shape
    return block.reshape(-1).take(y + np.arange(0, n * k, k))


def brier_score(probs, labels=None) -> float:
    """Multiclass Brier score (survey eq. 1), summed over classes.

    ``(1/N) sum_i sum_j (p_ij - y_ij)^2`` with ``y`` one-hot, in [0, 2].
    For binary problems this is twice scikit-learn's ``brier_score_loss``.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional

    Returns
    -------
    float
    """
    arr, y, _ = _probs_labels(probs, labels, "brier_score")
    total = 0.0
    for start, block in prob_blocks(arr):
        # sum_j (p_j - y_j)^2 = sum_j p_j^2 - 2 p_true + 1, summed over the block's rows
        p_true = _true_class_prob(block, y[start : start + block.shape[0]])
        per_row = np.einsum("ij,ij->i", block, block)
        per_row -= 2.0 * p_true
        per_row += 1.0
        total += float(per_row.sum())
    return total / arr.shape[0]


def log_loss(probs, labels=None, *, eps: float = LOG_LOSS_EPS) -> float:
    """Log-loss (survey eq. 2): mean of ``-ln p_{i, y_i}``.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    eps : float
        True-class probabilities are clipped to ``[eps, 1]`` so that a
        confident mistake costs ``-ln(eps)`` (34.5 for 1e-15), not infinity.

    Returns
    -------
    float
    """
    arr, y, _ = _probs_labels(probs, labels, "log_loss")
    total = 0.0
    for start, block in prob_blocks(arr):
        p_true = _true_class_prob(block, y[start : start + block.shape[0]])
        total += float(np.log(np.clip(p_true, eps, 1.0, out=p_true), out=p_true).sum())
    return -total / arr.shape[0]


def log_loss_per_row(probs, labels=None, *, eps: float = LOG_LOSS_EPS) -> np.ndarray:
    """Each row's log-loss ``-ln p_{i, y_i}`` (clipped as in :func:`log_loss`).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    eps : float
        Lower clip of the true-class probability.

    Returns
    -------
    numpy.ndarray, shape (N,)
        Per-row losses whose mean is :func:`log_loss`; paired comparisons of
        two calibrated versions of the same rows (and bootstrap resamples)
        work on these.
    """
    arr, y, _ = _probs_labels(probs, labels, "log_loss_per_row")
    out = np.empty(arr.shape[0], dtype=np.float64)
    for start, block in prob_blocks(arr):
        stop = start + block.shape[0]
        p_true = _true_class_prob(block, y[start:stop])
        out[start:stop] = -np.log(np.clip(p_true, eps, 1.0))
    return out


def accuracy(probs, labels=None) -> float:
    """Share of rows whose top class (ties to the lowest index) is the label."""
    arr, y, _ = _probs_labels(probs, labels, "accuracy")
    hits = 0
    for start, block in prob_blocks(arr):
        hits += int(np.count_nonzero(top_label_block(block, y[start : start + block.shape[0]])[1]))
    return hits / arr.shape[0]
