"""The error and warning types of :mod:`calibration_core`.

:class:`CalibrationInputError` is the one error type raised for bad input
anywhere in the core; the warnings flag results that were computed but may be
unreliable.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping

#: How a Python caller applies each remedy (the default phrasing of ``str(exc)``).
PYTHON_REMEDIES = {
    "renormalize": "To divide each row by its sum, pass renormalize=True.",
    "label_column": "Or name the label column with label_column=...",
}


class CalibrationInputError(ValueError):
    """Input that cannot be used as predictions, labels or settings.

    The message always says *what* is wrong, *where* (file, column, first
    offending rows) and *how to fix it*, so that it can be shown to a user
    as it is, in a terminal or next to the upload in the dashboard.

    Errors that a loading option can fix also carry that option, so that each
    front end names it in its own terms (a switch on the page, a flag on the
    command line, an argument in Python) instead of the core guessing.

    Attributes
    ----------
    detail : str
        The message without the remedy.
    remedy : {"renormalize", "label_column"} or None
        The loading option that fixes the input: divide rows by their sums,
        or choose the label column.
    columns : tuple of str
        With ``remedy="label_column"``: the file's columns to choose from.
    """

    def __init__(self, message: str, *, remedy: str | None = None, columns=()) -> None:
        self.detail = str(message)
        self.remedy = remedy
        self.columns = tuple(str(c) for c in columns)
        super().__init__(self.phrased(PYTHON_REMEDIES))

    def phrased(self, remedies: Mapping[str, str]) -> str:
        """The message with the remedy said as ``remedies[self.remedy]`` (if it has one)."""
        hint = remedies.get(self.remedy) if self.remedy else None
        return f"{self.detail} {hint}" if hint else self.detail

    def __reduce__(self):
        return (_rebuild_error, (type(self), self.detail, self.remedy, self.columns))


def _rebuild_error(cls, detail, remedy, columns):
    """Unpickle a :class:`CalibrationInputError` with its remedy (``__reduce__``)."""
    err = cls.__new__(cls)
    CalibrationInputError.__init__(err, detail, remedy=remedy, columns=columns)
    return err


class RenormalisedRowsWarning(UserWarning):
    """Probability rows whose sums were off 1 (e.g. rounded when saved) and were renormalised."""


class TimeZonesWarning(UserWarning):
    """Times written in several zones (``Z``, ``+02:00``) that were converted to UTC."""


class CalibrationFitWarning(UserWarning):
    """A fit that ran but may be unreliable (too few rows, separable classes)."""


class SmallSampleWarning(UserWarning):
    """A goodness-of-fit test was run on too few rows to have useful power."""


def describe_rows(rows, limit: int = 5) -> str:
    """Format the first offending row indices for an error message.

    Parameters
    ----------
    rows : array-like of int
        Zero-based row indices.
    limit : int
        How many to list before summarising the rest.

    Returns
    -------
    str
        E.g. ``"rows 3, 17, 42 (and 12 more)"`` with 0-based indices.
    """
    rows = [int(r) for r in rows]
    shown = ", ".join(str(r) for r in rows[:limit])
    more = f" (and {len(rows) - limit} more)" if len(rows) > limit else ""
    word = "row" if len(rows) == 1 else "rows"
    return f"{word} {shown}{more}"


#: Most characters of an offending value quoted in a message.
EXCERPT_CHARS = 80
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 2, 4, 4, 3
_REPR.maxstring, _REPR.maxother = 40, 40


def excerpt(value, limit: int = EXCERPT_CHARS) -> str:
    """A short ``repr`` of ``value`` for an error message: at most ``limit`` characters.

    Long lists, strings and nested objects are cut without building their whole
    ``repr`` first, so that quoting a hostile value costs little whatever its size.
    """
    try:
        text = _REPR.repr(value)
    except ValueError:  # an int too long to print (sys.get_int_max_str_digits)
        text = f"<a {type(value).__name__} too long to print>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
