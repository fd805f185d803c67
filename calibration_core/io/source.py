"""Where the data comes from: a path, bytes or a binary file-like, and its format.

The format is decided by the file's *content* when its first bytes carry a
magic number (``PAR1`` for Parquet, ``PK`` for a zip, i.e. ``.npz``, ``1f 8b``
for gzip) and by its *name* otherwise. Magic numbers are definitive, so a
gzipped CSV named ``.csv`` is decompressed and a Parquet file named ``.csv``
is read as Parquet. A text file's delimiter follows its extension (``.csv``
comma, ``.tsv`` tab) and is sniffed from the header line only for nameless
bytes (the Python API without ``file_name``). Any other extension (``.txt``,
``.json``, ``.xlsx``, none at all, ...) whose content has no magic number is an
"unsupported file type" error naming the supported formats, never a guess: a
``.txt`` or extensionless file is as often notes or a log as a table, and
reading it as CSV would end in a misleading "no label column". A gzip file is
decompressed, and its inner name must be ``.csv``/``.tsv`` (or absent:
``preds.gz``, delimiter sniffed).
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import CalibrationInputError

#: Extensions read as delimited text (also with a trailing ``.gz``).
TEXT_EXTENSIONS = {".csv": ",", ".tsv": "\t"}
PARQUET_EXTENSIONS = (".parquet", ".pq")
NPZ_EXTENSIONS = (".npz",)
SUPPORTED = ".csv, .tsv (each also .gz), .parquet, .pq, .npz"
#: The formats in words, for messages.
SUPPORTED_WORDS = "CSV, TSV (optionally .gz), Parquet or NPZ"

_UNSUPPORTED_HINTS = {
    ".xlsx": "Excel workbooks are not read; save the sheet as 'CSV UTF-8' instead.",
    ".xls": "Excel workbooks are not read; save the sheet as 'CSV UTF-8' instead.",
    ".npy": (
        "a single .npy array cannot hold the labels too; save probabilities and labels "
        "together with numpy.savez(path, probs=probs, labels=labels)."
    ),
    ".pkl": "pickles are never loaded (they can run arbitrary code); save as .npz or .parquet.",
    ".pickle": "pickles are never loaded (they can run arbitrary code); save as .npz or .parquet.",
    ".json": "JSON is not read; save a table as .csv or .parquet.",
}

_SNIFF_BYTES = 1 << 16


@dataclass(frozen=True)
class Source:
    """A resolved input: its bytes (or path), display name and format.

    Attributes
    ----------
    display : str
        How messages name the input (the file name, or ``"the uploaded data"``).
    stem : str
        Default model name: the file name without its extensions.
    kind : {"text", "parquet", "npz"}
    gzipped : bool
        Whether the (text) content is gzip-compressed.
    delimiter : str or None
        The text delimiter implied by the extension; None means sniff it.
    path : Path or None
        The file on disk, when the source is a path.
    data : bytes or None
        The content, when the source is bytes or a file-like object.
    """

    display: str
    stem: str
    kind: str
    gzipped: bool
    delimiter: str | None
    path: Path | None
    data: bytes | None

    def head(self, n: int = _SNIFF_BYTES) -> bytes:
        """The first ``n`` bytes of the (decompressed) content."""
        try:
            if self.gzipped:
                with self.open() as raw, gzip.GzipFile(fileobj=raw) as fh:
                    return _read_some(fh, n)
            with self.open() as fh:
                return fh.read(n)
        except (OSError, EOFError, zlib.error):
            raise CalibrationInputError(
                f"{self.display} looks gzip-compressed but cannot be decompressed: the gzip "
                "data is corrupt or truncated. Export or upload it again."
            ) from None

    def open(self) -> BinaryIO:
        """The content as a binary file: the path opened, or the bytes in memory."""
        if self.path is not None:
            return self.path.open("rb")
        assert self.data is not None, "a Source holds its path or its bytes"
        return io.BytesIO(self.data)

    def file_arg(self):
        """What readers open: the path, or a file-like over the bytes."""
        return str(self.path) if self.path is not None else io.BytesIO(self.data)


def _read_some(fh, n: int) -> bytes:
    """Read up to ``n`` bytes, tolerating a stream that ends early (truncated gzip)."""
    chunks: list[bytes] = []
    total = 0
    while total < n:
        try:
            chunk = fh.read(min(n - total, 1 << 14))
        except EOFError:
            if not chunks:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _split_name(file_name: str) -> tuple[str, str, bool]:
    """(stem, extension without .gz, gzipped-by-name) of a file name, lower-case ext."""
    base = os.path.basename(file_name)
    lower = base.lower()
    gz = lower.endswith(".gz")
    if gz:
        base, lower = base[:-3], lower[:-3]
    stem, ext = os.path.splitext(base)
    return (stem or base), ext.lower(), gz


def _magic(head: bytes, tail: bytes) -> str | None:
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head[:4] == b"PAR1" and tail[-4:] == b"PAR1":
        return "parquet"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "pickle"
    return None


def resolve_source(source, file_name: str | None = None) -> Source:
    """Turn a path, bytes or binary file-like into a :class:`Source`.

    Parameters
    ----------
    source : str, os.PathLike, bytes, bytearray, memoryview or binary file-like
    file_name : str, optional
        The original file name of bytes or a file-like (e.g. an upload): used
        for the format and for messages.

    Returns
    -------
    Source
    """
    path, data, head, tail = _read_ends(source)
    if path is not None:
        file_name = file_name or path.name
    display = f"'{os.path.basename(file_name)}'" if file_name else "the uploaded data"
    stem, ext, gz_name = _split_name(file_name) if file_name else ("", "", False)
    if (path.stat().st_size == 0) if path is not None else not data:
        raise CalibrationInputError(
            f"{display} is empty (0 bytes); export the predictions again or pick another file."
        )
    kind, gzipped, delimiter = _format(display, bool(file_name), ext, gz_name, head, tail)
    return Source(display, stem, kind, gzipped, delimiter, path, data)


def _read_ends(source) -> tuple[Path | None, bytes | None, bytes, bytes]:
    """``(path, data, head, tail)``: a path (checked to be a file) or the bytes of ``source``.

    ``head`` and ``tail`` are the first 8 and last 4 bytes (for :func:`_magic`).
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            what = "a folder" if path.is_dir() else "not found"
            raise CalibrationInputError(
                f"cannot read '{path}': {what}. Give the path of a prediction file ({SUPPORTED})."
            )
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            fh.seek(max(size - 4, 0))
            return path, None, head, fh.read(4)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif hasattr(source, "read"):
        data = source.read()
        if isinstance(data, str):
            raise CalibrationInputError(
                "the file object was opened in text mode; open it in binary mode ('rb')."
            )
        data = bytes(data)
    else:
        raise CalibrationInputError(
            f"cannot read predictions from a {type(source).__name__}; pass a file path, "
            "bytes or a binary file object."
        )
    return None, data, data[:8], data[-4:]


