"""Cheap, specific checks of probability matrices, score vectors and labels.

Every public function of the core funnels its array inputs through these
checks, so that bad input raises :class:`CalibrationInputError` with a message
that says what is wrong, where, and how to fix it. The checks are written to
touch each value as few times as possible (a min, a max and a BLAS row sum),
because the metrics are benchmarked against a plain ``np.bincount`` pass.
"""

from __future__ import annotations

import numpy as np

from .errors import CalibrationInputError, describe_rows

#: Largest tolerated ``|row sum - 1|`` for a probability row.
ROW_SUM_TOLERANCE = 1e-6


def _numeric_array(values, what: str, where: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == object:
        raise CalibrationInputError(
            f"{what}{where} is an object array; pass numbers (a float array), not Python "
            "objects or mixed types."
        )
    if arr.dtype.kind not in "biuf":
        raise CalibrationInputError(
            f"{what}{where} has dtype {arr.dtype}, not numbers; pass a float array."
        )
    return arr


def _loc(where: str) -> str:
    return f" in {where}" if where else ""


def _nonfinite_rows(arr: np.ndarray) -> np.ndarray:
    bad = ~np.isfinite(arr)
    if bad.ndim == 2:
        bad = bad.any(axis=1)
    return np.flatnonzero(bad)


def check_scores(scores, *, where: str = "", name: str = "scores") -> np.ndarray:
    """Validate a vector of scores in [0, 1].

    Parameters
    ----------
    scores : array-like, shape (N,)
        Probabilities of the positive class (or confidences).
    where : str
        Where the values came from, for messages (a file, a column).
    name : str
        What the values are called in messages.

    Returns
    -------
    numpy.ndarray, shape (N,), float64
        The scores (no copy when already float64).
    """
    loc = _loc(where)
    arr = _numeric_array(scores, name, loc)
    if arr.ndim != 1:
        raise CalibrationInputError(
            f"{name}{loc} must be one-dimensional (N,), got shape {arr.shape}."
        )
    if arr.size == 0:
        raise CalibrationInputError(f"{name}{loc} is empty: there are no predictions to score.")
    arr = arr.astype(np.float64, copy=False)
    lo, hi = arr.min(), arr.max()
    if not (lo >= 0.0 and hi <= 1.0):  # also catches NaN, which fails every comparison
        bad = _nonfinite_rows(arr)
        if bad.size:
            raise CalibrationInputError(
                f"{name}{loc} contain NaN or infinite values at {describe_rows(bad)}; "
                "drop or fix those rows."
            )
        bad = np.flatnonzero((arr < 0) | (arr > 1))
        hint = (
            " They look like logits or decision scores: pass probabilities, or convert "
            "them (e.g. Predictions.from_logits, or a sigmoid)."
            if lo < 0 or hi > 1
            else ""
        )
        raise CalibrationInputError(
            f"{name}{loc} must lie in [0, 1]; found values from {lo:.6g} to {hi:.6g}, "
            f"outside at {describe_rows(bad)}.{hint}"
        )
    return arr


def check_prob_matrix(
    probs, *, where: str = "", renormalize: bool = False, tol: float = ROW_SUM_TOLERANCE
) -> np.ndarray:
    """Validate an (N, K) matrix of probability rows, or promote (N,) binary scores.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
        Rows on the probability simplex; an (N,) vector is read as the
        positive-class score of a binary problem and becomes ``[1 - s, s]``.
    where : str
        Where the values came from, for messages.
    renormalize : bool
        Divide each row by its sum instead of rejecting rows whose sum is off
        by more than ``tol`` (all-zero rows are still rejected).
    tol : float
        Tolerated ``|row sum - 1|``.

    Returns
    -------
    numpy.ndarray, shape (N, K), float64, C-contiguous
    """
    loc = _loc(where)
    arr = _numeric_array(probs, "probabilities", loc)
    if arr.ndim == 1:
        scores = check_scores(arr, where=where, name="probabilities")
        return np.column_stack([1.0 - scores, scores])
    if arr.ndim != 2:
        raise CalibrationInputError(
            f"probabilities{loc} must be (N, K) rows or an (N,) binary score, "
            f"got shape {arr.shape}."
        )
    n, k = arr.shape
    if n == 0:
        raise CalibrationInputError(f"probabilities{loc} are empty: there are no rows to score.")
    if k < 2:
        raise CalibrationInputError(
            f"probabilities{loc} have {k} column; give one column per class (K >= 2), "
            "or pass an (N,) vector of positive-class scores for a binary problem."
        )
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    lo, hi = arr.min(), arr.max()
    if not (lo >= 0.0 and hi <= 1.0):
        bad = _nonfinite_rows(arr)
        if bad.size:
            raise CalibrationInputError(
                f"probabilities{loc} contain NaN or infinite values at {describe_rows(bad)}; "
                "drop or fix those rows."
            )
        bad = np.flatnonzero(((arr < 0) | (arr > 1)).any(axis=1))
        raise CalibrationInputError(
            f"probabilities{loc} must lie in [0, 1]; found values from {lo:.6g} to {hi:.6g} "
            f"at {describe_rows(bad)}. They look like logits: load them as logits "
            "(logit_<class> columns, or Predictions.from_logits), which applies a softmax."
        )
    sums = arr @ np.ones(k)
    off = np.abs(sums - 1.0) > tol
    if off.any():
        bad = np.flatnonzero(off)
        if not renormalize:
            raise CalibrationInputError(
                f"probability rows{loc} must sum to 1 (tolerance {tol:g}); "
                f"{describe_rows(bad)} sum to {', '.join(f'{s:.6g}' for s in sums[bad[:3]])}. "
                "Fix the export, or ask for renormalisation (renormalize=True / "
                "--renormalize) if the rows are unnormalised scores."
            )
        zero = np.flatnonzero(sums <= 0)
        if zero.size:
            raise CalibrationInputError(
                f"probability rows{loc} at {describe_rows(zero)} are all zero and cannot be "
                "renormalised; drop or fix them."
            )
        arr = arr / sums[:, None]
    return arr


def check_labels(labels, n: int, n_classes: int, *, where: str = "") -> np.ndarray:
    """Validate integer class labels in ``0..n_classes-1``.

    Parameters
    ----------
    labels : array-like, shape (N,)
        Integer (or boolean) class indices.
    n : int
        Expected length (number of prediction rows).
    n_classes : int
        K, the number of classes.
    where : str
        Where the labels came from, for messages.

    Returns
    -------
    numpy.ndarray, shape (N,), intp
    """
    loc = _loc(where)
    arr = np.asarray(labels)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise CalibrationInputError(
            f"labels{loc} must be integer class indices 0..{n_classes - 1}, got dtype "
            f"{arr.dtype}. Map string labels to indices first (load_predictions does this)."
        )
    if arr.ndim != 1:
        raise CalibrationInputError(f"labels{loc} must be one-dimensional (N,), got {arr.shape}.")
    if arr.shape[0] != n:
        raise CalibrationInputError(
            f"labels{loc} have {arr.shape[0]} entries but there are {n} prediction rows; "
            "give exactly one label per row."
        )
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        if bad.size:
            raise CalibrationInputError(
                f"labels{loc} must be whole class indices; {describe_rows(bad)} hold "
                f"{', '.join(repr(float(v)) for v in arr[bad[:3]])}."
            )
    if arr.dtype.kind == "b":
        arr = arr.astype(np.intp)
    elif arr.dtype != np.intp:
        arr = arr.astype(np.intp)
    if arr.size:
        lo, hi = arr.min(), arr.max()
        if lo < 0 or hi >= n_classes:
            bad = np.flatnonzero((arr < 0) | (arr >= n_classes))
            raise CalibrationInputError(
                f"labels{loc} must lie in 0..{n_classes - 1} (one per class); "
                f"{describe_rows(bad)} hold {', '.join(str(int(v)) for v in arr[bad[:3]])}. "
                "Check that the label column matches the probability columns."
            )
    return arr


def check_binary_targets(targets, n: int, *, where: str = "") -> np.ndarray:
    """Validate 0/1 targets of a one-vs-rest or binary problem.

    Returns
    -------
    numpy.ndarray, shape (N,), intp with values in {0, 1}
    """
    return check_labels(targets, n, 2, where=where)
