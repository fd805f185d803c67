"""Bounds on what a file decodes to: the length of names, and the bytes a load decodes.

A small file can decode to far more than its size: a Parquet dictionary page
of one 1 MB string that 20,000 rows point at is 1.3 KB on disk and 20 GB as
strings. Two rules keep every load bounded by its caller's choice:

* **Names** (class names, model names, string labels) are at most
  :data:`MAX_NAME_LENGTH` characters, and the text of a numeric cell at most
  :data:`MAX_NUMBER_LENGTH`. They are checked on the distinct values (a
  dictionary, or the column's longest value) *before* any value is turned
  into a Python string, so a long name costs its stored bytes, never one copy
  per row.
* **Decoded bytes**: with ``max_decoded_bytes`` (:class:`DecodedBudget`),
  the loader adds up, before it allocates them, the Arrow columns it reads
  (for Parquet: first from the footer's uncompressed sizes, then batch by batch
  as they are decoded), the npz arrays (from their headers) and the float64
  matrix it builds, and refuses the file as soon as the total passes the bound.
  Without it (the default, e.g. the command line) there is no such bound.
"""

from __future__ import annotations

from ..errors import CalibrationInputError

#: Longest class name, model name or string label (characters).
MAX_NAME_LENGTH = 200
#: Longest text of a number in a prediction column stored as text (characters).
MAX_NUMBER_LENGTH = 64


class DecodedTooLarge(CalibrationInputError):
    """A file whose decoded data would pass the ``max_decoded_bytes`` bound."""


def shorten(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, for messages."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class DecodedBudget:
    """Counts the bytes a load decodes; refuses past ``limit`` (None: never).

    Parameters
    ----------
    limit : int or None
        Most bytes of decoded data (Arrow columns, arrays, the float64 matrix).
    display : str
        The file, for messages.
    """

    def __init__(self, limit: int | None, display: str) -> None:
        self.limit = limit
        self.display = display
        self.used = 0

    def check(self, nbytes: int, what: str) -> None:
        """Refuse when ``nbytes`` more would pass the limit (without counting them)."""
        if self.limit is not None and self.used + nbytes > self.limit:
            raise DecodedTooLarge(
                f"{self.display} would decode to more than {self.limit / (1 << 20):g} MB in "
                f"memory ({what}: {nbytes / (1 << 20):,.1f} MB), the most decoded per file "
                "here. Split it into smaller files, and keep only the prediction, label and "
                "model columns."
            )

    def add(self, nbytes: int, what: str) -> None:
        """Count ``nbytes`` of decoded data (after :meth:`check`)."""
        self.check(nbytes, what)
        self.used += int(nbytes)
