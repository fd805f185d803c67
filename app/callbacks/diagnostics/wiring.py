"""The shapes every callback of the Diagnostics section shares.

* :func:`register_gates`: two stores the browser fills with the model and the
  settings (by name: :data:`~app.callbacks.controls.DIAGNOSTICS_FIELDS` or
  :data:`~app.callbacks.controls.FIT_FIELDS`) only while the section is open,
  so that a closed section sends no request at all (each panel would
  otherwise answer "nothing" to every page load); :func:`gate_settings` reads one;
* :func:`register_panel`: a panel redrawn from a plain function while the
  section is open;
* :func:`register_job`: a background job (progress bar, cancel button) that
  computes and stores results, then writes a ``{"nonce", "error"}`` record to
  its done-store so that its panel redraws; :func:`run_job` is the shared body
  of the plain functions behind those jobs.

An unexpected failure of any of them becomes a message with the request id in
the panel (:func:`failure_message`, through the app's
:class:`~app.callback_failures.CallbackFailures`), never a traceback.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dash import Input, Output, State, html
from dash.exceptions import PreventUpdate

from calibration_core import CalibrationInputError

from ... import ids
from ...context import AppContext
from ...diagnostics.resampling import Progress
from ...figures.diagnostics import message_figure
from ...job_limits import cluster_job
from ...settings import RawSettings
from ..controls import DIAGNOSTICS_FIELDS, FIT_FIELDS, SETTING_PROPS, setting_states

HIDDEN = {"display": "none"}


def failure_message(what: str, rid: str) -> str:
    """The page's message when ``what`` failed unexpectedly, with the request id to grep for."""
    return f"Something went wrong in the {what} (request id {rid})."


def note(text: str) -> html.Div:
    """A message in place of a table."""
    return html.Div(text, className="diag-empty")


def hidden_figure(message: str) -> tuple:
    """(message, empty figure, hidden style): a panel with a figure that has nothing to show."""
    return note(message), message_figure(""), HIDDEN


def gate_function(fields: tuple[str, ...]) -> str:
    """Browser-side gate: nothing while the section is closed, else the values by name.

    Its arguments are the open flag, the model, the settings ``fields`` and the
    fit state; it writes ``{"handle", "settings": {field: value}, "fit_state"}``.
    """
    return f"""
function (isOpen, handle, ...values) {{
    if (!isOpen) {{
        return window.dash_clientside.no_update;
    }}
    const fields = {json.dumps(list(fields))};
    const settings = Object.fromEntries(fields.map((name, i) => [name, values[i]]));
    return {{handle: handle, settings: settings, fit_state: values[fields.length]}};
}}
"""


def register_gates(app) -> None:
    """The clientside callbacks filling :data:`ids.DIAG_VIEW_GATE` and :data:`ids.DIAG_FIT_GATE`.

    Each gate is written whenever the model, one of its settings or the fit
    state changes while the section is open, and once when it opens.
    """
    for gate, fields in ((ids.DIAG_VIEW_GATE, DIAGNOSTICS_FIELDS), (ids.DIAG_FIT_GATE, FIT_FIELDS)):
        app.clientside_callback(
            gate_function(fields),
            Output(gate, "data"),
            Input(ids.DIAG_OPEN, "data"),
            Input(ids.DIAG_MODEL, "value"),
            *(Input(*SETTING_PROPS[name]) for name in fields),
            Input(ids.FIT_STATE, "data"),
        )


def gate_settings(gate: Any, fields: tuple[str, ...]) -> tuple[Any, RawSettings]:
    """The model handle and the settings in a gate's data (PreventUpdate before it opened).

    Only ``fields`` are read from the browser's data; the other settings keep
    :class:`~app.settings.RawSettings`' defaults.
    """
    if not isinstance(gate, dict) or not isinstance(gate.get("settings"), dict):
        raise PreventUpdate
    settings = gate["settings"]
    return gate.get("handle"), RawSettings(**{name: settings.get(name) for name in fields})


def register_panel(
    app,
    ctx: AppContext,
    output: Output | list[Output],
    extra: dict[str, Input],
    what: str,
    fallback: Callable[[str], Any],
    panel: Callable[..., Any],
    *,
    view: bool = False,
) -> None:
    """Redraw ``output`` with ``panel`` whenever the model, the settings or ``extra`` change.

    The callback's inputs are the section's gate (:func:`register_gates`: the
    picked model, the view's settings (:data:`DIAGNOSTICS_FIELDS` with ``view``,
    else :data:`FIT_FIELDS`) and the fit state, while the section is open), then
    ``extra``. Nothing is drawn before the section is first opened.

    Parameters
    ----------
    app : dash.Dash
    ctx : AppContext
    output : Output or list of Output
        What ``panel`` returns (a tuple for a list).
    extra : dict of Input
        The panel's own settings, passed to ``panel`` by these names.
    what : str
        The panel's name in failure messages.
    fallback : callable(message)
        What the page shows when ``panel`` fails unexpectedly.
    panel : callable(ctx, sid, handle, raw, **extra values)
    view : bool
        Follow the notion and the binning too (not only the calibrators).
    """
    gate_id = ids.DIAG_VIEW_GATE if view else ids.DIAG_FIT_GATE
    fields = DIAGNOSTICS_FIELDS if view else FIT_FIELDS
    inputs = {"gate": Input(gate_id, "data"), **extra}
    ctx.failures.reply(
        what, lambda rid: fallback(failure_message(what, rid)), output=output, inputs=inputs
    )

    @app.callback(output=output, inputs=inputs, prevent_initial_call=True)
    def on_change(gate, **extra_values):
        handle, raw = gate_settings(gate, fields)
        return panel(ctx, ctx.session_id(), handle, raw, **extra_values)


