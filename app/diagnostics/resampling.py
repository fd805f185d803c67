"""The resampling test and the bootstrap intervals of the Diagnostics section.

For every calibrator of a :class:`~app.diagnostics.target.DiagTarget`:

* the **resampling test** (:func:`calibration_core.calibration_test`) of one
  measure of :data:`~app.diagnostics.target.MEASURE_LABELS`;
* **bootstrap intervals** (:func:`calibration_core.bootstrap_ci`) of every
  column of the metrics table.

Both take seconds to minutes on a million rows, so they run on demand in a
background job (``compute=True``), and their results are kept in the disk
store by (calibrated predictions, settings) as plain values, where the page
and the HTML report read them (``compute=False``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# Diagnostics come from their modules: ``calibration_core`` loads them lazily.
from calibration_core import Predictions
from calibration_core.bootstrap import bootstrap_ci, default_interval
from calibration_core.measures.significance import CalibrationTestResult, calibration_test

from ..settings import SettingsError, ViewSettings
from ..store.data_store import DataStore
from ..store.records import ModelInfo
from .target import MEASURE_LABELS, DiagTarget, NotionSpec, notion_spec

#: Seed of every resampling diagnostic (the same numbers on every run).
SEED = 0
BINNED_MEASURES = {m for m in MEASURE_LABELS if m.endswith(("_ece", "_mce"))}
#: Message of a calibrator whose intervals are not in the store yet.
NOT_COMPUTED = "not computed yet for these settings"
#: Bootstrap columns: the metrics table's fields.
BOOT_FIELDS = ("ece", "mce", "classwise_ece", "brier_score", "log_loss", "accuracy")

#: ``progress(done, total, text)``: how a background job reports its progress.
Progress = Callable[[int, int, str], None]


# ---------------------------------------------------------- resampling test
def check_measure(measure: str, info: ModelInfo) -> None:
    """Binary measures need two classes."""
    if measure.startswith("binary_") and info.n_classes != 2:
        raise SettingsError(
            f"{MEASURE_LABELS[measure]} needs 2 classes; {info.name} has {info.n_classes}. "
            "Pick a confidence or classwise measure."
        )


def resampling_key(variant_handle: str, measure: str, view: ViewSettings, n_resamples: int) -> str:
    """Disk-store key of a test result (binning only matters for ECE/MCE measures)."""
    binning = f"{view.scheme}{view.n_bins}" if measure in BINNED_MEASURES else "-"
    # "2": Brier and log-loss tests became two-sided (issue 16); "3": ties of the null with
    # the observed value are broken at random (MCE p-values changed). Older results are not reused.
    return f"diag:test3:{variant_handle}:{measure}:{binning}:{n_resamples}:{SEED}"


def _test_record(result: CalibrationTestResult) -> dict:
    """A test result as plain values for the disk store (no pickled core classes).

    The null distribution ``null`` is a float64 array of shape ``(n_resamples,)``.
    """
    return {
        "measure": result.measure,
        "observed": result.observed,
        "null": np.asarray(result.null, dtype=np.float64),
        "p_value": result.p_value,
        "n_resamples": result.n_resamples,
        "seed": result.seed,
        "n_bins": result.n_bins,
        "scheme": result.scheme,
        "sides": result.sides,
        "null_mean": result.null_mean,
    }


def _test_result(record: dict) -> CalibrationTestResult:
    """The result :func:`_test_record` stored."""
    return CalibrationTestResult(**record)


@dataclass
class ResamplingRow:
    """The resampling test of one calibrator: a result, or why there is none."""

    calibrator: str
    result: CalibrationTestResult | None = None
    message: str | None = None


def calibration_tests(
    store: DataStore,
    target: DiagTarget,
    measure: str,
    n_resamples: int,
    *,
    compute: bool = False,
    progress: Progress | None = None,
) -> list[ResamplingRow]:
    """The resampling test of every calibrator: from the store, or computed (and stored).

    Parameters
    ----------
    store : DataStore
    target : DiagTarget
    measure : str
        A key of :data:`~app.diagnostics.target.MEASURE_LABELS` (binary ones need K = 2).
    n_resamples : int
    compute : bool
        Run the missing tests (the background job); otherwise missing ones
        carry a "press Run" message.
    progress : callable(done, total, text), optional

    Returns
    -------
    list of ResamplingRow
        One per calibrator, in the target's order.

    Raises
    ------
    SettingsError
        A binary measure for a model with K != 2.
    """
    check_measure(measure, target.info)
    view = target.view
    rows: list[ResamplingRow] = []
    todo = [
        v
        for v in target.ready
        if store.cache.get(resampling_key(v.handle, measure, view, n_resamples)) is None
    ]
    done = 0
    for v in target.variants:
        if v.pred is None:
            rows.append(ResamplingRow(v.calibrator, message=v.message))
            continue
        key = resampling_key(v.handle, measure, view, n_resamples)
        result = store.cache.get(key)
        if result is None and compute:
            if progress is not None:
                progress(done, len(todo), f"testing {v.calibrator} ({done + 1}/{len(todo)}) …")
            result = _test_record(
                calibration_test(
                    v.pred,
                    measure=measure,
                    n_resamples=n_resamples,
                    seed=SEED,
                    n_bins=view.n_bins,
                    scheme=view.scheme,
                )
            )
            store.cache.set(key, result, expire=store.ttl)
            done += 1
        if result is None:
            rows.append(ResamplingRow(v.calibrator, message="not run yet: press “Run test”"))
        else:
            rows.append(ResamplingRow(v.calibrator, result=_test_result(result)))
    if progress is not None and compute:
        progress(len(todo), max(len(todo), 1), "")
    return rows


# ---------------------------------------------------------------- bootstrap
@dataclass(frozen=True)
class BootPlan:
    """How one metrics-table column is bootstrapped for a notion."""

    field: str
    metric: str
    kwargs: tuple = ()
    one_vs_rest: int | None = None  # bootstrap the class-k-vs-rest binary problem


def boot_plans(spec: NotionSpec, view: ViewSettings) -> list[BootPlan]:
    """The core metric behind each column of the metrics table, for ``spec``.

    ECE/MCE: ``confidence_*`` (confidence), ``binary_*`` (binary), ``binary_*``
    of the two-column problem ``[1 - p_k, p_k]`` against ``label == k`` (one
    class vs rest: the same bins and the same value as the table's), or
    ``classwise_*`` (all classes: the mean of the class ECEs, the largest MCE).
    """
    binning = (("n_bins", view.n_bins), ("scheme", view.scheme))
    family = {"confidence": "confidence", "binary": "binary", "class": "binary"}.get(
        spec.kind, "classwise"
    )
    k = spec.class_index if spec.kind == "class" else None
    return [
        BootPlan("ece", f"{family}_ece", binning, k),
        BootPlan("mce", f"{family}_mce", binning, k),
        BootPlan("classwise_ece", "classwise_ece", binning),
        BootPlan("brier_score", "brier_score"),
        BootPlan("log_loss", "log_loss"),
        BootPlan("accuracy", "accuracy"),
    ]


def boot_key(variant_handle: str, plan: BootPlan, level: float, n_resamples: int) -> str:
    """Disk-store key of one bootstrap interval."""
    kw = ",".join(f"{k}={v}" for k, v in plan.kwargs)
    interval = default_interval(plan.metric)  # the core's default (docs/statistics.md)
    return (
        f"diag:boot:{variant_handle}:{plan.metric}:{plan.one_vs_rest}:{kw}:{interval}:"
        f"{level}:{n_resamples}:{SEED}"
    )


def bootstrap_one(pred: Predictions, plan: BootPlan, level: float, n_resamples: int) -> dict:
    """:func:`calibration_core.bootstrap_ci` of one column (samples dropped).

    Parameters
    ----------
    pred : Predictions
        Scores of shape ``(N, K)`` and labels of shape ``(N,)``; for a
        one-vs-rest plan, the scores become ``[1 - p_k, p_k]`` of shape
        ``(N, 2)`` and the labels ``label == k``.
    plan : BootPlan
    level : float
    n_resamples : int

    Returns
    -------
    dict
        ``estimate``, ``lower``, ``upper``, ``corrected`` (floats), ``interval``
        and ``method`` (plain values for the disk store).
    """
    probs, labels = pred.probs, pred.labels
    if plan.one_vs_rest is not None:
        column = np.asarray(probs[:, plan.one_vs_rest], dtype=np.float64)
        probs = np.column_stack([1.0 - column, column])
        labels = (labels == plan.one_vs_rest).astype(np.int64)
    result = bootstrap_ci(
        plan.metric,
        probs,
        labels,
        level=level,
        n_resamples=n_resamples,
        seed=SEED,
        **dict(plan.kwargs),
    )
    return {
        "estimate": result.estimate,
        "lower": result.lower,
        "upper": result.upper,
        "corrected": result.corrected,
        "interval": result.interval,
        "method": result.method,
    }


@dataclass
class BootRow:
    """Bootstrap intervals of one calibrator: field -> estimate/lower/upper dict."""

    calibrator: str
    intervals: dict[str, dict] = field(default_factory=dict)
    message: str | None = None

    @property
    def complete(self) -> bool:
        """Every column has its interval."""
        return all(f in self.intervals for f in BOOT_FIELDS)


def bootstrap_rows(
    store: DataStore,
    target: DiagTarget,
    level: float,
    n_resamples: int,
    *,
    compute: bool = False,
    progress: Progress | None = None,
) -> list[BootRow]:
    """Bootstrap intervals of every metrics-table column and calibrator (stored, or computed).

    Parameters
    ----------
    store : DataStore
    target : DiagTarget
    level : float
        One of :data:`~app.diagnostics.target.BOOT_LEVELS`.
    n_resamples : int
    compute : bool
        Compute (and store) the missing intervals (the background job);
        otherwise a calibrator missing some carries :data:`NOT_COMPUTED`.
    progress : callable(done, total, text), optional

    Returns
    -------
    list of BootRow
        One per calibrator, in the target's order.
    """
    plans = boot_plans(notion_spec(target.info, target.view), target.view)
    rows = []
    todo = [
        (v, p)
        for v in target.ready
        for p in plans
        if store.cache.get(boot_key(v.handle, p, level, n_resamples)) is None
    ]
    done = 0
    for v in target.variants:
        row = BootRow(v.calibrator, message=v.message)
        rows.append(row)
        if v.pred is None:
            continue
        for plan in plans:
            key = boot_key(v.handle, plan, level, n_resamples)
            value = store.cache.get(key)
            if value is None and compute:
                if progress is not None:
                    progress(done, len(todo), f"bootstrap: {v.calibrator}, {plan.field} …")
                value = bootstrap_one(v.pred, plan, level, n_resamples)
                store.cache.set(key, value, expire=store.ttl)
                done += 1
            if value is not None:
                row.intervals[plan.field] = value
        if not row.complete:
            row.message = NOT_COMPUTED
    if progress is not None and compute:
        progress(len(todo), max(len(todo), 1), "")
    return rows
