"""The "Beyond bins" card of the Diagnostics section: its panel and its background job.

The panel shows the records stored for the model, calibrators and notion
(:func:`beyond_panel`); the job computes and stores the missing ones
(:func:`run_beyond_job`), with the section's shared progress bar, cancel
button and done-store (:mod:`app.callbacks.diagnostics.wiring`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import Input, Output

from calibration_core import CalibrationInputError

from ... import ids
from ...context import AppContext
from ...diagnostics.beyond import NOT_COMPUTED, beyond_rows, beyond_table
from ...diagnostics.resampling import Progress
from ...diagnostics.target import diag_target, notion_spec
from ...layout.diagnostics import table_component
from ...settings import RawSettings
from .wiring import JobIds, note, register_job, register_panel, run_job


def beyond_panel(
    ctx: AppContext, sid: str | None, handle: str | None, raw: RawSettings, done: Any = None
):
    """The card's table from the stored records (a note when nothing is computed yet)."""
    try:
        target = diag_target(ctx.store, sid, handle, raw)
        rows = beyond_rows(ctx.store, target, compute=False)
        spec = notion_spec(target.info, target.view)
    except CalibrationInputError as exc:
        return note(str(exc))
    children = [table_component(beyond_table(rows, spec), "diag-table beyond-table")]
    if isinstance(done, dict) and isinstance(done.get("error"), str):
        children.insert(0, note(done["error"]))
    if any(r.message == NOT_COMPUTED for r in rows):
        children.insert(
            0,
            note(
                "Not computed for these settings yet: press “Compute measures” (seconds per "
                "calibrator on the demo; the SKCE test and the lowess curve cost the most)."
            ),
        )
    return children


def run_beyond_job(
    ctx: AppContext,
    sid: str | None,
    handle: str | None,
    raw: RawSettings,
    set_progress: Callable[[tuple], None],
) -> dict:
    """Compute (and store) the missing records; the plain function behind the job."""

    def work(progress: Progress) -> None:
        target = diag_target(ctx.store, sid, handle, raw)
        beyond_rows(ctx.store, target, compute=True, progress=progress)

    return run_job(work, set_progress)


def register(app, ctx: AppContext) -> None:
    """The card's panel and its background job."""
    register_panel(
        app,
        ctx,
        Output(ids.DIAG_BEYOND_TABLE, "children"),
        {"done": Input(ids.DIAG_BEYOND_DONE, "data")},
        "beyond-bins measures",
        note,
        beyond_panel,
        view=True,
    )
    register_job(
        app,
        ctx,
        JobIds.named("DIAG_BEYOND"),
        {},
        {},
        "beyond-bins measures",
        run_beyond_job,
    )
