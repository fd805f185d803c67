"""Callbacks of the Diagnostics section: thin wrappers around plain functions.

* :func:`toggle_state`: show / hide the section (nothing is computed while hidden);
* :func:`overview`, :func:`hosmer_lemeshow_panel`, :func:`decision_panel`,
  :func:`human_panel`: cheap diagnostics, redrawn with every setting;
* :func:`resampling_panel`, :func:`bootstrap_panel`: show the stored results of
  the resampling test and the bootstrap for the current settings (or say how
  to get them);
* :func:`run_resampling_job`, :func:`run_bootstrap_job`: the background jobs
  (progress bar, cancel button) that compute and store those results.

Every function returns what the page shows; problems become messages, never
tracebacks. The settings used are remembered per session
(:func:`remember`) so that the HTML report shows the same diagnostics.
"""

from __future__ import annotations

import logging
import uuid

from dash import Input, Output, State, html
from dash.exceptions import PreventUpdate

from calibration_core import CalibrationInputError

from .. import ids
from ..context import AppContext
from ..diagnostics import (
    NOT_COMPUTED,
    DiagTarget,
    bootstrap_rows,
    calibration_tests,
    decision_view,
    diag_target,
    estimator_rows,
    hosmer_lemeshow_rows,
    human_rows,
    notion_spec,
    parse_costs,
    parse_groups,
    parse_level,
    parse_measure,
    parse_prior,
    parse_resamples,
    remember,
    sensitivity_curves,
)
from ..diagnostics_layout import model_choices, table_component
from ..diagnostics_tables import (
    HUMAN_MISSING,
    bootstrap_table,
    decision_table,
    estimator_table,
    hosmer_lemeshow_table,
    human_table,
    resampling_table,
)
from ..figures_diagnostics import cost_figure, message_figure, null_figure, sensitivity_figure
from ..options import model_label
from ..settings import SCHEME_LABELS, RawSettings
from ..store import ModelInfo
from ..tables import METRICS, notion_short

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


def fit_settings(values) -> RawSettings:
    """RawSettings of the four values of :data:`FIT_INPUTS` (maps, held-out scheme)."""
    maps, heldout, folds, fraction = values
    return RawSettings(None, maps, heldout, folds, fraction)


def view_settings(values) -> RawSettings:
    """RawSettings of the eight view values (maps .. n_bins) in :data:`VIEW_INPUTS` order."""
    maps, heldout, folds, fraction, notion, class_value, scheme, n_bins = values
    return RawSettings(None, maps, heldout, folds, fraction, notion, class_value, scheme, n_bins)


def _failure(what: str) -> str:
    request_id = uuid.uuid4().hex[:12]
    log.exception("diagnostics: %s failed (request id %s)", what, request_id)
    return f"Something went wrong in the {what} (request id {request_id})."


def _note(text: str):
    return html.Div(text, className="diag-empty")


# ---------------------------------------------------------------- show / hide
def toggle_state(n_clicks) -> tuple:
    """(body style, button text, aria-expanded, open) after ``n_clicks`` presses."""
    is_open = bool(n_clicks) and int(n_clicks) % 2 == 1
    if is_open:
        return {}, "Hide diagnostics", "true", True
    return HIDDEN, "Show diagnostics", "false", False


def model_picker(models_json, selected, current) -> tuple[list[dict], str | None]:
    """Options of the diagnostics model picker; keeps the current model if still selected."""
    infos = [ModelInfo.from_json(m) for m in (models_json or []) if isinstance(m, dict)]
    options, first = model_choices(infos, selected)
    values = {o["value"] for o in options}
    return options, (current if current in values else first)


def _target(ctx: AppContext, sid, handle, raw: RawSettings) -> DiagTarget:
    return diag_target(ctx.store, sid, handle, raw)


