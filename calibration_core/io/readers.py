"""Format-specific reading: delimited text (also gzipped) and Parquet into a table.

Text is read with pyarrow's multi-threaded CSV reader, which is faster than
``pandas.read_csv`` (C engine or ``engine="pyarrow"``) on large files.

Encodings (a decision, not a guess): text must be UTF-8 (a UTF-8 byte-order
mark is skipped) or UTF-16/UTF-32 *with* a byte-order mark (Excel's "Unicode
text" export), which is transcoded. Anything else (Latin-1, cp1252, binary
data) raises :class:`CalibrationInputError` naming the first undecodable line
and how to re-save the file, unless the caller names the ``encoding``. The
loader never falls back to Latin-1 by itself: every byte sequence decodes as
Latin-1, so such a fallback would silently turn garbage into class names.

Cells that are empty or hold ``nan``, ``NA``, ``null`` (pyarrow's default null
markers) are read as missing values; the column layer rejects them in
probability, logit, score, label and model columns.
"""

from __future__ import annotations

import codecs
import warnings
import zlib

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..errors import CalibrationInputError, TimeZonesWarning
from ..slices.times import ZONE_PATTERN, zone_name, zone_notice
from .budget import MAX_NAME_LENGTH, MAX_NUMBER_LENGTH, DecodedBudget
from .columns import (
    LABEL_CANDIDATES,
    LOGIT_PREFIX,
    MODEL_COLUMN,
    PROB_PREFIXES,
    SCORE_COLUMN,
)
from .source import Source

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_DELIMITERS = (",", "\t", ";", "|")
_RESAVE = (
    "Re-save it as UTF-8 (in Excel: 'CSV UTF-8'; in pandas: df.to_csv(path), the default), "
    "or pass encoding='latin-1' (or the file's real encoding) if you know it."
)


def detect_encoding(src: Source, head: bytes, encoding: str | None) -> str:
    if encoding is not None:
        try:
            name = codecs.lookup(encoding).name
            return "utf8" if name == "utf-8" else name
        except LookupError:
            raise CalibrationInputError(
                f"unknown encoding {encoding!r}; use a Python codec name such as 'utf-8', "
                "'latin-1' or 'cp1252'."
            ) from None
    for bom, name in _BOMS:
        if head.startswith(bom) and name != "utf-8":
            return name
    if b"\x00" in head:
        raise CalibrationInputError(
            f"{src.display} is not a text file: it contains NUL bytes (binary data, or UTF-16 "
            "text without a byte-order mark). Export the predictions as CSV (UTF-8), Parquet "
            "or npz."
        )
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as exc:
        line = head[: exc.start].count(b"\n") + 1
        raise CalibrationInputError(
            f"{src.display} is not valid UTF-8 text: byte {head[exc.start]:#04x} on line {line} "
            f"(counting the header as line 1) cannot be decoded. {_RESAVE}"
        ) from None
    return "utf8"


def sniff_delimiter(src: Source, head: bytes, encoding: str) -> str:
    text = codecs.getincrementaldecoder(encoding)(errors="replace").decode(head, final=False)
    header = text.lstrip("\ufeff").split("\n", 1)[0]
    counts = {d: header.count(d) for d in _DELIMITERS}
    if src.delimiter is not None and counts[src.delimiter]:
        return src.delimiter
    best = max(_DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else (src.delimiter or ",")


#: Widest text table read (fields in the header line): parsing 1e5 columns takes minutes.
MAX_TEXT_COLUMNS = 25_000
_HEADER_SCAN_BYTES = 8 << 20


def check_width(src: Source, head: bytes, encoding: str, delimiter: str) -> None:
    """Refuse a header line with more than :data:`MAX_TEXT_COLUMNS` fields, before parsing."""
    if b"\n" not in head and len(head) >= 1 << 16:  # a long header: read on
        head = src.head(_HEADER_SCAN_BYTES)
    text = codecs.getincrementaldecoder(encoding)(errors="replace").decode(head, final=False)
    fields = text.split("\n", 1)[0].count(delimiter) + 1
    if fields > MAX_TEXT_COLUMNS:
        raise CalibrationInputError(
            f"{src.display} has {fields:,} columns in its header line; at most "
            f"{MAX_TEXT_COLUMNS:,} are read from text (one per class plus the label). Check the "
            "delimiter, or save wide predictions as .npz."
        )


def open_stream(src: Source):
    base = pa.memory_map(str(src.path)) if src.path is not None else pa.BufferReader(src.data)
    return pa.CompressedInputStream(base, "gzip") if src.gzipped else base


def _locate_bad_row(src, read_options, parse_options) -> str:
    """Re-read single-threaded to learn the record number of a malformed row."""
    found = []

    def handler(row):
        found.append(row)
        return "error"

    opts = pacsv.ParseOptions(
        delimiter=parse_options.delimiter, invalid_row_handler=handler, newlines_in_values=True
    )
    ropts = pacsv.ReadOptions(encoding=read_options.encoding, use_threads=False)
    try:
        pacsv.read_csv(open_stream(src), read_options=ropts, parse_options=opts)
    except (pa.ArrowException, OSError, UnicodeDecodeError, zlib.error):
        pass
    if not found:
        return ""
    row = found[0]
    where = f"data row {row.number - 1} (1-based, after the header)" if row.number else "a row"
    text = row.text if len(row.text) <= 80 else row.text[:77] + "..."
    return (
        f"{where} has {row.actual_columns} fields but the header has {row.expected_columns}: "
        f"{text!r}. "
    )


def text_options(src: Source, encoding: str | None = None, block_size: int | None = None):
    """pyarrow (ReadOptions, ParseOptions) for a text source: encoding and delimiter."""
    head = src.head()
    enc = detect_encoding(src, head, encoding)
    delimiter = sniff_delimiter(src, head, enc)
    check_width(src, head, enc, delimiter)
    read_options = pacsv.ReadOptions(encoding=enc, use_threads=True)
    if block_size is not None:
        read_options.block_size = block_size
    # Quoted line breaks inside values are rare in prediction files and cost ~10 % of the
    # parse time, so they are only allowed on a second attempt after a malformed row.
    return read_options, pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=False)


