"""A time column and windows over it: :func:`time_values`, :func:`window_index`.

The time column is ``timestamp``, ``time`` or ``date`` (any case) or one named
explicitly; it holds ISO 8601 dates or times (text, or a date/time column of a
Parquet file) or epoch seconds (numbers). Times with a zone are converted to
UTC, with a :class:`~calibration_core.errors.TimeZonesWarning` when they were
written in several zones (:func:`zone_notice`); times with a zone mixed with
times without one are refused (:func:`check_one_kind_of_time`). Windows are
calendar days, ISO weeks (from Monday) or months, in UTC, or every N rows
when there is no time column. More than :data:`MAX_WINDOWS` windows are
refused as more than :data:`~.groups.MAX_GROUPS` groups are
(:func:`check_window_count`): a chart of a million windows is not a trend, and
computing it would outlast any job.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd

from ..errors import CalibrationInputError, TimeZonesWarning, describe_rows
from ..predictions import Predictions
from .groups import MAX_GROUPS, GroupIndex, too_many_groups

TIME_CANDIDATES = ("timestamp", "time", "date")
#: Most windows of one model: each is a group to compare and draw, as :data:`~.groups.MAX_GROUPS`.
MAX_WINDOWS = MAX_GROUPS
#: The zone at the end of an ISO 8601 time: ``Z``, ``+02:00``, ``-0500``, ``+02``.
#: The same as a pattern for Python and pyarrow (RE2), the zone in group ``zone``.
ZONE_PATTERN = r"(?i)\d(?P<zone>Z|[+-]\d\d(?::?\d\d)?)\s*$"
_ZONE = re.compile(ZONE_PATTERN)
#: How :func:`time_zones` names the zone of times written without one.
NO_ZONE = ""
_WINDOW = re.compile(r"\s*(\d*)\s*(d|day|days|w|week|weeks|m|month|months|rows?)\s*", re.I)


def find_time_column(pred: Predictions, name: str | None = None) -> str | None:
    """The time column's name: ``name`` when given, else a :data:`TIME_CANDIDATES` one, or None."""
    if name is not None:
        if name not in pred.extra:
            others = ", ".join(repr(c) for c in pred.extra) or "(none)"
            raise CalibrationInputError(
                f"there is no time column {name!r} in the predictions of {pred.name!r}; its "
                f"other columns are {others}."
            )
        return name
    by_lower = {c.lower(): c for c in pred.extra}
    return next((by_lower[c] for c in TIME_CANDIDATES if c in by_lower), None)


def time_values(pred: Predictions, column: str) -> np.ndarray:
    """The time column as ``datetime64[s]`` (UTC), shape (N,).

    Raises
    ------
    CalibrationInputError
        Naming the rows (1-based, counted within this model's rows: the data rows
        of a file without a ``model`` column) whose value is not a time.
    """
    values = pred.extra[column]
    out, bad = parse_times(values)
    if (notice := zone_notice(column, time_zones(values), pred.name)) is not None:
        warnings.warn(notice, TimeZonesWarning, stacklevel=2)
    rows = np.flatnonzero(bad)
    if rows.size:
        shown = ", ".join(repr(v) for v in values[rows[:3]])
        raise CalibrationInputError(
            f"time column {column!r} of {pred.name!r} has values that are not times ({shown}) "
            f"at {describe_rows(rows + 1)} of that model (1-based, counting its rows); write "
            "ISO 8601 dates or times "
            "(2024-03-01, 2024-03-01T12:30:00Z) or epoch seconds, or fix those rows."
        )
    return out


