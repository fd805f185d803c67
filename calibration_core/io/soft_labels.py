"""Soft labels (annotator label distributions) from the same files as the predictions.

:func:`load_predictions` ignores soft-label columns; :func:`load_soft_labels`
reads them, for :func:`calibration_core.human_uncertainty_calibration`.

Conventions
-----------
* **Tables** (CSV/TSV/Parquet): one column ``h_<class>`` per class (prefix
  case-insensitive, the class name written as in the prediction columns:
  ``p_cat`` pairs with ``h_cat``; a binary ``score`` file has classes ``0``
  and ``1``, so ``h_0`` and ``h_1``). Values are annotator votes or shares,
  non-negative, at least one positive per row; each row is divided by its sum
  (Baan et al.'s maximum-likelihood "human distribution"). An optional
  ``model`` column splits the rows exactly as :func:`load_predictions` does.
  Only the ``h_`` and ``model`` columns are parsed.
* **npz**: an array ``soft_labels`` (or ``human``), shape (N, K), in the
  order of the prediction columns.

Either every class has a soft-label column or none does; a file without any
gives an empty dict. Rows are numbered in messages as by
:func:`load_predictions` (data rows, 1-based after the header, for text).
"""

from __future__ import annotations

import codecs
import csv
import io
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..errors import CalibrationInputError
from .budget import DecodedBudget
from .checks import Context
from .columns import MODEL_COLUMN, SOFT_PREFIX, float_column
from .npz import read_array
from .readers import (
    detect_encoding,
    open_stream,
    parquet_damaged,
    read_parquet_table,
    sniff_delimiter,
)
from .source import Source, resolve_source
from .tables import model_groups

#: npz keys holding soft labels (case-insensitive).
NPZ_SOFT_KEYS = ("soft_labels", "human")


def _header_names(src: Source, encoding: str | None) -> tuple[list[str], str, str]:
    """Raw header names, the encoding and the delimiter of a text source."""
    head = src.head()
    enc = detect_encoding(src, head, encoding)
    delimiter = sniff_delimiter(src, head, enc)
    text = codecs.getincrementaldecoder(enc)(errors="replace").decode(head, final=False)
    text = text.lstrip("\ufeff")
    try:
        names = next(csv.reader(io.StringIO(text), delimiter=delimiter))
    except (StopIteration, csv.Error):
        names = []
    return names, enc, delimiter


def _soft_columns(names: list[str], ctx: Context) -> tuple[list[int], list[str]]:
    """(indices, class names) of the ``h_<class>`` columns, in column order."""
    idx = [i for i, n in enumerate(names) if n.strip().lower().startswith(SOFT_PREFIX)]
    classes = [names[i].strip()[len(SOFT_PREFIX) :] for i in idx]
    if any(not c for c in classes):
        raise CalibrationInputError(
            f"{ctx.display} has a column named {SOFT_PREFIX!r} with no class name after the "
            f"prefix; name soft-label columns {SOFT_PREFIX}<class>."
        )
    dup = sorted({c for c in classes if classes.count(c) > 1})
    if dup:
        raise CalibrationInputError(
            f"{ctx.display} has more than one soft-label column for class(es) "
            f"{', '.join(map(repr, dup))}; keep one {SOFT_PREFIX}<class> column per class."
        )
    return idx, classes


def _order(file_classes: list[str], class_names, ctx: Context) -> list[int]:
    """Position in the file of each class of ``class_names`` (column order if None)."""
    if class_names is None:
        return list(range(len(file_classes)))
    wanted = [str(c) for c in class_names]
    missing = [c for c in wanted if c not in file_classes]
    extra = [c for c in file_classes if c not in wanted]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"no {SOFT_PREFIX}<class> column for {', '.join(map(repr, missing))}")
        if extra:
            parts.append(f"columns for unknown classes {', '.join(map(repr, extra))}")
        raise CalibrationInputError(
            f"the soft labels of {ctx.display} do not match the classes "
            f"{', '.join(map(repr, wanted))}: {'; '.join(parts)}. Give one {SOFT_PREFIX}<class> "
            "column per class, named like the prediction columns (or none at all)."
        )
    return [file_classes.index(c) for c in wanted]


def _check_values(mat: np.ndarray, ctx: Context, where: str) -> np.ndarray:
    """Finite, non-negative rows with a positive sum, each divided by its sum."""
    bad = np.flatnonzero(~np.isfinite(mat).all(axis=1))
    if bad.size:
        raise CalibrationInputError(
            f"soft labels ({where}) of {ctx.display} are not finite at {ctx.rows(bad)}; give "
            "annotator votes or shares as plain numbers."
        )
    bad = np.flatnonzero((mat < 0).any(axis=1))
    if bad.size:
        raise CalibrationInputError(
            f"soft labels ({where}) of {ctx.display} are negative at {ctx.rows(bad)}; they must "
            "be annotator votes or shares (>= 0)."
        )
    sums = mat.sum(axis=1)
    bad = np.flatnonzero(sums <= 0)
    if bad.size:
        raise CalibrationInputError(
            f"soft labels ({where}) of {ctx.display} are all zero at {ctx.rows(bad)} (no "
            "annotations); give at least one vote per row or drop the soft-label columns."
        )
    return mat / sums[:, None]


