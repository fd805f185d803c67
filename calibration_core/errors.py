"""The error and warning types of :mod:`calibration_core`.

:class:`CalibrationInputError` is the one error type raised for bad input
anywhere in the core; the warnings flag results that were computed but may be
unreliable.
"""

from __future__ import annotations


class CalibrationInputError(ValueError):
    """Input that cannot be used as predictions, labels or settings.

    The message always says *what* is wrong, *where* (file, column, first
    offending rows) and *how to fix it*, so that it can be shown to a user
    as it is, in a terminal or next to the upload in the dashboard.
    """


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
