"""A picked dataset's "Per group" and "Over time": its job and its view (thin).

* The controls' columns (:func:`slice_options`) are the picked dataset's Parquet
  schema's other columns; a value the new dataset does not have is cleared.
* The job (:func:`run_slices_job`, registered with the Diagnostics section's job
  wiring: progress bar, cancel button; a :func:`~app.job_limits.cluster_job` on a
  Dask scheduler, else under the job limits of uploads) computes what the settings
  ask for and is not kept (:func:`app.groups.dataset.compute_slices`). It starts on Compute, or on a
  request (:func:`slices_request`) written when a control, the dataset or the
  bin count changes to settings that are not kept: kept ones are drawn at once,
  without a job (Dash would hold the view until a started job ends).
* The view (:func:`slices_panel`) follows the controls, the job's record and the
  view's notion, binning and band; it draws the kept results with the uploads'
  tables and figures (:func:`~app.groups.columns.group_table`,
  :func:`~app.groups.columns.group_panels`, :func:`~app.groups.tables.drift_table`,
  :func:`~app.figures.groups.drift_figure`), or says what is missing. A bad choice
  is a message in this block only: the dataset's other sections stay as they are.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from dash import Input, Output, State, dcc, html, no_update

from calibration_core import CalibrationInputError

from ... import ids
from ...context import AppContext
from ...figures.common import graph_config
from ...figures.groups import drift_figure
from ...figures.reliability import reliability_figure_dict
from ...groups.columns import INTERVAL_RESAMPLES, group_panels, group_table, summary
from ...groups.dataset import (
    DatasetSlice,
    check_columns,
    compute_slices,
    dataset_group_views,
    dataset_time_views,
    missing,
    offered_columns,
    parse_slices,
    slice_bins,
    time_subtitle,
)
from ...groups.tables import drift_table
from ...layout.diagnostics import table_component
from ...layout.groups import group_graph
from ...settings import RawSettings, ViewSettings, parse_view
from ..controls import setting_inputs
from ..diagnostics.wiring import JobIds, failure_message, note, register_job, run_job

#: The block's controls: argument of :func:`~app.groups.dataset.parse_slices` -> (id, property).
SLICE_PROPS = {
    "group": (ids.DATASET_GROUP_SELECT, "value"),
    "min_rows": (ids.DATASET_GROUP_MIN_ROWS, "value"),
    "time_column": (ids.DATASET_TIME_COLUMN, "value"),
    "window": (ids.DATASET_WINDOW, "value"),
    "rows": (ids.DATASET_WINDOW_ROWS, "value"),
    "reference": (ids.DATASET_REFERENCE, "value"),
}
#: The view's settings the block follows.
VIEW_FIELDS = ("notion", "class_value", "scheme", "n_bins", "band", "level")
PICK = (
    "Pick a column under Group by for calibration per group, or a window for calibration over "
    "time: the job starts at once."
)
NOT_COMPUTED = (
    "{what} of dataset {name}: not computed for these settings yet. The job starts when a "
    "control or the bin count changes (see the progress bar above); after a cancel or an "
    "error, press Compute."
)


def slice_options(ctx: AppContext, name: Any, group: Any, time_column: Any) -> tuple:
    """(hidden, group options, time options, group value, time column value) for ``name``.

    A value the dataset has no column for is cleared (the job then does not start for it).
    """
    if name is None:
        return True, [], [], None, None
    try:
        columns = offered_columns(ctx.datasets, name)
    except CalibrationInputError:  # a name the server does not list: the dataset view says so
        columns = []
    options = [{"label": c, "value": c} for c in columns]
    values = [v if v in columns else None for v in (group, time_column)]
    changed = [
        no_update if v == old else v for v, old in zip(values, (group, time_column), strict=True)
    ]
    return False, options, options, *changed


def job_record(name: Any, slices: dict, raw: RawSettings) -> dict:
    """What a job's record says it was for: its error is shown for these settings only."""
    return {"name": name, "slices": slices, "scheme": raw.scheme, "n_bins": raw.n_bins}


