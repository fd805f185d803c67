"""From stored predictions and validated settings to curves, bands and metric rows.

This is the only place where the dashboard computes anything; it calls the
core and nothing else (no Dash, no Plotly), so its numbers are the core's:

* reliability curves are :class:`~calibration_core.ReliabilityCurve` read
  off ``Predictions.statistics(Binning(scheme, n), notion, k)``, which
  re-bins from the load-time sorted scores in O(M log N);
* bands are :func:`calibration_core.bands.binomial_band` or
  :func:`calibration_core.bands.consistency_band_from_statistics`;
* the metrics are those statistics' ``ece()``/``mce()`` and the core's
  ``brier_score``, ``log_loss`` and ``accuracy`` (cached per predictions),
  and, when asked for, ``score_parts`` (cached per predictions and binning).

Nothing here fits a map: fitted (calibrated) predictions are read from the
store, where the background fit put them (:mod:`app.services.fit`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibration_core import (
    Binning,
    BinStatistics,
    CalibrationInputError,
    Predictions,
    ReliabilityCurve,
    accuracy,
    brier_score,
    log_loss,
)
from calibration_core.bands import binomial_band, consistency_band_from_statistics
from calibration_core.binning import stack_statistics

from .settings import (
    ALL_CLASSES_SHOWN,
    BANDS,
    CONSISTENCY_RESAMPLES,
    SMALL_MULTIPLES_PER_PAGE,
    HeldOut,
    SettingsError,
    ViewSettings,
    parse_view,
)
from .store.data_store import DataStore
from .store.disk import DataUnavailable
from .store.records import ModelInfo

UNCALIBRATED = "uncalibrated"
#: Panel text of a map that is not fitted yet (the background fit is running).
PENDING = "fitting… (see the progress bar)"
#: Panel text of a map whose fit was cancelled.
CANCELLED = "not fitted: cancelled (press Fit to resume)"
#: Text of a panel whose map the last fit did not fit (its message says why).
NOT_FITTED = "not fitted (see the message above; press Fit to retry)"
#: Equal-width bins of the score histogram when the chosen scheme is equal-frequency.
HISTOGRAM_BINS = 40


@dataclass
class Panel:
    """One reliability diagram: a calibrator (and class) of one model."""

    calibrator: str
    class_label: str | None
    curve: ReliabilityCurve | None = None
    band: tuple[np.ndarray, np.ndarray] | None = None
    message: str | None = None
    #: Score histogram: statistics of equal-width bins (the chosen ones when equal-width).
    histogram: BinStatistics | None = None
    #: The panel's title when it is not a calibrator or class (a group's label and size).
    title: str | None = None


@dataclass
class ModelView:
    """Everything drawn for one model."""

    info: ModelInfo
    panels: list[Panel] = field(default_factory=list)
    n_scored: int | None = None
    notes: list[str] = field(default_factory=list)
    #: In the "all classes" view: ``(classes drawn, classes of the model)``.
    classes_shown: tuple[int, int] | None = None
    #: ``(column, class label)`` of each panel row drawn per calibrator
    #: (:func:`app.analysis.targets`, in "all classes" the worst first).
    class_rows: list[tuple[int | None, str | None]] = field(default_factory=list)
    #: What the small multiples are: ``"classes"``, or ``"groups"`` (:mod:`app.groups.columns`).
    panels_noun: str = "classes"
    #: The uncalibrated predictions and each selected map's, as the store held them when
    #: the view was drawn (:func:`variants`): the verdict reads these, not the store again.
    variants: list[Variant] = field(default_factory=list)

    def classes_note(self) -> str | None:
        """E.g. ``"showing the 12 worst of 100 classes by ECE"`` (None: not "all classes").

        The ECE is the one-vs-rest ECE of the uncalibrated predictions (of each
        group, for groups).
        """
        if self.classes_shown is None:
            return None
        shown, total = self.classes_shown
        noun = self.panels_noun
        if shown == total:
            return f"showing all {total} {noun}, the worst by ECE first"
        return f"showing the {shown} worst of {total} {noun} by ECE"

    @property
    def pending(self) -> list[str]:
        """The calibrators whose fit is not stored yet: their panels say so."""
        return [v.calibrator for v in self.variants if v.pending]


@dataclass
class ViewResult:
    """The whole view: per-model panels, metric rows and messages."""

    view: ViewSettings
    heldout: HeldOut
    maps: tuple[str, ...]
    models: list[ModelView] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


@dataclass
class Variant:
    """Predictions of one calibrator (or the uncalibrated ones) of a model."""

    calibrator: str
    handle: str | None
    pred: Predictions | None
    fit_seconds: float | None = None
    converged: bool | None = None
    message: str | None = None
    #: True while the fit has not stored a result yet (``message`` says why).
    pending: bool = False
    #: The map whose fit this one reuses (the same model on probability input), or None.
    same_as: str | None = None


def targets(info: ModelInfo, view: ViewSettings) -> list[tuple[int | None, str | None]]:
    """``(class index, class label)`` of every panel row of a model for the notion.

    Raises
    ------
    CalibrationInputError
        Binary notion on K != 2, or a class the model does not have.
    """
    if view.notion == "confidence":
        return [(None, None)]
    if view.notion == "binary":
        if info.n_classes != 2:
            raise CalibrationInputError(
                f"the binary notion needs 2 classes; {info.name} has {info.n_classes}. "
                "Use confidence or one class vs rest."
            )
        return [(None, info.class_names[1])]
    if view.all_classes:
        return list(enumerate(info.class_names))
    if view.class_name not in info.class_names:
        raise CalibrationInputError(f"{info.name} has no class named {view.class_name!r}.")
    return [(info.class_names.index(view.class_name), view.class_name)]


def variants(
    store: DataStore,
    info: ModelInfo,
    maps: tuple[str, ...],
    heldout: HeldOut,
    pending: str = PENDING,
) -> list[Variant]:
    """The uncalibrated predictions (first) and every selected map's, from the store."""
    out: list[Variant] = []
    if heldout.mode == "folds":
        out.append(Variant(UNCALIBRATED, info.handle, store.predictions(info.handle)))
    else:
        record = store.get_fit(info.handle, UNCALIBRATED, heldout)
        if record is None or record.variant is None:
            out.append(Variant(UNCALIBRATED, None, None, message=pending, pending=True))
        else:
            out.append(Variant(UNCALIBRATED, record.variant, store.predictions(record.variant)))
    for name in maps:
        record = store.get_fit(info.handle, name, heldout)
        if record is None:
            out.append(Variant(name, None, None, message=pending, pending=True))
        elif record.error is not None or record.variant is None:
            out.append(Variant(name, None, None, message=f"failed: {record.error}"))
        else:
            out.append(
                Variant(
                    name,
                    record.variant,
                    store.predictions(record.variant),
                    fit_seconds=None if record.same_as else record.fit_seconds,
                    converged=record.converged,
                    same_as=record.same_as,
                )
            )
    return out