def _format(
    display: str, named: bool, ext: str, gz_name: bool, head: bytes, tail: bytes
) -> tuple[str, bool, str | None]:
    """``(kind, gzipped, delimiter)`` of a :class:`Source`: by magic number, else by name.

    ``named`` says whether the input has a file name (``ext`` and ``gz_name``
    come from it); a nameless text input has its delimiter sniffed (None).
    """
    magic = _magic(head, tail)
    if magic == "pickle" or ext in (".pkl", ".pickle"):
        raise CalibrationInputError(f"{display} is a Python pickle: {_UNSUPPORTED_HINTS['.pkl']}")
    if magic == "parquet":
        return "parquet", False, None
    if magic == "zip":
        if ext in (".xlsx", ".xls"):
            raise unsupported_type(display, ext)
        return "npz", False, None
    if magic == "gzip":
        if ext and ext not in TEXT_EXTENSIONS:
            raise unsupported_type(display, ext + ".gz")
        return "text", True, TEXT_EXTENSIONS.get(ext)
    if ext in PARQUET_EXTENSIONS or ext in NPZ_EXTENSIONS:
        kind = "Parquet" if ext in PARQUET_EXTENSIONS else ".npz (zip)"
        raise CalibrationInputError(
            f"{display} is named {ext} but is not a {kind} file (its first bytes are "
            f"{head[:4]!r}); it is corrupt or was saved in another format. Save it again, or "
            "rename it after its real format."
        )
    if gz_name:
        raise CalibrationInputError(
            f"{display} is named .gz but is not gzip-compressed; rename it without .gz."
        )
    if ext in TEXT_EXTENSIONS:
        return "text", False, TEXT_EXTENSIONS[ext]
    if not named:
        return "text", False, None
    raise unsupported_type(display, ext)


def unsupported_type(display: str, ext: str) -> CalibrationInputError:
    """The error for a file whose name and content are none of the supported formats.

    Parameters
    ----------
    display : str
        How the message names the file.
    ext : str
        Its extension (``""`` when it has none).

    Returns
    -------
    CalibrationInputError
        "'x.txt' has an unsupported file type '.txt'; upload CSV, ..." and a hint on
        how to convert the known non-formats (Excel, JSON, .npy).
    """
    kind = f"'{ext}'" if ext else "(no extension)"
    hint = _UNSUPPORTED_HINTS.get(ext.removesuffix(".gz"))
    message = f"{display} has an unsupported file type {kind}; upload {SUPPORTED_WORDS}."
    if hint:
        message += f" {hint[0].upper()}{hint[1:]}"
    elif ext in ("", ".txt"):
        message += " If it already is a comma- or tab-separated table, rename it to .csv or .tsv."
    return CalibrationInputError(message)
