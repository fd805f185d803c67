"""Held-out comparison of calibration maps: :func:`compare_maps`.

A map must never be scored on the rows it was fitted on (survey arXiv
2112.10327, Pitfalls: "calibration sets must be held out"). Two modes:

Cross-fitting (default)
    The rows are split into ``folds`` folds (``StratifiedKFold(shuffle=True,
    random_state=seed)``; plain ``KFold`` with a warning when a class has
    fewer rows than folds). Each fold is calibrated by a map fitted on the
    other folds; the out-of-fold calibrated rows are assembled into one
    (N, K) matrix and scored together, on all N rows. Every map sees the
    same folds.
Train/test
    ``split`` (a boolean array, True = test row) or ``test_fraction`` (a
    seeded, stratified shuffle split): each map is fitted once on the train
    rows and scored on the test rows only. The uncalibrated row is scored on
    the same test rows, so that all rows of the table are comparable.

The uncalibrated predictions are always the first row, ``"uncalibrated"``,
and are scored once. Metrics come from the core functions of
:mod:`calibration_core.metrics` (ECE and MCE of a notion share one binning
pass), so the table agrees with every other view of the same predictions.

This module runs the comparison; the table's columns, scoring and
:class:`Comparison` live in :mod:`~calibration_core.compare.results`, the
fold and split assignment in :mod:`~calibration_core.compare.folds`.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from ..binning import Scheme, check_binning_args
from ..errors import CalibrationInputError
from ..maps import available_maps, make_map, same_model_as
from ..maps.base import CalibrationMap
from ..metrics import log_loss
from ..predictions import Predictions, measure_inputs
from .columns import METRIC_COLUMNS, TABLE_COLUMNS
from .folds import check_folds, crossfit_folds, train_test_mask
from .results import Comparison, score_probs
from .verdict import UNCALIBRATED

__all__ = ["CancelCallback", "ComparisonCancelled", "ProgressCallback", "compare_maps"]

ProgressCallback = Callable[[int, int, str], Any]
CancelCallback = Callable[[], bool]


class ComparisonCancelled(Exception):
    """Raised by :func:`compare_maps` when its ``cancel()`` callback returns True."""


# ------------------------------------------------------------ map handling
def _resolve_maps(maps) -> list[tuple[str, Callable[[], Any]]]:
    """``(label, factory)`` pairs; each factory returns a new unfitted map."""
    if maps is None:
        maps = ()
    if isinstance(maps, str):
        maps = available_maps() if maps == "all" else (maps,)
    items: Iterable[tuple[str | None, Any]]
    if isinstance(maps, Mapping):
        items = [(str(k), v) for k, v in maps.items()]
    else:
        items = [(None, spec) for spec in maps]

    resolved: list[tuple[str, Callable[[], Any]]] = []
    used = {UNCALIBRATED}
    for label, spec in items:
        if isinstance(spec, str):
            make_map(spec)  # fails early, with the list of known names, on a typo
            factory = (lambda s: lambda: make_map(s))(spec)
            default = spec
        elif hasattr(spec, "fit") and hasattr(spec, "predict_proba"):
            factory = (lambda m: lambda: clone(m))(spec)
            default = getattr(spec, "name", "") or type(spec).__name__
        else:
            raise CalibrationInputError(
                f"maps must be registry names (e.g. 'temperature'), 'all', or calibration map "
                f"instances; got {spec!r}."
            )
        if label is not None:
            if label in used:
                raise CalibrationInputError(
                    f"map label {label!r} is used twice (or is reserved); give each map its "
                    "own label."
                )
        else:
            label, n = default, 2
            while label in used:
                label, n = f"{default} #{n}", n + 1
        used.add(label)
        resolved.append((label, factory))
    return resolved


def _is_map_spec(value) -> bool:
    """A registry name or a calibration map instance (what ``maps`` lists)."""
    return isinstance(value, str) or (hasattr(value, "fit") and hasattr(value, "predict_proba"))


def _looks_like_maps(value) -> bool:
    """True for what ``maps`` takes and labels never are: names, maps, a mapping of them."""
    if _is_map_spec(value) or isinstance(value, Mapping):
        return True
    return isinstance(value, (list, tuple)) and all(_is_map_spec(v) for v in value)


def _comparison_inputs(probs, labels, maps) -> tuple[Predictions, Any]:
    """The Predictions and maps of :func:`compare_maps`, from arrays or a Predictions.

    The old call ``compare_maps(predictions, maps)`` (maps second) still works
    for one release, with a DeprecationWarning: labels are never names or maps.
    """
    if labels is not None and _looks_like_maps(labels):
        if maps is not _DEFAULT_MAPS:
            raise CalibrationInputError(
                f"compare_maps got maps twice ({labels!r} second and maps={maps!r}); the "
                "second argument is the labels: pass the maps only as maps=."
            )
        warnings.warn(
            "compare_maps(predictions, maps) is deprecated: the second argument is now the "
            "labels, as in every measure; pass the maps by keyword, "
            "compare_maps(predictions, maps=...). The old order stops working in the next "
            "release.",
            DeprecationWarning,
            stacklevel=3,
        )
        labels, maps = None, labels
    if isinstance(probs, Predictions) and labels is None:
        return probs, maps
    p, y, _ = measure_inputs(probs, labels, measure="compare_maps", validate=False)
    if isinstance(probs, Predictions):  # other labels for the same rows (and logits)
        y = np.array(y)
        y.flags.writeable = False
        return dataclasses.replace(probs, labels=y), maps
    if p.ndim == 1:  # P(class 1) of a binary problem
        return Predictions.from_scores(p, y), maps
    return Predictions.from_probs(p, y), maps


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, CalibrationInputError):
        return text
    return f"{type(exc).__name__}: {text}"


# --------------------------------------------------------------- the engine
def _settings(
    predictions: Predictions, plan: _RowPlan, seed, test_fraction, n_bins: int, scheme: Scheme
) -> dict:
    """What the comparison ran with (``Comparison.settings``)."""
    return {
        "model": predictions.name,
        "mode": "train_test" if plan.train_test else "crossfit",
        "folds": plan.n_folds,
        "seed": seed,
        "test_fraction": None if test_fraction is None else float(test_fraction),
        "splitter": plan.splitter,
        "n_bins": n_bins,
        "scheme": scheme,
        "n_samples": predictions.n_samples,
        "n_scored": int(plan.scored_rows.shape[0]),
        "n_classes": predictions.n_classes,
    }


def _map_row(run: _MapRun, metrics: dict[str, Any]) -> dict[str, Any]:
    """One map's table row: its held-out metrics, or NaN metrics and the fit's error."""
    if run.error is not None:
        return {
            **dict.fromkeys(METRIC_COLUMNS, math.nan),
            "fit_seconds": run.seconds,
            "converged": pd.NA,
            "error": run.error,
        }
    return {
        **metrics,
        "fit_seconds": run.seconds,
        "converged": not run.not_converged,
        "error": None,
    }


def _where(run: _MapRun, plan: _RowPlan) -> str:
    """Which fits of a map did not converge, in words."""
    if plan.train_test:
        return "the fit"
    return "fold(s) " + ", ".join(map(str, run.not_converged))


_DEFAULT_MAPS = ("temperature",)


def compare_maps(
    probs,
    labels=None,
    maps=_DEFAULT_MAPS,
    *,
    folds: int = 5,
    n_bins: int = 15,
    scheme: Scheme = "width",
    seed: int | None = 0,
    split=None,
    test_fraction: float | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelCallback | None = None,
) -> Comparison:
    """Compare calibration maps on held-out predictions.

    Parameters
    ----------
    probs : Predictions, or array-like of shape (N, K) or (N,)
        One model's predictions: a Predictions (its logits, when present, are
        used by the maps that read logits), probability rows, or P(class 1)
        of a binary problem (read as :meth:`Predictions.from_scores`). For
        logits, pass ``Predictions.from_logits(logits, labels)``.
    labels : array-like, shape (N,), optional
        True class indices; taken from ``probs`` when it is a Predictions.
    maps : "all", str, sequence or mapping
        Registry names (``"temperature"``), ``"all"`` (every available map),
        unfitted :class:`~calibration_core.maps.CalibrationMap` instances
        (cloned per fold), or a mapping of row label to name or instance.
        Instances are labelled by their registry ``name``; repeats get
        ``" #2"``, ``" #3"``, ... appended.
    folds : int
        Number of cross-fitting folds (>= 2). Ignored in train/test mode.
    n_bins : int
        Bins of the ECE/MCE columns.
    scheme : {"width", "frequency"}
        Equal-width or equal-frequency bins.
    seed : int or None
        Seed of the fold assignment or of the ``test_fraction`` split.
    split : array-like of bool, shape (N,), optional
        Train/test mode with a user split: True marks a test row.
    test_fraction : float in (0, 1), optional
        Train/test mode with a seeded, stratified random split.
    progress : callable(done, total, label), optional
        Called with ``done=0`` first, then after every fit (``total`` = maps
        times folds), ``label`` saying what was just done.
    cancel : callable() -> bool, optional
        Polled before every fit; when it returns True the comparison stops
        with :class:`ComparisonCancelled`.

    Returns
    -------
    Comparison
        See :class:`Comparison`. A map that raises does not stop the others:
        its row has NaN metrics and the message in ``error``. Matrix scaling
        and Dirichlet calibration with the same parameters are one model on
        probability input (:func:`~calibration_core.maps.same_model_as`): the
        second is not fitted again but takes the first one's rows and fitted
        states (``fit_seconds`` 0, a warning says so).

    Raises
    ------
    CalibrationInputError
        Bad predictions, unknown map names, bad folds/split/binning settings.
    ComparisonCancelled
        When ``cancel()`` returned True.
    """
    predictions, maps = _comparison_inputs(probs, labels, maps)
    n_bins, scheme = check_binning_args(n_bins, scheme)
    if split is not None and test_fraction is not None:
        raise CalibrationInputError("give either split or test_fraction, not both.")
    resolved = _resolve_maps(maps)
    notes: list[str] = []
    plan = _plan_rows(predictions, folds, seed, split, test_fraction, notes)
    scored = predictions.subset(plan.scored_rows) if plan.train_test else predictions
    settings = _settings(predictions, plan, seed, test_fraction, n_bins, scheme)
    tracker = _Tracker(len(resolved) * len(plan.parts), progress, cancel)
    tracker.report("starting")
    tracker.check_cancel()
    base = score_probs(scored.probs, scored.labels, n_bins=n_bins, scheme=scheme)
    rows: dict[str, dict[str, Any]] = {
        UNCALIBRATED: {**base, "fit_seconds": 0.0, "converged": pd.NA, "error": None}
    }
    calibrated: dict[str, Predictions] = {UNCALIBRATED: scored}
    fitted: dict[str, list[CalibrationMap]] = {}
    train_losses: dict[str, np.ndarray] = {
        UNCALIBRATED: np.array([log_loss(train.probs, train.labels) for train, _, _ in plan.parts])
    }
    runs: dict[str, _MapRun] = {}
    for label, factory in resolved:
        run = runs[label] = _map_run(label, factory, runs, plan, predictions, tracker, notes)
        notes.extend(f"{label}: {msg}" for msg in run.warnings)
        cal, metrics = _score_map(run, label, predictions, scored.labels, n_bins, scheme)
        rows[label] = _map_row(run, metrics)
        if run.error is not None:
            continue
        if run.not_converged:
            notes.append(f"{label}: the optimiser did not converge in {_where(run, plan)}.")
        calibrated[label] = cal
        fitted[label] = run.maps
        train_losses[label] = np.asarray(run.train_log_loss, dtype=np.float64)
    return Comparison(
        table=_table(rows),
        calibrated=calibrated,
        fitted=fitted,
        settings=settings,
        warnings=notes,
        scored_rows=plan.scored_rows,
        fold_ids=plan.fold_ids,
        train_log_loss=train_losses,
    )


def _map_run(
    label: str,
    factory,
    runs: dict[str, _MapRun],
    plan: _RowPlan,
    predictions: Predictions,
    tracker: _Tracker,
    notes: list[str],
) -> _MapRun:
    """Map ``label`` fitted on every part of ``plan``, or an earlier twin's fit reused."""
    twin = _same_fit(factory, runs, predictions.logits is not None)
    if twin is None:
        return _fit_folds(label, factory, plan, predictions.n_classes, tracker)
    tracker.done += len(plan.parts)
    tracker.report(f"{label}: the same model as {twin}")
    notes.append(f"{label}: the same model as {twin} on probabilities; its fit is reused.")
    return _reused_run(runs[twin], factory)