def read_text_table(
    src: Source, *, encoding: str | None = None, budget: DecodedBudget | None = None
) -> pa.Table:
    """Read CSV/TSV/TXT (optionally gzipped) into a pyarrow Table.

    Parameters
    ----------
    src : Source
    encoding : str, optional
        Overrides the UTF-8 / byte-order-mark detection.
    budget : DecodedBudget, optional
        Counts the table read (at most a few times the text's size: every
        field takes at least one byte and its delimiter).

    Returns
    -------
    pyarrow.Table
        Column names stripped of surrounding whitespace; duplicates kept.
    """
    read_options, parse_options = text_options(src, encoding)
    delimiter = parse_options.delimiter
    try:
        try:
            table = pacsv.read_csv(
                open_stream(src), read_options=read_options, parse_options=parse_options
            )
        except pa.ArrowInvalid as exc:
            if "Expected" not in str(exc):
                raise
            parse_options = pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
            table = pacsv.read_csv(
                open_stream(src), read_options=read_options, parse_options=parse_options
            )
    except UnicodeDecodeError as exc:
        raise CalibrationInputError(
            f"{src.display} is not valid {read_options.encoding} text ({exc.reason} at byte "
            f"{exc.start} of the "
            f"header). {_RESAVE}"
        ) from None
    except (OSError, zlib.error) as exc:
        if isinstance(exc, pa.ArrowException):
            raise arrow_error(src, exc, read_options, parse_options) from None
        raise CalibrationInputError(
            f"{src.display} cannot be decompressed: the gzip data is corrupt or truncated. "
            "Export or upload it again."
        ) from None
    except pa.ArrowException as exc:
        raise arrow_error(src, exc, read_options, parse_options) from None
    if budget is not None:
        budget.add(table.nbytes, f"{table.num_rows:,} rows x {table.num_columns:,} columns read")
    warn_converted_zones(src, table, read_options, parse_options)
    return table.rename_columns(column_names(table, src))


def warn_converted_zones(src: Source, table: pa.Table, read_options, parse_options) -> None:
    """A :class:`~calibration_core.errors.TimeZonesWarning` per column of times in several zones.

    pyarrow reads ISO 8601 times with zones as UTC timestamps, so their zones
    are read again from those columns' text: a second pass over the file, only
    when it has such a column (a zone-less time column costs nothing).
    """
    names = table.column_names
    zoned = [n for n, t in zip(names, table.schema.types, strict=True)
             if pa.types.is_timestamp(t) and t.tz is not None and names.count(n) == 1]  # fmt: skip
    if not zoned:
        return
    convert = pacsv.ConvertOptions(
        include_columns=zoned, column_types=dict.fromkeys(zoned, pa.string())
    )
    text = pacsv.read_csv(open_stream(src), read_options=read_options,
                          parse_options=parse_options, convert_options=convert)  # fmt: skip
    for name in zoned:
        written = pc.extract_regex(pc.unique(text.column(name)), ZONE_PATTERN)
        zones = {zone_name(z) for z in written.field("zone").to_pylist() if z is not None}
        if (notice := zone_notice(str(name).strip(), zones)) is not None:
            warnings.warn(notice, TimeZonesWarning, stacklevel=2)