def _from_table(table: pa.Table, ctx: Context, class_names, name: str) -> dict[str, np.ndarray]:
    names = [str(n).strip() for n in table.column_names]
    idx, file_classes = _soft_columns(names, ctx)
    if not idx:
        return {}
    order = _order(file_classes, class_names, ctx)
    if table.num_rows == 0:
        raise CalibrationInputError(f"{ctx.display} has a header but no data rows.")
    mat = np.column_stack(
        [
            float_column(
                table.column(idx[j]), f"soft-label column {names[idx[j]]!r}", ctx, "a vote share"
            )
            for j in order
        ]
    )
    where = ", ".join(names[idx[j]] for j in order[:3]) + (", ..." if len(order) > 3 else "")
    mat = _check_values(mat, ctx, where)
    models = [i for i, n in enumerate(names) if n.lower() == MODEL_COLUMN]
    if len(models) > 1:
        raise CalibrationInputError(f"{ctx.display} has {len(models)} model columns; keep one.")
    groups = model_groups(table, models[0] if models else None, ctx, name)
    return {model: (mat if rows is None else mat[rows]) for model, rows in groups}


def _read_text(src: Source, encoding: str | None, budget) -> tuple[pa.Table, Context] | None:
    names, enc, delimiter = _header_names(src, encoding)
    wanted = [
        n
        for n in names
        if n.strip().lower().startswith(SOFT_PREFIX) or n.strip().lower() == MODEL_COLUMN
    ]
    if not any(n.strip().lower().startswith(SOFT_PREFIX) for n in wanted):
        return None
    ctx = Context(src.display, "data")
    if len(set(wanted)) != len(wanted):  # duplicated names: report them like the loader
        _soft_columns([n.strip() for n in wanted], ctx)
    try:
        table = pacsv.read_csv(
            open_stream(src),
            read_options=pacsv.ReadOptions(encoding=enc, use_threads=True),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(include_columns=wanted),
        )
    except (pa.ArrowException, OSError, UnicodeDecodeError):
        raise CalibrationInputError(
            f"the soft-label columns of {src.display} cannot be read; check that every row has "
            "as many fields as the header and that the h_<class> cells are numbers."
        ) from None
    budget.add(table.nbytes, f"{table.num_rows:,} rows of soft labels")
    return table, ctx


def _read_parquet(src: Source, budget: DecodedBudget) -> tuple[pa.Table, Context] | None:
    try:
        names = pq.read_schema(src.file_arg()).names
    except (pa.ArrowException, OSError):
        raise parquet_damaged(src, "its footer (the table of contents at its end)") from None
    wanted = [
        n
        for n in names
        if n.strip().lower().startswith(SOFT_PREFIX) or n.strip().lower() == MODEL_COLUMN
    ]
    if not any(n.strip().lower().startswith(SOFT_PREFIX) for n in wanted):
        return None
    return read_parquet_table(src, columns=wanted, budget=budget), Context(src.display, "table")


def _read_npz(src: Source, class_names, name: str, budget) -> dict[str, np.ndarray]:
    ctx = Context(src.display, "array")
    try:
        npz = np.load(src.file_arg(), allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile):
        raise CalibrationInputError(
            f"{src.display} is not a readable .npz archive (truncated or corrupt); save it again."
        ) from None
    with npz:
        keys = {k.lower(): k for k in getattr(npz, "files", [])}
        hits = [keys[k] for k in NPZ_SOFT_KEYS if k in keys]
        if not hits:
            return {}
        if len(hits) > 1:
            raise CalibrationInputError(
                f"{src.display} has several soft-label arrays ({', '.join(map(repr, hits))}); "
                "keep one."
            )
        arr = read_array(npz, hits[0], src.display, budget)
    k = None if class_names is None else len(class_names)
    if arr.dtype.kind not in "biuf" or arr.ndim != 2 or (k is not None and arr.shape[1] != k):
        raise CalibrationInputError(
            f"array {hits[0]!r} of {src.display} must be numeric votes or shares of shape (N, "
            f"{k if k is not None else 'K'}), one column per class; got dtype {arr.dtype}, "
            f"shape {arr.shape}."
        )
    return {name: _check_values(arr.astype(np.float64), ctx, repr(hits[0]))}


def load_soft_labels(
    source,
    *,
    file_name: str | None = None,
    class_names=None,
    name: str | None = None,
    encoding: str | None = None,
    max_decoded_bytes: int | None = None,
) -> dict[str, np.ndarray]:
    """Read annotator label distributions (``h_<class>`` columns) from a prediction file.

    Parameters
    ----------
    source : str, os.PathLike, bytes or binary file-like
        The same file given to :func:`load_predictions` (a file-like is read
        from its current position: rewind it first).
    file_name : str, optional
        The original name of bytes or a file-like (format detection, messages).
    class_names : sequence of str, optional
        The classes of the predictions, in order; the columns are matched by
        name and returned in this order. Default: column order.
    name : str, optional
        The model name when the file has no ``model`` column (default: the
        file name without extensions, else ``"model"``), as :func:`load_predictions`.
    encoding : str, optional
        Text encoding, as :func:`load_predictions`.
    max_decoded_bytes : int, optional
        Bound of the decoded data, as :func:`load_predictions`.

    Returns
    -------
    dict of str to numpy.ndarray, shape (N_model, K)
        Model name -> rows of the soft labels, each summing to 1, in the row
        order of that model's predictions; empty when the file has none.

    Raises
    ------
    CalibrationInputError
        Soft-label columns that do not match the classes, missing,
        non-numeric, negative or all-zero rows (with file, column and rows).
    """
    src = resolve_source(source, file_name)
    model_name = name or src.stem or "model"
    budget = DecodedBudget(max_decoded_bytes, src.display)
    if src.kind == "npz":
        return _read_npz(src, class_names, model_name, budget)
    if src.kind == "parquet":
        read = _read_parquet(src, budget)
    else:
        read = _read_text(src, encoding, budget)
    if read is None:
        return {}
    table, ctx = read
    return _from_table(table, ctx, class_names, model_name)