def slice_view(raw: RawSettings) -> ViewSettings:
    """The view's notion, binning and band (SettingsError when one is invalid)."""
    return parse_view(raw.notion, raw.class_value, raw.scheme, raw.n_bins, raw.band, raw.level)


def run_slices_job(
    ctx: AppContext, sid: str | None, _handle, raw: RawSettings, name: Any, slices: dict,
    set_progress, request: Any = None,
) -> dict:  # fmt: skip
    """Compute and keep the groups and windows the block asks for (the job's body).

    ``request``: what started it (:func:`slices_request`), or None (Compute); the
    controls' current values are computed either way.
    """

    def work(progress) -> None:
        if name is None:
            return
        s = parse_slices(**slices)
        if s.group or s.window:
            n_bins = slice_bins(slice_view(raw))
            compute_slices(ctx.datasets, sid, name, s, n_bins, progress)

    return {**run_job(work, set_progress), "settings": job_record(name, slices, raw)}


def slices_request(
    ctx: AppContext, sid: str | None, name: Any, slices: dict, raw: RawSettings
) -> Any:
    """A new request (the job starts) when the settings ask for what is not kept, else
    ``no_update``: kept results are drawn at once, without waiting on a job."""
    try:
        s = parse_slices(**slices)
        needed = name is not None and missing(ctx.datasets, sid, name, s, slice_view(raw))
    except CalibrationInputError:  # the view says what is wrong
        needed = False
    return {"nonce": uuid.uuid4().hex} if needed else no_update


def register_request(app, ctx: AppContext, controls: dict) -> None:
    """The request store written on a change of the controls, the dataset or the bins."""
    output = Output(ids.DATASET_SLICES_REQUEST, "data")
    inputs = {
        "name": Input(ids.DATASET_SELECT, "value"),
        "slices": controls,
        "settings": setting_inputs(("notion", "class_value", "scheme", "n_bins")),
    }
    what = "request of per group and over time"
    ctx.failures.reply(what, lambda rid: no_update, output=output, inputs=inputs)

    @app.callback(output=output, inputs=inputs, prevent_initial_call=True)
    def request_slices(name, slices: dict, settings: dict):
        return slices_request(ctx, ctx.session_id(), name, slices, RawSettings(**settings))


def job_error(done: Any, name: Any, slices: dict, raw: RawSettings) -> list:
    """The job's error as a note, when its record is for these settings."""
    if not isinstance(done, dict) or not isinstance(done.get("error"), str):
        return []
    mine = done.get("settings") in (None, job_record(name, slices, raw))
    return [note(done["error"])] if mine else []


def group_children(name: str, column: str, shown: list[DatasetSlice] | None, view) -> list:
    """ "Per group": each model's lines, table (the uploads') and small multiples."""
    head = [html.H3(f"Per group of {column}", className="dataset-slices-title")]
    if shown is None:
        return [*head, note(NOT_COMPUTED.format(what="Per group", name=name))]
    confidence = replace(view, notion="confidence", class_name=None)
    out = head
    for item in shown:
        gv = item.group
        figure = reliability_figure_dict(group_panels(gv, confidence), confidence, None,
                                         compact=True)  # fmt: skip
        out += [
            html.H4(item.model, className="dataset-slices-model"),
            *(note(line) for line in [*item.lines, *summary(gv)]),
            table_component(group_table(gv)),
            group_graph(figure),
        ]
    return out


