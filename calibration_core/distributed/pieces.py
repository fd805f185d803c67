"""The pieces of a Parquet dataset: one task per row group, named by file and rows.

A piece is one row group of one file. Reading it applies the loader's own
conventions and checks (:func:`~calibration_core.io.tables.table_to_predictions`:
column names, label detection, the ``model`` column, probability rows summing
to 1, labels in range), with rows numbered from the start of the file, and a
piece with bad rows fails with a :class:`~calibration_core.CalibrationInputError`
naming the file, the row group and its row range.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import CalibrationInputError
from ..io.checks import Context
from ..io.columns import MODEL_COLUMN, find_label_column
from ..io.readers import row_group_decoded_bytes, text_columns
from ..io.tables import table_to_predictions
from ..predictions import Predictions

T = TypeVar("T")

__all__ = [
    "BATCH_ROWS",
    "MAX_PIECE_BYTES",
    "READ_BUFFER_BYTES",
    "Piece",
    "ReadOptions",
    "dataset_name",
    "find_pieces",
    "model_first_row",
    "model_first_rows",
    "piece_batches",
    "read_piece",
    "read_piece_batches",
]


@dataclass(frozen=True)
class ReadOptions:
    """How every piece is read (the options of :func:`~calibration_core.load_predictions`).

    Attributes
    ----------
    label_column : str or None
        The label column; by default the one the loader detects.
    renormalize : bool
        Divide probability rows by their sums instead of rejecting them.
    name : str
        The model name when the files have no ``model`` column.
    """

    label_column: str | None = None
    renormalize: bool = False
    name: str = "model"


@dataclass(frozen=True)
class Piece:
    """One row group of one Parquet file.

    Attributes
    ----------
    path : str
        The file.
    row_group : int
        Index of the row group in the file.
    first_row : int
        0-based index, in the file, of the row group's first row.
    n_rows : int
        Rows in the row group.
    n_columns : int
        Columns of the file (leaf columns of its schema); 0 when not known.
    """

    path: str
    row_group: int
    first_row: int
    n_rows: int
    n_columns: int = 0

    @property
    def where(self) -> str:
        """E.g. ``"'logs/a.parquet' rows 1-65,536 (row group 0)"`` (rows 1-based)."""
        last = self.first_row + self.n_rows
        return f"{self.path!r} rows {self.first_row + 1:,}-{last:,} (row group {self.row_group})"


def _paths(source) -> list[str]:
    """The files of a path, a folder (its ``*.parquet``) or a glob, sorted."""
    if isinstance(source, (list, tuple)):
        return sorted(str(p) for p in source)
    text = str(source)
    if Path(text).is_dir():
        return sorted(str(p) for p in Path(text).glob("*.parquet"))
    return sorted(glob.glob(text)) if glob.has_magic(text) else [text]


def dataset_columns(source, label_column: str | None = None) -> list[str]:
    """The other columns of a Parquet dataset (group or time columns), from its first file's
    schema (footer only); [] when no file matches or it cannot be read."""
    from ..io.readers import other_column_names

    paths = _paths(source)
    try:
        schema = pq.read_schema(paths[0]) if paths else None
    except (pa.ArrowException, OSError):
        schema = None
    return [] if schema is None else other_column_names(schema, label_column)


#: Most bytes one piece's columns may decode to, as its file's footer declares them
#: (:func:`~calibration_core.io.readers.row_group_decoded_bytes`), by default.
MAX_PIECE_BYTES = 2 << 30


def find_pieces(source, max_piece_bytes: int | None = MAX_PIECE_BYTES) -> list[Piece]:
    """Every row group of the files of ``source`` (path, folder, glob or list of paths).

    Only the footers are read. Raises a :class:`CalibrationInputError` when no file
    matches, a footer cannot be read, or a row group's columns decode to more than
    ``max_piece_bytes`` (None: no bound) as the footer declares them: refused by
    file and row group before any task reads a page (text columns are read
    dictionary-encoded, so a string repeated on every row counts once; see
    :func:`piece_batches`).
    """
    paths = _paths(source)
    if not paths:
        raise CalibrationInputError(
            f"no Parquet file matches {source!s}; give a file, a folder of .parquet files or "
            "a glob such as 'logs/*.parquet' (quote it so the shell does not expand it)."
        )
    pieces = []
    for path in paths:
        if not Path(path).is_file():
            raise CalibrationInputError(f"file not found: {path}")
        try:
            meta = pq.ParquetFile(path).metadata
        except (pa.ArrowException, OSError):
            raise CalibrationInputError(
                f"{path!r} is not a readable Parquet file (its footer is damaged or missing); "
                "export it again."
            ) from None
        first = 0
        for i in range(meta.num_row_groups):
            n = meta.row_group(i).num_rows
            _check_piece_size(path, i, meta.row_group(i), max_piece_bytes)
            if n:
                pieces.append(Piece(path, i, first, n, meta.num_columns))
            first += n
    return pieces


def _check_piece_size(
    path: str, row_group: int, group: pq.RowGroupMetaData, limit: int | None
) -> None:
    """Refuse a row group whose columns decode to more than ``limit`` bytes (footer only)."""
    size = row_group_decoded_bytes(group)
    if limit is not None and size > limit:
        raise CalibrationInputError(
            f"{path!r} row group {row_group}: its columns decode to {size / (1 << 20):,.1f} MB "
            f"({group.num_rows:,} rows, as its footer declares them), more than the "
            f"{limit / (1 << 20):,g} MB one piece may take here (max_piece_bytes). Write it "
            "again with smaller row groups (e.g. pyarrow's row_group_size=65536) and only the "
            "prediction, label, model, group and time columns."
        )


def model_first_rows(pieces: list[Piece], options: ReadOptions) -> list[dict[str, int]]:
    """Per piece, the number of its first row of each model among that model's rows.

    Rows are numbered from 0 in the order of the pieces (files sorted by path,
    row groups in file order), each model's rows on their own, as the in-memory
    loader numbers a model's rows of one file (the rows of its ``model``
    column's value, or all rows without one). Only the footers are read: a row
    group's rows belong to one model when the files have no ``model`` column,
    or when its statistics show one value.

    Returns
    -------
    list of dict of str to int
        One dict per piece: its models (by name) and the number of the first
        row of each. Empty for a row group whose model column has missing
        values (the loader refuses them when the piece is read).

    Raises
    ------
    CalibrationInputError
        A row group holding several models, or without statistics of its model
        column: its models' rows cannot be numbered from the footers.
    """
    metadata: dict[str, pq.FileMetaData] = {}
    seen: dict[str, int] = {}
    out = []
    for piece in pieces:
        if piece.path not in metadata:
            metadata[piece.path] = pq.ParquetFile(piece.path).metadata
        counts = _piece_models(piece, metadata[piece.path], options)
        out.append({name: seen.get(name, 0) for name in counts})
        for name, n in counts.items():
            seen[name] = seen.get(name, 0) + n
    return out


def _model_leaf(meta: pq.FileMetaData, options: ReadOptions) -> int | None:
    """The leaf column of the file's model column as the loader finds it (None: no such column).

    A schema the loader refuses counts as none: reading the piece reports it.
    """
    names = [str(n) for n in meta.schema.to_arrow_schema().names]
    try:
        label = names[find_label_column(names, options.label_column, Context("", "table"))]
    except CalibrationInputError:
        return None
    found = [n for n in names if n.lower() == MODEL_COLUMN and n != label]
    leaves = [
        j for j in range(meta.num_columns) if found and meta.schema.column(j).path == found[0]
    ]
    return leaves[0] if leaves else None


_NOT_NUMBERED = (
    "so each model's rows cannot be numbered in file order from the files' footers (windows "
    "of N rows count every model's rows on their own); write each row group with the rows of "
    "one model (a stable sort by model before writing keeps each model's rows in order; or "
    "write one file per model), or use a calendar window of a time column (1d, 1w, 1m), or "
    "--engine memory."
)


def _piece_models(piece: Piece, meta: pq.FileMetaData, options: ReadOptions) -> dict[str, int]:
    """The models of one piece and their rows, from its row group's statistics."""
    leaf = _model_leaf(meta, options)
    if leaf is None:
        return {options.name: piece.n_rows}
    column = meta.row_group(piece.row_group).column(leaf)
    stats, how = column.statistics, _NOT_NUMBERED
    if stats is not None and stats.has_null_count and stats.null_count:
        return {}  # the loader refuses rows without a model when the piece is read
    if stats is None or not stats.has_min_max:
        raise CalibrationInputError(
            f"{piece.where}: its model column {column.path_in_schema!r} has no statistics "
            f"(minimum and maximum), {how}"
        )
    if stats.min != stats.max:
        raise CalibrationInputError(
            f"{piece.where} holds rows of several models (its column "
            f"{column.path_in_schema!r} runs from {stats.min!r} to {stats.max!r}), {how}"
        )
    value = stats.min
    return {
        value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value): piece.n_rows
    }


