"""Chunked reading of big CSV/TSV (.gz) and Parquet files.

Each chunk becomes one :class:`Predictions` per model, validated with the
same conventions and messages as :func:`load_predictions` (rows numbered
from the start of the file). Per-bin statistics of chunks merge by addition
(:class:`~calibration_core.binning.BinStatistics` ``+``), so a file larger
than memory can be scored chunk by chunk.

In chunked text reading the column types are fixed up front: prediction
columns are read as float64 and the label and model columns as strings, so
that a chunk cannot change a column's type half-way through the file. Integer
labels therefore match class names as text (``1`` matches ``p_1``). A chunk
whose labels are all one class is fine (the whole file is not checked).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..errors import CalibrationInputError
from ..predictions import Predictions
from .checks import Context
from .columns import MODEL_COLUMN, find_label_column, prediction_columns
from .load import load_predictions
from .npz import read_npz
from .readers import arrow_error, open_stream, parquet_damaged, text_options
from .source import resolve_source
from .tables import table_to_predictions


def _text_batches(src, encoding, label_column, block_size) -> Iterator[pa.RecordBatch]:
    read_options, parse_options = text_options(src, encoding, block_size)
    names: list[str] = []
    try:
        with pacsv.open_csv(
            open_stream(src), read_options=read_options, parse_options=parse_options
        ) as probe:
            names = [n.strip() for n in probe.schema.names]
        ctx = Context(src.display)
        label_i = find_label_column(names, label_column, ctx) if names else None
        types = {}
        for i, n in enumerate(names):
            if i == label_i or n.lower() == MODEL_COLUMN:
                types[n] = pa.string()
        if label_i is not None:
            skip = {label_i} | {i for i, n in enumerate(names) if n.lower() == MODEL_COLUMN}
            _, idx, _ = prediction_columns(names, skip, ctx)
            types.update({names[i]: pa.float64() for i in idx})
        # Types are keyed by the raw (unstripped) header names pyarrow sees.
        raw = dict(zip(names, probe.schema.names, strict=True))
        convert = pacsv.ConvertOptions(column_types={raw[k]: v for k, v in types.items()})
        with pacsv.open_csv(
            open_stream(src),
            read_options=read_options,
            parse_options=parse_options,
            convert_options=convert,
        ) as reader:
            for batch in reader:
                yield batch.rename_columns([n.strip() for n in batch.schema.names])
    except UnicodeDecodeError:
        raise CalibrationInputError(
            f"{src.display} is not valid {read_options.encoding} text. Re-save it as UTF-8, or "
            "pass its real encoding, e.g. encoding='latin-1'."
        ) from None
    except zlib.error:
        raise CalibrationInputError(
            f"{src.display} cannot be decompressed: the gzip data is corrupt or truncated. "
            "Export it again."
        ) from None
    except pa.ArrowException as exc:
        if "conversion error" in str(exc):
            raise _conversion_error(src, str(exc), names) from None
        raise arrow_error(src, exc, read_options, parse_options) from None


def _conversion_error(src, msg: str, names: list[str]) -> CalibrationInputError:
    """A cell that is not a number, located from pyarrow's "column #i ... invalid value 'v'"."""
    column = re.search(r"column #(\d+)", msg)
    value = re.search(r"invalid value '(.{0,40})", msg)
    where = "a prediction column"
    if column and int(column.group(1)) < len(names):
        where = f"column {names[int(column.group(1))]!r}"
    shown = f" ({value.group(1).rstrip(chr(39))!r})" if value else ""
    return CalibrationInputError(
        f"{src.display} has a value that is not a number{shown} in {where}. Fix that cell "
        "(numbers only, '.' decimal point), or load the file with load_predictions, which "
        "names its row."
    )


def iter_prediction_chunks(
    source,
    *,
    chunk_rows: int = 1_000_000,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
    file_name: str | None = None,
    encoding: str | None = None,
) -> Iterator[list[Predictions]]:
    """Read a prediction file in chunks of ``chunk_rows`` rows.

    Parameters
    ----------
    source, label_column, renormalize, name, file_name, encoding
        As in :func:`~calibration_core.load_predictions`.
    chunk_rows : int
        Rows per chunk (the last chunk may be shorter). An ``.npz`` archive
        is read whole, as one chunk.

    Yields
    ------
    list of Predictions
        One per model present in the chunk.
    """
    if int(chunk_rows) < 1:
        raise CalibrationInputError(f"chunk_rows must be a positive integer, got {chunk_rows!r}.")
    chunk_rows = int(chunk_rows)
    src = resolve_source(source, file_name)
    model_name = name or src.stem or "model"
    if src.kind == "npz":
        yield [read_npz(src, label_column=label_column, renormalize=renormalize, name=model_name)]
        return
    batches, style = _record_batches(src, encoding, label_column, chunk_rows)
    seen = False
    for offset, table in _rechunk(batches, chunk_rows):
        yield table_to_predictions(
            table,
            Context(src.display, style, offset),
            label_column=label_column,
            renormalize=renormalize,
            name=model_name,
            require_two_classes=False,
        )
        seen = True
    if not seen:  # no data rows: the whole-file loader gives the precise message
        yield load_predictions(
            source if src.data is None else src.data,
            label_column=label_column,
            renormalize=renormalize,
            name=name,
            file_name=file_name,
            encoding=encoding,
        )


def _record_batches(
    src, encoding: str | None, label_column: str | None, chunk_rows: int
) -> tuple[Iterator[pa.RecordBatch], str]:
    """``(batches, style)``: the record batches of a Parquet or text file, and how its
    messages number rows (``"table"`` or ``"data"`` rows, see :class:`Context`)."""
    if src.kind == "parquet":
        try:
            batches = pq.ParquetFile(src.file_arg()).iter_batches(batch_size=chunk_rows)
        except (pa.ArrowException, OSError):
            raise parquet_damaged(src, "its footer (the table of contents at its end)") from None
        return batches, "table"
    return _text_batches(src, encoding, label_column, block_size=1 << 22), "data"


def _rechunk(batches, chunk_rows: int) -> Iterator[tuple[int, pa.Table]]:
    """``(offset, table)``: the batches regrouped in tables of ``chunk_rows`` rows (the
    last one shorter), with the number of rows before each."""
    offset, pending, pending_rows = 0, [], 0
    for batch in batches:
        pending.append(batch)
        pending_rows += batch.num_rows
        while pending_rows >= chunk_rows:
            table = pa.Table.from_batches(pending)
            yield offset, table.slice(0, chunk_rows)
            rest = table.slice(chunk_rows)
            offset += chunk_rows
            pending, pending_rows = rest.to_batches(), rest.num_rows
    if pending_rows:
        yield offset, pa.Table.from_batches(pending)
