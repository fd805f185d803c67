"""The three calibration notions as (scores, targets) pairs for the binning engine.

* ``"binary"``: the positive-class score ``probs[:, 1]`` against ``label == 1``
  (K = 2 only).
* ``"class"`` (one class vs rest, classwise): ``probs[:, k]`` against
  ``label == k``.
* ``"confidence"`` (top label): the largest probability of each row against
  whether its class is the true one. Ties for the top class go to the lowest
  class index, as ``numpy.argmax`` does.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .binning import block_rows
from .errors import CalibrationInputError

Notion = Literal["confidence", "class", "binary"]
#: The notions of one score column, as :func:`notion_scores` takes them.
NOTIONS: tuple[str, ...] = ("confidence", "class", "binary")
#: What the ECE estimators of :mod:`~calibration_core.measures.ece_variants` and
#: :mod:`~calibration_core.measures.sensitivity` take: a notion, or ``"classwise"``, which is
#: not a notion of one column but the mean over classes of the ``"class"`` value.
ECE_NOTIONS: tuple[str, ...] = ("confidence", "binary", "class", "classwise")


def check_ece_notion(notion) -> str:
    """``notion`` if it is one of :data:`ECE_NOTIONS`, else a :class:`CalibrationInputError`."""
    if notion not in ECE_NOTIONS:
        raise CalibrationInputError(
            f"unknown notion {notion!r}; choose one of {', '.join(ECE_NOTIONS)}."
        )
    return notion


def top_label_block(block: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-label confidence and correctness of one block of rows.

    Parameters
    ----------
    block : numpy.ndarray, shape (n, K), float64
    labels : numpy.ndarray, shape (n,)

    Returns
    -------
    confidence : numpy.ndarray, shape (n,), float64
    correct : numpy.ndarray, shape (n,), bool
    """
    n, k = block.shape
    if k == 2:
        # Two columns: a comparison is far cheaper than a row-wise argmax.
        p0, p1 = block[:, 0], block[:, 1]
        first = p1 > p0  # class 1 only when strictly larger (ties to class 0)
        return np.maximum(p0, p1), first == (labels == 1)
    predicted = block.argmax(axis=1)
    confidence = block.reshape(-1).take(predicted + np.arange(0, n * k, k))
    return confidence, predicted == labels


def top_label(probs: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-label confidence and correctness.

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K)
        Validated probability rows.
    labels : numpy.ndarray, shape (N,)
        Validated class indices.

    Returns
    -------
    confidence : numpy.ndarray, shape (N,), float64
        ``max_k probs[i, k]``.
    correct : numpy.ndarray, shape (N,), intp
        1 where ``argmax_k probs[i, k] == labels[i]``.
    """
    n, k = probs.shape
    confidence = np.empty(n)
    correct = np.empty(n, dtype=np.intp)
    step = block_rows(k)
    for start in range(0, n, step):
        block = np.ascontiguousarray(probs[start : start + step], dtype=np.float64)
        conf, ok = top_label_block(block, labels[start : start + step])
        confidence[start : start + step] = conf
        correct[start : start + step] = ok
    return confidence, correct


def notion_scores(
    probs: np.ndarray, labels: np.ndarray, notion: str, class_index: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Scores and 0/1 targets of one calibration notion.

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K)
    labels : numpy.ndarray, shape (N,)
    notion : {"confidence", "class", "binary"}
    class_index : int, optional
        The class for ``notion="class"``.

    Returns
    -------
    scores : numpy.ndarray, shape (N,)
    targets : numpy.ndarray, shape (N,), intp in {0, 1}
    """
    k = probs.shape[1]
    if notion == "confidence":
        return top_label(probs, labels)
    if notion == "binary":
        if k != 2:
            raise CalibrationInputError(
                f"the binary notion needs exactly 2 classes, these predictions have {k}; "
                "use 'confidence' or 'class' (one class vs rest)."
            )
        return np.ascontiguousarray(probs[:, 1]), (labels == 1).astype(np.intp)
    if notion == "class":
        if class_index is None or not 0 <= int(class_index) < k:
            raise CalibrationInputError(
                f"one-class-vs-rest needs a class index in 0..{k - 1}, got {class_index!r}."
            )
        j = int(class_index)
        return np.ascontiguousarray(probs[:, j]), (labels == j).astype(np.intp)
    raise CalibrationInputError(
        f"unknown calibration notion {notion!r}; choose one of {', '.join(NOTIONS)}."
    )


def notion_columns(
    probs: np.ndarray, labels: np.ndarray, notion: str, class_index: int | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (scores, targets) columns of an ECE notion: one, or K for ``"classwise"``.

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K)
    labels : numpy.ndarray, shape (N,)
    notion : {"confidence", "binary", "class", "classwise"}
    class_index : int, optional
        The class for ``notion="class"``.

    Returns
    -------
    list of (numpy.ndarray, numpy.ndarray), each of shape (N,)
        Scores in [0, 1] and 0/1 targets; class ``j`` is item ``j`` for ``"classwise"``.
    """
    check_ece_notion(notion)
    if notion == "classwise":
        return [notion_scores(probs, labels, "class", j) for j in range(probs.shape[1])]
    return [notion_scores(probs, labels, notion, class_index)]
