"""The shapes every callback of the Diagnostics section shares.

* the main view's settings the diagnostics follow (:data:`VIEW_INPUTS`,
  :data:`FIT_INPUTS`) and their :class:`~app.settings.RawSettings`;
* :func:`guarded`: an unexpected failure becomes a message with a request id
  (logged with its traceback), never a traceback in the page;
* :func:`register_gates`: two stores the browser fills with the model and the
  settings only while the section is open, so that a closed section sends no
  request at all (a page load used to send six that all answered "nothing");
* :func:`register_panel`: a panel redrawn from a plain function while the
  section is open;
* :func:`register_job`: a background job (progress bar, cancel button) that
  computes and stores results, then writes a ``{"nonce", "error"}`` record to
  its done-store so that its panel redraws; :func:`run_job` is the shared body
  of the plain functions behind those jobs.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dash import Input, Output, State, html
from dash.exceptions import PreventUpdate

from calibration_core import CalibrationInputError

from .. import ids
from ..context import AppContext
from ..diagnostics.resampling import Progress
from ..figures.diagnostics import message_figure
from ..request_errors import request_id
from ..settings import RawSettings

log = logging.getLogger("calibration_dashboard.diagnostics")
HIDDEN = {"display": "none"}

#: The main view's settings the diagnostics follow (after the model picker).
VIEW_INPUTS = [
    Input(ids.MAPS, "value"),
    Input(ids.HELDOUT, "value"),
    Input(ids.FOLDS, "value"),
    Input(ids.TEST_FRACTION, "value"),
    Input(ids.NOTION, "value"),
    Input(ids.CLASS_SELECT, "value"),
    Input(ids.SCHEME, "value"),
    Input(ids.N_BINS, "value"),
]
VIEW_STATES = [State(i.component_id, i.component_property) for i in VIEW_INPUTS]
#: What decides the calibrators only (Hosmer-Lemeshow, decision and human-uncertainty
#: cards do not depend on the notion or the binning, so those do not redraw them).
FIT_INPUTS = VIEW_INPUTS[:4]


def fit_settings(values: Sequence[Any]) -> RawSettings:
    """RawSettings of the four values of :data:`FIT_INPUTS` (maps, held-out scheme)."""
    maps, heldout, folds, fraction = values
    return RawSettings(None, maps, heldout, folds, fraction)


def view_settings(values: Sequence[Any]) -> RawSettings:
    """RawSettings of the eight view values (maps .. n_bins) in :data:`VIEW_INPUTS` order."""
    maps, heldout, folds, fraction, notion, class_value, scheme, n_bins = values
    return RawSettings(None, maps, heldout, folds, fraction, notion, class_value, scheme, n_bins)


def failure(what: str) -> str:
    """Log the exception being handled; the page's message, with a request id to grep for."""
    rid = request_id()
    log.exception("diagnostics: %s failed (request id %s)", what, rid)
    return f"Something went wrong in the {what} (request id {rid})."


def note(text: str) -> html.Div:
    """A message in place of a table."""
    return html.Div(text, className="diag-empty")


def hidden_figure(message: str) -> tuple:
    """(message, empty figure, hidden style): a panel with a figure that has nothing to show."""
    return note(message), message_figure(""), HIDDEN


def guarded(what: str, fallback: Callable[[str], Any], function: Callable[..., Any], *args) -> Any:
    """``function(*args)``, or ``fallback(message)`` when it fails unexpectedly.

    :class:`~dash.exceptions.PreventUpdate` passes through; any other exception
    is logged (:func:`failure`) and shown as a message.
    """
    try:
        return function(*args)
    except PreventUpdate:
        raise
    except Exception:  # never a traceback in the page
        return fallback(failure(what))


#: Browser-side gate: while the section is closed nothing changes (so no server
#: callback runs); while it is open, the model, the settings and the fit state.
GATE_FUNCTION = """
function (isOpen, ...values) {
    if (!isOpen) {
        return window.dash_clientside.no_update;
    }
    return values;
}
"""


