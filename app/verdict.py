"""The verdict of a view's models (which map to trust), from the store's fits: page and report.

The numbers come from :func:`calibration_core.compare.choose_map` on the
held-out calibrated predictions the page already shows (the uncalibrated
rows compete too), with the fitted maps of the store for the parameters in
words and the fitting design (:func:`fit_design`: which fold scored each
row, the training sizes and the in-sample losses kept with each fit), so its
interval holds the noise of fitting the maps and it is the verdict
``compare_maps(...).verdict()`` gives for the same folds and seed. (A
dataset's maps: the verdict of their comparison on the sample, kept by the
maps' job, :func:`sample_verdicts`.) This module says them in words
(:func:`verdict_headline`, :func:`verdict_lines`), which the page's Dash
components (:func:`app.layout.verdict.verdict_children`) and the report's HTML
section (:func:`app.report.verdict.verdict_html`) both show.

Computed once, where the fits are: the fit job ends by computing the verdict
of every model it fitted (:func:`store_verdicts`) and keeps it in the shared
store (:meth:`~app.store.data_store.DataStore.shared_result`) under the
model, its candidates' variant handles, the held-out scheme and the level,
so any worker reads it. A view that needs a verdict no job computed (a map
unticked: no job ran) computes it there, once for all concurrent requests.
The confidence ECE reported alongside depends on the view's binning and is
re-binned per view (cached per variant and binning).

The comparison package loads scikit-learn and pandas, which the first page
does not need (``tests/app/test_warmup.py``): it is imported where a verdict
is computed, and the page does not compute one while maps are still fitting.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from calibration_core import CalibrationInputError, Predictions, __version__, confidence_ece

from .analysis import UNCALIBRATED, Variant, ViewResult, variants
from .settings import HeldOut, ViewSettings
from .store.data_store import DataStore
from .store.disk import StorageUnavailable
from .store.records import FitRecord, HeldOutDesign

if TYPE_CHECKING:
    from calibration_core.compare import Verdict
    from calibration_core.compare.verdict import FitDesign
    from calibration_core.maps.base import CalibrationMap

__all__ = [
    "VERDICT_CAPTION",
    "ModelVerdict",
    "contenders_line",
    "fit_design",
    "sample_verdicts",
    "store_verdicts",
    "stored_verdict",
    "verdict_headline",
    "verdict_key",
    "verdict_lines",
    "view_verdicts",
]

#: How the verdict is decided, under the page's cards and the report's section.
VERDICT_CAPTION = (
    "Best map by held-out log-loss (a proper score; the uncalibrated predictions compete "
    "too, with 0 parameters). Maps whose held-out predictions coincide are one contender "
    "(“matrix = dirichlet”), so the runner-up is the best different map. What is compared "
    "is the procedure, fitting a map on the training rows and using it on new rows, fitting "
    "cost included. The difference is the runner-up's mean per-row log-loss minus the "
    "winner's; its interval includes the noise of fitting the maps; “no clear winner” when "
    "it covers 0. The recommended map has the fewest parameters among the maps not clearly "
    "worse than the best (the one-standard-error rule); it is the deployable map's default."
)


@dataclass(frozen=True)
class ModelVerdict:
    """One model's verdict, or why there is none (``message``).

    ``waiting`` names the maps whose fits the verdict waits for (the page
    shows no verdict until every selected map is fitted or failed).
    """

    model: str
    verdict: Verdict | None
    message: str = ""
    waiting: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        """``"clear"``, ``"unclear"`` (no clear winner), ``"waiting"`` or ``"none"``."""
        if self.verdict is not None:
            return "clear" if self.verdict.clear else "unclear"
        return "waiting" if self.waiting else "none"


def _records(store: DataStore, handle: str, names, heldout: HeldOut) -> dict[str, FitRecord]:
    """Map name to its stored fit record, for the maps fitted without error."""
    out = {}
    for name in names:
        record = store.get_fit(handle, name, heldout, params=True)
        if record is not None and record.error is None:
            out[name] = record
    return out


def _fitted_maps(records: dict[str, FitRecord]) -> dict[str, list[CalibrationMap]]:
    """Map name to its fitted fold maps, rebuilt from the records' exported parameters."""
    from calibration_core.maps.base import CalibrationMap

    return {
        name: [CalibrationMap.from_dict(p) for p in record.params]
        for name, record in records.items()
        if record.params
    }


def _stored_design(store: DataStore, handle: str, heldout: HeldOut) -> HeldOutDesign:
    """The model's held-out design; derived (no map fitted) when an older version fitted it.

    The folds or the split come from the labels and the seed, and the
    uncalibrated in-sample losses from the input, so they are recomputed by
    a comparison without maps and stored for the next verdict.
    """
    found = store.get_design(handle, heldout)
    if found is not None:
        return found
    from calibration_core.compare import compare_maps

    comparison = compare_maps(store.predictions(handle), maps=[], **heldout.compare_kwargs())
    found = HeldOutDesign.of(comparison.design())
    try:
        store.put_design(handle, heldout, found)
    except StorageUnavailable:
        pass  # used now, derived again next time
    return found


