"""Fitting calibration maps: a background callback with a progress bar and a cancel button.

Only the *expensive* settings come here (models, maps, held-out scheme), in
two steps:

1. a quick foreground callback (:func:`app.services.fit.plan_fits`) looks up,
   per model, each selected map that is not in the store yet. When nothing is missing it
   answers at once (no job is started, so the view is never held up by the
   background machinery's polling); otherwise it writes the work to the
   ``fit-request`` store;
2. the background callback fits that work (:func:`app.services.fit.run_fits`,
   one map per call, so that a cancelled run keeps every map finished before
   it), which stores the calibrated predictions.

The work itself is :mod:`app.services.fit`'s, shared with the first page, the
command line's report and the notebook; here only the callbacks and their states.

The cheap settings (bins, scheme, band, notion) never come here: they re-bin
the stored predictions (:mod:`app.callbacks.view`).
"""

from __future__ import annotations

import uuid

from dash import Input, Output, no_update
from dash import ctx as dash_ctx
from dash.exceptions import PreventUpdate

from .. import ids
from ..context import AppContext
from ..services.fit import plan_fits, run_fits
from ..settings import RawSettings
from .controls import FIT_FIELDS, setting_inputs


def failed_fit_state(what: str, rid: str) -> dict:
    """The fit state after an unexpected failure of ``what``, with the request id."""
    return {
        "nonce": rid,
        "fitted": [],
        "error": f"{what} failed unexpectedly (request id {rid}).",
    }


def stopped_fit_state(message: str) -> dict:
    """The fit state when the fitting job stopped without a result (``message`` says why)."""
    return {"nonce": uuid.uuid4().hex, "fitted": [], "error": message}


def cancelled_fit_state() -> dict:
    """The fit state when the user cancels the fit (Dash stops the job)."""
    return {
        "nonce": uuid.uuid4().hex,
        "fitted": [],
        "error": None,
        "cancelled": True,
        "summary": "Fitting cancelled; maps fitted before that are kept. Press Fit to resume.",
    }


def register_planner(app, ctx: AppContext) -> None:
    """Step 1: the quick callback that writes the missing work to ``fit-request``."""
    plan_output = [Output(ids.FIT_STATE, "data"), Output(ids.FIT_REQUEST, "data")]
    plan_inputs = {
        "settings": setting_inputs(("handles", *FIT_FIELDS)),
        "start": Input(ids.FIT_START, "n_clicks"),
    }
    ctx.failures.reply(
        "planning the fit",
        lambda rid: (failed_fit_state("planning the fit", rid), no_update),
        output=plan_output,
        inputs=plan_inputs,
    )

    @app.callback(output=plan_output, inputs=plan_inputs)
    def plan(settings: dict, start):
        raw = RawSettings(**settings)
        state, request = plan_fits(
            ctx, ctx.session_id(), raw.handles, raw.maps, raw.heldout, raw.folds, raw.fraction
        )
        if request is None and dash_ctx.triggered_id is None:
            # The page's first call: the layout already shows this view, so a
            # fresh fit state would only redraw it.
            return no_update, no_update
        return (no_update if state is None else state), (no_update if request is None else request)


def register_fit_job(app, ctx: AppContext) -> None:
    """Step 2: the background callback that fits the requested work (:func:`run_fits`)."""
    fit_output = Output(ids.FIT_STATE, "data", allow_duplicate=True)
    fit_inputs = Input(ids.FIT_REQUEST, "data")
    ctx.failures.reply(
        "fitting",
        lambda rid: failed_fit_state("fitting", rid),
        output=fit_output,
        inputs=fit_inputs,
        stopped=stopped_fit_state,
    )

    @app.callback(
        fit_output,
        fit_inputs,
        background=True,
        progress=[
            Output(ids.FIT_PROGRESS, "value"),
            Output(ids.FIT_PROGRESS, "max"),
            Output(ids.FIT_STATUS, "children"),
        ],
        progress_default=["0", "1", ""],
        running=[
            (Output(ids.FIT_CANCEL, "disabled"), False, True),
            (Output(ids.FIT_START, "disabled"), True, False),
            (Output(ids.FIT_PROGRESS, "className"), "progress", "progress idle"),
            (Output(ids.FIT_SUMMARY, "className"), "fit-summary hidden", "fit-summary"),
        ],
        cancel=[Input(ids.FIT_CANCEL, "n_clicks")],
        prevent_initial_call=True,
    )
    def fit_maps(set_progress, request):
        if not isinstance(request, dict):
            raise PreventUpdate
        return run_fits(
            ctx,
            ctx.session_id(),
            request.get("handles"),
            request.get("selected", request.get("maps")),
            request.get("mode"),
            request.get("folds"),
            request.get("fraction"),
            set_progress,
            refused=request.get("refused"),
        )


def register(app, ctx: AppContext) -> None:
    """The fit planner, the background fit callback and the cancel answer."""
    register_planner(app, ctx)
    register_fit_job(app, ctx)

    @app.callback(
        Output(ids.FIT_STATE, "data", allow_duplicate=True),
        Input(ids.FIT_CANCEL, "n_clicks"),
        prevent_initial_call=True,
    )
    def fit_cancelled(_clicks):
        # Dash stops the job; maps finished before the cancel stay in the store.
        return cancelled_fit_state()