def fit_status(variant: Variant) -> str:
    """The status cell of a fitted variant: "ok", "did not converge", and any reused fit."""
    status = "ok" if variant.converged in (True, None) else "did not converge"
    if variant.same_as:
        status += f" (same fit as {variant.same_as})"
    return status


def band_of(stats, curve: ReliabilityCurve, view: ViewSettings):
    """``(lower, upper)`` of the selected band, or None."""
    kind, method = BANDS[view.band]
    if kind == "binomial":
        return binomial_band(curve, method=method, level=view.level)
    if kind == "consistency":
        return consistency_band_from_statistics(
            stats, n_resamples=CONSISTENCY_RESAMPLES, level=view.level, seed=0
        )
    return None


def binned_panel(
    pred: Predictions,
    calibrator: str,
    k: int | None,
    class_label: str | None,
    binning: Binning,
    hist_binning: Binning,
    view: ViewSettings,
) -> tuple[Panel, BinStatistics]:
    """One diagram of ``pred`` (class ``k`` under the view's notion) and its statistics.

    The curve and the band are of ``binning``; the score histogram is of
    ``hist_binning`` (the same statistics when they are the same binning).
    """
    stats = pred.statistics(binning, view.notion, k)
    curve = ReliabilityCurve.from_statistics(stats, binning)
    hist = stats if hist_binning is binning else pred.statistics(hist_binning, view.notion, k)
    band = band_of(stats, curve, view)
    return Panel(calibrator, class_label, curve, band, histogram=hist), stats


