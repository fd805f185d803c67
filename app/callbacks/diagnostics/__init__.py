"""Callbacks of the Diagnostics section: thin wrappers around plain functions.

* :func:`toggle_state`: show / hide the section (nothing is computed while hidden);
* :func:`overview`, :func:`hosmer_lemeshow_panel`, :func:`decision_panel`,
  :func:`human_panel`: cheap diagnostics, redrawn with every setting.

The resampling test and the bootstrap (stored results and background jobs)
are in :mod:`app.callbacks.diagnostics.jobs`, the "Over time" card in
:mod:`app.callbacks.groups.time`, the shapes every callback shares
in :mod:`app.callbacks.diagnostics.wiring`.

Every function returns what the page shows; problems become messages, never
tracebacks. The settings used are remembered per session
(:func:`remember`) so that the HTML report shows the same diagnostics.
"""

from __future__ import annotations

from typing import Any

from dash import Input, Output, html

from calibration_core import CalibrationInputError

from ... import ids
from ...context import AppContext
from ...diagnostics.cards import decision_view, hosmer_lemeshow_rows, human_rows
from ...diagnostics.overview import estimator_rows, sensitivity_curves
from ...diagnostics.tables import (
    HUMAN_MISSING,
    decision_table,
    estimator_table,
    hosmer_lemeshow_table,
    human_table,
)
from ...diagnostics.target import (
    diag_target,
    notion_spec,
    parse_costs,
    parse_groups,
    parse_prior,
    remember,
)
from ...figures.diagnostics import cost_figure, message_figure, sensitivity_figure
from ...layout.diagnostics import table_component
from ...options import model_label
from ...settings import SCHEME_LABELS, RawSettings
from . import beyond, jobs
from .wiring import HIDDEN, hidden_figure, note, register_gates, register_panel

__all__ = [
    "decision_panel",
    "hosmer_lemeshow_panel",
    "human_panel",
    "overview",
    "register",
    "toggle_state",
]


# ---------------------------------------------------------------- show / hide
def toggle_state(n_clicks: Any) -> tuple:
    """(body style, button text, aria-expanded, open) after ``n_clicks`` presses."""
    is_open = bool(n_clicks) and int(n_clicks) % 2 == 1
    if is_open:
        return {}, "Hide diagnostics", "true", True
    return HIDDEN, "Show diagnostics", "false", False


# -------------------------------------------------------------------- cheap
def overview(ctx: AppContext, sid: str | None, handle: str | None, raw: RawSettings) -> tuple:
    """(caption, sensitivity figure, estimators children, messages) of the picked model."""
    try:
        target = diag_target(ctx.store, sid, handle, raw)
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


def message_lines(messages: list[str]) -> list:
    """The section's message area: one line per message, as text."""
    return [html.Div(m, className="message-line") for m in messages]


def overview_panel(ctx: AppContext, sid: str | None, handle: str | None, raw: RawSettings):
    """:func:`overview` with its messages as lines of the message area."""
    caption, figure, estimators, messages = overview(ctx, sid, handle, raw)
    return caption, figure, estimators, message_lines(messages)


def overview_failed(message: str) -> tuple:
    """The overview after an unexpected failure: the message in the figure and the message area."""
    return "", message_figure(message), [], message_lines([message])


def hosmer_lemeshow_panel(
    ctx: AppContext, sid: str | None, handle: str | None, raw: RawSettings, groups: Any
):
    """The Hosmer-Lemeshow table of every calibrator."""
    try:
        g = parse_groups(groups)
        target = diag_target(ctx.store, sid, handle, raw)
        rows = hosmer_lemeshow_rows(ctx.store, target, g)
    except CalibrationInputError as exc:
        return note(str(exc))
    remember(ctx.store, sid, "hl", {"groups": g})
    return table_component(hosmer_lemeshow_table(rows, target.info.n_classes, g))


def decision_panel(
    ctx: AppContext,
    sid: str | None,
    handle: str | None,
    raw: RawSettings,
    cost_fp: Any,
    cost_fn: Any,
    train: Any,
    deploy: Any,
) -> tuple:
    """(children, cost figure, figure style) of the decision view."""
    try:
        fp, fn = parse_costs(cost_fp, cost_fn)
        train_prior = parse_prior(train, "the positive rate now")
        deploy_prior = parse_prior(deploy, "the deployment positive rate")
        target = diag_target(ctx.store, sid, handle, raw)
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
        return note(str(exc)), message_figure(""), HIDDEN
    figure = cost_figure(view, target.info.name)
    return table_component(decision_table(view)), figure, {}


def human_panel(ctx: AppContext, sid: str | None, handle: str | None, raw: RawSettings):
    """EntCE / RankCS / DistCE of every calibrator, or how to provide soft labels."""
    try:
        target = diag_target(ctx.store, sid, handle, raw)
        rows = human_rows(ctx.store, target)
    except CalibrationInputError as exc:
        return note(str(exc))
    if rows is None:
        return note(HUMAN_MISSING)
    return table_component(human_table(rows))


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

    register_gates(app)
    register_panel(
        app,
        ctx,
        [
            Output(ids.DIAG_CAPTION, "children"),
            Output(ids.DIAG_SENSITIVITY, "figure"),
            Output(ids.DIAG_ESTIMATORS, "children"),
            Output(ids.DIAG_MESSAGE, "children"),
        ],
        {},
        "diagnostics",
        overview_failed,
        overview_panel,
        view=True,
    )
    register_panel(
        app,
        ctx,
        Output(ids.DIAG_HL, "children"),
        {"groups": Input(ids.DIAG_HL_GROUPS, "value")},
        "Hosmer-Lemeshow test",
        note,
        hosmer_lemeshow_panel,
    )
    register_panel(
        app,
        ctx,
        [
            Output(ids.DIAG_DECISION, "children"),
            Output(ids.DIAG_COST_GRAPH, "figure"),
            Output(ids.DIAG_COST_GRAPH, "style"),
        ],
        {
            "cost_fp": Input(ids.DIAG_COST_FP, "value"),
            "cost_fn": Input(ids.DIAG_COST_FN, "value"),
            "train": Input(ids.DIAG_TRAIN_PRIOR, "value"),
            "deploy": Input(ids.DIAG_DEPLOY_PRIOR, "value"),
        },
        "decision view",
        hidden_figure,
        decision_panel,
    )
    register_panel(
        app,
        ctx,
        Output(ids.DIAG_HUMAN, "children"),
        {},
        "human-uncertainty view",
        note,
        human_panel,
    )
    jobs.register(app, ctx)
    beyond.register(app, ctx)