# -------------------------------------------------------------------- cheap
def overview(ctx: AppContext, sid, handle, raw: RawSettings) -> tuple:
    """(caption, sensitivity figure, estimators children, messages) of the picked model."""
    try:
        target = _target(ctx, sid, handle, raw)
        spec = notion_spec(target.info, target.view)
        curves = sensitivity_curves(ctx.store, target)
        rows = estimator_rows(ctx.store, target)
    except CalibrationInputError as exc:
        return "", message_figure(str(exc)), [], [str(exc)]
    view = target.view
    pending = [v.calibrator for v in target.variants if v.pred is None]
    caption = (
        f"{model_label(target.info)} · {spec.label} · {view.describe_binning()} · "
        f"{target.heldout.describe()}"
    )
    if target.n_scored is not None:
        caption += f" · N = {target.n_scored:,} scored rows"
    caption += " · calibrators: " + ", ".join(v.calibrator for v in target.variants)
    if pending:
        caption += f" (not fitted yet: {', '.join(pending)})"
    figure = sensitivity_figure(curves, view.n_bins, spec.label, target.info.name)
    table = estimator_table(rows, SCHEME_LABELS[view.scheme])
    return caption, figure, table_component(table), []


def hosmer_lemeshow_panel(ctx: AppContext, sid, handle, raw: RawSettings, groups):
    """The Hosmer-Lemeshow table of every calibrator."""
    try:
        g = parse_groups(groups)
        target = _target(ctx, sid, handle, raw)
        rows = hosmer_lemeshow_rows(ctx.store, target, g)
    except CalibrationInputError as exc:
        return _note(str(exc))
    remember(ctx.store, sid, "hl", {"groups": g})
    return table_component(hosmer_lemeshow_table(rows, target.info.n_classes, g))


def decision_panel(ctx: AppContext, sid, handle, raw: RawSettings, cost_fp, cost_fn, train, deploy):
    """(children, cost figure, figure style) of the decision view."""
    try:
        fp, fn = parse_costs(cost_fp, cost_fn)
        train_prior = parse_prior(train, "the positive rate now")
        deploy_prior = parse_prior(deploy, "the deployment positive rate")
        target = _target(ctx, sid, handle, raw)
        remember(
            ctx.store,
            sid,
            "decision",
            {
                "cost_fp": fp,
                "cost_fn": fn,
                "train_prior": train_prior,
                "deploy_prior": deploy_prior,
            },
        )
        view = decision_view(target, fp, fn, train_prior, deploy_prior)
    except CalibrationInputError as exc:
        return _note(str(exc)), message_figure(""), HIDDEN
    figure = cost_figure(view, target.info.name)
    return table_component(decision_table(view)), figure, {}


def human_panel(ctx: AppContext, sid, handle, raw: RawSettings):
    """EntCE / RankCS / DistCE of every calibrator, or how to provide soft labels."""
    try:
        target = _target(ctx, sid, handle, raw)
        rows = human_rows(ctx.store, target)
    except CalibrationInputError as exc:
        return _note(str(exc))
    if rows is None:
        return _note(HUMAN_MISSING)
    return table_component(human_table(rows))


# --------------------------------------------------------------- resampling
def resampling_panel(
    ctx: AppContext, sid, handle, raw: RawSettings, measure, resamples, done=None
) -> tuple:
    """(table children, null figure, figure style) from the stored test results."""
    try:
        m, r = parse_measure(measure), parse_resamples(resamples)
        target = _target(ctx, sid, handle, raw)
        remember(ctx.store, sid, "test", {"measure": m, "n_resamples": r})
        rows = calibration_tests(ctx.store, target, m, r, compute=False)
    except CalibrationInputError as exc:
        return _note(str(exc)), message_figure(""), HIDDEN
    children = [table_component(resampling_table(rows, m, r))]
    if isinstance(done, dict) and isinstance(done.get("error"), str):
        children.insert(0, _note(done["error"]))
    if not any(row.result is not None for row in rows):
        return children, message_figure(""), HIDDEN
    return children, null_figure(rows, m, target.info.name), {}


