"""The Diagnostics section's "Over time" panel: one model's windows against a reference period.

* settings (:class:`TimeSettings`, :func:`parse_time`): the time column (None:
  ``timestamp``, ``time`` or ``date`` when the file has one), the window (a
  day, an ISO week, a month, or every N rows) and the reference period (the
  first K windows, windows A:B, or dates START:END:
  :func:`calibration_core.slices.parse_reference`);
* the target (:func:`time_target`, of a
  :class:`~app.diagnostics.target.DiagTarget`): the model's uncalibrated predictions with
  their other columns, its windows (without a time column, windows of rows,
  said in a note) and the view's notion;
* :func:`time_document`: ECE, accuracy and mean confidence per window, as the
  evaluate JSON's ``time`` object. Point estimates take one grouped pass and
  are shown at once; the bootstrap intervals (and so the windows flagged
  above the reference) are computed by the background job
  (``compute=True``) and kept in the store under :func:`time_key`;
* :func:`window_statistics`: the bins of one window (its reliability diagram).

Every number is :mod:`calibration_core.slices`' (:func:`~calibration_core.slices.drift_report`),
imported when used (it loads pandas, which the server does not need at start).
Core calls only (no Dash, no Plotly), like :mod:`app.analysis`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibration_core import Binning, BinStatistics, CalibrationInputError, Predictions
from calibration_core.errors import TimeZonesWarning

from ..diagnostics.resampling import SEED
from ..diagnostics.target import DiagTarget, notion_spec, parse_resamples
from ..settings import SettingsError, ViewSettings
from ..store.data_store import DataStore
from ..store.records import ModelInfo

#: Window choices: value (as :func:`calibration_core.slices.parse_window` reads it) -> label.
WINDOW_CHOICES = {"1d": "day", "1w": "week (from Monday)", "1m": "month", "rows": "every N rows"}
DEFAULT_WINDOW = "1w"
#: Windows of rows when N is left empty: this many windows.
DEFAULT_ROW_WINDOWS = 10
MAX_ROWS = 10**9
MAX_COLUMN_CHARS = 200
#: Longest reference period read (two ISO dates and a colon take 21 characters).
MAX_REFERENCE_CHARS = 60
#: Level of the windows' intervals.
LEVEL = 0.95
#: The windows' bootstrap uses the section's resamples, at most this many: it resamples
#: every window's rows (O(N R)); at 1,000 resamples a million rows would outlast the
#: job time limit, and 200 draws keep the 95 % percentile bounds' Monte Carlo error
#: small beside the bootstrap's own.
TIME_MAX_RESAMPLES = 200


@dataclass(frozen=True)
class TimeSettings:
    """The panel's settings (validated by :func:`parse_time`).

    Attributes
    ----------
    column : str or None
        The time column; None: ``timestamp``, ``time`` or ``date`` when present.
    window : str
        A key of :data:`WINDOW_CHOICES`.
    rows : int or None
        N of "every N rows"; None: a tenth of the rows.
    reference : str
        The reference period as the user wrote it: ``"K"`` (the first K windows),
        ``"A:B"`` (windows A to B) or ``"START:END"`` (ISO dates).
    """

    column: str | None = None
    window: str = DEFAULT_WINDOW
    rows: int | None = None
    reference: str = "1"

    def row_window(self, n_rows: int) -> str:
        """The window in rows, e.g. ``"5000rows"``."""
        n = self.rows or max(1, math.ceil(n_rows / DEFAULT_ROW_WINDOWS))
        return f"{n}rows"


def _whole(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(f"{what} must be a whole number from {low:,} to {high:,}.")
    if not (math.isfinite(value) and float(value).is_integer() and low <= value <= high):
        raise SettingsError(f"{what} must be a whole number from {low:,} to {high:,}, got {value}.")
    return int(value)


def parse_time(column: Any, window: Any, rows: Any, reference: Any) -> TimeSettings:
    """The panel's settings from its controls (SettingsError when one is invalid)."""
    if column in (None, ""):
        column = None
    elif not isinstance(column, str) or len(column) > MAX_COLUMN_CHARS:
        raise SettingsError("the time column must be one of the file's columns.")
    if window not in WINDOW_CHOICES:
        raise SettingsError(f"the window must be one of {', '.join(WINDOW_CHOICES.values())}.")
    n = None if rows in (None, "") else _whole(rows, "the rows per window", 1, MAX_ROWS)
    return TimeSettings(column, window, n, parse_reference_text(reference))


def parse_reference_text(value: Any) -> str:
    """The reference period's text, checked for its form (not yet against the data).

    A number K (the control's old form, and ``ref=K`` addresses) is read here; any
    other text by :func:`calibration_core.slices.parse_reference`, imported then
    (it loads pandas, which the page does not need to start).
    """
    if value in (None, ""):
        return TimeSettings.reference
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip()) if len(value.strip()) <= 10 else value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(_whole(value, "the number of reference windows", 1, MAX_ROWS))
    if not isinstance(value, str) or len(value) > MAX_REFERENCE_CHARS:
        raise SettingsError(
            "the reference period must be K (the first K windows), A:B (windows A to B) or "
            "START:END (ISO dates, e.g. 2024-01-01:2024-01-31)."
        )
    from calibration_core.slices import parse_reference

    try:
        return parse_reference(value).text
    except CalibrationInputError as exc:
        raise SettingsError(str(exc)) from None