def model_first_row(first_rows: dict[str, int], model: str) -> int:
    """The number of ``model``'s first row in a piece, of :func:`model_first_rows`.

    Raises
    ------
    CalibrationInputError
        When the piece's rows name a model its row group's statistics do not
        (a model column whose values the statistics write otherwise).
    """
    if model not in first_rows:
        listed = ", ".join(repr(n) for n in first_rows) or "none"
        raise CalibrationInputError(
            f"these rows are of model {model!r}, but the statistics of their row group "
            f"name {listed}, so they cannot be numbered from the files' footers; write the "
            "model column as text, or use a calendar window of a time column (1d, 1w, 1m), "
            "or --engine memory."
        )
    return first_rows[model]


def dataset_name(source) -> str:
    """Default model name: the file's stem for one file, else its folder's name."""
    paths = _paths(source)
    if len(paths) == 1:
        return Path(paths[0]).name.split(".")[0] or "model"
    return Path(paths[0]).parent.name or "model" if paths else "model"


#: Rows read and validated at a time by :func:`read_piece_batches`: small enough that a
#: batch's arrays are reused by the allocator (no page faults for fresh 80 MB matrices)
#: and stay near the cache, large enough that per-batch overhead does not show.
BATCH_ROWS = 1 << 16

#: Bytes of a column chunk :func:`read_piece_batches` reads from the file at a time (per
#: column). pyarrow's default (``pre_buffer=True``, or ``buffer_size=0``) reads every
#: column chunk of the row group whole before the first batch, so a task held the row
#: group's compressed size (458 MB for 1e6 rows x 100 float32 columns) whatever the batch.
#: Streamed in pieces of 256 KiB, the decode takes the same CPU (BENCHMARKS.md, issue 18).
READ_BUFFER_BYTES = 1 << 18