def register_gates(app) -> None:
    """The clientside callbacks filling :data:`ids.DIAG_VIEW_GATE` and :data:`ids.DIAG_FIT_GATE`.

    Each gate holds ``[model handle, *settings, fit state]`` (settings:
    :data:`VIEW_INPUTS` or :data:`FIT_INPUTS`), written whenever one of them
    changes while the section is open, and once when it opens.
    """
    for gate, settings in ((ids.DIAG_VIEW_GATE, VIEW_INPUTS), (ids.DIAG_FIT_GATE, FIT_INPUTS)):
        app.clientside_callback(
            GATE_FUNCTION,
            Output(gate, "data"),
            Input(ids.DIAG_OPEN, "data"),
            Input(ids.DIAG_MODEL, "value"),
            *settings,
            Input(ids.FIT_STATE, "data"),
        )


def gate_values(gate: Any, n_settings: int) -> tuple[Any, list]:
    """The model handle and the settings in a gate's data (PreventUpdate before it opened)."""
    if not isinstance(gate, list) or len(gate) != n_settings + 2:
        raise PreventUpdate
    return gate[0], gate[1 : n_settings + 1]


def register_panel(
    app,
    ctx: AppContext,
    outputs: Sequence[Output],
    extra: Sequence[Input],
    what: str,
    fallback: Callable[[str], Any],
    panel: Callable[..., Any],
    *,
    view: bool = False,
) -> None:
    """Redraw ``outputs`` with ``panel`` whenever the model, the settings or ``extra`` change.

    The callback's inputs are the section's gate (:func:`register_gates`: the
    picked model, the view's settings (:data:`VIEW_INPUTS` with ``view``, else
    :data:`FIT_INPUTS`) and the fit state, while the section is open), then
    ``extra``. Nothing is drawn before the section is first opened.

    Parameters
    ----------
    app : dash.Dash
    ctx : AppContext
    outputs : sequence of Output
        What ``panel`` returns (a tuple when there are several).
    extra : sequence of Input
        The panel's own settings, passed to ``panel`` after the RawSettings.
    what : str
        The panel's name in failure messages.
    fallback : callable(message)
        What the page shows when ``panel`` fails unexpectedly.
    panel : callable(ctx, sid, handle, raw, *extra values)
    view : bool
        Follow the notion and the binning too (not only the calibrators).
    """
    gate_id = ids.DIAG_VIEW_GATE if view else ids.DIAG_FIT_GATE
    parse = view_settings if view else fit_settings
    n = len(VIEW_INPUTS if view else FIT_INPUTS)

    @app.callback(*outputs, Input(gate_id, "data"), *extra, prevent_initial_call=True)
    def on_change(gate, *extra_values):
        handle, values = gate_values(gate, n)
        raw = parse(values)
        return guarded(what, fallback, panel, ctx, ctx.session_id(), handle, raw, *extra_values)


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
    triggers: Sequence[Input],
    states: Sequence[State],
    what: str,
    runner: Callable[..., dict],
) -> None:
    """Register the background job ``runner``: started by ``job.run``, its record in ``job.done``.

    The callback starts on a press of ``job.run`` or a change of ``triggers``,
    reads the picked model, the view's settings (:data:`VIEW_STATES`) and
    ``states``, and calls ``runner(ctx, sid, handle, raw, *trigger values,
    *state values, set_progress)``. While it runs, ``job.run`` is disabled and
    ``job.cancel`` enabled; an unexpected failure is logged and becomes the
    record's ``error``.

    Parameters
    ----------
    app : dash.Dash
    ctx : AppContext
    job : JobIds
    triggers : sequence of Input
        Inputs besides the run button that start the job.
    states : sequence of State
        The job's own settings.
    what : str
        The job's name in failure messages.
    runner : callable
        The plain function behind the job; returns the record (:func:`run_job`).
    """
    k, n = len(triggers), len(VIEW_STATES)

    @app.callback(
        Output(job.done, "data"),
        Input(job.run, "n_clicks"),
        *triggers,
        State(ids.DIAG_MODEL, "value"),
        *VIEW_STATES,
        *states,
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
    )
    def on_run(set_progress, _clicks, *values):
        try:
            triggered, handle, own = values[:k], values[k], values[k + 1 + n :]
            raw = view_settings(values[k + 1 : k + 1 + n])
            return runner(ctx, ctx.session_id(), handle, raw, *triggered, *own, set_progress)
        except Exception:
            return {"nonce": uuid.uuid4().hex, "error": failure(what)}
