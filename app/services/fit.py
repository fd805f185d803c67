"""Fitting calibration maps into the store: the work behind the page's Fit button.

Shared by the fit callbacks (:mod:`app.callbacks.fit`), the first page of
:func:`app.factory.create_app`, the command line's report
(:mod:`app.offline_report`) and the notebook (:mod:`app.notebook.diagrams`):

* :func:`plan_fits`: per model, each selected map not in the store yet, and
  the maps this server refuses (:mod:`app.map_policy`);
* :func:`run_fits`: fit that work with
  :func:`calibration_core.compare.compare_maps`, one map per call, so that a
  cancelled run keeps every map finished before it, and store the calibrated
  predictions by (data handle, map, held-out scheme);
* :func:`fit_status_line`: the page's line saying what is fitted.

No Dash here: the callbacks validate, call these and fill the page.
"""

from __future__ import annotations

import time
import uuid

from calibration_core import CalibrationInputError
from calibration_core.maps import same_model_as

from ..analysis import UNCALIBRATED
from ..context import AppContext
from ..job_limits import JobLimits, JobStopped
from ..map_policy import refusal
from ..settings import HeldOut, parse_handles, parse_heldout, parse_maps
from ..store.data_store import DataStore
from ..store.disk import StorageUnavailable
from ..store.records import FitRecord, HeldOutDesign
from ..verdict import store_verdicts


def compare_maps(*args, **kwargs):
    """:func:`calibration_core.compare.compare_maps`, imported on first use.

    It loads scikit-learn and pandas, which the page does not need to start.
    """
    from calibration_core.compare import compare_maps as compare

    return compare(*args, **kwargs)


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


def within_budget(
    store: DataStore, sid, work: list[tuple[str, list[str]]], budget: int
) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """``(work, refusals)``: the work without the maps over the parameter budget.

    See :mod:`app.map_policy`; ``refusals`` say which maps are not fitted and why.
    """
    kept, refusals = [], []
    for handle, names in work:
        info = store.resolve(sid, handle)
        reasons = {n: refusal(n, info.name, info.n_classes, budget) for n in names}
        refusals.extend(r for r in reasons.values() if r is not None)
        allowed = [n for n in names if reasons[n] is None]
        if allowed:
            kept.append((handle, allowed))
    return kept, refusals


def refusals_message(refusals: list[str]) -> str | None:
    """The fit state's error for maps refused by the policy (None if there are none)."""
    if not refusals:
        return None
    text = "; ".join(refusals)
    return text[0].upper() + text[1:] + "."


def _lookup(ctx: AppContext, sid, raw_handles, raw_maps, mode, folds, fraction):
    """Validated settings and what is missing: ``(state, heldout, work)``.

    ``work`` (see :func:`missing_work`, without the maps over the parameter
    budget: :func:`within_budget`) is empty when the fit ends here: then
    ``state`` carries the error of invalid settings or says all is fitted.
    The refused maps are the state's ``error``.
    """
    state = {"nonce": uuid.uuid4().hex, "fitted": [], "error": None, "summary": ""}
    try:
        handles = parse_handles(raw_handles)
        maps = parse_maps(raw_maps)
        heldout = parse_heldout(mode, folds, fraction)
        work = missing_work(ctx.store, sid, handles, maps, heldout)
        work, refusals = within_budget(ctx.store, sid, work, ctx.config.max_map_parameters)
    except CalibrationInputError as exc:
        state["error"] = str(exc)
        return state, None, []
    state["error"] = refusals_message(refusals)
    if not work:
        state["summary"] = ALL_FITTED if not refusals else ""
    return state, heldout, work


def out_of_memory(record: FitRecord) -> bool:
    """Whether the map of ``record`` failed for lack of memory (the job's limit).

    The core records a map's failure as ``"<where>: <type>: <text>"`` and fits
    the next map; a ``MemoryError`` in a job is its ``JOB_MEMORY_LIMIT_MB``
    (:mod:`app.job_limits`), not a property of the map worth storing.
    """
    return isinstance(record.error, str) and "MemoryError: " in record.error


def memory_stop(ctx: AppContext) -> JobStopped:
    """The stop of a fit that reached the memory limit, as :class:`JobStopped` words it."""
    limits = JobLimits(ctx.config.job_time_limit_seconds, ctx.config.job_memory_limit_mb)
    return JobStopped(limits.memory_message())


