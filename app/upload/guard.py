"""Bounds on what an uploaded file *expands* to: before the loader parses it, and while it does.

The upload limit (``MAX_UPLOAD_MB``) bounds the bytes received; a small
compressed file can still expand to gigabytes (a "bomb"). Two layers bound
what one upload may cost a worker:

**While parsing** (every format), the loader is given
:func:`decoded_limit`: the data it decodes (the Arrow columns or npz arrays it
reads, and the float64 matrix it builds) may be at most
:data:`DECODED_FACTOR` x ``MAX_UPLOAD_MB`` (1.6 GB at the default 200 MB).
The loader checks Parquet footers before reading any page, counts Parquet
batches as they are decoded, npz arrays from their headers, and refuses as
soon as the total would pass the bound; names (classes, models, string
labels) are at most :data:`calibration_core.io.budget.MAX_NAME_LENGTH`
characters and are checked on distinct values before any is expanded (see
:mod:`calibration_core.io.budget`). Eight times the upload limit leaves room
for a legitimate file at the limit: the loader counts 8 bytes per value read
plus twice 8 per probability for the float64 matrix (and a copy), which is
about 1.2x a CSV of ``%.17g`` numbers, 4-5x one of numbers rounded to 3
decimals, and 6x a Parquet file of float32 probabilities. The parse runs in
a child process whose memory is bounded too (``PARSE_MEMORY_LIMIT_MB``, by
default this bound plus 256 MB; :mod:`app.upload.parser`), so that a file the
count misjudges (it trusts a Parquet footer for one batch) or a parser bug
cannot grow the web worker.

**Before parsing**, :func:`check_expansion` looks at the container, reading at
most the limit:

* gzip (``1f 8b``): decompressed in a stream, counting bytes, and refused
  as soon as the count passes the limit (so a bomb costs at most the limit
  in CPU time and 1 MB of memory);
* zip / ``.npz`` (``PK``): the members' declared sizes (Python's zip reader
  never inflates a member past its declared size) must add up to at most
  the limit, and the archive may hold at most :data:`MAX_MEMBERS` members;
  every ``.npy`` member's header is read for its shape;
* Parquet (``PAR1``): at most :data:`MAX_COLUMNS` columns in the footer (its
  sizes are checked by the loader, above);

and, for every format, at most :data:`MAX_COLUMNS` columns (the core's text
reader refuses wider headers itself). Anything else passes through; the
loader gives its own message for a corrupt container.

The number of classes of a model is a separate server policy
(``MAX_CLASSES``, checked in :mod:`app.upload` once the file is parsed).
"""

from __future__ import annotations

import gzip
import zipfile
import zlib

import numpy as np

from calibration_core import CalibrationInputError

#: Widest table accepted (columns, or classes of an npz array).
MAX_COLUMNS = 25_000
#: Most members of an uploaded zip / npz archive.
MAX_MEMBERS = 64
#: Decoded data of one upload is at most this many times ``MAX_UPLOAD_MB``.
DECODED_FACTOR = 8
_CHUNK = 1 << 20


class UploadTooLarge(CalibrationInputError):
    """An upload whose content expands past the limits (message for the user)."""


def _mb(limit_bytes: int) -> str:
    return f"{limit_bytes / (1 << 20):g} MB"


def _too_large(name: str, what: str, limit_bytes: int) -> UploadTooLarge:
    return UploadTooLarge(
        f"{name} {what} the {_mb(limit_bytes)} upload limit, which applies to the decompressed "
        "data too; split it into smaller files or ask the operator to raise MAX_UPLOAD_MB."
    )


def _too_wide(name: str, columns: int) -> UploadTooLarge:
    return UploadTooLarge(
        f"{name} has {columns:,} columns; at most {MAX_COLUMNS:,} are accepted (one per class "
        "plus the label). Check that this is a predictions table."
    )


def _check_gzip(stream, name: str, limit: int) -> None:
    total = 0
    try:
        with gzip.GzipFile(fileobj=stream, mode="rb") as fh:
            while chunk := fh.read(_CHUNK):
                total += len(chunk)
                if total > limit:
                    raise _too_large(name, "expands to more than", limit)
    except (OSError, EOFError, zlib.error):
        return  # corrupt or truncated: the loader says so


def _check_zip(stream, name: str, limit: int) -> None:
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, ValueError):
        return
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise UploadTooLarge(
                f"{name} is an archive of {len(members)} members; at most {MAX_MEMBERS} are "
                "accepted (an .npz needs the predictions, the labels and the class names)."
            )
        if sum(m.file_size for m in members) > limit:
            raise _too_large(name, "expands to more than", limit)
        for member in members:
            if member.filename.endswith(".npy"):
                shape = _npy_shape(archive, member)
                if shape is not None and len(shape) >= 2 and shape[1] > MAX_COLUMNS:
                    raise _too_wide(name, int(shape[1]))


def _npy_shape(archive: zipfile.ZipFile, member: zipfile.ZipInfo):
    try:
        with archive.open(member) as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _, _ = np.lib.format.read_array_header_1_0(fh)
            else:
                shape, _, _ = np.lib.format.read_array_header_2_0(fh)
        return shape
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error):
        return None  # the loader explains what is wrong with it


def _check_parquet(stream, name: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(stream).metadata
    except (pa.ArrowException, OSError, ValueError):
        return
    if meta.num_columns > MAX_COLUMNS:
        raise _too_wide(name, meta.num_columns)


def decoded_limit(limit_bytes: int) -> int:
    """Most bytes the loader may decode from one upload: :data:`DECODED_FACTOR` x the limit."""
    return DECODED_FACTOR * limit_bytes


def check_expansion(stream, name: str, limit_bytes: int) -> None:
    """Refuse an upload whose content would expand past the limits (see the module docstring).

    Parameters
    ----------
    stream : binary file-like, seekable
        The received file; it is rewound afterwards.
    name : str
        The (cleaned) file name, for messages.
    limit_bytes : int
        ``MAX_UPLOAD_MB`` in bytes.

    Raises
    ------
    UploadTooLarge
        With a message naming the file and the limit.
    """
    stream.seek(0)
    head = stream.read(4)
    stream.seek(0)
    try:
        if head[:2] == b"\x1f\x8b":
            _check_gzip(stream, name, limit_bytes)
        elif head in (b"PK\x03\x04", b"PK\x05\x06"):
            _check_zip(stream, name, limit_bytes)
        elif head == b"PAR1":
            _check_parquet(stream, name)
    finally:
        stream.seek(0)