def run_resampling_job(
    ctx: AppContext, sid, handle, raw: RawSettings, measure, resamples, set_progress
) -> dict:
    """Compute (and store) the missing tests; the plain function behind the background job."""
    state = {"nonce": uuid.uuid4().hex, "error": None}
    try:
        m, r = parse_measure(measure), parse_resamples(resamples)
        target = _target(ctx, sid, handle, raw)
        remember(ctx.store, sid, "test", {"measure": m, "n_resamples": r})

        def progress(done, total, text):
            set_progress((str(done), str(max(total, 1)), text))

        calibration_tests(ctx.store, target, m, r, compute=True, progress=progress)
    except CalibrationInputError as exc:
        state["error"] = str(exc)
    return state


# ---------------------------------------------------------------- bootstrap
def _boot_headers(target: DiagTarget) -> dict[str, str]:
    short = notion_short(target.view)
    return {"ece": f"ECE ({short})", "mce": f"MCE ({short})"} | {
        f: METRICS[f][0] for f in ("classwise_ece", "brier_score", "log_loss", "accuracy")
    }


def bootstrap_panel(
    ctx: AppContext, sid, handle, raw: RawSettings, toggle, level, resamples, done=None
):
    """The bootstrap table for the current settings (stored intervals only)."""
    on = isinstance(toggle, list) and "on" in toggle
    try:
        lv, r = parse_level(level), parse_resamples(resamples)
        remember(ctx.store, sid, "boot", {"on": on, "level": lv, "n_resamples": r})
        if not on:
            return _note(
                "Tick “show intervals” to bootstrap every number of the metrics table "
                "(computed in the background; seconds on the demo, minutes on a million rows)."
            )
        target = _target(ctx, sid, handle, raw)
        rows = bootstrap_rows(ctx.store, target, lv, r, compute=False)
    except CalibrationInputError as exc:
        return _note(str(exc))
    children = [table_component(bootstrap_table(rows, _boot_headers(target), lv, r))]
    if isinstance(done, dict) and isinstance(done.get("error"), str):
        children.insert(0, _note(done["error"]))
    if any(row.message == NOT_COMPUTED for row in rows):
        children.insert(
            0,
            _note("Intervals are not computed for these settings yet: press “Compute intervals”."),
        )
    return children


def run_bootstrap_job(
    ctx: AppContext, sid, handle, raw: RawSettings, toggle, level, resamples, set_progress
) -> dict:
    """Compute (and store) the missing intervals when the toggle is on."""
    state = {"nonce": uuid.uuid4().hex, "error": None}
    if not (isinstance(toggle, list) and "on" in toggle):
        return state
    try:
        lv, r = parse_level(level), parse_resamples(resamples)
        target = _target(ctx, sid, handle, raw)
        remember(ctx.store, sid, "boot", {"on": True, "level": lv, "n_resamples": r})

        def progress(done, total, text):
            set_progress((str(done), str(max(total, 1)), text))

        bootstrap_rows(ctx.store, target, lv, r, compute=True, progress=progress)
    except CalibrationInputError as exc:
        state["error"] = str(exc)
    return state