def stopped_fit_message(name: str, model: str, exc: JobStopped) -> str:
    """The fit state's error when the fit of map ``name`` on ``model`` reached a job limit."""
    return (
        f"The fit of {name} on model {model!r} stopped: {exc}. Maps fitted before it are "
        "kept. Try a map with fewer parameters (temperature or vector scaling), the "
        "train/test split instead of folds, or fewer rows."
    )


def _record(name: str, handle: str, heldout: HeldOut, comparison) -> tuple[FitRecord, object]:
    """The record of map ``name`` from its comparison, and its calibrated predictions."""
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
        train_log_loss=train_losses(comparison, name),
    )
    return record, comparison.calibrated.get(name)


def train_losses(comparison, name: str) -> list[float] | None:
    """Map ``name``'s in-sample log-loss of each fit, shape (F,), as a list; None if unknown."""
    found = comparison.train_log_loss.get(name)
    return None if found is None else [float(v) for v in found]


def reused_fit(store: DataStore, handle: str, name: str, heldout: HeldOut, has_logits: bool):
    """The record of map ``name`` as a reuse of its twin's stored fit, or None.

    On probability input matrix scaling and Dirichlet calibration are the same
    model (:func:`calibration_core.maps.same_model_as`): when one is fitted, the
    other takes its calibrated predictions (the same stored variant, nothing is
    copied) and its fitted state, relabelled with its own name.
    """
    twin = same_model_as(name, has_logits)
    record = None if twin is None else store.get_fit(handle, twin, heldout, params=True)
    if record is None or record.error is not None or record.variant is None:
        return None
    return FitRecord(
        map=name,
        heldout=record.heldout,
        variant=record.variant,
        fit_seconds=0.0,
        converged=record.converged,
        warnings=[f"{name}:{w.partition(':')[2]}" for w in record.warnings],
        params=[{**p, "map": name} for p in record.params],
        n_scored=record.n_scored,
        same_as=twin,
        train_log_loss=record.train_log_loss,
    )


def fit_total(heldout: HeldOut, work: list[tuple[str, list[str]]]) -> tuple[int, int]:
    """``(units, total)``: the progress steps of one map and of all the ``work``.

    A map takes one step per fold (one in split mode); the uncalibrated rows
    take none. ``total`` is at least 1, so that the progress bar has a maximum.
    """
    units = heldout.folds if heldout.mode == "folds" else 1
    total = sum(len([n for n in names if n != UNCALIBRATED]) * units for _, names in work)
    return units, max(total, 1)


def fit_progress(set_progress, base: int, total: int, label: str):
    """The progress callback of one map's fit: its folds count on from ``base``."""

    def progress(fold_done, fold_total, text):
        set_progress((str(base + fold_done), str(total), f"fitting {label} …"))

    return progress


def fit_map(ctx: AppContext, handle: str, pred, name: str, heldout: HeldOut, progress):
    """Fit map ``name`` on the model ``handle`` and store its record.

    A map that is the same model as one fitted already reuses its fit
    (:func:`reused_fit`); bad input is stored as the map's error, so that the
    next map is fitted.

    Returns
    -------
    str or None
        The fit state's error that stops the whole run (a job limit, no room
        to store), or None to go on with the next map.
    """
    reused = reused_fit(ctx.store, handle, name, heldout, pred.logits is not None)
    if reused is not None:  # the same model as a map fitted already: no second fit
        ctx.store.put_fit(handle, reused, None)
        return None
    try:
        comparison = compare_maps(
            pred,
            maps=[] if name == UNCALIBRATED else [name],
            progress=progress,
            **heldout.compare_kwargs(),
        )
    except JobStopped as exc:  # a server limit (app.job_limits)
        return stopped_fit_message(name, pred.name, exc)
    except CalibrationInputError as exc:
        record = FitRecord(map=name, heldout=heldout.key, variant=None, error=str(exc))
        ctx.store.put_fit(handle, record, None)
        return None
    record, calibrated = _record(name, handle, heldout, comparison)
    if out_of_memory(record):  # JOB_MEMORY_LIMIT_MB: say so, and keep no record
        return stopped_fit_message(name, pred.name, memory_stop(ctx))
    try:
        ctx.store.put_design(handle, heldout, HeldOutDesign.of(comparison.design()))
        ctx.store.put_fit(handle, record, calibrated)
        if name == UNCALIBRATED:
            ctx.store.put_rows(record.variant, comparison.scored_rows)
    except StorageUnavailable as exc:  # disk full or read-only: say so, keep the rest
        return str(exc)
    return None