def column_names(table, src: Source) -> list[str]:
    """The table's column names, stripped; undecodable names are an encoding error."""
    try:
        return [str(n).strip() for n in table.column_names]
    except UnicodeDecodeError:
        raise CalibrationInputError(
            f"{src.display} has a header that is not valid UTF-8. {_RESAVE}"
        ) from None


def arrow_error(src, exc, read_options, parse_options) -> CalibrationInputError:
    msg = str(exc)
    if "Empty CSV file" in msg:
        return CalibrationInputError(
            f"{src.display} is empty: it has no header line and no data. Export the predictions "
            "again (a header line, then one row per prediction)."
        )
    if "straddling object" in msg:
        return CalibrationInputError(
            f"{src.display} has a single field longer than {read_options.block_size >> 20} MB "
            "(or an unbalanced quote that runs on); prediction files hold short numbers and "
            "class names: check the quotes and that this is the predictions table."
        )
    if "Expected" in msg and "columns" in msg:
        detail = _locate_bad_row(src, read_options, parse_options)
        detail = detail or "a row has more or fewer fields than the header. "
        return CalibrationInputError(
            f"{src.display} is not a well-formed table: {detail}Every row must "
            f"have as many fields as the header (delimiter {parse_options.delimiter!r}); quote "
            "values that contain the delimiter."
        )
    if "inflate" in msg.lower() or "gzip" in msg.lower() or "compress" in msg.lower():
        return CalibrationInputError(
            f"{src.display} cannot be decompressed: the gzip data is corrupt or truncated. "
            "Export or upload it again."
        )
    return CalibrationInputError(
        f"{src.display} cannot be read as delimited text. Check that it is a CSV/TSV file: one "
        "header line, then rows with as many fields as the header."
    )


#: Rows decoded at a time from Parquet, so that the budget is checked as the data grows.
PARQUET_BATCH_ROWS = 1 << 16


def parquet_damaged(src: Source, part: str) -> CalibrationInputError:
    """The message of a Parquet file that pyarrow cannot decode (no library text)."""
    return CalibrationInputError(
        f"{src.display} is a damaged Parquet file: {part} cannot be decoded (the file is "
        "truncated or corrupt). Write it again, e.g. with DataFrame.to_parquet(path)."
    )


def _loader_columns(names: list[str], label_column: str | None) -> set[str]:
    """The columns the loader checks: label candidates, model, score and prediction columns.

    Other text columns (ids, notes) travel with the predictions unchecked.
    """
    asked = str(label_column).lower() if label_column is not None else None
    return {
        n
        for n in names
        if n.strip().lower() in (*LABEL_CANDIDATES, MODEL_COLUMN, SCORE_COLUMN, asked)
        or n.strip().lower().startswith((*PROB_PREFIXES, LOGIT_PREFIX))
    }


def row_group_decoded_bytes(group: pq.RowGroupMetaData, wanted: set[str] | None = None) -> int:
    """Decoded bytes of one row group's ``wanted`` columns (None: all), from the footer.

    Per column chunk the larger of its uncompressed size and 8 bytes per value
    (dictionary and run-length encodings make numbers smaller on disk than in
    memory); text columns are read dictionary-encoded, so their size is their
    pages' (the name length rules bound what they expand to later).
    """
    total = 0
    for j in range(group.num_columns):
        chunk = group.column(j)
        if wanted is None or chunk.path_in_schema.split(".")[0] in wanted:
            total += max(chunk.total_uncompressed_size, 8 * group.num_rows)
    return total


def _parquet_estimate(meta, wanted: set[str]) -> int:
    """Decoded bytes of the ``wanted`` columns from the footer, before reading any page."""
    return sum(
        row_group_decoded_bytes(meta.row_group(g), wanted) for g in range(meta.num_row_groups)
    )


def text_columns(schema: pa.Schema) -> list[str]:
    """The text and binary columns of ``schema``: read dictionary-encoded
    (``read_dictionary``), so a value repeated on every row is decoded once."""
    return [n for n, t in zip(schema.names, schema.types, strict=True) if _is_text_or_bytes(t)]


