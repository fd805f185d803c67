"""The group picker and the "Per group" section: validate -> app.groups.columns -> table and figure.

* The picker's options follow the selected models (the first one's other columns,
  :func:`picker_options`): the model-selection callback of :mod:`app.callbacks.models`
  and the page's layout fill them, so a selection change costs no request of its own.
* A browser-side gate (``calibration.groupGate`` in ``assets/downloads.js``) writes
  the settings the section follows (:data:`~app.ids.GROUP_GATE`: the picker and the
  view's notion, binning and band) and the job's request
  (:data:`~app.ids.GROUP_REQUEST`) only while a group column is chosen: without one,
  no request leaves the page. The section's point estimates and diagrams come at
  once (:func:`group_section_view`); the request starts a background job
  (:func:`run_group_job`, Dash's background callback manager, like the diagnostics'
  bootstrap) that computes and stores the intervals and the homogeneity test (at
  once when they are stored), then writes :data:`~app.ids.GROUP_DONE` so the section
  redraws with them. The request is not the section's output: the section, the job
  and the section again would form a cycle, which Dash does not run.
* The same request starts a second job (:func:`run_group_maps_job`): the held-out
  comparison of a global map against one map per group (seconds on a million rows,
  so the intervals need not wait for it), which writes :data:`~app.ids.GROUP_MAPS_DONE`.

Bad input (a column the model does not have, more than 1,000 groups) is a
note in the section, nothing drawn; an unexpected failure a message with the
request id (:class:`~app.callback_failures.CallbackFailures`), never a traceback.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from dash import ClientsideFunction, Input, Output, State, no_update
from dash.exceptions import PreventUpdate

from calibration_core import CalibrationInputError

from ... import ids
from ...context import AppContext
from ...groups.columns import (
    GroupView,
    compute_group_intervals,
    compute_group_maps,
    group_choices,
    group_table,
    maps_line,
    maps_table,
    summary,
)
from ...layout.diagnostics import table_component
from ...layout.groups import HIDDEN, group_graph
from ...services.groups import first_model, group_figure, section_view
from ...settings import RawSettings
from ..controls import GROUP_FIELDS, SETTING_PROPS
from ..diagnostics.wiring import note

#: The section with nothing to show: hidden and empty.
NOTHING = (HIDDEN, [], [], [], [])


def picker_options(ctx: AppContext, sid, selected, current) -> tuple:
    """The group picker's options (the first selected model's columns) and value.

    A current value stays while the model has that column, even one not offered
    (an address may name it: the section then says why it cannot be drawn).
    """
    try:
        info = first_model(ctx, sid, RawSettings(handles=selected))
        columns = group_choices(ctx.store, info)
        extra = [] if info is None else list(ctx.store.predictions(info.handle).extra)
    except CalibrationInputError:  # a bad selection, or the model expired: the view says so
        return [], None
    options = [{"label": c, "value": c} for c in columns]
    if isinstance(current, str) and current in extra and current not in columns:
        options.append({"label": f"{current} (too many values)", "value": current})
    value = current if isinstance(current, str) and current in extra else None
    return options, (no_update if value == current else value)


def opening_group(ctx: AppContext, sid, raw: RawSettings) -> tuple[list[dict], RawSettings]:
    """The group picker's options for the page's first layout, and ``raw`` with its group
    dropped when the first selected model has no such column."""
    options, value = picker_options(ctx, sid, raw.handles, raw.group)
    return options, (raw if value is no_update else replace(raw, group=value))


def group_settings(raw: RawSettings) -> dict:
    """The settings the section follows, by name (what the job and its record carry)."""
    return {name: getattr(raw, name) for name in GROUP_FIELDS}


def _job_error(done: Any, raw: RawSettings) -> str | None:
    """The error of a job's last record when it was for these settings."""
    # A record without settings is a job that failed or stopped before it read them.
    mine = isinstance(done, dict) and done.get("settings") in (None, group_settings(raw))
    return str(done["error"]) if mine and done.get("error") else None


def maps_children(gv: GroupView, raw: RawSettings, maps_done: Any = None) -> list:
    """The maps block: its line and table, or that they are coming, or the job's error."""
    error = None if gv.maps is not None else _job_error(maps_done, raw)
    if error is not None:
        return [note(error)]
    table = maps_table(gv)
    return [note(maps_line(gv)), *([] if table is None else [table_component(table)])]


def group_section_view(
    ctx: AppContext, sid, raw: RawSettings, done: Any = None, maps_done: Any = None
) -> tuple:
    """(section style, summary, table, diagrams, maps): the plain function.

    ``done`` and ``maps_done`` are the background jobs' last records: their
    errors are shown when they were for these settings.
    """
    try:
        gv = section_view(ctx, sid, raw)
    except CalibrationInputError as exc:
        return {}, [note(str(exc))], [], [], []
    if gv is None:
        return NOTHING
    lines = [note(line) for line in summary(gv)]
    error = None if gv.intervals is not None else _job_error(done, raw)
    if error is not None:
        lines.append(note(error))
    graph = [group_graph(group_figure(gv, raw))]
    maps = maps_children(gv, raw, maps_done)
    return {}, lines, table_component(group_table(gv)), graph, maps