@dataclass
class TimeTarget:
    """One model's windows, for the view's notion and binning."""

    info: ModelInfo
    view: ViewSettings
    pred: Predictions
    notion: str
    class_index: int | None
    notion_label: str
    #: The time column used (None: windows of rows).
    column: str | None
    #: The window as :func:`calibration_core.slices.parse_window` reads it.
    window: str
    windows: Any  # calibration_core.slices.GroupIndex
    settings: TimeSettings
    notes: list[str]

    @property
    def binning(self) -> Binning:
        """The view's bins."""
        return Binning(self.view.scheme, self.view.n_bins)

    def describe(self) -> str:
        """E.g. ``"8 windows of 1 week (time column 'timestamp') · ... · reference: ..."``."""
        from calibration_core.slices import parse_reference, parse_window

        source = f"time column {self.column!r}" if self.column else "row order"
        period = parse_reference(self.settings.reference).describe()
        unit, count = parse_window(self.window)
        plural = "s" if count != 1 and not unit.endswith("s") else ""
        return (
            f"{self.windows.n_groups} windows of {count:,} {unit}{plural} ({source}) · ECE of the "
            f"{self.notion_label} notion · {self.view.describe_binning()} · reference: "
            f"{period} · uncalibrated predictions"
        )


def column_choices(pred: Predictions) -> list[str]:
    """The columns that may hold the time: every other column of the file but ``model``."""
    return [name for name in pred.extra if name.lower() != "model"]


def time_target(store: DataStore, target: DiagTarget, settings: TimeSettings) -> TimeTarget:
    """The windows of ``target``'s model (raises CalibrationInputError with what is wrong).

    Values of the time column that are not times are reported with their
    rows (:func:`calibration_core.slices.time_values`); times of several zones,
    converted to UTC, are noted.
    """
    from calibration_core.slices import find_time_column, time_values, window_index

    info, view = target.info, target.view
    spec = notion_spec(info, view)
    if spec.kind == "classwise":
        raise SettingsError(
            "Windows use one score per row: pick the confidence, binary or one-class notion "
            "(not every class at once)."
        )
    pred = store.predictions(info.handle)
    n = pred.n_samples
    column = None if settings.window == "rows" else find_time_column(pred, settings.column)
    notes = []
    if column is None:
        window = settings.row_window(n)
        if settings.window != "rows":
            notes.append(
                "This file has no time column (timestamp, time or date): windows of rows "
                "instead. Pick its time column, or a number of rows."
            )
        windows = window_index(None, window, n)
    else:
        window = settings.window
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", TimeZonesWarning)
            times = time_values(pred, column)
        notes.extend(str(w.message) for w in seen if issubclass(w.category, TimeZonesWarning))
        windows = window_index(times, window, n)
    return TimeTarget(info, view, pred, spec.kind, spec.class_index, spec.label, column, window,
                      windows, settings, notes)  # fmt: skip


def time_resamples(value: Any) -> int:
    """The section's resamples (:func:`~app.diagnostics.target.parse_resamples`), capped at
    :data:`TIME_MAX_RESAMPLES`."""
    return min(parse_resamples(value), TIME_MAX_RESAMPLES)


def time_key(t: TimeTarget, n_resamples: int) -> str:
    """Store key of one target's windows with intervals."""
    v = t.view
    return (
        f"diag:time2:{t.info.handle}:{t.column}:{t.window}:{t.settings.reference}:{t.notion}:"
        f"{t.class_index}:{v.scheme}:{v.n_bins}:{n_resamples}:{LEVEL}:{SEED}"
    )


def time_document(
    store: DataStore, t: TimeTarget, n_resamples: int, *, compute: bool = False
) -> tuple[dict, bool]:
    """The ``time`` document of the windows, and whether it has intervals.

    With intervals when stored (or ``compute``: computed and stored, the
    background job), else point estimates only (nothing flagged).
    """
    from calibration_core.slices import drift_report

    key = time_key(t, n_resamples)
    doc = store.cache.get(key)
    if isinstance(doc, dict):
        return doc, True
    r = n_resamples if compute else 0
    report = drift_report(t.pred, t.windows, reference=t.settings.reference, binning=t.binning,
                          notion=t.notion, class_index=t.class_index, n_resamples=r, level=LEVEL,
                          seed=SEED)  # fmt: skip
    doc = report.to_dict()
    if compute:
        store.cache.set(key, doc, expire=store.ttl)
    return doc, bool(compute)


def window_statistics(t: TimeTarget, label: str) -> BinStatistics:
    """The bins of window ``label`` (its own bins, as its ECE in the table)."""
    try:
        g = t.windows.labels.index(label)
    except ValueError:
        raise CalibrationInputError(
            f"there is no window {label!r} with these settings: click a window of the chart."
        ) from None
    rows = np.flatnonzero(t.windows.codes == g)
    return t.pred.subset(rows).statistics(t.binning, t.notion, t.class_index)


def saved_settings(values: dict) -> tuple[TimeSettings, int] | None:
    """The settings and resamples the card last used (:func:`~app.diagnostics.target.remember`)."""
    try:
        settings = parse_time(values["column"], values["window"], values["rows"],
                              values["reference"])  # fmt: skip
        return settings, int(values["n_resamples"])
    except (KeyError, TypeError, ValueError, CalibrationInputError):
        return None
