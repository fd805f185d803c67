"""Fitting calibration maps: a background callback with a progress bar and a cancel button.

Only the *expensive* settings trigger it (models, maps, held-out scheme). It
fits, per model, each selected map that is not in the store yet, with
:func:`calibration_core.compare.compare_maps` (one map per call, so that a
cancelled run keeps every map finished before it), and stores the calibrated
predictions by (data handle, map, held-out scheme). The cheap settings
(bins, scheme, band, notion) never come here: they re-bin the stored
predictions (:mod:`app.callbacks.view`).
"""

from __future__ import annotations

import logging
import time
import uuid

from dash import Input, Output

from calibration_core import CalibrationInputError
from calibration_core.compare import UNCALIBRATED, compare_maps

from .. import ids
from ..context import AppContext
from ..settings import HeldOut, parse_handles, parse_heldout, parse_maps
from ..store import DataStore, FitRecord, StorageUnavailable

log = logging.getLogger("calibration_dashboard.fit")


def missing_work(
    store: DataStore, sid, handles, maps, heldout: HeldOut
) -> list[tuple[str, list[str]]]:
    """``(handle, names to fit)`` for every model with something not yet in the store.

    In split mode the uncalibrated test rows are "fitted" too (they are the
    rows every panel of the model is scored on).
    """
    work = []
    for handle in handles:
        store.resolve(sid, handle)
        names = [m for m in maps if store.get_fit(handle, m, heldout) is None]
        if heldout.mode == "split" and store.get_fit(handle, UNCALIBRATED, heldout) is None:
            names.insert(0, UNCALIBRATED)
        if names:
            work.append((handle, names))
    return work


def _record(name: str, handle: str, heldout: HeldOut, comparison) -> tuple[FitRecord, object]:
    if name == UNCALIBRATED:
        variant = DataStore.variant_handle(handle, name, heldout)
        record = FitRecord(
            map=name,
            heldout=heldout.key,
            variant=variant,
            n_scored=int(comparison.settings["n_scored"]),
        )
        return record, comparison.calibrated[UNCALIBRATED]
    row = comparison.table.loc[name]
    ok = name in comparison.calibrated
    converged = row["converged"]
    record = FitRecord(
        map=name,
        heldout=heldout.key,
        variant=DataStore.variant_handle(handle, name, heldout) if ok else None,
        fit_seconds=float(row["fit_seconds"]),
        converged=None if converged is None or str(converged) == "<NA>" else bool(converged),
        error=row["error"],
        warnings=[w for w in comparison.warnings if w.startswith(f"{name}:")],
        params=[m.to_dict() for m in comparison.fitted.get(name, [])],
        n_scored=int(comparison.settings["n_scored"]),
    )
    return record, comparison.calibrated.get(name)


def run_fits(ctx: AppContext, sid, raw_handles, raw_maps, mode, folds, fraction, set_progress):
    """Fit what is missing and report progress; the plain function behind the callback.

    Parameters
    ----------
    set_progress : callable((done, total, text))
        Receives the progress bar value, its maximum and a status text.

    Returns
    -------
    dict
        ``{"nonce", "fitted": [...], "error": str | None}`` for the fit-state store.
    """
    state = {"nonce": uuid.uuid4().hex, "fitted": [], "error": None, "summary": ""}
    try:
        handles = parse_handles(raw_handles)
        maps = parse_maps(raw_maps)
        heldout = parse_heldout(mode, folds, fraction)
        work = missing_work(ctx.store, sid, handles, maps, heldout)
    except CalibrationInputError as exc:
        state["error"] = str(exc)
        return state
    if not work:
        state["summary"] = "All selected maps are fitted."
        return state
    units = heldout.folds if heldout.mode == "folds" else 1
    total = sum(len([n for n in names if n != UNCALIBRATED]) * units for _, names in work)
    total = max(total, 1)
    done = 0
    start = time.perf_counter()
    for handle, names in work:
        pred = ctx.store.predictions(handle)
        for name in names:
            label = f"{pred.name}: {name}"

            def progress(fold_done, fold_total, text, _base=done, _label=label):
                set_progress((str(_base + fold_done), str(total), f"fitting {_label} …"))

            progress(0, 0, "")
            try:
                comparison = compare_maps(
                    pred,
                    [] if name == UNCALIBRATED else [name],
                    progress=progress,
                    **heldout.compare_kwargs(),
                )
            except CalibrationInputError as exc:
                record = FitRecord(map=name, heldout=heldout.key, variant=None, error=str(exc))
                ctx.store.put_fit(handle, record, None)
                state["fitted"].append(f"{handle}:{name}")
                done += units if name != UNCALIBRATED else 0
                continue
            record, calibrated = _record(name, handle, heldout, comparison)
            try:
                ctx.store.put_fit(handle, record, calibrated)
                if name == UNCALIBRATED:
                    ctx.store.put_rows(record.variant, comparison.scored_rows)
            except StorageUnavailable as exc:  # disk full or read-only: say so, keep the rest
                state["error"] = str(exc)
                set_progress((str(total), str(total), ""))
                return state
            if name != UNCALIBRATED:
                done += units
            state["fitted"].append(f"{handle}:{name}")
    seconds = time.perf_counter() - start
    fitted = len([f for f in state["fitted"] if not f.endswith(f":{UNCALIBRATED}")])
    state["summary"] = f"Fitted {fitted} map(s) in {seconds:.1f} s; all selected maps are fitted."
    set_progress((str(total), str(total), ""))
    return state


def register(app, ctx: AppContext) -> None:
    """The background fit callback."""

    @app.callback(
        Output(ids.FIT_STATE, "data"),
        Input(ids.MODEL_SELECT, "value"),
        Input(ids.MAPS, "value"),
        Input(ids.HELDOUT, "value"),
        Input(ids.FOLDS, "value"),
        Input(ids.TEST_FRACTION, "value"),
        Input(ids.FIT_START, "n_clicks"),
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
    )
    def fit_maps(set_progress, handles, maps, mode, folds, fraction, _start_clicks):
        try:
            return run_fits(
                ctx, ctx.session_id(), handles, maps, mode, folds, fraction, set_progress
            )
        except Exception:  # never a traceback in the page
            request_id = uuid.uuid4().hex[:12]
            log.exception("fitting failed (request id %s)", request_id)
            return {
                "nonce": request_id,
                "fitted": [],
                "error": f"fitting failed unexpectedly (request id {request_id}).",
            }

    @app.callback(
        Output(ids.FIT_STATE, "data", allow_duplicate=True),
        Input(ids.FIT_CANCEL, "n_clicks"),
        prevent_initial_call=True,
    )
    def fit_cancelled(_clicks):
        # Dash stops the job; maps finished before the cancel stay in the store.
        return {
            "nonce": uuid.uuid4().hex,
            "fitted": [],
            "error": None,
            "cancelled": True,
            "summary": "Fitting cancelled; maps fitted before that are kept. Press Fit to resume.",
        }