def piece_batches(piece: Piece, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The record batches of one piece as decoded, ``batch_rows`` rows each (the last fewer).

    Memory follows the batch, not the row group: text columns stay
    dictionary-encoded (a string on every row is decoded once, and the loader
    checks names on the distinct values), column chunks are read
    :data:`READ_BUFFER_BYTES` at a time and decoded in this thread (a worker's
    thread is its share of the machine; Arrow's own threads only add CPU for the
    same work). Arrow errors are the caller's to locate.
    """
    schema = pq.read_schema(piece.path)
    file = pq.ParquetFile(
        piece.path,
        pre_buffer=False,
        buffer_size=READ_BUFFER_BYTES,
        read_dictionary=text_columns(schema),  # a repeated string is decoded once
    )
    return file.iter_batches(batch_size=batch_rows, row_groups=[piece.row_group], use_threads=False)


@overload
def read_piece_batches(
    piece: Piece, options: ReadOptions, batch_rows: int = ..., use: None = None
) -> Iterator[list[Predictions]]: ...


@overload
def read_piece_batches(
    piece: Piece,
    options: ReadOptions,
    batch_rows: int,
    use: Callable[[pa.Table, Context, ReadOptions], T],
) -> Iterator[T]: ...


def read_piece_batches(
    piece: Piece,
    options: ReadOptions,
    batch_rows: int = BATCH_ROWS,
    use: Callable[[pa.Table, Context, ReadOptions], T] | None = None,
) -> Iterator[Any]:
    """The predictions of one piece, ``batch_rows`` rows at a time (one list per batch).

    The same checks and messages as :func:`read_piece`: every batch is validated by the
    loader, its rows numbered from the start of the file. With ``use``, what
    ``use(table, ctx, options)`` returns for every batch instead (default
    :func:`table_predictions`); its errors are located in the piece the same way.
    Batches are read by :func:`piece_batches`, each released before the next is decoded.
    """
    convert: Callable[[pa.Table, Context, ReadOptions], Any] = use or table_predictions
    offset = piece.first_row
    try:
        for batch in piece_batches(piece, batch_rows):
            n_rows = batch.num_rows
            table = pa.Table.from_batches([batch])
            ctx = Context(repr(piece.path), "table", offset)
            try:
                yield convert(table, ctx, options)
            except CalibrationInputError as exc:
                raise CalibrationInputError(f"{piece.where}: {exc}") from None
            del batch, table  # freed before the next batch is decoded, not after
            offset += n_rows
    except (pa.ArrowException, OSError):
        raise CalibrationInputError(
            f"{piece.where} cannot be read: its data pages are damaged; export the file again."
        ) from None


def read_piece(piece: Piece, options: ReadOptions) -> list[Predictions]:
    """The predictions of one piece (one per model), validated as the loader does."""
    try:
        file = pq.ParquetFile(piece.path, read_dictionary=text_columns(pq.read_schema(piece.path)))
        table = file.read_row_group(piece.row_group)
    except (pa.ArrowException, OSError):
        raise CalibrationInputError(
            f"{piece.where} cannot be read: its data pages are damaged; export the file again."
        ) from None
    ctx = Context(repr(piece.path), "table", piece.first_row)
    try:
        return table_predictions(table, ctx, options)
    except CalibrationInputError as exc:
        raise CalibrationInputError(f"{piece.where}: {exc}") from None


def table_predictions(table: pa.Table, ctx: Context, options: ReadOptions) -> list[Predictions]:
    """The loader's predictions of one table, messages located by ``ctx``."""
    return table_to_predictions(
        table,
        ctx,
        label_column=options.label_column,
        renormalize=options.renormalize,
        name=options.name,
        require_two_classes=False,
    )