def fit_design(
    store: DataStore, handle: str, heldout: HeldOut, records: dict[str, FitRecord]
) -> FitDesign:
    """The core's fitting design of a model's maps, from the store.

    Parameters
    ----------
    store : DataStore
    handle : str
        The model's data handle.
    heldout : HeldOut
    records : dict of str to FitRecord
        The candidates' fit records: each one's in-sample losses. A record
        without them (stored by an older version) leaves its map's entry
        out, so the verdict counts that map's parameters instead of
        estimating its effective ones.

    Returns
    -------
    FitDesign
        ``fit_of_row`` (n_scored,), ``n_train`` (F,), ``train_log_loss``
        of "uncalibrated" and of every map whose losses are known, (F,) each.
    """
    from calibration_core.compare.verdict import FitDesign

    rows = _stored_design(store, handle, heldout)
    train = {UNCALIBRATED: rows.uncalibrated_train_log_loss}
    for name, record in records.items():
        if record.train_log_loss is not None:
            train[name] = np.asarray(record.train_log_loss, dtype=np.float64)
    return FitDesign(fit_of_row=rows.fit_of_row, n_train=rows.n_train, train_log_loss=train)


def verdict_key(handle: str, candidates: list[Variant], heldout: HeldOut, level: float) -> str:
    """The shared store's key of a verdict: model, candidates' variants, scheme and level.

    The core's version is part of it, so that a new version never reads a
    verdict pickled by another.
    """
    names = "|".join(f"{v.calibrator}={v.handle}" for v in candidates)
    digest = hashlib.sha256(names.encode()).hexdigest()[:32]
    return f"result:verdict:{__version__}:{handle}:{heldout.key}:{level!r}:{digest}"


def stored_verdict(
    store: DataStore,
    handle: str,
    candidates: list[Variant],
    heldout: HeldOut,
    level: float | None = None,
) -> Verdict:
    """The verdict of one model's fitted variants, computed once and kept in the shared store.

    Its confidence ECE is at 15 equal-width bins (:func:`view_verdicts`
    re-bins it). Raises CalibrationInputError (candidates of different rows).

    Parameters
    ----------
    store : DataStore
    handle : str
        The model's data handle.
    candidates : list of Variant
        The uncalibrated predictions and the fitted maps, each with its predictions.
    heldout : HeldOut
    level : float, optional
        The interval's coverage (the core's default).
    """
    from calibration_core.compare.verdict import DEFAULT_LEVEL

    level = DEFAULT_LEVEL if level is None else level
    key = verdict_key(handle, candidates, heldout, level)

    def compute() -> Verdict:
        from calibration_core.compare import choose_map

        records = _records(store, handle, [v.calibrator for v in candidates], heldout)
        return choose_map(
            {v.calibrator: v.pred for v in candidates},
            _fitted_maps(records),
            design=fit_design(store, handle, heldout, records),
            level=level,
        )

    return store.memo(("verdict", key), lambda: store.shared_result(key, compute, handle))


def store_verdicts(store: DataStore, sid, handles, maps: tuple[str, ...], heldout: HeldOut) -> None:
    """Compute and keep the verdict of each model's selected maps (the fit job's last step).

    Every fitted map of ``maps`` competes with the uncalibrated predictions,
    as on the page; a model whose verdict cannot be made (its data gone,
    candidates of different rows) is left to the page, which says why.
    """
    for handle in handles:
        try:
            info = store.resolve(sid, handle)
            found = variants(store, info, maps, heldout)
            stored_verdict(store, handle, [v for v in found if v.pred is not None], heldout)
        except CalibrationInputError:
            continue


def _ece(store: DataStore, variant: Variant, result: ViewResult) -> float:
    """Held-out confidence ECE of a variant in the view's binning (cached)."""
    pred: Predictions = variant.pred
    view = result.view

    def compute() -> float:
        return confidence_ece(pred.probs, pred.labels, n_bins=view.n_bins, scheme=view.scheme)

    return store.memo(("verdict-ece", variant.handle, view.scheme, view.n_bins), compute)


def _model_verdict(
    store: DataStore,
    handle: str,
    ready: list[Variant],
    result: ViewResult,
    level: float | None,
) -> Verdict:
    """The stored verdict of one model, with the confidence ECE of the view's binning."""
    verdict = stored_verdict(store, handle, ready, result.heldout, level)
    shown = {v.calibrator: v for v in ready if v.calibrator in verdict.confidence_ece}
    return replace(
        verdict, confidence_ece={name: _ece(store, shown[name], result) for name in shown}
    )