# ----------------------------------------------------------------- the steps
@dataclass
class _RowPlan:
    """Which rows fit and which rows score each map, shared by every map."""

    train_test: bool
    splitter: str
    n_folds: int | None
    #: ``(train, test, test rows)`` per fold (one in train/test mode).
    parts: list[tuple[Predictions, Predictions, np.ndarray]]
    scored_rows: np.ndarray
    fold_ids: np.ndarray
    #: Position of each input row within the scored rows (-1 if not scored).
    position: np.ndarray


def _plan_rows(predictions, folds, seed, split, test_fraction, notes) -> _RowPlan:
    labels, n = predictions.labels, predictions.n_samples
    train_test = split is not None or test_fraction is not None
    if train_test:
        splitter, mask = train_test_mask(labels, split, test_fraction, seed, notes)
        test_rows = np.flatnonzero(mask)
        plan = [(np.flatnonzero(~mask), test_rows)]
        scored_rows = test_rows
        fold_ids = np.where(mask, 0, -1).astype(np.intp)
        n_folds = None
    else:
        n_folds = check_folds(folds, n)
        splitter, fold_ids = crossfit_folds(labels, n_folds, seed, notes)
        plan = [
            (np.flatnonzero(fold_ids != i), np.flatnonzero(fold_ids == i)) for i in range(n_folds)
        ]
        scored_rows = np.arange(n)
    # Fit and predict data, built once and shared by every map.
    parts = [(predictions.subset(tr), predictions.subset(te), te) for tr, te in plan]
    position = np.full(n, -1, dtype=np.intp)
    position[scored_rows] = np.arange(scored_rows.shape[0])
    return _RowPlan(train_test, splitter, n_folds, parts, scored_rows, fold_ids, position)


