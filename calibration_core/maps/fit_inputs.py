"""What a map's ``fit`` accepts besides the scores: sample weights and class labels.

Sample weights
--------------
:func:`check_sample_weight` accepts None or one finite, non-negative number
per row (a scalar is broadcast), with a positive total. Rows of weight 0 are
dropped before fitting (:func:`drop_unweighted_rows`), so they are exactly
removed rows; the fits weight every other row's loss term, so integer weights
are repeated rows.

Class labels and columns
------------------------
For a calibrator the input columns *are* the classes, so labels must name
columns (:func:`encode_labels`):

1. Numeric labels that are all whole numbers in ``0..K-1`` index the columns
   (as before; ``classes_ = [0, ..., K-1]``), even when some class does not
   occur in the fit rows.
2. Any other labels (strings, ``{-1, 1}``, ``{1, 2, 3}``, ...) are accepted
   when they hold exactly K distinct values: ``classes_`` is their sorted
   unique values and column ``j`` stands for ``classes_[j]``, as
   ``predict_proba`` columns of every scikit-learn classifier do.
3. Anything else is a :class:`~calibration_core.errors.CalibrationInputError`
   that says which rule was broken.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import DataConversionWarning

from ..errors import CalibrationInputError, describe_rows
from ..validation import check_labels

__all__ = ["check_sample_weight", "drop_unweighted_rows", "encode_labels"]


def check_sample_weight(sample_weight, n: int, who: str) -> np.ndarray | None:
    """Validated sample weights, shape (N,) float64, or None.

    Parameters
    ----------
    sample_weight : None, float or array-like of shape (N,)
    n : int
        Number of rows.
    who : str
        The estimator's name, for messages.
    """
    if sample_weight is None:
        return None
    arr = np.asarray(sample_weight)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise CalibrationInputError(
            f"{who} sample_weight must be numbers (one weight per row), got dtype {arr.dtype}."
        )
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.ndim != 1 or arr.shape[0] != n:
        raise CalibrationInputError(
            f"{who} sample_weight has shape {arr.shape} but there are {n} rows; "
            "give one weight per row, shape (N,)."
        )
    arr = np.asarray(arr, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0))
    if bad.size:
        raise CalibrationInputError(
            f"{who} sample_weight must be finite and >= 0; {describe_rows(bad)} hold "
            f"{', '.join(repr(float(v)) for v in arr[bad[:3]])}."
        )
    if not arr.sum() > 0:
        raise CalibrationInputError(
            f"{who} sample_weight is all zero: every row would be ignored; give some rows "
            "a positive weight."
        )
    return arr


def drop_unweighted_rows(
    probs: np.ndarray | None,
    logits: np.ndarray | None,
    labels: np.ndarray,
    weights: np.ndarray | None,
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray | None]:
    """The rows of positive weight of ``(probs, logits, labels, weights)``.

    Unchanged when ``weights`` is None or every weight is positive.
    """
    if weights is None or weights.min() > 0:
        return probs, logits, labels, weights
    keep = weights > 0
    return (
        None if probs is None else probs[keep],
        None if logits is None else logits[keep],
        labels[keep],
        weights[keep],
    )


def _indexes_columns(arr: np.ndarray, k: int) -> bool:
    """Whether numeric labels are all whole numbers in ``0..k-1``."""
    if arr.dtype.kind == "b":
        return True
    if arr.dtype.kind not in "iuf" or not arr.size:
        return arr.dtype.kind in "iuf"
    if arr.dtype.kind == "f" and not (np.isfinite(arr).all() and (arr == np.round(arr)).all()):
        return False
    return bool(arr.min() >= 0 and arr.max() < k)


def encode_labels(y, n: int, k: int, who: str) -> tuple[np.ndarray, np.ndarray]:
    """Column indices of the labels and the classes the columns stand for.

    Parameters
    ----------
    y : array-like, shape (N,)
        Class labels (see the module docstring for the rule).
    n : int
        Number of rows.
    k : int
        K, the number of columns (classes) of the input.
    who : str
        The estimator's name, for messages.

    Returns
    -------
    labels : numpy.ndarray, shape (N,), intp
        Column index of every row's class.
    classes : numpy.ndarray, shape (K,)
        ``classes[j]`` is the label of column ``j``.
    """
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; it is read as "
            "shape (N,). Pass y.ravel() to avoid this warning.",
            DataConversionWarning,
            stacklevel=3,
        )
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != n or _indexes_columns(arr, k):
        # Shape errors and column indices keep the messages of check_labels.
        return check_labels(arr, n, k), np.arange(k)
    if arr.dtype.kind not in "biufUS" and not all(isinstance(v, str) for v in arr):
        # scikit-learn's wording for targets that are neither numbers nor strings.
        raise CalibrationInputError(
            f"Unknown label type: {who} labels must be numbers or strings, got an array of "
            f"dtype {arr.dtype} holding e.g. {arr[0]!r}; convert them, e.g. y.astype(int)."
        )
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        check_labels(arr, n, k)  # raises: names the NaN or infinite rows
    if arr.dtype.kind == "f" and (arr != np.round(arr)).any():
        bad = np.flatnonzero(arr != np.round(arr))
        raise CalibrationInputError(
            f"Unknown label type: {who} got continuous labels ({describe_rows(bad)} hold "
            f"{', '.join(repr(float(v)) for v in arr[bad[:3]])}); labels must be class "
            "indices or names."
        )
    try:
        classes, labels = np.unique(arr, return_inverse=True)
    except TypeError:
        raise CalibrationInputError(
            f"{who} labels mix types that cannot be sorted (e.g. numbers and strings); "
            "give labels of one type."
        ) from None
    if classes.shape[0] != k:
        shown = ", ".join(repr(v) for v in classes[:5].tolist())
        more = f" (and {classes.shape[0] - 5} more)" if classes.shape[0] > 5 else ""
        raise CalibrationInputError(
            f"{who} got labels with {classes.shape[0]} distinct values ({shown}{more}) for "
            f"{k} probability/logit columns. The columns are the classes: integer labels "
            f"0..{k - 1} index the columns, and other labels must take exactly {k} distinct "
            "values, matched to the columns in sorted order. Check that the label column "
            "belongs to these predictions."
        )
    return labels.astype(np.intp, copy=False).reshape(-1), classes
