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
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold, StratifiedShuffleSplit

from .binning import check_binning_args
from .errors import CalibrationInputError
from .maps import available_maps, make_map
from .maps.base import CalibrationMap
from .metrics import (
    accuracy,
    brier_score,
    classwise_statistics,
    confidence_statistics,
    log_loss,
)
from .predictions import Predictions

#: Name of the always-present first row.
UNCALIBRATED = "uncalibrated"
#: Metric columns of :attr:`Comparison.table`, named after the core metric functions.
METRIC_COLUMNS: tuple[str, ...] = (
    "accuracy",
    "confidence_ece",
    "confidence_mce",
    "classwise_ece",
    "classwise_mce",
    "brier_score",
    "log_loss",
)
#: All columns of :attr:`Comparison.table` (its index is named ``map``).
TABLE_COLUMNS: tuple[str, ...] = (*METRIC_COLUMNS, "fit_seconds", "converged", "error")

ProgressCallback = Callable[[int, int, str], Any]
CancelCallback = Callable[[], bool]


class ComparisonCancelled(Exception):
    """Raised by :func:`compare_maps` when its ``cancel()`` callback returns True."""


# ------------------------------------------------------------------ scoring
def score_probs(probs: np.ndarray, labels: np.ndarray, *, n_bins: int, scheme: str) -> dict:
    """The metric columns of one probability matrix.

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K)
    labels : numpy.ndarray, shape (N,)
    n_bins, scheme
        Binning of the ECE/MCE columns.

    Returns
    -------
    dict
        One float per name of :data:`METRIC_COLUMNS`; ECE and MCE of a notion
        come from one call of the core ``*_statistics`` function, exactly as
        ``confidence_ece`` / ``confidence_mce`` compute them.
    """
    conf = confidence_statistics(probs, labels, n_bins=n_bins, scheme=scheme)
    cw = classwise_statistics(probs, labels, n_bins=n_bins, scheme=scheme)
    return {
        "accuracy": accuracy(probs, labels),
        "confidence_ece": float(conf.ece()),
        "confidence_mce": float(conf.mce()),
        "classwise_ece": float(np.mean(cw.ece())),
        "classwise_mce": float(np.max(cw.mce())),
        "brier_score": brier_score(probs, labels),
        "log_loss": log_loss(probs, labels),
    }