def time_children(name: str, shown: list[DatasetSlice] | None, view) -> list:
    """ "Over time": each model's lines, time chart and windows' table (the uploads')."""
    head = [html.H3("Over time", className="dataset-slices-title")]
    if shown is None:
        return [*head, note(NOT_COMPUTED.format(what="Over time", name=name))]
    out = head
    for item in shown:
        doc = item.time
        figure = drift_figure(doc, title=f"{item.model}: calibration over time",
                              subtitle=time_subtitle(doc, view))  # fmt: skip
        out += [
            html.H4(item.model, className="dataset-slices-model"),
            *(note(line) for line in item.lines),
            dcc.Graph(figure=figure, config=graph_config(f"{name}-{item.model}-time")),
            table_component(drift_table(doc, INTERVAL_RESAMPLES)),
        ]
    return out


def slices_panel(
    ctx: AppContext, sid: str | None, name: Any, done: Any, slices: dict, raw: RawSettings
) -> list:
    """The children of the block's view for the picked ``name``, its controls and the view."""
    if name is None:
        return []
    errors = job_error(done, name, slices, raw)
    try:
        s = parse_slices(**slices)
        check_columns(s, offered_columns(ctx.datasets, name), name)
        if not (s.group or s.window):
            return [*errors, note(PICK)]
        view = slice_view(raw)
        groups = dataset_group_views(ctx.datasets, sid, name, s, view) if s.group else None
        times = dataset_time_views(ctx.datasets, sid, name, s, view) if s.window else None
    except CalibrationInputError as exc:
        return [*errors, note(str(exc))]
    out = list(errors)
    if s.group and (groups is not None or not errors):  # the error says why it is missing
        out += group_children(name, s.group, groups, view)
    if s.window and (times is not None or not errors):
        out += time_children(name, times, view)
    return out


def register(app, ctx: AppContext) -> None:
    """The block's columns, its job and its view (called with the datasets')."""
    options_output = [
        Output(ids.DATASET_SLICES, "hidden"),
        Output(ids.DATASET_GROUP_SELECT, "options"),
        Output(ids.DATASET_TIME_COLUMN, "options"),
        Output(ids.DATASET_GROUP_SELECT, "value"),
        Output(ids.DATASET_TIME_COLUMN, "value"),
    ]
    options_inputs = {"name": Input(ids.DATASET_SELECT, "value")}
    options_state = {
        "group": State(ids.DATASET_GROUP_SELECT, "value"),
        "time_column": State(ids.DATASET_TIME_COLUMN, "value"),
    }
    what = "dataset's columns"
    ctx.failures.reply(what, lambda rid: (False, [], [], None, None), output=options_output,
                       inputs=options_inputs, state=options_state)  # fmt: skip

    @app.callback(output=options_output, inputs=options_inputs, state=options_state,
                  prevent_initial_call=True)  # fmt: skip
    def update_options(name, group, time_column):
        return slice_options(ctx, name, group, time_column)

    controls = {name: Input(*prop) for name, prop in SLICE_PROPS.items()}
    register_request(app, ctx, controls)
    register_job(
        app,
        ctx,
        JobIds.named("DATASET_SLICES"),
        {"request": Input(ids.DATASET_SLICES_REQUEST, "data")},
        {
            "name": State(ids.DATASET_SELECT, "value"),
            "slices": {name: State(*prop) for name, prop in SLICE_PROPS.items()},
        },
        "per group and over time of a dataset",
        run_slices_job,
        cluster=ctx.datasets.on_cluster,
    )
    output = Output(ids.DATASET_SLICES_VIEW, "children")
    inputs = {
        "name": Input(ids.DATASET_SELECT, "value"),
        "done": Input(ids.DATASET_SLICES_DONE, "data"),
        "slices": controls,
        "settings": setting_inputs(VIEW_FIELDS),
    }
    what = "per group and over time of a dataset"
    ctx.failures.reply(
        what, lambda rid: note(failure_message(what, rid)), output=output, inputs=inputs
    )

    @app.callback(output=output, inputs=inputs, prevent_initial_call=True)
    def update_slices(name, done, slices: dict, settings: dict):
        return slices_panel(ctx, ctx.session_id(), name, done, slices, RawSettings(**settings))