def scoring_rules(store: DataStore, variant: Variant) -> dict[str, float]:
    """Accuracy, Brier score and log-loss of a variant (binning-free, cached)."""
    pred = variant.pred

    def compute():
        return {
            "accuracy": accuracy(pred.probs, pred.labels),
            "brier_score": brier_score(pred.probs, pred.labels),
            "log_loss": log_loss(pred.probs, pred.labels),
        }

    if variant.handle is None:
        return compute()
    return store.memo(("rules", variant.handle), compute)


def score_parts(store: DataStore, variant: Variant, binning: Binning) -> dict[str, float]:
    """Calibration and refinement parts of Brier and log-loss, cached per binning.

    :func:`calibration_core.score_parts`: ``C = E[Y | S]`` estimated per class
    column (one vs rest) on the view's bins, as the classwise ECE bins them.
    """
    from calibration_core import score_parts as parts

    pred = variant.pred

    def compute():
        return parts(pred.probs, pred.labels, n_bins=binning.n_bins, scheme=binning.scheme)

    key = ("parts", variant.handle, binning.scheme, binning.n_bins)
    return compute() if variant.handle is None else store.memo(key, compute)


def class_errors(
    store: DataStore, handle: str | None, pred: Predictions, binning: Binning
) -> tuple[np.ndarray, np.ndarray]:
    """One-vs-rest ECE and MCE of every class, shape ``(K,)`` each, cached per handle.

    Re-binned from the load-time sorted scores (O(K M log N)), then stacked
    into (K, M) statistics so that the K ECEs and MCEs are one array
    operation each (bit for bit those of each class's statistics); the
    classwise ECE, the "all classes" metric row, the worst classes and the
    default class all read these, so they agree with the panels.
    """

    def compute():
        stats = stack_statistics(pred.classwise_statistics(binning))  # (K, M): one ece, one mce
        return np.asarray(stats.ece()), np.asarray(stats.mce())

    key = ("class_errors", handle, binning.scheme, binning.n_bins)
    return compute() if handle is None else store.memo(key, compute)


def classwise_ece(store: DataStore, variant: Variant, binning: Binning) -> float:
    """Classwise ECE (mean of one-vs-rest ECEs) from the sorted scores, cached."""
    return float(np.mean(class_errors(store, variant.handle, variant.pred, binning)[0]))