class _Tracker:
    """Counts finished fits, reports progress and polls for cancellation."""

    def __init__(
        self, total: int, progress: ProgressCallback | None, cancel: CancelCallback | None
    ) -> None:
        self.total, self.done = total, 0
        self._progress, self._cancel = progress, cancel

    def report(self, label: str) -> None:
        if self._progress is not None:
            self._progress(self.done, self.total, label)

    def check_cancel(self) -> None:
        if self._cancel is not None and self._cancel():
            raise ComparisonCancelled(
                f"comparison cancelled after {self.done} of {self.total} fits"
            )


@dataclass
class _MapRun:
    """One map fitted on every fold: out-of-fold probabilities and what happened."""

    probs: np.ndarray
    maps: list[CalibrationMap] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    not_converged: list[int] = field(default_factory=list)
    #: Messages of the warnings the fits raised, each once, in order.
    warnings: dict[str, None] = field(default_factory=dict)
    #: Each fit's mean log-loss on its own training rows (for the verdict's interval).
    train_log_loss: list[float] = field(default_factory=list)


def _fit_folds(label, factory, plan: _RowPlan, n_classes: int, tracker: _Tracker) -> _MapRun:
    """Fit a new map on each fold's training rows and predict its test rows.

    A failing fold stops this map (its remaining fits count as done) but not the others.
    """
    parts = plan.parts
    run = _MapRun(np.empty((plan.scored_rows.shape[0], n_classes), dtype=np.float64))
    for i, (train, test, test_idx) in enumerate(parts):
        tracker.check_cancel()
        where = f"fold {i + 1} of {len(parts)}: " if not plan.train_test else ""
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cmap = factory()
                start = time.perf_counter()
                cmap.fit(train, train.labels)
                run.seconds += time.perf_counter() - start
                run.probs[plan.position[test_idx]] = cmap.predict_proba(test)
                run.train_log_loss.append(log_loss(cmap.predict_proba(train), train.labels))
            for w in caught:
                run.warnings[str(w.message)] = None
        except Exception as exc:  # one failing map must not stop the others
            run.error = where + _message(exc)
            tracker.done += len(parts) - i
            tracker.report(f"{label}: failed")
            break
        run.maps.append(cmap)
        if not bool(getattr(cmap, "converged_", True)):
            run.not_converged.append(i + 1)
        tracker.done += 1
        tracker.report(f"{label}: fold {i + 1} of {len(parts)}" if not plan.train_test else label)
    return run