# ----------------------------------------------------------------- register
def register(app, ctx: AppContext) -> None:
    """Every callback of the Diagnostics section."""

    @app.callback(
        Output(ids.DIAG_BODY, "style"),
        Output(ids.DIAG_TOGGLE, "children"),
        Output(ids.DIAG_TOGGLE, "aria-expanded"),
        Output(ids.DIAG_OPEN, "data"),
        Input(ids.DIAG_TOGGLE, "n_clicks"),
        prevent_initial_call=True,
    )
    def on_toggle(n_clicks):
        return toggle_state(n_clicks)

    @app.callback(
        Output(ids.DIAG_MODEL, "options"),
        Output(ids.DIAG_MODEL, "value"),
        Input(ids.MODELS_STORE, "data"),
        Input(ids.MODEL_SELECT, "value"),
        State(ids.DIAG_MODEL, "value"),
        prevent_initial_call=True,
    )
    def on_models(models_json, selected, current):
        return model_picker(models_json, selected, current)

    def guarded(what: str, fallback, function, *args):
        try:
            return function(*args)
        except PreventUpdate:
            raise
        except Exception:  # never a traceback in the page
            return fallback(_failure(what))

    @app.callback(
        Output(ids.DIAG_CAPTION, "children"),
        Output(ids.DIAG_SENSITIVITY, "figure"),
        Output(ids.DIAG_ESTIMATORS, "children"),
        Output(ids.DIAG_MESSAGE, "children"),
        Input(ids.DIAG_OPEN, "data"),
        Input(ids.DIAG_MODEL, "value"),
        *VIEW_INPUTS,
        Input(ids.FIT_STATE, "data"),
    )
    def on_overview(is_open, handle, *values):
        if not is_open:
            raise PreventUpdate

        def fallback(msg):
            return "", message_figure(msg), [], [html.Div(msg, className="message-line")]

        out = guarded(
            "diagnostics",
            fallback,
            overview,
            ctx,
            ctx.session_id(),
            handle,
            view_settings(values[:8]),
        )
        messages = [html.Div(m, className="message-line") for m in out[3]]
        return (*out[:3], messages)

    @app.callback(
        Output(ids.DIAG_HL, "children"),
        Input(ids.DIAG_OPEN, "data"),
        Input(ids.DIAG_MODEL, "value"),
        *FIT_INPUTS,
        Input(ids.FIT_STATE, "data"),
        Input(ids.DIAG_HL_GROUPS, "value"),
    )
    def on_hosmer_lemeshow(is_open, handle, *values):
        if not is_open:
            raise PreventUpdate
        return guarded(
            "Hosmer-Lemeshow test",
            _note,
            hosmer_lemeshow_panel,
            ctx,
            ctx.session_id(),
            handle,
            fit_settings(values[:4]),
            values[5],
        )

    @app.callback(
        Output(ids.DIAG_DECISION, "children"),
        Output(ids.DIAG_COST_GRAPH, "figure"),
        Output(ids.DIAG_COST_GRAPH, "style"),
        Input(ids.DIAG_OPEN, "data"),
        Input(ids.DIAG_MODEL, "value"),
        *FIT_INPUTS,
        Input(ids.FIT_STATE, "data"),
        Input(ids.DIAG_COST_FP, "value"),
        Input(ids.DIAG_COST_FN, "value"),
        Input(ids.DIAG_TRAIN_PRIOR, "value"),
        Input(ids.DIAG_DEPLOY_PRIOR, "value"),
    )
    def on_decision(is_open, handle, *values):
        if not is_open:
            raise PreventUpdate
        return guarded(
            "decision view",
            lambda msg: (_note(msg), message_figure(""), HIDDEN),
            decision_panel,
            ctx,
            ctx.session_id(),
            handle,
            fit_settings(values[:4]),
            *values[5:9],
        )

    @app.callback(
        Output(ids.DIAG_HUMAN, "children"),
        Input(ids.DIAG_OPEN, "data"),
        Input(ids.DIAG_MODEL, "value"),
        *FIT_INPUTS,
        Input(ids.FIT_STATE, "data"),
    )
    def on_human(is_open, handle, *values):
        if not is_open:
            raise PreventUpdate
        return guarded(
            "human-uncertainty view",
            _note,
            human_panel,
            ctx,
            ctx.session_id(),
            handle,
            fit_settings(values[:4]),
        )

    @app.callback(
        Output(ids.DIAG_TEST_TABLE, "children"),
        Output(ids.DIAG_TEST_GRAPH, "figure"),
        Output(ids.DIAG_TEST_GRAPH, "style"),
        Input(ids.DIAG_OPEN, "data"),
        Input(ids.DIAG_MODEL, "value"),
        *VIEW_INPUTS,
        Input(ids.FIT_STATE, "data"),
        Input(ids.DIAG_MEASURE, "value"),
        Input(ids.DIAG_RESAMPLES, "value"),
        Input(ids.DIAG_TEST_DONE, "data"),
    )
    def on_resampling(is_open, handle, *values):
        if not is_open:
            raise PreventUpdate
        return guarded(
            "resampling test",
            lambda msg: (_note(msg), message_figure(""), HIDDEN),
            resampling_panel,
            ctx,
            ctx.session_id(),
            handle,
            view_settings(values[:8]),
            *values[9:12],
        )

    @app.callback(
        Output(ids.DIAG_TEST_DONE, "data"),
        Input(ids.DIAG_TEST_RUN, "n_clicks"),
        State(ids.DIAG_MODEL, "value"),
        *VIEW_STATES,
        State(ids.DIAG_MEASURE, "value"),
        State(ids.DIAG_RESAMPLES, "value"),
        background=True,
        progress=[
            Output(ids.DIAG_TEST_PROGRESS, "value"),
            Output(ids.DIAG_TEST_PROGRESS, "max"),
            Output(ids.DIAG_TEST_STATUS, "children"),
        ],
        progress_default=["0", "1", ""],
        running=[
            (Output(ids.DIAG_TEST_RUN, "disabled"), True, False),
            (Output(ids.DIAG_TEST_CANCEL, "disabled"), False, True),
            (Output(ids.DIAG_TEST_PROGRESS, "className"), "progress", "progress idle"),
        ],
        cancel=[Input(ids.DIAG_TEST_CANCEL, "n_clicks")],
        prevent_initial_call=True,
    )
    def on_run_test(set_progress, _clicks, handle, *values):
        try:
            return run_resampling_job(
                ctx,
                ctx.session_id(),
                handle,
                view_settings(values[:8]),
                *values[8:10],
                set_progress,
            )
        except Exception:
            return {"nonce": uuid.uuid4().hex, "error": _failure("resampling test")}

    @app.callback(
        Output(ids.DIAG_BOOT_TABLE, "children"),
        Input(ids.DIAG_OPEN, "data"),
        Input(ids.DIAG_MODEL, "value"),
        *VIEW_INPUTS,
        Input(ids.FIT_STATE, "data"),
        Input(ids.DIAG_BOOT_TOGGLE, "value"),
        Input(ids.DIAG_BOOT_LEVEL, "value"),
        Input(ids.DIAG_RESAMPLES, "value"),
        Input(ids.DIAG_BOOT_DONE, "data"),
    )
    def on_bootstrap(is_open, handle, *values):
        if not is_open:
            raise PreventUpdate
        return guarded(
            "bootstrap",
            _note,
            bootstrap_panel,
            ctx,
            ctx.session_id(),
            handle,
            view_settings(values[:8]),
            *values[9:13],
        )

    @app.callback(
        Output(ids.DIAG_BOOT_DONE, "data"),
        Input(ids.DIAG_BOOT_RUN, "n_clicks"),
        Input(ids.DIAG_BOOT_TOGGLE, "value"),
        State(ids.DIAG_MODEL, "value"),
        *VIEW_STATES,
        State(ids.DIAG_BOOT_LEVEL, "value"),
        State(ids.DIAG_RESAMPLES, "value"),
        background=True,
        progress=[
            Output(ids.DIAG_BOOT_PROGRESS, "value"),
            Output(ids.DIAG_BOOT_PROGRESS, "max"),
            Output(ids.DIAG_BOOT_STATUS, "children"),
        ],
        progress_default=["0", "1", ""],
        running=[
            (Output(ids.DIAG_BOOT_RUN, "disabled"), True, False),
            (Output(ids.DIAG_BOOT_CANCEL, "disabled"), False, True),
            (Output(ids.DIAG_BOOT_PROGRESS, "className"), "progress", "progress idle"),
        ],
        cancel=[Input(ids.DIAG_BOOT_CANCEL, "n_clicks")],
        prevent_initial_call=True,
    )
    def on_run_bootstrap(set_progress, _clicks, toggle, handle, *values):
        try:
            return run_bootstrap_job(
                ctx,
                ctx.session_id(),
                handle,
                view_settings(values[:8]),
                toggle,
                *values[8:10],
                set_progress,
            )
        except Exception:
            return {"nonce": uuid.uuid4().hex, "error": _failure("bootstrap")}
