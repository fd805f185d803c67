"""Column conventions of CSV/TSV/Parquet tables -> :class:`Predictions`.

* **Label column**: ``label``, ``y``, ``target``, ``true`` or ``ground_truth``
  (case-insensitive), or the column named by ``label_column``. Exactly one
  must be present; two candidates (``label`` and ``y``) are an error.
* **Predictions**, exactly one of:

  - probability columns ``p_<class>``, ``prob_<class>`` or ``proba_<class>``
    (one prefix per file; at least two classes);
  - logit columns ``logit_<class>`` (softmax applied, logits kept);
  - a single ``score`` column: the probability of class 1 of a binary problem,
    with labels 0/1 or false/true.

  Prefixes are case-insensitive; the class name is the rest of the column name
  as written (``p_cat`` -> class ``"cat"``), in column order.
* **Model column** (optional): ``model`` splits the rows into one
  :class:`Predictions` per value, named after it, in order of first appearance.
* Soft-label columns ``h_<class>`` (annotator distributions) and any other
  column are ignored.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CalibrationInputError
from .budget import MAX_NAME_LENGTH, MAX_NUMBER_LENGTH, shorten
from .checks import Coded, Context

LABEL_CANDIDATES = ("label", "y", "target", "true", "ground_truth")
PROB_PREFIXES = ("proba_", "prob_", "p_")
LOGIT_PREFIX = "logit_"
SOFT_PREFIX = "h_"
SCORE_COLUMN = "score"
MODEL_COLUMN = "model"
_CONVENTIONS = (
    "probability columns p_<class> (or prob_/proba_), logit columns logit_<class>, or one "
    "`score` column for a binary problem"
)


def _decode(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column of numbers as plain numbers; text and bytes stay encoded."""
    t = col.type
    if pa.types.is_dictionary(t) and not (is_text(t) or _is_bytes(t)):
        return col.cast(t.value_type)
    return col