def gate_value(raw: RawSettings) -> dict:
    """What the browser-side gate writes for ``raw``: the values of :data:`GROUP_FIELDS`."""
    return {"values": [getattr(raw, name) for name in GROUP_FIELDS]}


def gate_settings(gate: Any) -> RawSettings | None:
    """The settings in a gate's or a request's data (None when it is not one)."""
    values = gate.get("values") if isinstance(gate, dict) else None
    if not isinstance(values, list) or len(values) != len(GROUP_FIELDS):
        return None
    return RawSettings(**dict(zip(GROUP_FIELDS, values, strict=True)))


def _run_job(ctx: AppContext, sid, request: Any, compute) -> dict:
    """A job's body: ``compute(store, view)`` for the requested view; its record."""
    state = {"nonce": uuid.uuid4().hex, "error": None, "settings": None}
    raw = gate_settings(request)
    if raw is None:
        return state
    state["settings"] = group_settings(raw)
    try:
        gv = section_view(ctx, sid, raw)
        if gv is not None:
            compute(ctx.store, gv)
    except CalibrationInputError as exc:
        state["error"] = str(exc)
    return state


def job_failed(message: str) -> dict:
    """A job's record when it failed or stopped before it read its settings."""
    return {"nonce": uuid.uuid4().hex, "error": message, "settings": None}


def run_group_job(ctx: AppContext, sid, request: Any) -> dict:
    """Compute and store the intervals and the test of a requested view (the job's body)."""
    return _run_job(ctx, sid, request, compute_group_intervals)


def run_group_maps_job(ctx: AppContext, sid, request: Any) -> dict:
    """Compare and store the global vs per-group maps of a requested view (the job's body)."""
    return _run_job(ctx, sid, request, compute_group_maps)


def register(app, ctx: AppContext) -> None:
    """The picker's options, the section, and its background jobs (:data:`GROUP_JOBS`)."""

    app.clientside_callback(
        ClientsideFunction(namespace="calibration", function_name="groupGate"),
        Output(ids.GROUP_GATE, "data"),
        Output(ids.GROUP_REQUEST, "data"),
        *(Input(*SETTING_PROPS[name]) for name in GROUP_FIELDS),  # the group column last
        State(ids.GROUP_GATE, "data"),
    )

    output = [
        Output(ids.GROUP_SECTION, "style"),
        Output(ids.GROUP_SUMMARY, "children"),
        Output(ids.GROUP_TABLE, "children"),
        Output(ids.GROUP_GRAPH, "children"),
        Output(ids.GROUP_MAPS, "children"),
    ]
    inputs = {
        "gate": Input(ids.GROUP_GATE, "data"),
        "done": Input(ids.GROUP_DONE, "data"),
        "maps_done": Input(ids.GROUP_MAPS_DONE, "data"),
    }

    def failed(rid: str) -> tuple:
        message = f"Something went wrong in the per-group view (request id {rid})."
        return {}, [note(message)], [], [], []

    ctx.failures.reply("per-group view", failed, output=output, inputs=inputs)

    @app.callback(output=output, inputs=inputs, prevent_initial_call=True)
    def on_section(gate, done, maps_done):
        raw = gate_settings(gate)
        if raw is None:
            raise PreventUpdate
        return group_section_view(ctx, ctx.session_id(), raw, done, maps_done)

    for job in GROUP_JOBS:
        register_group_job(app, ctx, job)


@dataclass(frozen=True)
class GroupJob:
    """One background job on the section's request (:data:`~app.ids.GROUP_REQUEST`)."""

    #: Its name in failure messages ("The per-group maps failed …").
    what: str
    #: The ``dcc.Store`` its record goes to.
    done: str
    #: The status line it writes ``running`` to while it runs.
    status: str
    running: str
    #: The plain body: ``run(ctx, sid, request)`` -> the record.
    run: Callable[[AppContext, Any, Any], dict]


#: The section's jobs: its intervals and test, and the global vs per-group maps.
GROUP_JOBS = (
    GroupJob(
        "per-group intervals",
        ids.GROUP_DONE,
        ids.GROUP_STATUS,
        "Computing the intervals and the test in the background…",
        run_group_job,
    ),
    GroupJob(
        "per-group maps",
        ids.GROUP_MAPS_DONE,
        ids.GROUP_MAPS_STATUS,
        "Comparing a global map with one map per group in the background…",
        run_group_maps_job,
    ),
)


def register_group_job(app, ctx: AppContext, job: GroupJob) -> None:
    """A background callback running ``job`` on each request, its failures as records."""
    job_output = Output(job.done, "data")
    job_inputs = {"request": Input(ids.GROUP_REQUEST, "data")}
    ctx.failures.reply(
        job.what,
        lambda rid: job_failed(f"The {job.what} failed (request id {rid})."),
        output=job_output,
        inputs=job_inputs,
        stopped=job_failed,
    )

    @app.callback(
        output=job_output,
        inputs=job_inputs,
        background=True,
        running=[(Output(job.status, "children"), job.running, "")],
        prevent_initial_call=True,
    )
    def on_request(request):
        return job.run(ctx, ctx.session_id(), request)