def worst_classes(eces: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` classes with the largest ECE, worst first (ties: lower index)."""
    order = np.argsort(-np.asarray(eces, dtype=float), kind="stable")
    return [int(i) for i in order[:k]]


def default_class(store: DataStore, info: ModelInfo, binning: Binning) -> str:
    """The class a one-vs-rest view opens on: the model's worst by one-vs-rest ECE.

    Ranked on the model's uncalibrated predictions (all rows), so it does
    not depend on the maps or the held-out scheme.
    """
    eces, _ = class_errors(store, info.handle, store.predictions(info.handle), binning)
    return info.class_names[worst_classes(eces, 1)[0]]


def opening_class(store: DataStore, sid, handles: list[str], scheme, n_bins) -> str | None:
    """The class "one class vs rest" opens on for a selection, or None when there is none.

    The worst class (:func:`default_class`) of the first selected model, at
    the controls' binning (the default binning when theirs is invalid); None
    when nothing is selected or the model cannot be read.
    """
    if not handles:
        return None
    try:
        view = parse_view("class", None, scheme, n_bins, "none", 0.95)
    except SettingsError:
        view = ViewSettings()
    try:
        info = store.resolve(sid, handles[0])
        return default_class(store, info, Binning(view.scheme, view.n_bins))
    except DataUnavailable:
        return None


def classes_per_calibrator(n_models: int, n_calibrators: int) -> int:
    """How many classes "all classes" draws per calibrator and model.

    At most :data:`~app.settings.ALL_CLASSES_SHOWN`, and at most
    :data:`~app.settings.SMALL_MULTIPLES_PER_PAGE` panels on the page (at
    least one class): Plotly's drawing time grows with the number of axes.
    """
    budget = SMALL_MULTIPLES_PER_PAGE // max(n_models * n_calibrators, 1)
    return max(1, min(ALL_CLASSES_SHOWN, budget))


def shown_classes(
    store: DataStore,
    info: ModelInfo,
    view: ViewSettings,
    uncalibrated: Variant,
    rows_of_classes: list[tuple[int | None, str | None]],
    k: int = ALL_CLASSES_SHOWN,
) -> tuple[list[tuple[int | None, str | None]], tuple[int, int] | None]:
    """The panel rows drawn, and ``(shown, total)`` classes in the "all classes" view.

    "All classes" draws the ``k`` worst classes by the uncalibrated
    one-vs-rest ECE (the predictions the uncalibrated panel shows; all rows
    while they are pending), worst first: a 100-class model would otherwise
    draw 100 panels per calibrator.
    """
    if not view.all_classes:
        return rows_of_classes, None
    binning = Binning(view.scheme, view.n_bins)
    if uncalibrated.pred is None:
        handle, pred = info.handle, store.predictions(info.handle)
    else:
        handle, pred = uncalibrated.handle, uncalibrated.pred
    eces, _ = class_errors(store, handle, pred, binning)
    keep = worst_classes(eces, k)
    return [rows_of_classes[k] for k in keep], (len(keep), len(rows_of_classes))


def model_view(
    store: DataStore,
    info: ModelInfo,
    maps: tuple[str, ...],
    heldout: HeldOut,
    view: ViewSettings,
    pending: str = PENDING,
    k: int = ALL_CLASSES_SHOWN,
) -> tuple[ModelView, list[dict]]:
    """Panels and metric rows of one model (``pending``: text of maps not fitted yet).

    ``k``: classes drawn per calibrator in the "all classes" view.
    """
    mv = ModelView(info)
    rows: list[dict] = []
    binning = Binning(view.scheme, view.n_bins)
    hist_binning = binning if view.scheme == "width" else Binning("width", HISTOGRAM_BINS)
    found = variants(store, info, maps, heldout, pending)
    mv.variants = found
    rows_of_classes, mv.classes_shown = shown_classes(
        store, info, view, found[0], targets(info, view), k
    )
    mv.class_rows = rows_of_classes
    for variant in found:
        row = {"model": info.name, "map": variant.calibrator}
        if variant.pred is None:
            for _, label in rows_of_classes:
                mv.panels.append(Panel(variant.calibrator, label, message=variant.message))
            row["status"] = variant.message
            rows.append(row)
            continue
        pred = variant.pred
        if variant.calibrator == UNCALIBRATED:
            mv.n_scored = pred.n_samples
        eces, mces = [], []
        for k, label in rows_of_classes:
            panel, stats = binned_panel(
                pred, variant.calibrator, k, label, binning, hist_binning, view
            )
            mv.panels.append(panel)
            eces.append(stats.ece())
            mces.append(stats.mce())
        if view.all_classes:  # the row covers every class, not only those drawn
            eces, mces = class_errors(store, variant.handle, pred, binning)
        row.update(
            n=pred.n_samples,
            ece=float(np.mean(eces)),
            mce=float(np.max(mces)),
            classwise_ece=classwise_ece(store, variant, binning),
            **scoring_rules(store, variant),
            **(score_parts(store, variant, binning) if view.score_parts else {}),
            fit_seconds=variant.fit_seconds,
            status=fit_status(variant),
        )
        rows.append(row)
    return mv, rows


def build_view(
    store: DataStore,
    sid: str | None,
    handles: tuple[str, ...],
    maps: tuple[str, ...],
    heldout: HeldOut,
    view: ViewSettings,
    pending: str = PENDING,
) -> ViewResult:
    """The whole view of the selected models (problems become messages, never exceptions)."""
    result = ViewResult(view=view, heldout=heldout, maps=maps)
    k = classes_per_calibrator(len(handles), len(maps) + 1)
    for handle in handles:
        try:
            info = store.resolve(sid, handle)
            mv, rows = model_view(store, info, maps, heldout, view, pending, k)
        except DataUnavailable as exc:
            if str(exc) not in result.messages:
                result.messages.append(str(exc))
            continue
        except CalibrationInputError as exc:
            result.messages.append(str(exc))
            continue
        result.models.append(mv)
        result.rows.extend(rows)
    return result
