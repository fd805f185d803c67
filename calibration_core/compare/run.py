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

import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from ..binning import check_binning_args
from ..errors import CalibrationInputError
from ..maps import available_maps, make_map
from ..maps.base import CalibrationMap
from ..predictions import Predictions
from .folds import check_folds, crossfit_folds, train_test_mask
from .results import METRIC_COLUMNS, TABLE_COLUMNS, UNCALIBRATED, Comparison, score_probs

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


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, CalibrationInputError):
        return text
    return f"{type(exc).__name__}: {text}"


# --------------------------------------------------------------- the engine
def compare_maps(
    predictions: Predictions,
    maps=("temperature",),
    *,
    folds: int = 5,
    n_bins: int = 15,
    scheme: str = "width",
    seed: int | None = 0,
    split=None,
    test_fraction: float | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelCallback | None = None,
) -> Comparison:
    """Compare calibration maps on held-out predictions.

    Parameters
    ----------
    predictions : Predictions
        One model's probabilities (and logits, used by maps when present)
        with the true labels, N rows and K classes.
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
        its row has NaN metrics and the message in ``error``.

    Raises
    ------
    CalibrationInputError
        Bad predictions, unknown map names, bad folds/split/binning settings.
    ComparisonCancelled
        When ``cancel()`` returned True.
    """
    if not isinstance(predictions, Predictions):
        raise CalibrationInputError(
            "compare_maps needs a Predictions (e.g. Predictions.from_probs(probs, labels) or "
            f"load_predictions(path)[0]), got {type(predictions).__name__}."
        )
    n_bins, scheme = check_binning_args(n_bins, scheme)
    if split is not None and test_fraction is not None:
        raise CalibrationInputError("give either split or test_fraction, not both.")
    resolved = _resolve_maps(maps)
    labels = predictions.labels
    n, k = predictions.n_samples, predictions.n_classes
    notes: list[str] = []

    # Which rows fit which map, and which rows are scored.
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
    # Positions of each fold's rows within the scored rows (identity for cross-fitting).
    position = np.full(n, -1, dtype=np.intp)
    position[scored_rows] = np.arange(scored_rows.shape[0])
    scored = predictions if not train_test else predictions.subset(scored_rows)
    y_scored = scored.labels

    settings = {
        "model": predictions.name,
        "mode": "train_test" if train_test else "crossfit",
        "folds": n_folds,
        "seed": seed,
        "test_fraction": None if test_fraction is None else float(test_fraction),
        "splitter": splitter,
        "n_bins": n_bins,
        "scheme": scheme,
        "n_samples": n,
        "n_scored": int(scored_rows.shape[0]),
        "n_classes": k,
    }

    total = len(resolved) * len(parts)
    done = 0

    def report(label: str) -> None:
        if progress is not None:
            progress(done, total, label)

    def check_cancel() -> None:
        if cancel is not None and cancel():
            raise ComparisonCancelled(f"comparison cancelled after {done} of {total} fits")

    report("starting")
    check_cancel()
    rows: dict[str, dict[str, Any]] = {}
    base = score_probs(scored.probs, y_scored, n_bins=n_bins, scheme=scheme)
    rows[UNCALIBRATED] = {**base, "fit_seconds": 0.0, "converged": pd.NA, "error": None}
    calibrated: dict[str, Predictions] = {UNCALIBRATED: scored}
    fitted: dict[str, list[CalibrationMap]] = {}
    nan_metrics = dict.fromkeys(METRIC_COLUMNS, math.nan)

    for label, factory in resolved:
        out = np.empty((scored_rows.shape[0], k), dtype=np.float64)
        fold_maps: list = []
        seconds = 0.0
        error = None
        not_converged: list[int] = []
        seen_warnings: dict[str, None] = {}
        for i, (train, test, test_idx) in enumerate(parts):
            check_cancel()
            where = f"fold {i + 1} of {len(parts)}: " if not train_test else ""
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    cmap = factory()
                    start = time.perf_counter()
                    cmap.fit(train, train.labels)
                    seconds += time.perf_counter() - start
                    out[position[test_idx]] = cmap.predict_proba(test)
                for w in caught:
                    seen_warnings[str(w.message)] = None
            except Exception as exc:  # one failing map must not stop the others
                error = where + _message(exc)
            else:
                fold_maps.append(cmap)
                if not bool(getattr(cmap, "converged_", True)):
                    not_converged.append(i + 1)
            if error is not None:
                done += len(parts) - i
                report(f"{label}: failed")
                break
            done += 1
            report(f"{label}: fold {i + 1} of {len(parts)}" if not train_test else label)

        for msg in seen_warnings:
            notes.append(f"{label}: {msg}")
        if error is None:
            try:
                cal = Predictions.from_probs(
                    out,
                    y_scored,
                    class_names=predictions.class_names,
                    name=f"{predictions.name} + {label}",
                    where=f"the output of map {label!r}",
                )
                metrics = score_probs(cal.probs, y_scored, n_bins=n_bins, scheme=scheme)
            except Exception as exc:
                error = _message(exc)
        if error is not None:
            rows[label] = {
                **nan_metrics,
                "fit_seconds": seconds,
                "converged": pd.NA,
                "error": error,
            }
            continue
        if not_converged:
            which = "the fit" if train_test else "fold(s) " + ", ".join(map(str, not_converged))
            notes.append(f"{label}: the optimiser did not converge in {which}.")
        rows[label] = {
            **metrics,
            "fit_seconds": seconds,
            "converged": not not_converged,
            "error": None,
        }
        calibrated[label] = cal
        fitted[label] = fold_maps

    table = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=list(TABLE_COLUMNS))
    table.index.name = "map"
    table["converged"] = table["converged"].astype("boolean")
    table["error"] = table["error"].astype(object).where(table["error"].notna(), None)
    return Comparison(
        table=table,
        calibrated=calibrated,
        fitted=fitted,
        settings=settings,
        warnings=notes,
        scored_rows=scored_rows,
        fold_ids=fold_ids,
    )
