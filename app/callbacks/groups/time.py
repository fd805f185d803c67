"""The "Over time" card of the Diagnostics section (issue 19): thin callbacks.

* :func:`time_panel`: the time column's choices, the time chart (point
  estimates at once; intervals and the windows above the reference once the
  job stored them) and its table;
* :func:`run_time_job`: the background job (progress bar, cancel) computing
  and storing the windows' bootstrap intervals;
* :func:`window_panel`: the reliability diagram of the window clicked on the chart.

Each takes the card's controls as one dict, ``time`` (:data:`~app.callbacks.controls.TIME_PROPS`:
``column``, ``window``, ``rows``, ``reference``; Dash passes them grouped), read by
:func:`~app.groups.time.parse_time`. The work is in
:mod:`app.groups.time`; problems (a column that is not a time, with its
rows; a reference period the data does not have) become messages.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dash import Input, Output, State, no_update

from calibration_core import CalibrationInputError

from ... import ids
from ...context import AppContext
from ...diagnostics.resampling import Progress
from ...diagnostics.target import diag_target, remember
from ...figures.diagnostics import message_figure
from ...figures.groups import drift_figure, slice_diagrams
from ...groups.tables import drift_table
from ...groups.time import (
    column_choices,
    parse_time,
    time_document,
    time_resamples,
    time_target,
    window_statistics,
)
from ...layout.diagnostics import table_component
from ...settings import RawSettings
from ..controls import time_inputs, time_states
from ..diagnostics.wiring import HIDDEN, JobIds, note, register_job, register_panel, run_job

POINTS_NOTE = (
    "Point estimates only: press “Compute intervals” for the windows' bootstrap intervals (in "
    "the background) and the windows whose ECE interval lies above the reference's."
)


def clicked_window(click: Any) -> str | None:
    """The window label of a click on the time chart (None: no click yet)."""
    try:
        label = click["points"][0]["x"]
    except (KeyError, IndexError, TypeError):
        return None
    return label if isinstance(label, str) else None


def panel_failed(message: str) -> tuple:
    """The card after a failure: a message, no chart, no table."""
    return no_update, note(message), message_figure(""), HIDDEN, []


def time_panel(
    ctx: AppContext,
    sid: str | None,
    handle: str | None,
    raw: RawSettings,
    time: dict[str, Any],
    resamples: Any,
    click: Any = None,
    done: Any = None,
) -> tuple:
    """(time column choices, messages, chart, chart style, table) of the model's windows."""
    try:
        settings = parse_time(**time)
        n_resamples = time_resamples(resamples)
        target = diag_target(ctx.store, sid, handle, raw)
        options = column_choices(ctx.store.predictions(target.info.handle))
    except CalibrationInputError as exc:
        return panel_failed(str(exc))
    try:
        t = time_target(ctx.store, target, settings)
        doc, with_intervals = time_document(ctx.store, t, n_resamples)
    except CalibrationInputError as exc:
        return options, note(str(exc)), message_figure(""), HIDDEN, []
    remember(ctx.store, sid, "time", {**settings.__dict__, "n_resamples": n_resamples})
    messages = [note(text) for text in t.notes]
    if isinstance(done, dict) and isinstance(done.get("error"), str):
        messages.append(note(done["error"]))
    if not with_intervals:
        messages.append(note(POINTS_NOTE))
    fig = drift_figure(doc, title=f"{t.info.name}: calibration over time",
                       subtitle=t.describe(), selected=clicked_window(click))  # fmt: skip
    table = table_component(drift_table(doc, n_resamples)) if with_intervals else []
    return options, messages, fig, {}, table


def run_time_job(
    ctx: AppContext,
    sid: str | None,
    handle: str | None,
    raw: RawSettings,
    time: dict[str, Any],
    resamples: Any,
    set_progress,
) -> dict:
    """Compute (and store) the windows' intervals: the plain function behind the job."""

    def work(progress: Progress) -> None:
        settings = parse_time(**time)
        n_resamples = time_resamples(resamples)
        t = time_target(ctx.store, diag_target(ctx.store, sid, handle, raw), settings)
        progress(0, 1, f"bootstrap of {t.windows.n_groups} windows ({n_resamples:,} resamples) …")
        time_document(ctx.store, t, n_resamples, compute=True)
        progress(1, 1, "")

    return run_job(work, set_progress)


def window_panel(
    ctx: AppContext,
    sid: str | None,
    handle: str | None,
    raw: RawSettings,
    time: dict[str, Any],
    click: Any = None,
) -> tuple:
    """(figure, style): the reliability diagram of the clicked window, hidden before a click."""
    label = clicked_window(click)
    if label is None:
        return message_figure(""), HIDDEN
    try:
        settings = parse_time(**time)
        t = time_target(ctx.store, diag_target(ctx.store, sid, handle, raw), settings)
        stats = window_statistics(t, label)
    except CalibrationInputError as exc:
        return message_figure(str(exc)), {}
    view = replace(t.view, band="wilson")
    subtitle = f"{stats.total:,} rows · {view.describe_binning()} · {view.describe_band()} band"
    fig = slice_diagrams(t.info, [(label, stats)], view,
                         title=f"{t.info.name}: window {label}", subtitle=subtitle)  # fmt: skip
    return fig, {}


def register(app, ctx: AppContext) -> None:
    """The card's panel, its background job and the clicked window's diagram."""
    controls = time_inputs()  # grouped: the panels get them as one dict, ``time``
    register_panel(
        app,
        ctx,
        [
            Output(ids.TIME_COLUMN, "options"),
            Output(ids.TIME_MESSAGE, "children"),
            Output(ids.TIME_GRAPH, "figure"),
            Output(ids.TIME_GRAPH, "style"),
            Output(ids.TIME_TABLE, "children"),
        ],
        {
            "time": controls,
            "resamples": Input(ids.DIAG_RESAMPLES, "value"),
            "click": Input(ids.TIME_GRAPH, "clickData"),
            "done": Input(ids.TIME_DONE, "data"),
        },
        "over-time view",
        panel_failed,
        time_panel,
        view=True,
    )
    register_job(
        app,
        ctx,
        JobIds.named("TIME"),
        {},
        {"time": time_states(), "resamples": State(ids.DIAG_RESAMPLES, "value")},
        "interval job of the windows",
        run_time_job,
    )
    register_panel(
        app,
        ctx,
        [Output(ids.TIME_DIAGRAM, "figure"), Output(ids.TIME_DIAGRAM, "style")],
        {"time": controls, "click": Input(ids.TIME_GRAPH, "clickData")},
        "window's diagram",
        lambda message: (message_figure(message), {}),
        window_panel,
        view=True,
    )