def parse_times(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Times of a column's values as ``datetime64[s]`` (UTC), and which values are not times.

    Date/time values, epoch seconds (numbers) or ISO 8601 text (zones converted
    to UTC). Returns ``(times, bad)``, both shape (N,); ``times`` is NaT where
    ``bad``.
    """
    if values.dtype.kind == "M":
        out = values.astype("datetime64[s]")
        return out, np.isnat(out)
    if values.dtype.kind in "iuf":
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(values.astype(np.float64))
        out = np.where(finite, values, 0).astype(np.int64).astype("datetime64[s]")
        return out, ~finite
    return _parse_text(values)


def _parse_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    text = pd.Series(uniques, dtype=object).astype(str)
    check_one_kind_of_time(text)
    parsed = pd.to_datetime(text, format="ISO8601", errors="coerce", utc=True)
    distinct = parsed.dt.tz_convert(None).to_numpy().astype("datetime64[s]")
    ok = ~np.isnat(distinct)
    bad = (codes < 0) | ~np.append(ok, False)[codes]
    out = np.append(distinct, np.datetime64("NaT", "s"))[codes]
    return out, bad


def time_zones(values: np.ndarray) -> dict[str, str]:
    """The zones a column's text times are written in, each with a time written so.

    Zones as ``Z`` (also for ``+00:00``) or ``+HH:MM``; :data:`NO_ZONE` for
    times of day without a zone. Dates, numbers and date/time values (whose
    zone, if any, is the file's column type's) have none: ``{}``.

    Returns
    -------
    dict of str to str
        Zone to the first value written in it, zones sorted.
    """
    if values.dtype.kind != "O":
        return {}
    text = pd.Series(pd.unique(values[pd.notna(values)]), dtype=object).astype(str)
    zone = text.str.extract(_ZONE, expand=False).map(zone_name, na_action="ignore")
    naive = zone.isna() & _times_of_day(text)
    found = pd.concat([zone.dropna(), pd.Series(NO_ZONE, index=zone.index[naive])])
    first = text[found.index].groupby(found.to_numpy(), sort=True).first()
    return {str(k): str(v) for k, v in first.items()}


def _times_of_day(text: pd.Series) -> pd.Series:
    return text.str.contains("T| \\d", regex=True) & text.str.match(r"\s*\d{4}-")


def zone_name(zone: str) -> str:
    """``z``, ``+00:00`` -> ``Z``; ``+0200``, ``+02`` -> ``+02:00``."""
    digits = zone[1:].replace(":", "").ljust(4, "0")
    if zone.upper() == "Z" or int(digits) == 0:
        return "Z"
    return f"{zone[0]}{digits[:2]}:{digits[2:]}"


def zone_notice(column: str, zones, model: str | None = None) -> str | None:
    """The notice of times in several zones converted to UTC; None for one zone or none.

    ``zones``: the zones seen (:func:`time_zones`' keys; :data:`NO_ZONE` not counted).
    """
    named = sorted(z for z in zones if z != NO_ZONE)
    if len(named) < 2:
        return None
    of = f" of {model!r}" if model is not None else ""
    return (
        f"time column {column!r}{of}: times in {len(named)} time zones ({', '.join(named)}) "
        "were converted to UTC."
    )


def check_one_kind_of_time(text: pd.Series) -> None:
    """Refuse times with a zone mixed with times without one (which zone would those be in?).

    Times with different zones (``Z``, ``+02:00``) are one kind: all convert to UTC.
    """
    zoned = text.str.extract(_ZONE, expand=False).notna()
    naive = _times_of_day(text) & ~zoned
    if zoned.any() and naive.any():
        raise CalibrationInputError(
            f"the time column mixes times with a zone ({text[zoned].iloc[0]!r}) and times "
            f"without one ({text[naive].iloc[0]!r}), whose zone is unknown; write every time "
            "with its zone (2024-03-01T12:30:00Z, 2024-03-01T14:30:00+02:00) or none with one."
        )


def parse_window(text: str) -> tuple[str, int]:
    """``"1w"`` -> ``("week", 1)``; units d/day, w/week, m/month, rows (``"5000rows"``)."""
    match = _WINDOW.fullmatch(str(text))
    if not match:
        raise CalibrationInputError(
            f"window {text!r} is not understood; write a number and a unit: 1d, 1w, 1m "
            "(days, ISO weeks, months) or 5000rows."
        )
    count = int(match.group(1) or 1)
    if count < 1:
        raise CalibrationInputError(f"window {text!r} must span at least one unit.")
    unit = match.group(2).lower()
    return {"d": "day", "w": "week", "m": "month", "r": "rows"}[unit[0]], count


def window_index(times: np.ndarray | None, window: str, n_rows: int) -> GroupIndex:
    """Windows as groups: one per day/week/month span present (or per N rows), in order.

    Parameters
    ----------
    times : numpy.ndarray of datetime64, shape (N,), or None
        None only with a window in rows.
    window : str
        As :func:`parse_window`.
    n_rows : int
        N.

    Returns
    -------
    GroupIndex
        Labels are the window's first day (``2024-03-04``) or first row (``rows 1-5000``);
        ``times`` are ``times``.
    """
    unit, count = parse_window(window)
    if unit == "rows":
        return row_windows(np.arange(n_rows), count, n_rows)
    if times is None:
        raise missing_time_column(window)
    codes, uniques = pd.factorize(window_starts(times, unit, count), sort=True)
    check_window_count(len(uniques), window)
    labels = tuple(window_label(u) for u in uniques)
    return GroupIndex(codes.astype(np.intp), labels, ("time",), 0, times)


def missing_time_column(window: str) -> CalibrationInputError:
    """The error of a calendar ``window`` on rows without a time column."""
    return CalibrationInputError(
        f"a window of {window!r} needs a time column (timestamp, time or date, or name "
        "one); without one, use a window in rows, e.g. 5000rows."
    )


def row_windows(rows: np.ndarray, count: int, n_rows: int) -> GroupIndex:
    """Windows of ``count`` rows as groups: row ``r`` (0-based, in file order) is in ``r // count``.

    Parameters
    ----------
    rows : numpy.ndarray of int, shape (N,)
        The rows' numbers among the model's rows: ``arange(n_rows)`` for all of
        them, or those of a sample (only the windows holding one of them are groups).
    count : int
        Rows per window.
    n_rows : int
        The model's rows (the last window ends there).

    Returns
    -------
    GroupIndex
        Labels ``rows 1-5000`` (1-based, both ends included), in row order.

    Raises
    ------
    CalibrationInputError
        More than :data:`MAX_WINDOWS` windows of ``n_rows`` rows.
    """
    check_window_count(-(-n_rows // count), f"{count}rows", n_rows)
    codes, uniques = pd.factorize(np.asarray(rows, dtype=np.int64) // count, sort=True)
    labels = tuple(row_window_label(int(u), count, n_rows) for u in uniques)
    return GroupIndex(codes.astype(np.intp), labels, ("row",), 0)


def check_window_count(count: int, window: str, n_rows: int | None = None) -> None:
    """Refuse ``count`` windows of ``window`` when they are more than :data:`MAX_WINDOWS`.

    ``n_rows``: with a window in rows, the model's rows (when known), to name
    the shortest window that fits.
    """
    if count <= MAX_WINDOWS:
        return
    if parse_window(window)[0] != "rows":
        remedy = "pick a longer window (1w or 1m instead of 1d)"
    elif n_rows:
        remedy = f"pick a window of at least {math.ceil(n_rows / MAX_WINDOWS)}rows"
    else:
        remedy = "pick a window of more rows"
    raise too_many_groups(
        f"a window of {window!r}", count, MAX_WINDOWS, kind="windows", remedy=remedy
    )


def row_window_label(window: int, count: int, n_rows: int) -> str:
    """The label of window ``window`` (0-based) of ``count`` rows: ``rows 5001-10000``."""
    return f"rows {window * count + 1}-{min((window + 1) * count, n_rows)}"


def window_starts(times: np.ndarray, unit: str, count: int) -> np.ndarray:
    """The first day of every time's window (days since 1970-01-01, int64, shape (N,)).

    ``unit`` and ``count`` as :func:`parse_window` gives them (not ``"rows"``):
    spans of ``count`` days from 1970-01-01, ISO weeks from Monday 1970-01-05
    (shifted back by whole spans), or months from 1970-01.
    """
    days = times.astype("datetime64[D]").astype(np.int64)
    if unit == "day":
        return days // count * count
    if unit == "week":
        return ((days + 3) // (7 * count)) * 7 * count - 3  # 1970-01-05 was a Monday
    months = times.astype("datetime64[M]").astype(np.int64)
    start = (months // count * count).astype("datetime64[M]").astype("datetime64[D]")
    return start.astype(np.int64)


def window_label(start) -> str:
    """A window's label: its first day (``2024-03-04``) from :func:`window_starts`."""
    return str(np.datetime64(int(start), "D"))


def time_windows(
    pred: Predictions, window: str, column: str | None = None
) -> tuple[str | None, GroupIndex]:
    """The windows of ``pred``: its time column (found or ``column``) and :func:`window_index`.

    Returns
    -------
    (str or None, GroupIndex)
        The time column used (None: windows in rows) and the windows.

    Raises
    ------
    CalibrationInputError
        An unknown column, values that are not times (with their rows), a bad
        window, or a calendar window without a time column.
    """
    found = find_time_column(pred, column)
    times = None if found is None else time_values(pred, found)
    return found, window_index(times, window, pred.n_samples)