def view_verdicts(
    store: DataStore,
    result: ViewResult,
    *,
    level: float | None = None,
    wait: bool = False,
) -> list[ModelVerdict]:
    """The verdict of every model of ``result`` (an analysis ViewResult).

    Candidates are the uncalibrated predictions and every map whose fit is
    done; maps that failed are left out (and named in the message). Maps
    still pending are left out too, or, with ``wait=True`` (the page), the
    model gets no verdict until they are fitted (the message says so).
    ``level`` defaults to the core's. The variants are those the view drew
    (``ModelView.variants``), so the verdict and the panels agree on what is
    fitted, and the store is not read again.
    """
    out = []
    for mv in result.models:
        found = mv.variants or variants(store, mv.info, result.maps, result.heldout)
        pending = [v for v in found if v.pending]
        if wait and pending:
            names = ", ".join(v.calibrator for v in pending)
            message = f"The verdict waits for {names}: {pending[0].message}."
            out.append(
                ModelVerdict(mv.info.name, None, message, tuple(v.calibrator for v in pending))
            )
            continue
        ready = [v for v in found if v.pred is not None]
        missing = [v.calibrator for v in found if v.pred is None]
        note = f"not compared (pending or failed): {', '.join(missing)}" if missing else ""
        try:
            verdict = _model_verdict(store, mv.info.handle, ready, result, level)
        except CalibrationInputError as exc:
            out.append(ModelVerdict(mv.info.name, None, str(exc)))
            continue
        out.append(ModelVerdict(mv.info.name, verdict, note))
    return out


def sample_verdicts(entry: dict, view: ViewSettings) -> list[ModelVerdict]:
    """The verdict of each model's maps on its dataset sample, as the page shows it.

    ``entry``: the dataset's maps (:meth:`app.datasets.Datasets.cached_maps`),
    whose job kept each model's ``verdict``: the sample comparison's
    :meth:`~calibration_core.compare.Comparison.verdict` at the core's
    level, as ``evaluate --engine dask --maps`` computes it (once there, not
    on a redraw). The confidence ECE
    alongside is re-binned at the view's bins, as for uploads. Each message
    says which rows it was computed on; models kept without a verdict (an
    older fit) are left out.
    """
    out = []
    for model, found in entry["models"].items():
        verdict = found.get("verdict")
        if verdict is None:
            continue
        calibrated, info = found["comparison"].calibrated, found["info"]
        ece = {
            name: confidence_ece(
                calibrated[name].probs,
                calibrated[name].labels,
                n_bins=view.n_bins,
                scheme=view.scheme,
            )
            for name in verdict.confidence_ece
        }
        message = (
            f"Computed on the sample: {info.rows:,} rows of {model} drawn uniformly "
            f"(seed {info.seed}), every row held out ({entry['heldout']})."
        )
        failed = found["comparison"].errors
        if failed:
            message += f" Not compared (failed): {', '.join(failed)}."
        out.append(ModelVerdict(model, replace(verdict, confidence_ece=ece), message))
    return out


def verdict_headline(item: ModelVerdict) -> str:
    """The verdict in a few words, e.g. "clear winner: temperature" or "no clear winner".

    The recommended map follows when it is not the winner
    ("no clear winner (best: vector); recommended: temperature").
    """
    verdict = item.verdict
    if verdict is None:
        return "waiting for the fits" if item.waiting else "no verdict"
    winner = verdict.contender(verdict.winner)
    best = verdict.winner if winner is None else winner.label
    if verdict.runner_up is None:
        head = f"only candidate: {best}"
    elif verdict.clear:
        head = f"clear winner: {best}"
    else:
        head = f"no clear winner (best: {best})"
    if winner is not None and verdict.recommended not in winner.names:
        head += f"; recommended: {verdict.contender(verdict.recommended).label}"
    return head


def contenders_line(verdict: Verdict) -> str:
    """Every contender with its held-out log-loss and parameter count, best first."""
    parts = [
        f"{c.label} {c.log_loss:.4f} ({'?' if c.n_parameters is None else f'{c.n_parameters:,}'})"
        for c in verdict.contenders
    ]
    return f"Held-out log-loss (parameters): {', '.join(parts)}."


def verdict_lines(item: ModelVerdict) -> list[str]:
    """The sentences of one model's verdict.

    Summary, recommendation, contenders with their parameter counts, ECE,
    parameters in words, why merged maps coincide, then the notes.
    """
    lines = []
    verdict = item.verdict
    if verdict is not None:
        lines += [verdict.summary, verdict.recommendation, contenders_line(verdict)]
        ece = ", ".join(f"{name} {value:.4f}" for name, value in verdict.confidence_ece.items())
        lines.append(f"Held-out confidence ECE: {ece}.")
        lines += [f"{name}: {words}." for name, words in verdict.parameters.items()]
        lines += verdict.same_model_notes
    if item.message:
        lines.append(item.message)
    return lines
