"""Checks of loaded values with messages that name the file, column and rows.

Row numbers in messages: for delimited text they are *data rows, 1-based,
after the header* (data row 1 is the line right below the header, as a
spreadsheet shows it minus one); for Parquet they are 1-based rows; for npz
arrays they are 0-based array indices (as ``numpy`` indexes them). Each
message says which convention it uses.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import CalibrationInputError, RenormalisedRowsWarning, describe_rows
from ..validation import ROW_SUM_TOLERANCE

_ROW_STYLES = {
    "data": ("data ", 1, " (1-based, after the header)"),
    "table": ("", 1, " (1-based)"),
    "array": ("", 0, " (0-based array indices)"),
}


@dataclass(frozen=True)
class Context:
    """Where values come from, for messages.

    Attributes
    ----------
    display : str
        The file, e.g. ``"'preds.csv'"``.
    row_style : {"data", "table", "array"}
        How rows are numbered in messages (see the module docstring).
    offset : int
        Added to row indices (the first row of a chunk).
    """

    display: str
    row_style: str = "data"
    offset: int = 0

    def rows(self, indices) -> str:
        """E.g. ``"data rows 3, 7 (1-based, after the header)"``."""
        prefix, base, suffix = _ROW_STYLES[self.row_style]
        shifted = np.asarray(indices, dtype=np.int64) + base + self.offset
        return f"{prefix}{describe_rows(shifted)}{suffix}"


@dataclass(frozen=True)
class Coded:
    """String values as ``codes`` (N,) into their distinct ``values``: no Python string per row.

    Attributes
    ----------
    codes : numpy.ndarray, shape (N,), integer
    values : numpy.ndarray of object (str)
        The distinct values; ``values[codes]`` are the rows.
    """

    codes: np.ndarray
    values: np.ndarray
    dtype = np.dtype(object)

    def __len__(self) -> int:
        return len(self.codes)

    def at(self, rows) -> list:
        """The values of ``rows``, as Python strings."""
        return self.values[self.codes[rows]].tolist()

    @classmethod
    def of(cls, values) -> Coded:
        """``values`` itself when coded, else the codes of a NumPy array of strings."""
        if isinstance(values, Coded):
            return values
        distinct, codes = np.unique(np.asarray(values), return_inverse=True)
        return cls(codes.reshape(-1), distinct.astype(str).astype(object))


def row_sum_tolerance(n_classes: int) -> float:
    """Tolerated ``|row sum - 1|`` of a loaded file: ``K * 5e-5 + 1e-6``.

    Probabilities rounded to 4 decimals when saved (``df.round(4)``) are each
    off by at most 5e-5, so their row sums are off by at most ``K * 5e-5``;
    the extra 1e-6 covers float32 exports and printing. Rows within this
    tolerance are divided by their sum in float64 (so that every loaded row
    sums to 1 up to float64 rounding); rows beyond it are rejected unless
    renormalisation is asked for.
    """
    return n_classes * 5e-5 + ROW_SUM_TOLERANCE


def exact_tolerance(n_classes: int) -> float:
    """``|row sum - 1|`` up to which a row is used as it is (not divided by its sum).

    ``max(1e-12, 4 K eps)``: float64 rounding of a sum of K terms.
    """
    return max(1e-12, 4 * n_classes * float(np.finfo(np.float64).eps))


def silent_tolerance(n_classes: int) -> float:
    """Row-sum deviation renormalised without a notice: float32 rounding of K terms, >= 1e-6."""
    return max(ROW_SUM_TOLERANCE, n_classes * float(np.finfo(np.float32).eps))


def _values(arr: np.ndarray, rows: np.ndarray, limit: int = 3) -> str:
    return ", ".join(f"{v:.6g}" for v in arr[rows[:limit]])


def check_finite(mat: np.ndarray, column: Callable[[int], str], what: str, ctx: Context):
    """Reject NaN and infinite values in an (N, K) matrix, naming column and rows."""
    if np.isfinite(mat.sum()):  # one cheap pass; NaN/inf propagate into the sum
        return
    finite = np.isfinite(mat)
    for j in range(mat.shape[1]):
        bad = np.flatnonzero(~finite[:, j])
        if bad.size:
            raise CalibrationInputError(
                f"{column(j)} of {ctx.display} has NaN or infinite {what} at {ctx.rows(bad)}. "
                "Every prediction needs finite values: drop or fix those rows."
            )


def check_probabilities(
    mat: np.ndarray,
    column: Callable[[int], str],
    ctx: Context,
    *,
    renormalize: bool,
    logit_hint: str,
) -> np.ndarray:
    """Range and row-sum checks of an (N, K) probability matrix (finite already).

    With ``renormalize``, values above 1 are accepted (unnormalised
    non-negative scores); negative values never are.

    Returns
    -------
    numpy.ndarray, shape (N, K), float64
        The rows, with those off by no more than :func:`row_sum_tolerance`
        (or all off rows, when ``renormalize``) divided by their sums.
    """
    columns = [mat[:, j] for j in range(mat.shape[1])]
    scale = row_scale(columns, column, ctx, renormalize=renormalize, logit_hint=logit_hint)
    if scale is None:
        return mat
    return np.divide(mat, scale[:, None], dtype=np.float64)


def probability_matrix(
    columns: Sequence[np.ndarray],
    column: Callable[[int], str],
    ctx: Context,
    *,
    renormalize: bool,
    logit_hint: str,
) -> np.ndarray:
    """The checked (N, K) float64 matrix of K probability columns (float32 or float64).

    The checks of :func:`check_finite` and :func:`check_probabilities` on the
    columns as stored, in whole-column passes (a float32 column is read as such,
    never copied to float64 for a check); then the matrix is built once and its
    rows divided by their sums where :func:`check_probabilities` divides them
    (the same float64 values).
    """
    scale = row_scale(
        columns, column, ctx, renormalize=renormalize, logit_hint=logit_hint, finite=True
    )
    # Stacking in the stored dtype, then one contiguous pass converting (and dividing),
    # is about 3x faster than writing float64 values into strided matrix columns.
    stacked = np.column_stack(columns)
    if scale is None:
        return stacked.astype(np.float64, copy=False)
    return np.divide(stacked, scale[:, None], dtype=np.float64)


def row_scale(
    columns: Sequence[np.ndarray],
    column: Callable[[int], str],
    ctx: Context,
    *,
    renormalize: bool,
    logit_hint: str,
    finite: bool = False,
) -> np.ndarray | None:
    """Check probability columns; the divisor of every row, or None when all sum to 1.

    Row sums accumulate the columns in float64, left to right. With ``finite``
    the values are also checked to be finite (a NaN or infinity makes its row's
    sum non-finite: one pass over N sums instead of N * K values).
    """
    k, n = len(columns), columns[0].shape[0]
    sums = np.zeros(n)
    for values in columns:
        np.add(sums, values, out=sums)
    if finite and not np.isfinite(sums).all():
        check_finite(np.column_stack(columns), column, "probabilities", ctx)
    lo = min(float(values.min()) for values in columns)
    hi = max(float(values.max()) for values in columns)
    if lo < 0 or (hi > 1 and not renormalize):
        mat = np.column_stack(columns)
        out = (mat < 0) | (mat > (np.inf if renormalize else 1))
        j = int(np.flatnonzero(out.any(axis=0))[0])
        bad = np.flatnonzero(out[:, j])
        raise CalibrationInputError(
            f"{column(j)} of {ctx.display} must hold probabilities in [0, 1]; found "
            f"{_values(mat[:, j], bad)} at {ctx.rows(bad)} (the values range from "
            f"{lo:.6g} to {hi:.6g}). They look like logits or scores: {logit_hint}",
            remedy="renormalize" if lo >= 0 else None,
        )
    dev = np.abs(np.subtract(sums, 1.0))
    tol = row_sum_tolerance(k)
    exact = exact_tolerance(k)
    largest = float(dev.max())
    if largest <= exact:
        return None
    if largest > tol and not renormalize:
        raise _row_sum_error(sums, dev, np.flatnonzero(dev > tol), tol, ctx)
    if float(sums.min()) <= 0:
        raise CalibrationInputError(
            f"probability rows of {ctx.display} at {ctx.rows(np.flatnonzero(sums <= 0))} are all "
            "zero and cannot be renormalised; drop or fix those rows."
        )
    _notice_renormalised(dev, silent_tolerance(k), tol, ctx)
    return np.where(dev > exact, sums, 1.0)


def _row_sum_error(sums, dev, bad, tol: float, ctx: Context) -> CalibrationInputError:
    """The refusal of rows off by more than ``tol``, with renormalisation as its remedy."""
    rounded = (
        " The sums are close to 1, as if the values were rounded when saved: save more "
        "decimals, or renormalise the rows."
        if dev.max() < 1e-2
        else " Fix the export, or, if the rows are unnormalised scores, renormalise them."
    )
    return CalibrationInputError(
        f"probability rows of {ctx.display} must sum to 1 (tolerance {tol:.2g}); found sums "
        f"{_values(sums, bad)} at {ctx.rows(bad)}.{rounded}",
        remedy="renormalize",
    )


def _notice_renormalised(dev: np.ndarray, silent: float, tol: float, ctx: Context) -> None:
    """Warn (:class:`RenormalisedRowsWarning`) how many rows beyond float32 rounding were fixed.

    Float32 rounding is fixed silently; anything more (4-decimal rounding, or
    renormalisation asked for) is said, so that the user knows the file changed.
    """
    loud = dev > silent
    if loud.any():
        why = "as if rounded when saved" if dev.max() <= tol else "renormalisation was asked for"
        warnings.warn(
            f"{int(loud.sum()):,} probability row(s) of {ctx.display} did not sum to 1 (largest "
            f"deviation {float(dev.max()):.2g}; {why}) and were divided by their sums.",
            RenormalisedRowsWarning,
            stacklevel=2,
        )


def _known(class_names, limit: int = 10) -> str:
    shown = ", ".join(repr(c) for c in class_names[:limit])
    return shown + (f", ... ({len(class_names)} classes)" if len(class_names) > limit else "")


def _unknown_labels(values, bad, ctx, label_desc, class_names, fix) -> CalibrationInputError:
    shown = values.at(bad[:1000]) if isinstance(values, Coded) else values[bad[:1000]].tolist()
    distinct = list(dict.fromkeys(shown))[:5]
    return CalibrationInputError(
        f"{label_desc} of {ctx.display} holds labels that are not among the classes "
        f"({_known(class_names)}): {', '.join(repr(v) for v in distinct)} at {ctx.rows(bad)}. "
        f"{fix}"
    )


def labels_to_indices(values: np.ndarray | Coded, class_names, ctx: Context, label_desc: str):
    """Map labels (ints, bools, whole floats or strings) to class indices.

    Rules (no guessing):

    * string labels (a NumPy array or :class:`Coded`) map to classes by name
      (exact, case-sensitive);
    * integer labels map by index when the class names are ``"0".."K-1"``, and
      by name when every class name is a stringified integer (``p_1, p_2``);
      integer labels with non-numeric class names are rejected;
    * booleans are the integers 0/1, or match classes named false/true.

    Returns
    -------
    numpy.ndarray, shape (N,), intp
    """
    names = [str(c) for c in class_names]
    k = len(names)
    if isinstance(values, Coded) or values.dtype.kind in "OUS":
        coded = Coded.of(values)
        idx = pd.Index(names).get_indexer(coded.values)[coded.codes]
        bad = np.flatnonzero(idx < 0)
        if bad.size:
            raise _unknown_labels(
                coded, bad, ctx, label_desc, names,
                "String labels must equal a class name exactly (the part after p_/prob_/"
                "logit_ in the column names); fix the labels or rename the columns.",
            )  # fmt: skip
        return idx.astype(np.intp)
    if values.dtype.kind == "b":
        lowered = [n.lower() for n in names]
        if sorted(lowered) == ["false", "true"]:
            return np.where(values, lowered.index("true"), lowered.index("false")).astype(np.intp)
        values = values.astype(np.int64)
    ints = values.astype(np.int64)
    if names == [str(j) for j in range(k)]:
        bad = np.flatnonzero((ints < 0) | (ints >= k))
        if bad.size:
            raise _unknown_labels(
                values, bad, ctx, label_desc, names,
                f"Integer labels are class indices 0..{k - 1}, one per probability column; "
                "check that the label column matches the probability columns.",
            )  # fmt: skip
        return ints.astype(np.intp)
    if all(_is_int_name(n) for n in names):
        idx = pd.Index([int(n) for n in names]).get_indexer(ints)
        bad = np.flatnonzero(idx < 0)
        if bad.size:
            raise _unknown_labels(
                values, bad, ctx, label_desc, names,
                "Integer labels must equal a class name (the number after p_/logit_); fix "
                "the labels or rename the columns.",
            )  # fmt: skip
        return idx.astype(np.intp)
    raise CalibrationInputError(
        f"{label_desc} of {ctx.display} holds integer labels but the classes are named "
        f"{_known(names)}, so which integer is which class is not stated. Write the class "
        f"names in the label column, or name the columns p_0..p_{k - 1} in label order."
    )


def _is_int_name(name: str) -> bool:
    try:
        return str(int(name)) == name
    except ValueError:
        return False


_TRUE = {"1", "true"}
_FALSE = {"0", "false"}


def binary_labels(values: np.ndarray | Coded, ctx: Context, label_desc: str) -> np.ndarray:
    """0/1 labels of a binary score: {0, 1} or {false, true}; anything else is an error."""
    if isinstance(values, Coded) or values.dtype.kind in "OUS":
        coded = Coded.of(values)
        low = np.char.lower(coded.values.astype(str))
        pos, neg = np.isin(low, list(_TRUE))[coded.codes], np.isin(low, list(_FALSE))[coded.codes]
        if (pos | neg).all():
            return pos.astype(np.intp)
        found = sorted(set(coded.values[np.unique(coded.codes)].tolist()), key=str)
    elif values.dtype.kind == "b":
        return values.astype(np.intp)
    else:
        if np.isin(values, (0, 1)).all():
            return values.astype(np.intp)
        found = sorted(set(values.tolist()))
    shown = ", ".join(repr(v) for v in found[:5]) + (" ..." if len(found) > 5 else "")
    if len(found) == 2:
        how = (
            f"recode the positive class (the one `score` is the probability of) as 1 and the "
            f"other as 0, e.g. y = (y == {found[-1]!r}).astype(int)"
        )
        if found == [-1, 1]:
            how = "recode the negative class -1 as 0"
    else:
        how = "a binary score column needs exactly two outcomes coded 0 and 1"
    raise CalibrationInputError(
        f"{label_desc} of {ctx.display} must hold 0/1 (or false/true) labels for a `score` "
        f"column, but the labels are {{{shown}}}; {how}. The loader does not guess which "
        "class is positive."
    )


def check_two_classes(labels: np.ndarray, class_names, ctx: Context, model: str | None):
    """Reject a label set with a single class (calibration needs more than one outcome)."""
    first = labels[0]
    if (labels == first).all():
        which = f" for model {model!r}" if model is not None else ""
        raise CalibrationInputError(
            f"every label in {ctx.display}{which} is class {class_names[first]!r}: with one "
            "class only, the observed frequencies are all 0 or all 1 and calibration maps "
            "cannot be fitted. Load predictions whose labels cover more than one class."
        )
