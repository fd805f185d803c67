"""The reference period of the windows: :func:`parse_reference`, :func:`reference_rows`.

The user chooses the period the windows are compared with, in one of three ways:

- ``"K"`` (or the integer K): the first K windows (the default, K = 1);
- ``"A:B"``: windows A to B, both included, numbered from 1 in time order
  (the only choice besides K for windows of N rows, which have no dates);
- ``"START:END"``: ISO 8601 dates (``2024-01-01:2024-01-31``) or months
  (``2024-01:2024-03``), UTC as the time column's. Both ends are included, the
  end as a whole unit of its precision (a date covers its whole day, a month
  its whole month); an end may be left out (``2024-03-01:`` runs to the last
  row, ``:2024-01-31`` from the first); one date or month alone (``2024-01``)
  is that day or month. A period reaching beyond the data is cut to it; one
  wholly outside the data, or in a gap of it, is refused.

A window holding any row of the reference period is a reference window: it
is not judged against the reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import CalibrationInputError
from .groups import GroupIndex

_WHOLE = re.compile(r"\s*(\d+)\s*")
HOW = (
    "write K (the first K windows), A:B (windows A to B, numbered from 1), ISO dates "
    "START:END (e.g. 2024-01-01:2024-01-31, both days included) or one date or month"
)


@dataclass(frozen=True)
class ReferencePeriod:
    """A reference period, as written (validated against the data by :func:`reference_rows`).

    Attributes
    ----------
    kind : {"windows", "dates"}
    start, end : int, numpy.datetime64 or None
        Window numbers (1-based, both included) or dates (``start`` included,
        ``end`` the first instant after the period); None: open on that side
        (dates only).
    text : str
        As the user wrote it (``"1"``, ``"3:5"``, ``"2024-01-01:2024-01-31"``).
    """

    kind: str
    start: int | np.datetime64 | None
    end: int | np.datetime64 | None
    text: str

    def window_numbers(self) -> tuple[int, int]:
        """``(start, end)`` of a period of windows (numbered from 1, both included)."""
        if not isinstance(self.start, int) or not isinstance(self.end, int):
            raise TypeError(f"the reference period {self.text!r} is not one of windows")
        return self.start, self.end

    def describe(self) -> str:
        """E.g. ``"the first 2 windows"``, ``"windows 3 to 5"``, ``"2024-01-01 to 2024-01-31"``,
        ``"2024-01"``."""
        if self.kind == "windows":
            if self.start == 1:
                return "the first window" if self.end == 1 else f"the first {self.end} windows"
            if self.start == self.end:
                return f"window {self.start}"
            return f"windows {self.start} to {self.end}"
        first, colon, last = self.text.partition(":")
        if not colon:
            return first.strip()
        return f"{first.strip() or 'the first row'} to {last.strip() or 'the last row'}"


def parse_reference(value: int | str | ReferencePeriod) -> ReferencePeriod:
    """A reference period from ``K``, ``"A:B"`` or ``"START:END"`` (see the module docstring).

    Raises
    ------
    CalibrationInputError
        Text that is neither, a reversed range, or a window number below 1.
    """
    if isinstance(value, ReferencePeriod):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = str(int(value))
    if not isinstance(value, str) or not value.strip():
        raise CalibrationInputError(f"the reference period {value!r} is empty; {HOW}.")
    text = value.strip()
    if _WHOLE.fullmatch(text):
        return _windows(text, 1, int(text))
    first, colon, last = text.partition(":")
    if not colon:  # one date or month alone: that day or month
        try:
            _date(text, text, "date")
        except CalibrationInputError:
            raise CalibrationInputError(
                f"the reference period {text!r} is not understood; {HOW}."
            ) from None
        first = last = text
    if _WHOLE.fullmatch(first) and _WHOLE.fullmatch(last):
        return _windows(text, int(first), int(last))
    start, end = _date(first, text, "start"), _date(last, text, "end")
    if end is not None:  # the first instant after the end's day (month, ...): + 1 of its unit
        end = end + 1
    if start is not None and end is not None and end <= start:
        raise CalibrationInputError(
            f"the reference period {text!r} ends before it starts; write the earlier date first."
        )
    return ReferencePeriod("dates", start, end, text)


def _windows(text: str, start: int, end: int) -> ReferencePeriod:
    if start < 1:
        raise CalibrationInputError(
            f"the reference period {text!r} starts at window {start}; windows are numbered from 1."
        )
    if end < start:
        raise CalibrationInputError(
            f"the reference period {text!r} ends before it starts; write the lower window first."
        )
    return ReferencePeriod("windows", start, end, text)


def _date(part: str, text: str, side: str) -> np.datetime64 | None:
    part = part.strip()
    if not part:
        return None
    try:
        date = np.datetime64(part)
    except ValueError:
        date = None
    if date is None or np.isnat(date) or part.endswith("Z") or "+" in part:
        raise CalibrationInputError(
            f"the {side} {part!r} of the reference period {text!r} is not an ISO 8601 date "
            f"(UTC, without a zone); {HOW}."
        )
    return date


def reference_rows(period: ReferencePeriod, windows: GroupIndex) -> np.ndarray:
    """The rows of the reference period, shape (N,) of bool.

    Parameters
    ----------
    period : ReferencePeriod
    windows : GroupIndex
        The windows (:func:`~calibration_core.slices.window_index`); dates need
        their ``times``.

    Raises
    ------
    CalibrationInputError
        Windows beyond the last one, dates with windows of rows, dates outside
        the data or holding no row.
    """
    if period.kind == "windows":
        start, end = period.window_numbers()
        if end > windows.n_groups:
            raise CalibrationInputError(
                f"the reference period {period.text!r} needs window {end}, but there "
                f"are {windows.n_groups} windows; choose numbers from 1 to {windows.n_groups} "
                "(or shorter windows)."
            )
        return (windows.codes >= start - 1) & (windows.codes <= end - 1)
    times = windows.times
    if times is None:
        raise CalibrationInputError(
            f"the reference period {period.text!r} is in dates, but the windows are rows "
            "(no time column); give window numbers instead, e.g. 1:3."
        )
    return _dated_rows(period, times)


def _dated_rows(period: ReferencePeriod, times: np.ndarray) -> np.ndarray:
    first, last = times.min(), times.max()
    start = first if period.start is None else period.start
    end = last + np.timedelta64(1, "s") if period.end is None else period.end
    span = f"the data's times run from {first} to {last}"
    if end <= first or start > last:
        raise CalibrationInputError(
            f"the reference period {period.text!r} lies outside the data: {span}."
        )
    rows = (times >= start) & (times < end)
    if not rows.any():
        raise CalibrationInputError(
            f"the reference period {period.text!r} holds no row ({span}, with a gap there); "
            "widen it."
        )
    return rows