def _same_fit(factory, runs: dict[str, _MapRun], has_logits: bool) -> str | None:
    """The label of a finished run that is the same model as ``factory``'s map, or None.

    Matrix scaling and Dirichlet calibration with the same parameters are one
    model on probability input (:func:`~calibration_core.maps.same_model_as`).
    """
    probe = factory()
    twin = same_model_as(getattr(probe, "name", ""), has_logits)
    if twin is None:
        return None
    for label, run in runs.items():
        first = run.maps[0] if run.maps else None
        if run.error is None and first is not None and first.name == twin:
            if first.get_params() == probe.get_params():
                return label
    return None


def _reused_run(run: _MapRun, factory) -> _MapRun:
    """``run`` under the map of ``factory``: the same rows, its fitted states relabelled."""
    name = factory().name
    maps = [CalibrationMap.from_dict({**m.to_dict(), "map": name}) for m in run.maps]
    return _MapRun(
        probs=run.probs,
        maps=maps,
        seconds=0.0,
        not_converged=list(run.not_converged),
        warnings=dict(run.warnings),
        train_log_loss=list(run.train_log_loss),
    )


def _score_map(run: _MapRun, label, predictions, y_scored, n_bins, scheme):
    """``(calibrated predictions, metrics)`` of a map's out-of-fold rows.

    Sets ``run.error`` (and returns ``(None, None)``) when the rows cannot be scored.
    """
    if run.error is not None:
        return None, None
    try:
        cal = Predictions.from_probs(
            run.probs,
            y_scored,
            class_names=predictions.class_names,
            name=f"{predictions.name} + {label}",
            where=f"the output of map {label!r}",
        )
        return cal, score_probs(cal.probs, y_scored, n_bins=n_bins, scheme=scheme)
    except Exception as exc:
        run.error = _message(exc)
        return None, None


def _table(rows: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """The comparison table: one row per map, columns :data:`TABLE_COLUMNS`."""
    table = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=list(TABLE_COLUMNS))
    table.index.name = "map"
    table["converged"] = table["converged"].astype("boolean")
    table["error"] = table["error"].astype(object).where(table["error"].notna(), None)
    return table