def _check_text_sizes(src: Source, meta, text: list[str]) -> None:
    """Refuse a text column whose footer sizes exceed what capped values can take.

    Every value of a name, label or number column takes at most 4 bytes per
    character plus a 4-byte length (plain encoding), or a dictionary entry of
    that size plus a 4-byte index, so its uncompressed pages hold at most
    ``rows * (4 * cap + 8)`` bytes (plus page headers); more means values past
    the cap, refused before any page is read.
    """
    sizes = dict.fromkeys(text, 0)
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for j in range(group.num_columns):
            top = group.column(j).path_in_schema.split(".")[0]
            if top in sizes:
                sizes[top] += group.column(j).total_uncompressed_size
    rows = max(meta.num_rows, 1)
    for name, size in sizes.items():
        numbers = name.strip().lower().startswith((*PROB_PREFIXES, LOGIT_PREFIX, SCORE_COLUMN))
        cap = MAX_NUMBER_LENGTH if numbers else MAX_NAME_LENGTH
        if size > rows * (4 * cap + 8) + (64 << 10):
            what = "numbers written as text" if numbers else "names and labels"
            raise CalibrationInputError(
                f"column {name!r} of {src.display} holds about {size // rows:,} bytes per row "
                f"({size:,} bytes for {meta.num_rows:,} rows, as the file's footer declares); "
                f"{what} are at most {cap} characters. Check that this is the right column, "
                "and shorten its values."
            )


def read_parquet_table(
    src: Source,
    *,
    label_column: str | None = None,
    columns: list[str] | None = None,
    budget: DecodedBudget | None = None,
) -> pa.Table:
    """Read the columns the loader uses from a Parquet file into a pyarrow Table.

    Parameters
    ----------
    src : Source
    label_column : str, optional
        As in :func:`~calibration_core.io.load_predictions` (read as well).
    columns : list of str, optional
        The columns to read instead of all of them.
    budget : DecodedBudget, optional
        Checked against the footer's sizes before reading, then counted batch
        by batch (:data:`PARQUET_BATCH_ROWS` rows) while decoding.

    Returns
    -------
    pyarrow.Table
        Every column of the file, by name; the loader's columns and the other
        columns of one value per cell are read (they travel with the predictions,
        ``Predictions.extra``), the rest (lists, structs, binary; or all but
        ``columns`` when given) are all-null placeholders, never read. Text
        columns stay dictionary-encoded.
    """
    try:
        pf = pq.ParquetFile(src.file_arg())
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError):
        raise parquet_damaged(src, "its footer (the table of contents at its end)") from None
    names = list(schema.names)
    if columns is not None:
        wanted = columns
    elif len(set(names)) < len(names):
        wanted = names  # reported as duplicates by the loader
    else:
        wanted = scalar_columns(schema, _loader_columns(names, label_column))
    keep = set(wanted)
    text = [n for n in dict.fromkeys(text_columns(schema)) if n in keep]
    checked = _loader_columns(names, label_column)
    _check_text_sizes(src, pf.metadata, [n for n in text if n in checked])
    if budget is not None:
        n_pred = sum(n.strip().lower().startswith((*PROB_PREFIXES, LOGIT_PREFIX)) for n in wanted)
        rows = pf.metadata.num_rows
        budget.check(
            _parquet_estimate(pf.metadata, keep) + 16 * rows * max(n_pred, 1),
            f"{rows:,} rows of {len(wanted)} columns, as the file's footer declares them",
        )
    batches = []
    try:
        pf = pq.ParquetFile(src.file_arg(), read_dictionary=text)  # text stays encoded
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=wanted):
            if budget is not None:
                budget.add(batch.nbytes, f"{batch.num_rows:,} more rows decoded")
            batches.append(batch)
        table = pa.Table.from_batches(batches) if batches else pf.read(columns=wanted)
    except (pa.ArrowException, OSError):
        raise parquet_damaged(src, "its data pages") from None
    if wanted is not names:
        table = pa.table(
            [table.column(n) if n in wanted else pa.nulls(table.num_rows) for n in names],
            names=names,
        )
    return table.rename_columns(column_names(table, src))


def scalar_columns(schema: pa.Schema, loader: set[str]) -> list[str]:
    """The loader's columns and every other column of one value per cell (numbers, text,
    dates, booleans): those travel with the predictions. Lists, structs and binary columns
    (embeddings, images) are not read.
    """
    out = []
    for name, t in zip(schema.names, schema.types, strict=True):
        value_type = t.value_type if pa.types.is_dictionary(t) else t
        nested = pa.types.is_nested(value_type) or pa.types.is_binary(value_type)
        nested = nested or pa.types.is_large_binary(value_type)
        if name in loader or not nested:
            out.append(name)
    return out


def other_column_names(schema: pa.Schema, label_column: str | None = None) -> list[str]:
    """The columns of ``schema`` that travel with the predictions (group or time columns):
    one value per cell, and neither the label, the model nor a score column."""
    loader = _loader_columns(list(schema.names), label_column)
    return [name for name in scalar_columns(schema, loader) if name not in loader]


def _is_text_or_bytes(t: pa.DataType) -> bool:
    return any(
        f(t) for f in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                       pa.types.is_large_binary)
    )  # fmt: skip
