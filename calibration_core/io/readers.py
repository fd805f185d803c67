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
import zlib

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..errors import CalibrationInputError
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


def read_text_table(src: Source, *, encoding: str | None = None) -> pa.Table:
    """Read CSV/TSV/TXT (optionally gzipped) into a pyarrow Table.

    Parameters
    ----------
    src : Source
    encoding : str, optional
        Overrides the UTF-8 / byte-order-mark detection.

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
            f"{src.display} cannot be decompressed ({exc}); the file is corrupt or truncated: "
            "export or upload it again."
        ) from None
    except pa.ArrowException as exc:
        raise arrow_error(src, exc, read_options, parse_options) from None
    return table.rename_columns(column_names(table, src))


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
        return CalibrationInputError(
            f"{src.display} is not a well-formed table: {detail or msg + '. '}Every row must "
            f"have as many fields as the header (delimiter {parse_options.delimiter!r}); quote "
            "values that contain the delimiter."
        )
    if "inflate" in msg.lower() or "gzip" in msg.lower() or "compress" in msg.lower():
        return CalibrationInputError(
            f"{src.display} cannot be decompressed ({msg}); the file is corrupt or truncated: "
            "export or upload it again."
        )
    return CalibrationInputError(
        f"{src.display} cannot be read as delimited text ({msg}). Check that it is a CSV/TSV "
        "file with one header line."
    )


def read_parquet_table(src: Source) -> pa.Table:
    """Read a Parquet file into a pyarrow Table.

    Parameters
    ----------
    src : Source

    Returns
    -------
    pyarrow.Table
    """
    try:
        table = pq.read_table(src.file_arg())
    except (pa.ArrowException, OSError) as exc:
        raise CalibrationInputError(
            f"{src.display} cannot be read as Parquet ({exc}); the file is corrupt or "
            "truncated: write it again (e.g. DataFrame.to_parquet)."
        ) from None
    return table.rename_columns(column_names(table, src))
