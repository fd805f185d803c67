"""Assemble :class:`Predictions` from a table, following :mod:`.columns` conventions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import CalibrationInputError
from ..predictions import Predictions, with_extra
from .budget import DecodedBudget
from .checks import (
    Coded,
    Context,
    binary_labels,
    check_finite,
    check_two_classes,
    labels_to_indices,
    probability_matrix,
    row_scale,
)
from .columns import (
    MODEL_COLUMN,
    find_label_column,
    is_text,
    label_values,
    numeric_column,
    other_column_values,
    prediction_columns,
    string_codes,
)

_WHAT = {"probs": "probabilities", "logits": "logits", "score": "scores"}
_LOGIT_HINT = (
    "if they are logits, name the columns logit_<class> (a softmax is applied); if they are "
    "unnormalised non-negative scores, rescale them or renormalise the rows."
)


def model_groups(table, model_i, ctx, default_name):
    """[(name, rows or None)] of the model column, in order of first appearance.

    Model names are at most :data:`~.budget.MAX_NAME_LENGTH` characters; only
    the distinct names become Python strings.
    """
    if model_i is None:
        return [(default_name, None)]
    desc = f"model column {table.column_names[model_i]!r}"
    col = table.column(model_i)
    if pa.types.is_null(col.type):
        missing = np.ones(len(col), dtype=bool)
    else:
        missing = col.is_null().to_numpy(zero_copy_only=False)
    if is_text(col.type) and not missing.all():
        coded = string_codes(col, desc, ctx)
        blank = np.array([not v.strip() for v in coded.values.tolist()], dtype=bool)
        missing |= blank[coded.codes]
    elif not missing.any():
        codes, values = pd.factorize(np.asarray(col.to_numpy(zero_copy_only=False)))
        coded = Coded(codes, np.asarray([str(v) for v in values], dtype=object))
    if missing.any():
        raise CalibrationInputError(
            f"{desc} of {ctx.display} is empty at {ctx.rows(np.flatnonzero(missing))}; name the "
            "model of every row, or drop the model column for a single model."
        )
    codes, first = pd.factorize(coded.codes, sort=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(first) + 1))
    names = coded.values[first].tolist()
    return [(str(u), order[bounds[c] : bounds[c + 1]]) for c, u in enumerate(names)]


def _check_scores(scores, desc, ctx):
    lo, hi = scores.min(), scores.max()
    if lo < 0 or hi > 1:
        bad = np.flatnonzero((scores < 0) | (scores > 1))
        shown = ", ".join(f"{v:.6g}" for v in scores[bad[:3]])
        raise CalibrationInputError(
            f"{desc} of {ctx.display} must hold probabilities of class 1 in [0, 1]; found "
            f"{shown} at {ctx.rows(bad)}. They look like logits or decision scores: apply "
            "a sigmoid first (score = 1 / (1 + exp(-z))), or write them as two columns "
            "logit_0 = 0 and logit_1 = z."
        )


@dataclass(frozen=True)
class TableColumns:
    """The prediction columns of a table, found and decoded (not yet checked).

    Attributes
    ----------
    kind : {"probs", "logits", "score"}
        What the columns hold.
    classes : list of str
        The class names.
    values : list of numpy.ndarray
        One array per prediction column, float32 or float64 as stored (other
        numbers as float64).
    names : list of str
        Every column name of the table.
    indices : list of int
        The table's index of each prediction column.
    label : int
        The table's index of the label column.
    model : int or None
        The table's index of the model column.
    """

    kind: str
    classes: list
    values: list
    names: list
    indices: list
    label: int
    model: int | None

    def describe(self, j: int) -> str:
        """E.g. ``"column 'p_cat'"`` for prediction column ``j``."""
        return f"column {self.names[self.indices[j]]!r}"


def table_columns(
    table: pa.Table,
    ctx: Context,
    label_column: str | None = None,
    budget: DecodedBudget | None = None,
) -> TableColumns:
    """Find the label, model and prediction columns of a table and decode the predictions.

    The checks and messages of :func:`table_to_predictions` up to the values'
    own checks (names, duplicates, an empty table, missing or non-numeric values).
    """
    names = [str(n) for n in table.column_names]
    if not names:
        raise CalibrationInputError(f"{ctx.display} has no columns; export the predictions again.")
    label_i = find_label_column(names, label_column, ctx)
    models = [i for i, n in enumerate(names) if n.lower() == MODEL_COLUMN and i != label_i]
    if len(models) > 1:
        raise CalibrationInputError(
            f"{ctx.display} has {len(models)} model columns ({', '.join(names[i] for i in models)}"
            "); keep one."
        )
    kind, idx, classes = prediction_columns(names, {label_i, *models}, ctx)
    n = table.num_rows
    if n == 0:
        raise CalibrationInputError(
            f"{ctx.display} has a header but no data rows; export the predictions again "
            "with one row per prediction."
        )
    what = _WHAT[kind]
    if budget is not None:
        budget.add(2 * n * len(idx) * 8, f"{n:,} rows x {len(idx):,} {what} as float64")
    values = [numeric_column(table.column(i), f"column {names[i]!r}", ctx, what) for i in idx]
    return TableColumns(kind, classes, values, names, idx, label_i, models[0] if models else None)


def probability_scale(cols: TableColumns, ctx: Context, renormalize: bool) -> np.ndarray | None:
    """The loader's checks of probability columns (finite, in range, rows summing to 1).

    Raises the loader's :class:`CalibrationInputError` (or warns that rows were
    renormalised) exactly as :func:`table_to_predictions` does; returns the
    divisor of every row, or None when every row sums to 1
    (:func:`~.checks.row_scale`).
    """
    return row_scale(
        cols.values,
        cols.describe,
        ctx,
        renormalize=renormalize,
        logit_hint=_LOGIT_HINT,
        finite=True,
    )


def table_labels(table: pa.Table, cols: TableColumns, ctx: Context) -> np.ndarray:
    """The class index (0/1 for a score column) of every row, checked as the loader does."""
    label_desc = f"label column {cols.names[cols.label]!r}"
    values = label_values(table.column(cols.label), label_desc, ctx)
    if cols.kind == "score":
        return binary_labels(values, ctx, label_desc)
    return labels_to_indices(values, cols.classes, ctx, label_desc)


def index_labels(table: pa.Table, cols: TableColumns) -> np.ndarray | None:
    """The labels as class indices, unchecked and uncopied, where the loader uses them as such.

    For integer labels without missing values and classes named ``"0".."K-1"``,
    :func:`table_labels` returns the labels themselves after checking them; this
    returns them without the check (and, for int64, without a copy), for a caller
    that skips labels outside ``0..K-1`` itself and then calls :func:`table_labels`
    for the loader's message. None for any other labels: call :func:`table_labels`.

    Returns
    -------
    numpy.ndarray of int64, shape (n,), read-only, or None
    """
    col = table.column(cols.label)
    k = len(cols.classes)
    if (
        cols.kind != "probs"
        or not pa.types.is_integer(col.type)
        or col.null_count
        or [str(c) for c in cols.classes] != [str(j) for j in range(k)]
    ):
        return None
    return col.to_numpy().astype(np.int64, copy=False)  # as label_values casts them


def table_to_predictions(
    table: pa.Table,
    ctx: Context,
    *,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str = "model",
    require_two_classes: bool = True,
    budget: DecodedBudget | None = None,
) -> list[Predictions]:
    """Turn a table into one :class:`Predictions` per model.

    Parameters
    ----------
    table : pyarrow.Table
        Columns as read (duplicate names allowed; they are reported).
    ctx : Context
        The file and the row numbering for messages.
    label_column : str, optional
        The label column's name; default: the one of ``label, y, target, true,
        ground_truth`` (any case) present.
    renormalize : bool
        Divide probability rows by their sums instead of rejecting rows that
        do not sum to 1.
    name : str
        The model name when there is no model column.
    require_two_classes : bool
        Reject a model whose labels are all one class (off for chunks).
    budget : DecodedBudget, optional
        Counts the float64 matrix (and its normalised copy) before it is built.

    Returns
    -------
    list of Predictions
    """
    cols = table_columns(table, ctx, label_column, budget)
    kind, classes = cols.kind, cols.classes
    if kind == "probs":
        mat = probability_matrix(
            cols.values, cols.describe, ctx, renormalize=renormalize, logit_hint=_LOGIT_HINT
        )
    else:
        mat = np.column_stack(cols.values).astype(np.float64, copy=False)
        check_finite(mat, cols.describe, _WHAT[kind], ctx)
    if kind == "score":
        _check_scores(mat[:, 0], cols.describe(0), ctx)
    labels = table_labels(table, cols, ctx)

    others = other_columns(table, {cols.label, *cols.indices, cols.model} - {None}, budget)
    out = []
    for model, rows in model_groups(table, cols.model, ctx, name):
        m, y = (mat, labels) if rows is None else (mat[rows], labels[rows])
        m.flags.writeable = False  # ours alone: Predictions keeps it without a copy
        if require_two_classes:
            check_two_classes(y, classes, ctx, model if rows is not None else None)
        common = {"class_names": classes, "name": model, "where": ctx.display}
        if kind == "probs":
            pred = Predictions.from_probs(m, y, **common)
        elif kind == "logits":
            pred = Predictions.from_logits(m, y, **common)
        else:
            pred = Predictions.from_scores(m[:, 0], y, **common)
        if others:
            kept = others if rows is None else {k: v[rows] for k, v in others.items()}
            pred = with_extra(pred, kept)
        out.append(pred)
    return out


def other_columns(table: pa.Table, used: set[int], budget: DecodedBudget | None) -> dict:
    """The columns not used for the predictions, by name (the first of repeated names).

    They travel with the predictions (``Predictions.extra``), as the command
    line's ``apply`` keeps them, for groups and time windows.
    """
    out: dict[str, np.ndarray] = {}
    for i, column_name in enumerate(table.column_names):
        if i in used or str(column_name) in out or pa.types.is_null(table.column(i).type):
            continue  # all-null: a column the reader left out (or an empty one)
        if budget is not None:
            budget.add(8 * table.num_rows, f"column {column_name!r} kept with the predictions")
        out[str(column_name)] = other_column_values(table.column(i))
    return out