#: The fit status when the view's maps are all fitted and no job said more.
ALL_FITTED = "All selected maps are fitted."


def fit_status_line(fit_state, pending: list[str] | None) -> str:
    """The line next to the Fit button, for the view drawn with it: one fit status.

    Written with the view (:func:`app.callbacks.view.render`), from the same
    lookup of the store as its panels and verdict, so it never says that the
    maps are fitted while a panel or the verdict still waits for a fit.

    Parameters
    ----------
    fit_state : dict or None
        The fit-state store: its error, its cancellation, or its summary
        (:func:`fitted_summary`, or the planner's :data:`ALL_FITTED`).
    pending : list of str or None
        The view's maps whose fit is not stored yet (``ModelView.pending``);
        None when the view could not be drawn (a setting is invalid).

    Returns
    -------
    str
        The error or the cancellation; "" while a map is pending (its panels
        say "fitting…"; the progress bar shows the job) or nothing was
        drawn; else the summary.
    """
    state = fit_state if isinstance(fit_state, dict) else {}
    if isinstance(state.get("error"), str):
        return state["error"]
    if state.get("cancelled") is True:
        return str(state.get("summary") or "")
    if pending is None or pending:
        return ""
    return str(state.get("summary") or ALL_FITTED)


def fitted_summary(state: dict, seconds: float) -> str:
    """The fit state's summary once every map of the run is fitted."""
    fitted = len([f for f in state["fitted"] if not f.endswith(f":{UNCALIBRATED}")])
    return f"Fitted {fitted} map(s) in {seconds:.1f} s; all selected maps are fitted."


def run_fits(
    ctx: AppContext,
    sid,
    raw_handles,
    raw_maps,
    mode,
    folds,
    fraction,
    set_progress,
    refused: str | None = None,
):
    """Fit what is missing, then compute the verdicts; the plain function behind the callback.

    The job ends with the verdict of each model it fitted, among the
    selected maps ``raw_maps`` (:func:`app.verdict.store_verdicts`), kept in
    the shared store: the views read it, they do not compute it.

    Parameters
    ----------
    set_progress : callable((done, total, text))
        Receives the progress bar value, its maximum and a status text.
    refused : str, optional
        The planner's message on the maps it refused (kept as the state's error).

    Returns
    -------
    dict
        ``{"nonce", "fitted": [...], "error": str | None}`` for the fit-state store.
    """
    state, heldout, work = _lookup(ctx, sid, raw_handles, raw_maps, mode, folds, fraction)
    if not work:
        return state
    units, total = fit_total(heldout, work)
    done = 0
    start = time.perf_counter()
    for handle, names in work:
        pred = ctx.store.predictions(handle)
        for name in names:
            progress = fit_progress(set_progress, done, total, f"{pred.name}: {name}")
            progress(0, 0, "")
            error = fit_map(ctx, handle, pred, name, heldout, progress)
            if error is not None:
                state["error"] = error
                set_progress((str(total), str(total), ""))
                return state
            if name != UNCALIBRATED:
                done += units
            state["fitted"].append(f"{handle}:{name}")
    set_progress((str(total), str(total), "computing the verdict …"))
    store_verdicts(ctx.store, sid, [h for h, _ in work], parse_maps(raw_maps), heldout)
    state["error"] = state["error"] or (refused if isinstance(refused, str) else None)
    state["summary"] = fitted_summary(state, time.perf_counter() - start)
    set_progress((str(total), str(total), ""))
    return state


def plan_fits(
    ctx: AppContext, sid, raw_handles, raw_maps, mode, folds, fraction
) -> tuple[dict | None, dict | None]:
    """What the background fit has to do for these settings; the plain function behind step 1.

    Returns
    -------
    (state, request)
        ``state`` (a fit-state dict, as :func:`run_fits` returns) when nothing
        is missing or the settings are invalid, else None; ``request`` (the
        raw settings plus a nonce, for the background callback) when
        something must be fitted, else None.
    """
    state, heldout, work = _lookup(ctx, sid, raw_handles, raw_maps, mode, folds, fraction)
    if not work:
        return state, None
    request = {
        "refused": state["error"],
        "nonce": uuid.uuid4().hex,
        "handles": [handle for handle, _ in work],
        "maps": sorted({name for _, names in work for name in names} - {UNCALIBRATED}),
        "selected": list(parse_maps(raw_maps)),
        "mode": heldout.mode,
        "folds": folds,
        "fraction": fraction,
    }
    return None, request