def _is_bytes(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


def is_text(t: pa.DataType) -> bool:
    """Whether ``t`` is a string type, or a dictionary of strings."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _dictionary(col: pa.ChunkedArray) -> pa.DictionaryArray:
    """A string column as one dictionary array (Arrow only: no Python string per row)."""
    if not pa.types.is_dictionary(col.type):
        col = col.dictionary_encode()
    return col.unify_dictionaries().combine_chunks()


def _too_long(desc, ctx, rows, length, limit, what) -> CalibrationInputError:
    return CalibrationInputError(
        f"{desc} of {ctx.display} holds a value of {length:,} characters at {ctx.rows(rows)}; "
        f"{what} are at most {limit} characters. Check that this is the right column, and "
        "shorten those values."
    )


def string_codes(
    col: pa.ChunkedArray, desc: str, ctx: Context, limit: int = MAX_NAME_LENGTH
) -> Coded:
    """A string column as :class:`Coded`, refusing values longer than ``limit`` characters.

    The lengths are checked on the distinct values (the dictionary) before any
    value becomes a Python string, and only the distinct values do. Null rows
    get code 0; callers check them first.
    """
    arr = _dictionary(col)
    lengths = pc.utf8_length(arr.dictionary).fill_null(0).to_numpy(zero_copy_only=False)
    codes = arr.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.intp)
    ok = lengths <= limit
    if not ok.all():
        rows = np.flatnonzero(~ok[codes])
        if rows.size:
            what = "names and labels" if limit == MAX_NAME_LENGTH else "numbers written as text"
            raise _too_long(desc, ctx, rows, int(lengths[codes[rows[0]]]), limit, what)
    values = np.full(len(lengths), "", dtype=object)
    values[ok] = arr.dictionary.filter(pa.array(ok)).to_pylist()  # unused long ones stay ""
    distinct, canon = pd.factorize(values)  # a dictionary may list a value twice
    return Coded(np.asarray(distinct, dtype=np.intp)[codes], np.asarray(canon, dtype=object))


def _missing_error(desc, col, ctx, what) -> CalibrationInputError:
    if pa.types.is_null(col.type):
        rows = np.arange(len(col))
    else:
        rows = np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))
    return CalibrationInputError(
        f"{desc} of {ctx.display} has missing values (empty cells, or NaN/NA/null) at "
        f"{ctx.rows(rows)}. Every row needs {what}: drop or fix those rows."
    )


def _encoding_error(desc, col, ctx) -> CalibrationInputError:
    arr = _dictionary(col)  # bytes: decoded once per distinct value
    undecodable = np.array([v is not None and not _decodes(v) for v in arr.dictionary.to_pylist()])
    codes = arr.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(np.append(undecodable, False)[codes])
    return CalibrationInputError(
        f"{desc} of {ctx.display} holds text that is not valid UTF-8 at {ctx.rows(bad)}. "
        "Re-save the file as UTF-8 (in Excel: 'CSV UTF-8'), or pass its real encoding, "
        "e.g. encoding='latin-1'."
    )


def _decodes(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def float_column(col: pa.ChunkedArray, desc: str, ctx: Context, what: str) -> np.ndarray:
    """A numeric column as float64, rejecting missing and non-numeric values."""
    return np.asarray(numeric_column(col, desc, ctx, what), dtype=np.float64)


def numeric_column(col: pa.ChunkedArray, desc: str, ctx: Context, what: str) -> np.ndarray:
    """A numeric column as floats: float32 and float64 columns as stored, others as float64.

    Keeping float32 halves the memory the checks read (their float64 values are
    exact); missing and non-numeric values are rejected as in :func:`float_column`.
    """
    col = _decode(col)
    t = col.type
    if _is_bytes(t):
        raise _encoding_error(desc, col, ctx)
    if col.null_count or pa.types.is_null(t):
        raise _missing_error(desc, col, ctx, what)
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return col.to_numpy()
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return np.asarray(col.to_numpy(), dtype=np.float64)
    if is_text(t):
        return _parse_numbers(col, desc, ctx)
    raise CalibrationInputError(
        f"{desc} of {ctx.display} has type {t}, not numbers; store {what} as floats."
    )


def _parse_numbers(col: pa.ChunkedArray, desc: str, ctx: Context) -> np.ndarray:
    """Numbers stored as text (e.g. a Parquet string column), as float64; else an error."""
    coded = string_codes(col, desc, ctx, MAX_NUMBER_LENGTH)
    parsed = pd.to_numeric(pd.Series(coded.values), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(np.isnan(parsed)[coded.codes])
    if not bad.size:
        return parsed[coded.codes]
    shown = ", ".join(repr(v) for v in coded.at(bad[:3]))
    hint = ""
    if any(re.fullmatch(r"\s*-?\d+,\d+\s*", str(v)) for v in coded.at(bad[:20])):
        hint = " Decimal commas are not read: save with '.' as the decimal point."
    raise CalibrationInputError(
        f"{desc} of {ctx.display} must hold numbers; found {shown} at {ctx.rows(bad)}."
        f"{hint} Fix those cells (numbers only, '.' decimal point)."
    )


def label_values(col: pa.ChunkedArray, desc: str, ctx: Context) -> np.ndarray | Coded:
    """Labels as an int64 or bool array, or :class:`Coded` strings; missing labels are errors.

    String labels are at most :data:`MAX_NAME_LENGTH` characters.
    """
    col = _decode(col)
    t = col.type
    if _is_bytes(t):
        raise _encoding_error(desc, col, ctx)
    if col.null_count or pa.types.is_null(t):
        raise _missing_error(desc, col, ctx, "a label")
    if is_text(t):
        coded = string_codes(col, desc, ctx)
        blank = np.array([not v.strip() for v in coded.values.tolist()], dtype=bool)
        empty = np.flatnonzero(blank[coded.codes])
        if empty.size:
            raise CalibrationInputError(
                f"{desc} of {ctx.display} has empty labels at {ctx.rows(empty)}. Every row "
                "needs a label: drop or fix those rows."
            )
        return coded
    if pa.types.is_boolean(t):
        return col.to_numpy(zero_copy_only=False).astype(bool)
    if pa.types.is_integer(t):
        return col.to_numpy().astype(np.int64)
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        v = np.asarray(col.to_numpy(), dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(v) | (v != np.round(v)))
        if bad.size:
            raise CalibrationInputError(
                f"{desc} of {ctx.display} must hold class labels (names or whole numbers); "
                f"found {', '.join(repr(float(x)) for x in v[bad[:3]])} at {ctx.rows(bad)}. "
                "Write the class of each row, not a probability."
            )
        return v.astype(np.int64)
    raise CalibrationInputError(
        f"{desc} of {ctx.display} has type {t}; labels must be class names or integers."
    )


def find_label_column(names, label_column, ctx) -> int:
    if label_column is not None:
        hits = [i for i, n in enumerate(names) if n == label_column]
        if not hits:
            hits = [i for i, n in enumerate(names) if n.lower() == str(label_column).lower()]
        if not hits:
            raise CalibrationInputError(
                f"{ctx.display} has no column named {label_column!r} (the label column you "
                f"asked for); its columns are {_list(names)}.",
                remedy="label_column",
                columns=names,
            )
        if len(hits) > 1:
            raise CalibrationInputError(
                f"{ctx.display} has {len(hits)} columns named {names[hits[0]]!r}; keep one "
                "label column (rename or drop the others)."
            )
        return hits[0]
    hits = [i for i, n in enumerate(names) if n.lower() in LABEL_CANDIDATES]
    if not hits:
        raise CalibrationInputError(
            f"{ctx.display} has no label column: expected one named "
            f"{', '.join(LABEL_CANDIDATES)} (any case), found columns {_list(names)}. Rename "
            "the column of true classes.",
            remedy="label_column",
            columns=names,
        )
    if len(hits) > 1:
        found = ", ".join(repr(names[i]) for i in hits)
        raise CalibrationInputError(
            f"{ctx.display} has more than one label column ({found}), so which one holds the "
            "true classes is ambiguous. Drop or rename the others.",
            remedy="label_column",
            columns=names,
        )
    return hits[0]


def _list(names, limit: int = 12) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} columns)" if len(names) > limit else "") or "(none)"


def prediction_columns(names, skip, ctx):
    """(kind, column indices, class names) of the prediction columns."""
    kind, idx = _one_group(_column_groups(names, skip), names, ctx)
    if kind == "score":
        if len(idx) > 1:
            raise CalibrationInputError(
                f"{ctx.display} has {len(idx)} `score` columns; keep one (the probability "
                "of class 1)."
            )
        return "score", idx, ("0", "1")
    classes = _class_names(kind, idx, names, ctx)
    return ("logits" if kind == LOGIT_PREFIX else "probs"), idx, tuple(classes)


def _column_groups(names, skip) -> dict[str, list[int]]:
    """The indices of the prediction columns (not in ``skip``) by kind: prefix or ``score``."""
    groups: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        if i in skip:
            continue
        low = n.lower()
        if low == SCORE_COLUMN:
            groups.setdefault("score", []).append(i)
        elif low.startswith(LOGIT_PREFIX):
            groups.setdefault(LOGIT_PREFIX, []).append(i)
        else:
            prefix = next((p for p in PROB_PREFIXES if low.startswith(p)), None)
            if prefix is not None:
                groups.setdefault(prefix, []).append(i)
    return groups


def _one_group(groups: dict[str, list[int]], names, ctx) -> tuple[str, list[int]]:
    """``(kind, indices)`` of the only group; an error when there is none or more than one."""
    if not groups:
        soft = [n for n in names if n.lower().startswith(SOFT_PREFIX)]
        note = (
            f" (h_<class> columns such as {soft[0]!r} are soft labels, not predictions)"
            if soft
            else ""
        )
        raise CalibrationInputError(
            f"{ctx.display} has no prediction columns{note}: expected {_CONVENTIONS}; found "
            f"columns {_list(names)}. Rename the columns to one of these conventions."
        )
    if len(groups) > 1:
        found = "; ".join(
            f"{names[idx[0]]!r} ({len(idx)} column{'s' * (len(idx) > 1)})"
            for idx in groups.values()
        )
        raise CalibrationInputError(
            f"{ctx.display} mixes kinds of prediction columns: {found}. Keep one kind: "
            f"{_CONVENTIONS} (use a single prefix for all classes)."
        )
    (kind, idx), = groups.items()  # fmt: skip
    return kind, idx


def _class_names(kind: str, idx: list[int], names, ctx) -> list[str]:
    """The class names after the prefix ``kind``: non-empty, short, distinct, two or more."""
    classes = [names[i][len(kind) :] for i in idx]
    long = [i for i, c in zip(idx, classes, strict=True) if len(c) > MAX_NAME_LENGTH]
    if long:
        raise CalibrationInputError(
            f"{ctx.display} has a column whose class name is {len(names[long[0]]) - len(kind):,} "
            f"characters long ({shorten(names[long[0]])!r}, column {long[0] + 1}); class names "
            f"are at most {MAX_NAME_LENGTH} characters. Shorten the column names."
        )
    if any(not c for c in classes):
        raise CalibrationInputError(
            f"{ctx.display} has a column named {kind!r} with no class name after the prefix; "
            f"name it {kind}<class>."
        )
    dup = sorted(c for c, n in Counter(classes).items() if n > 1)  # linear: 1e5 columns
    if dup:
        raise CalibrationInputError(
            f"{ctx.display} has duplicated columns for class(es) {', '.join(map(repr, dup))} "
            f"({kind}{dup[0]} appears more than once); keep one column per class."
        )
    if len(idx) < 2:
        raise CalibrationInputError(
            f"{ctx.display} has a single prediction column {names[idx[0]]!r}: give one "
            f"{kind}<class> column per class (K >= 2), or, for a binary problem, one `score` "
            "column holding the probability of class 1 with 0/1 labels."
        )
    return classes


def other_column_values(col: pa.ChunkedArray) -> np.ndarray:
    """A column the loader does not use, as a numpy array of N values, kept as written.

    Numbers and booleans stay numeric (a missing number becomes NaN), dates and
    times become ``datetime64``, text becomes an object array of str (only the
    distinct values become Python strings) with None where a cell is empty.
    Nothing is checked: these columns are read only when asked for (groups,
    time), and checked there.
    """
    t = col.type
    if pa.types.is_null(t):
        return np.full(len(col), None, dtype=object)
    if is_text(t):
        arr = _dictionary(col)
        values = np.array([*arr.dictionary.to_pylist(), None], dtype=object)
        codes = arr.indices.fill_null(len(values) - 1).to_numpy(zero_copy_only=False)
        return values[codes.astype(np.intp)]
    col = _decode(col)
    if col.num_chunks == 0:
        return np.empty(0, dtype=object)
    return np.asarray(col.to_numpy())