# ------------------------------------------------------------------- result
def _json_value(value):
    """A table cell as a JSON value (NaN and pandas NA become None)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


@dataclass
class Comparison:
    """The result of :func:`compare_maps`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per map, index named ``map`` with ``"uncalibrated"`` first;
        columns :data:`TABLE_COLUMNS`: the metrics (NaN for a failed map),
        ``fit_seconds`` (sum over folds), ``converged`` (nullable boolean: NA
        for the uncalibrated row and for failed maps) and ``error`` (None, or
        the message of the failure).
    calibrated : dict of str to Predictions
        Map name to the out-of-fold calibrated predictions (same labels and
        class names, name ``f"{model} + {map}"``); ``"uncalibrated"`` holds
        the scored rows of the input. Failed maps are absent.
    fitted : dict of str to list of CalibrationMap
        Map name to the fitted map of each fold (one map in train/test mode),
        for parameter export. Failed maps are absent.
    settings : dict
        ``n_bins``, ``scheme``, ``mode`` ("crossfit" or "train_test"),
        ``folds``, ``seed``, ``test_fraction``, ``splitter``, ``model``,
        ``n_samples``, ``n_scored``, ``n_classes``.
    warnings : list of str
        Fallbacks (e.g. KFold instead of StratifiedKFold), convergence
        failures and warnings raised by the maps, each naming its map.
    scored_rows : numpy.ndarray, shape (n_scored,)
        Indices into the input predictions of the rows of every
        ``calibrated`` entry, in order (all rows in cross-fitting mode).
    fold_ids : numpy.ndarray, shape (N,)
        Cross-fitting: the fold of each input row. Train/test: 0 for test
        rows, -1 for train rows.
    """

    table: pd.DataFrame
    calibrated: dict[str, Predictions]
    fitted: dict[str, list[CalibrationMap]]
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    scored_rows: np.ndarray | None = None
    fold_ids: np.ndarray | None = None

    @property
    def errors(self) -> dict[str, str]:
        """Map name to error message, for the maps that failed."""
        err = self.table["error"]
        return {str(k): str(v) for k, v in err.items() if v is not None}

    def rows(self) -> list[dict[str, Any]]:
        """The table as a list of JSON-able dicts, ``map`` first, NaN as None."""
        out = []
        for name, row in self.table.iterrows():
            item = {"map": str(name)}
            item.update({col: _json_value(row[col]) for col in TABLE_COLUMNS})
            out.append(item)
        return out

    def to_dict(self, *, include_maps: bool = False) -> dict[str, Any]:
        """A JSON-able summary.

        Parameters
        ----------
        include_maps : bool
            Also export every fitted map (``CalibrationMap.to_dict``) under
            ``"maps"``: name to a list with one entry per fold.

        Returns
        -------
        dict
            ``model``, ``settings``, ``warnings`` and ``rows`` (see :meth:`rows`).
        """
        out: dict[str, Any] = {
            "model": self.settings.get("model"),
            "settings": {k: _json_value(v) for k, v in self.settings.items()},
            "warnings": list(self.warnings),
            "rows": self.rows(),
        }
        if include_maps:
            out["maps"] = {name: [m.to_dict() for m in maps] for name, maps in self.fitted.items()}
        return out


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


def _check_folds(folds, n: int) -> int:
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise CalibrationInputError(f"folds must be a whole number >= 2, got {folds!r}.")
    if folds > n:
        raise CalibrationInputError(
            f"folds={folds} is more than the {n} rows; use at most {n} folds."
        )
    return int(folds)


def _crossfit_folds(labels: np.ndarray, folds: int, seed, notes: list[str]):
    """``(splitter name, fold id per row)`` for cross-fitting."""
    counts = np.bincount(labels)
    smallest = int(counts[counts > 0].min())
    if smallest >= folds:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        name = "StratifiedKFold"
    else:
        splitter = KFold(n_splits=folds, shuffle=True, random_state=seed)
        name = "KFold"
        notes.append(
            f"a class has only {smallest} row(s), fewer than the {folds} folds: used plain "
            "shuffled KFold instead of StratifiedKFold, so some folds may miss that class."
        )
    fold_ids = np.empty(labels.shape[0], dtype=np.intp)
    for i, (_, test) in enumerate(splitter.split(np.zeros(labels.shape[0]), labels)):
        fold_ids[test] = i
    return name, fold_ids


def _test_mask(labels: np.ndarray, split, test_fraction, seed, notes: list[str]):
    """``(splitter name, boolean test mask)`` for train/test mode."""
    n = labels.shape[0]
    if split is not None:
        mask = np.asarray(split)
        if mask.ndim != 1 or mask.shape[0] != n:
            raise CalibrationInputError(
                f"split must be a boolean array with one entry per row ({n}), got shape "
                f"{mask.shape}."
            )
        if mask.dtype != bool:
            if mask.dtype.kind in "iuf" and np.isin(mask, (0, 1)).all():
                mask = mask.astype(bool)
            else:
                raise CalibrationInputError(
                    "split must be boolean (True = test row) or 0/1, got values of dtype "
                    f"{mask.dtype}."
                )
        name = "user split"
    else:
        frac = test_fraction
        if isinstance(frac, bool) or not isinstance(frac, (int, float, np.number)):
            raise CalibrationInputError(f"test_fraction must be a number, got {frac!r}.")
        if not 0.0 < float(frac) < 1.0:
            raise CalibrationInputError(
                f"test_fraction must be strictly between 0 and 1, got {frac}."
            )
        frac = float(frac)
        mask = np.zeros(n, dtype=bool)
        try:
            splitter = StratifiedShuffleSplit(n_splits=1, test_size=frac, random_state=seed)
            _, test = next(splitter.split(np.zeros(n), labels))
            name = "StratifiedShuffleSplit"
        except ValueError as exc:
            notes.append(
                f"a stratified split was not possible ({exc}); used a plain shuffled split."
            )
            try:
                _, test = next(
                    ShuffleSplit(n_splits=1, test_size=frac, random_state=seed).split(np.zeros(n))
                )
            except ValueError as exc2:
                raise CalibrationInputError(
                    f"cannot split {n} rows with test_fraction={frac}: {exc2}"
                ) from None
            name = "ShuffleSplit"
        mask[test] = True
    n_test = int(mask.sum())
    if n_test == 0 or n_test == n:
        raise CalibrationInputError(
            f"the split has {n_test} test rows and {n - n_test} train rows; both parts must "
            "be non-empty."
        )
    return name, mask


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
        splitter, mask = _test_mask(labels, split, test_fraction, seed, notes)
        test_rows = np.flatnonzero(mask)
        plan = [(np.flatnonzero(~mask), test_rows)]
        scored_rows = test_rows
        fold_ids = np.where(mask, 0, -1).astype(np.intp)
        n_folds = None
    else:
        n_folds = _check_folds(folds, n)
        splitter, fold_ids = _crossfit_folds(labels, n_folds, seed, notes)
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