@dataclass(frozen=True)
class JobIds:
    """Component ids of one background job of the section."""

    #: ``dcc.Store`` the job writes its ``{"nonce", "error"}`` record to.
    done: str
    #: Button that starts the job (disabled while it runs).
    run: str
    #: Button that cancels it (enabled while it runs).
    cancel: str
    #: ``html.Progress`` bar (``value``, ``max``; class "progress" while running).
    progress: str
    #: Status line next to the bar.
    status: str

    @classmethod
    def named(cls, prefix: str) -> JobIds:
        """The ids ``{prefix}_DONE``, ``_RUN``, ``_CANCEL``, ``_PROGRESS`` and ``_STATUS``
        of :mod:`app.ids`."""
        names = (field.name.upper() for field in dataclasses.fields(cls))
        return cls(*(getattr(ids, f"{prefix}_{name}") for name in names))


def new_job_state() -> dict:
    """The record a job writes to its done-store (a fresh nonce, so that the panel redraws)."""
    return {"nonce": uuid.uuid4().hex, "error": None}


def run_job(work: Callable[[Progress], None], set_progress: Callable[[tuple], None]) -> dict:
    """Run ``work(progress)``; the job's record, with a setting problem as its ``error``.

    ``progress(done, total, text)`` becomes ``set_progress((done, max(total, 1), text))``
    with strings, as the progress bar's ``value`` and ``max`` and the status line want.
    """
    state = new_job_state()

    def progress(done: int, total: int, text: str) -> None:
        set_progress((str(done), str(max(total, 1)), text))

    try:
        work(progress)
    except CalibrationInputError as exc:
        state["error"] = str(exc)
    return state


def register_job(
    app,
    ctx: AppContext,
    job: JobIds,
    triggers: dict[str, Input],
    states: dict[str, State],
    what: str,
    runner: Callable[..., dict],
    *,
    cluster: bool = False,
) -> None:
    """Register the background job ``runner``: started by ``job.run``, its record in ``job.done``.

    The callback starts on a press of ``job.run`` or a change of ``triggers``,
    reads the picked model, the view's settings (:data:`DIAGNOSTICS_FIELDS`) and
    ``states``, and calls ``runner(ctx, sid, handle, raw, **trigger and state
    values, set_progress=...)``. While it runs, ``job.run`` is disabled and
    ``job.cancel`` enabled; an unexpected failure is logged and becomes the
    record's ``error``.

    Parameters
    ----------
    app : dash.Dash
    ctx : AppContext
    job : JobIds
    triggers : dict of Input
        Inputs besides the run button that start the job, by ``runner``'s argument names.
    states : dict of State
        The job's own settings, by ``runner``'s argument names.
    what : str
        The job's name in failure messages.
    runner : callable
        The plain function behind the job; returns the record (:func:`run_job`).
    cluster : bool
        The job only drives a Dask cluster (:func:`~app.job_limits.cluster_job`):
        none of the web side's per-job limits.
    """
    output = Output(job.done, "data")
    inputs = {"run": Input(job.run, "n_clicks"), **triggers}
    state = {
        "handle": State(ids.DIAG_MODEL, "value"),
        "settings": setting_states(DIAGNOSTICS_FIELDS),
        **states,
    }
    ctx.failures.reply(
        what,
        lambda rid: {**new_job_state(), "error": failure_message(what, rid)},
        output=output,
        inputs=inputs,
        state=state,
        stopped=lambda message: {**new_job_state(), "error": message},
    )

    def on_run(set_progress, run, handle, settings: dict, **own):
        raw = RawSettings(**settings)
        return runner(ctx, ctx.session_id(), handle, raw, **own, set_progress=set_progress)

    if cluster:
        cluster_job(on_run)  # before Dash registers it with the job manager
    app.callback(
        output=output,
        inputs=inputs,
        state=state,
        background=True,
        progress=[
            Output(job.progress, "value"),
            Output(job.progress, "max"),
            Output(job.status, "children"),
        ],
        progress_default=["0", "1", ""],
        running=[
            (Output(job.run, "disabled"), True, False),
            (Output(job.cancel, "disabled"), False, True),
            (Output(job.progress, "className"), "progress", "progress idle"),
        ],
        cancel=[Input(job.cancel, "n_clicks")],
        prevent_initial_call=True,
    )(on_run)
