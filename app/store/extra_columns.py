"""The file's other columns (``Predictions.extra``) as the store keeps them: compact and safe.

An uploaded file's columns that are not its predictions, labels or models
(groups, ids, times, features) travel with the predictions for the per-group
and time-window views (issue 19). Between the parsing child and the web
worker, and on disk, every column is one plain numpy array of a fixed set of
dtypes (no pickle, no object arrays):

* ``text``: ``int32`` codes (``-1`` for a missing cell) plus the list of
  distinct values (its categories), so a column of a few distinct labels
  over a million rows costs 4 MB, and the strings are JSON, never pickled.
  Any other value that is not a number, a boolean or a time (decimals,
  durations) is kept as its text.
* ``number`` (``float64``, NaN for missing), ``integer`` (``int64``),
  ``bool``, ``time`` (``datetime64`` in the file's unit, NaT for missing).

:func:`encode_extra` and :meth:`EncodedColumn.decode` convert between
``Predictions.extra`` and this form; :func:`received_column` checks what a
parsing child sent before it is used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from calibration_core import CalibrationInputError

#: The dtypes of each kind (``numpy.dtype.str``).
KIND_DTYPES = {
    "text": ("<i4",),
    "number": ("<f8",),
    "integer": ("<i8",),
    "bool": ("|b1",),
    "time": ("<M8[D]", "<M8[s]", "<M8[ms]", "<M8[us]", "<M8[ns]"),
}


@dataclass(frozen=True, eq=False)
class EncodedColumn:
    """One other column of a file, as stored.

    Attributes
    ----------
    name : str
    kind : str
        A key of :data:`KIND_DTYPES`.
    values : numpy.ndarray, shape (N,)
        Codes of a text column, else the values.
    categories : tuple of str
        The distinct values of a text column (code ``j`` is ``categories[j]``).
    """

    name: str
    kind: str
    values: np.ndarray
    categories: tuple[str, ...] = ()

    def decode(self) -> np.ndarray:
        """The column as ``Predictions.extra`` holds it (text: an object array, None missing)."""
        if self.kind != "text":
            return self.values
        lookup = np.array([*self.categories, None], dtype=object)
        return lookup[self.values]  # code -1 picks the trailing None

    def categories_bytes(self) -> bytes:
        """The categories as UTF-8 JSON (what is sent and stored)."""
        return json.dumps(list(self.categories)).encode()

    def header(self) -> dict:
        """What describes the column next to its array: name, kind, dtype, categories count."""
        return {
            "name": self.name,
            "kind": self.kind,
            "dtype": self.values.dtype.str,
            "n_categories": len(self.categories),
        }


def _kind(values: np.ndarray) -> tuple[str, np.ndarray]:
    """The kind of a column and its values in that kind's dtype (text: not yet encoded)."""
    k = values.dtype.kind
    if k == "b":
        return "bool", values
    if k == "f":
        return "number", values.astype(np.float64, copy=False)
    if k == "i" or (k == "u" and (values.size == 0 or values.max() <= np.iinfo(np.int64).max)):
        return "integer", values.astype(np.int64, copy=False)
    if k == "u":
        return "number", values.astype(np.float64)
    if k == "M" and values.dtype.str in KIND_DTYPES["time"]:
        return "time", values
    return "text", values


def encode_column(name: str, values: np.ndarray) -> EncodedColumn:
    """One column of ``Predictions.extra`` in its stored form (see the module docstring)."""
    values = np.asarray(values)
    kind, values = _kind(values)
    if kind != "text":
        return EncodedColumn(name, kind, np.ascontiguousarray(values))
    import pandas as pd  # lazily: not at server start

    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    categories = tuple(str(u) for u in uniques)
    return EncodedColumn(name, "text", codes.astype(np.int32), categories)


def encode_extra(extra: Mapping[str, np.ndarray]) -> list[EncodedColumn]:
    """Every other column of a model, in file order."""
    return [encode_column(name, values) for name, values in extra.items()]


def decode_extra(columns: list[EncodedColumn]) -> dict[str, np.ndarray]:
    """``Predictions.extra`` from stored columns."""
    return {col.name: col.decode() for col in columns}


def extra_nbytes(extra: Mapping[str, np.ndarray]) -> int:
    """Bytes the other columns take in the store (text counted 8 per row: codes and names)."""
    return sum(8 * v.shape[0] if v.dtype.kind == "O" else v.nbytes for v in extra.values())


def parse_categories(raw: bytes, count: int, name: str) -> tuple[str, ...]:
    """The categories of a text column from their JSON bytes, checked.

    Raises
    ------
    CalibrationInputError
        When they are not ``count`` strings (a damaged store or a subverted parser).
    """
    try:
        values = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        values = None
    if not isinstance(values, list) or len(values) != count:
        raise CalibrationInputError(f"the values of column {name!r} could not be read back.")
    if not all(isinstance(v, str) for v in values):
        raise CalibrationInputError(f"the values of column {name!r} are not all text.")
    return tuple(values)


def received_column(header: dict, values: np.ndarray, categories: tuple[str, ...]) -> EncodedColumn:
    """An :class:`EncodedColumn` from what a parsing child sent, checked.

    Raises
    ------
    CalibrationInputError
        When its kind, dtype, shape or codes are not what the store keeps.
    """
    name, kind = str(header.get("name")), header.get("kind")
    if kind not in KIND_DTYPES or values.dtype.str not in KIND_DTYPES[kind] or values.ndim != 1:
        raise CalibrationInputError(f"column {name!r} came back as {kind} {values.dtype}.")
    if kind == "text" and values.size and (values.min() < -1 or values.max() >= len(categories)):
        raise CalibrationInputError(f"column {name!r} came back with codes out of range.")
    return EncodedColumn(name, kind, values, categories if kind == "text" else ())
