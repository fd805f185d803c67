"""The on-demand diagnostics: the resampling test and the bootstrap intervals.

Each has two callbacks (registered by :func:`register` with the shared shapes
of :mod:`app.callbacks.diagnostics.wiring`):

* a panel that shows the results stored for the current settings, or says how
  to get them (:func:`resampling_panel`, :func:`bootstrap_panel`);
* a background job (progress bar, cancel button) that computes and stores the
  missing results (:func:`run_resampling_job`, :func:`run_bootstrap_job`), then
  writes its done-store so that the panel redraws.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import Input, Output, State

from calibration_core import CalibrationInputError

from ... import ids
from ...context import AppContext
from ...diagnostics.resampling import NOT_COMPUTED, Progress, bootstrap_rows, calibration_tests
from ...diagnostics.tables import bootstrap_table, resampling_table
from ...diagnostics.target import (
    DiagTarget,
    diag_target,
    parse_level,
    parse_measure,
    parse_resamples,
    remember,
)
from ...figures.diagnostics import message_figure, null_figure
from ...layout.diagnostics import table_component
from ...metrics_table import METRICS, notion_short
from ...settings import RawSettings
from .wiring import (
    HIDDEN,
    JobIds,
    hidden_figure,
    note,
    register_job,
    register_panel,
    run_job,
)

SetProgress = Callable[[tuple], None]


# --------------------------------------------------------------- resampling
def resampling_panel(
    ctx: AppContext,
    sid: str | None,
    handle: str | None,
    raw: RawSettings,
    measure: Any,
    resamples: Any,
    done: Any = None,
) -> tuple:
    """(table children, null figure, figure style) from the stored test results.

    ``done`` is the job's record: its ``error`` is shown above the table.
    """
    try:
        m, r = parse_measure(measure), parse_resamples(resamples)
        target = diag_target(ctx.store, sid, handle, raw)
        remember(ctx.store, sid, "test", {"measure": m, "n_resamples": r})
        rows = calibration_tests(ctx.store, target, m, r, compute=False)
    except CalibrationInputError as exc:
        return note(str(exc)), message_figure(""), HIDDEN
    children = [table_component(resampling_table(rows, m, r))]
    if isinstance(done, dict) and isinstance(done.get("error"), str):
        children.insert(0, note(done["error"]))
    if not any(row.result is not None for row in rows):
        return children, message_figure(""), HIDDEN
    return children, null_figure(rows, m, target.info.name), {}


def run_resampling_job(
    ctx: AppContext,
    sid: str | None,
    handle: str | None,
    raw: RawSettings,
    measure: Any,
    resamples: Any,
    set_progress: SetProgress,
) -> dict:
    """Compute (and store) the missing tests; the plain function behind the background job."""

    def work(progress: Progress) -> None:
        m, r = parse_measure(measure), parse_resamples(resamples)
        target = diag_target(ctx.store, sid, handle, raw)
        remember(ctx.store, sid, "test", {"measure": m, "n_resamples": r})
        calibration_tests(ctx.store, target, m, r, compute=True, progress=progress)

    return run_job(work, set_progress)


# ---------------------------------------------------------------- bootstrap
def _boot_headers(target: DiagTarget) -> dict[str, str]:
    short = notion_short(target.view)
    return {"ece": f"ECE ({short})", "mce": f"MCE ({short})"} | {
        f: METRICS[f][0] for f in ("classwise_ece", "brier_score", "log_loss", "accuracy")
    }


def bootstrap_panel(
    ctx: AppContext,
    sid: str | None,
    handle: str | None,
    raw: RawSettings,
    level: Any,
    resamples: Any,
    done: Any = None,
):
    """The bootstrap table for the current settings (stored intervals only).

    Before any interval of these settings is stored, a note says what the
    button does instead of an empty table.
    """
    try:
        lv, r = parse_level(level), parse_resamples(resamples)
        target = diag_target(ctx.store, sid, handle, raw)
        rows = bootstrap_rows(ctx.store, target, lv, r, compute=False)
    except CalibrationInputError as exc:
        return note(str(exc))
    failed = isinstance(done, dict) and isinstance(done.get("error"), str)
    error = [note(done["error"])] if failed else []
    if not any(row.intervals for row in rows):
        return [
            *error,
            note(
                "Press “Compute intervals for every metric” to bootstrap every number of the "
                "metrics table (in the background; seconds on the demo, minutes on a million "
                "rows)."
            ),
        ]
    children = [*error, table_component(bootstrap_table(rows, _boot_headers(target), lv, r))]
    if any(row.message == NOT_COMPUTED for row in rows):
        children.insert(
            0,
            note(
                "Some intervals are not computed for these settings yet: press “Compute "
                "intervals for every metric”."
            ),
        )
    return children


def run_bootstrap_job(
    ctx: AppContext,
    sid: str | None,
    handle: str | None,
    raw: RawSettings,
    level: Any,
    resamples: Any,
    set_progress: SetProgress,
) -> dict:
    """Compute (and store) the missing intervals (the "Compute intervals" button)."""

    def work(progress: Progress) -> None:
        lv, r = parse_level(level), parse_resamples(resamples)
        target = diag_target(ctx.store, sid, handle, raw)
        remember(ctx.store, sid, "boot", {"level": lv, "n_resamples": r})
        bootstrap_rows(ctx.store, target, lv, r, compute=True, progress=progress)

    return run_job(work, set_progress)


# ----------------------------------------------------------------- register
def register(app, ctx: AppContext) -> None:
    """The panel and the background job of the resampling test, then of the bootstrap."""
    register_panel(
        app,
        ctx,
        [
            Output(ids.DIAG_TEST_TABLE, "children"),
            Output(ids.DIAG_TEST_GRAPH, "figure"),
            Output(ids.DIAG_TEST_GRAPH, "style"),
        ],
        {
            "measure": Input(ids.DIAG_MEASURE, "value"),
            "resamples": Input(ids.DIAG_RESAMPLES, "value"),
            "done": Input(ids.DIAG_TEST_DONE, "data"),
        },
        "resampling test",
        hidden_figure,
        resampling_panel,
        view=True,
    )
    register_job(
        app,
        ctx,
        JobIds.named("DIAG_TEST"),
        {},
        {
            "measure": State(ids.DIAG_MEASURE, "value"),
            "resamples": State(ids.DIAG_RESAMPLES, "value"),
        },
        "resampling test",
        run_resampling_job,
    )
    register_panel(
        app,
        ctx,
        Output(ids.DIAG_BOOT_TABLE, "children"),
        {
            "level": Input(ids.DIAG_BOOT_LEVEL, "value"),
            "resamples": Input(ids.DIAG_RESAMPLES, "value"),
            "done": Input(ids.DIAG_BOOT_DONE, "data"),
        },
        "bootstrap",
        note,
        bootstrap_panel,
        view=True,
    )
    register_job(
        app,
        ctx,
        JobIds.named("DIAG_BOOT"),
        {},
        {
            "level": State(ids.DIAG_BOOT_LEVEL, "value"),
            "resamples": State(ids.DIAG_RESAMPLES, "value"),
        },
        "bootstrap",
        run_bootstrap_job,
    )
