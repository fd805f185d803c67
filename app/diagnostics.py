"""Diagnostics of one model and its fitted calibrators: how far to trust each number.

Core calls only (no Dash, no Plotly), like :mod:`app.analysis`. For the model
picked in the Diagnostics section, every *calibrator* of the view (the
uncalibrated predictions first, then each selected map already in the fit
store; all scored on held-out rows, see :class:`app.settings.HeldOut`) gets:

* **ECE sensitivity**: :func:`calibration_core.ece_sensitivity` for 2..100
  bins and both schemes, from the load-time sorted scores (cheap);
* **ECE estimators**: the plug-in ECE of the view's binning, the adaptive
  (equal-mass) ECE, the plug-in and the debiased (Kumar et al. 2019) L2
  errors and ACE, read off per-bin statistics of the sorted scores (equal to
  :func:`~calibration_core.adaptive_ece`, :func:`~calibration_core.debiased_ece`,
  :func:`~calibration_core.plugin_calibration_error` and
  :func:`~calibration_core.adaptive_classwise_ece`, without a pass over the rows);
* **Hosmer-Lemeshow** (:func:`calibration_core.hosmer_lemeshow`) with the
  held-out degrees of freedom ``G (K - 1)``: the dashboard's predictions are
  test predictions, and every map is scored on rows it was not fitted on;
* the **resampling test** (:func:`calibration_core.calibration_test`) and
  **bootstrap intervals** (:func:`calibration_core.bootstrap_ci`): seconds to
  minutes on a million rows, so they run on demand in a background job, and
  their results are kept in the disk store by (calibrated predictions,
  settings), where the page and the HTML report read them;
* the **decision view** (binary problems,
  :func:`calibration_core.compare_expected_costs`);
* **human-uncertainty calibration** (:func:`calibration_core.human_uncertainty_calibration`)
  when the upload carried soft labels.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# Diagnostics come from their modules: ``calibration_core`` loads them lazily, and
# ``from calibration_core import hosmer_lemeshow`` can yield the submodule of that name.
from calibration_core import Binning, BinStatistics, CalibrationInputError, Predictions
from calibration_core.bootstrap import bootstrap_ci
from calibration_core.decision import (
    DecisionComparison,
    compare_expected_costs,
    cost_curve,
    cost_threshold,
    prior_shift_threshold,
)
from calibration_core.ece_variants import squared_error_terms
from calibration_core.goodness_of_fit import (
    MIN_RECOMMENDED_SAMPLES,
    SmallSampleWarning,
    hosmer_lemeshow,
)
from calibration_core.human_uncertainty import (
    HumanUncertaintyResult,
    human_uncertainty_calibration,
)
from calibration_core.sensitivity import EceSensitivity, ece_sensitivity
from calibration_core.significance import CalibrationTestResult, calibration_test

from .analysis import UNCALIBRATED, Variant, targets, variants
from .settings import HeldOut, RawSettings, SettingsError, ViewSettings, parse_handles
from .soft_labels import get_soft_labels, has_soft_labels
from .store import DataStore, ModelInfo

#: Seed of every resampling diagnostic (the same numbers on every run).
SEED = 0
RESAMPLE_CHOICES = (200, 500, 1000, 2000, 5000)
DEFAULT_RESAMPLES = 1000
HL_MIN_GROUPS, HL_MAX_GROUPS, HL_DEFAULT_GROUPS = 3, 50, 10
BOOT_LEVELS = (0.8, 0.9, 0.95, 0.99)
DEFAULT_BOOT_LEVEL = 0.95
MAX_COST = 1e12
#: Below this many rows the Hosmer-Lemeshow test has little power (survey §6).
HL_SMALL_SAMPLE = MIN_RECOMMENDED_SAMPLES
#: Resampling-test measures (the core's names) and how the page names them.
MEASURE_LABELS = {
    "confidence_ece": "confidence ECE",
    "confidence_mce": "confidence MCE",
    "classwise_ece": "classwise ECE",
    "classwise_mce": "classwise MCE",
    "binary_ece": "binary ECE (K = 2)",
    "binary_mce": "binary MCE (K = 2)",
    "brier_score": "Brier score",
    "log_loss": "log-loss",
}
BINNED_MEASURES = {m for m in MEASURE_LABELS if m.endswith(("_ece", "_mce"))}
#: Bootstrap columns: the metrics table's fields.
#: Message of a calibrator whose intervals are not in the store yet.
NOT_COMPUTED = "not computed yet for these settings"
BOOT_FIELDS = ("ece", "mce", "classwise_ece", "brier_score", "log_loss", "accuracy")
#: Binned errors get the basic interval (they are biased upwards), row means the percentile one.
BOOT_INTERVAL = {
    "ece": "basic",
    "mce": "basic",
    "classwise_ece": "basic",
    "brier_score": "percentile",
    "log_loss": "percentile",
    "accuracy": "percentile",
}


# ------------------------------------------------------------------ settings
def _choice_number(value, what: str, choices) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in choices:
        raise SettingsError(f"{what} must be one of {', '.join(map(str, choices))}; got {value!r}.")
    return type(choices[0])(value)


def parse_measure(value) -> str:
    """A resampling-test measure (a key of :data:`MEASURE_LABELS`)."""
    if not isinstance(value, str) or value not in MEASURE_LABELS:
        raise SettingsError(f"the test measure must be one of {', '.join(MEASURE_LABELS)}.")
    return value


def parse_resamples(value) -> int:
    """A number of resamples of :data:`RESAMPLE_CHOICES`."""
    return int(_choice_number(value, "the number of resamples", RESAMPLE_CHOICES))


def parse_level(value) -> float:
    """A bootstrap level of :data:`BOOT_LEVELS`."""
    return float(_choice_number(value, "the interval level", BOOT_LEVELS))


def parse_groups(value) -> int:
    """Hosmer-Lemeshow groups, 3..50."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(
            f"the number of groups must be a whole number from {HL_MIN_GROUPS} to {HL_MAX_GROUPS}."
        )
    if not (math.isfinite(value) and float(value).is_integer()):
        raise SettingsError("the number of groups must be a whole number.")
    if not HL_MIN_GROUPS <= value <= HL_MAX_GROUPS:
        raise SettingsError(
            f"the number of groups must be from {HL_MIN_GROUPS} to {HL_MAX_GROUPS}, got {value}."
        )
    return int(value)


def parse_costs(cost_fp, cost_fn) -> tuple[float, float]:
    """``(C(+|-), C(-|+))``: finite costs >= 0, not both 0."""
    out = []
    for value, what in (
        (cost_fp, "C(+|−), the cost of a false positive,"),
        (cost_fn, "C(−|+), the cost of a false negative,"),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SettingsError(f"{what} must be a number >= 0.")
        if not (math.isfinite(value) and 0 <= value <= MAX_COST):
            raise SettingsError(f"{what} must be a number from 0 to {MAX_COST:g}.")
        out.append(float(value))
    if out[0] + out[1] == 0:
        raise SettingsError("the two costs are both 0: give at least one a positive cost.")
    return out[0], out[1]


def parse_prior(value, what: str) -> float | None:
    """An optional positive-class rate in (0, 1) (None or empty: not given)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(f"{what} must be a positive-class rate between 0 and 1.")
    if not (math.isfinite(value) and 0 < value < 1):
        raise SettingsError(f"{what} must lie strictly between 0 and 1, got {value!r}.")
    return float(value)


def remember(store: DataStore, sid, part: str, values: dict) -> None:
    """Keep the Diagnostics settings a session last used (read by the HTML report)."""
    if sid:
        store.cache.set(f"diag:settings:{sid}:{part}", values, expire=store.ttl)


def remembered(store: DataStore, sid, part: str) -> dict:
    """The settings :func:`remember` kept for ``part`` (empty when none)."""
    if not sid:
        return {}
    value = store.cache.get(f"diag:settings:{sid}:{part}", default=None)
    return value if isinstance(value, dict) else {}


# -------------------------------------------------------------------- target
@dataclass
class DiagTarget:
    """One model, the view's settings and its calibrators (uncalibrated first)."""

    info: ModelInfo
    view: ViewSettings
    heldout: HeldOut
    maps: tuple[str, ...]
    variants: list[Variant] = field(default_factory=list)

    @property
    def ready(self) -> list[Variant]:
        """Calibrators whose predictions are in the store."""
        return [v for v in self.variants if v.pred is not None]

    @property
    def n_scored(self) -> int | None:
        """Rows every calibrator is scored on (held-out rows in split mode)."""
        first = self.variants[0] if self.variants else None
        return None if first is None or first.pred is None else first.pred.n_samples


def diag_target(store: DataStore, sid, handle, raw: RawSettings) -> DiagTarget:
    """The model ``handle`` with the view's maps, held-out scheme and binning.

    Raises
    ------
    CalibrationInputError
        A bad setting, or a model the session cannot use (``SettingsError``,
        ``DataUnavailable``).
    """
    if not handle:
        raise SettingsError("Pick a model above to see its diagnostics.")
    (handle,) = parse_handles([handle])
    _, maps, heldout, view = RawSettings(
        [handle],
        raw.maps,
        raw.heldout,
        raw.folds,
        raw.fraction,
        raw.notion,
        raw.class_value,
        raw.scheme,
        raw.n_bins,
        "none",
        0.95,
    ).parse()
    info = store.resolve(sid, handle)
    return DiagTarget(info, view, heldout, maps, variants(store, info, maps, heldout))


@dataclass(frozen=True)
class NotionSpec:
    """The view's notion for one model: which score columns its ECE uses.

    ``kind`` is "confidence", "binary", "class" (``class_index``) or
    "classwise" (the mean over classes: the one-vs-rest view of all classes).
    """

    kind: str
    class_index: int | None = None
    label: str = ""

    def columns(self, n_classes: int) -> list[tuple[str, int | None]]:
        """``(notion, class index)`` of each score column."""
        if self.kind == "classwise":
            return [("class", j) for j in range(n_classes)]
        return [(self.kind, self.class_index)]


def notion_spec(info: ModelInfo, view: ViewSettings) -> NotionSpec:
    """The notion of the view for ``info`` (raises for binary on K != 2, unknown class)."""
    rows = targets(info, view)
    if view.notion == "confidence":
        return NotionSpec("confidence", None, "confidence (top label)")
    if view.notion == "binary":
        return NotionSpec("binary", None, f"binary (class {info.class_names[1]})")
    if view.all_classes:
        return NotionSpec("classwise", None, "one class vs rest, mean over all classes")
    k, label = rows[0]
    return NotionSpec("class", k, f"one class vs rest (class {label})")


def _statistics(pred: Predictions, binning: Binning, spec: NotionSpec) -> list[BinStatistics]:
    return [pred.statistics(binning, n, k) for n, k in spec.columns(pred.n_classes)]


def _memo(store: DataStore, variant: Variant, key: tuple, compute):
    if variant.handle is None:
        return compute()
    return store.memo(("diag", variant.handle, *key), compute)


# --------------------------------------------------------------- sensitivity
def sensitivity_curves(store: DataStore, target: DiagTarget) -> list[tuple[str, EceSensitivity]]:
    """ECE against 2..100 bins, both schemes, for every calibrator (from sorted scores)."""
    spec = notion_spec(target.info, target.view)
    out = []
    for v in target.ready:

        def compute(pred=v.pred):
            return ece_sensitivity(pred, notion=spec.kind, class_index=spec.class_index)

        out.append((v.calibrator, _memo(store, v, ("sens", spec), compute)))
    return out


# ---------------------------------------------------------------- estimators
@dataclass
class EstimatorRow:
    """ECE estimators of one calibrator (see :func:`estimator_rows`)."""

    calibrator: str
    plugin_ece: float | None = None
    adaptive_ece: float | None = None
    plugin_l2: float | None = None
    debiased_l2: float | None = None
    ace: float | None = None
    message: str | None = None


def _l2_terms(stats: list[BinStatistics], debias: bool) -> list[float]:
    return [
        float(squared_error_terms(s.count, s.sum_score, s.sum_target, debias=debias)) for s in stats
    ]


def estimators(pred: Predictions, spec: NotionSpec, view: ViewSettings) -> EstimatorRow:
    """Plug-in, adaptive, plug-in L2, debiased L2 and ACE of one set of predictions.

    Every estimator uses ``view.n_bins`` bins; all but the plug-in ECE (the
    view's scheme) use equal-mass bins, as their authors do. The values equal
    the core functions' (``adaptive_ece``, ``plugin_calibration_error(p=2)``,
    ``debiased_ece``, ``adaptive_classwise_ece``) with those settings.
    """
    n = view.n_bins
    plugin = _statistics(pred, Binning(view.scheme, n), spec)
    mass = _statistics(pred, Binning("frequency", n), spec)
    per_class = (
        mass if spec.kind == "classwise" else pred.classwise_statistics(Binning("frequency", n))
    )
    gaps = np.concatenate([s.gap[s.count > 0] for s in per_class])
    return EstimatorRow(
        calibrator="",
        plugin_ece=float(np.mean([s.ece() for s in plugin])),
        adaptive_ece=float(np.mean([s.ece() for s in mass])),
        plugin_l2=float(np.sqrt(np.mean(_l2_terms(mass, debias=False)))),
        debiased_l2=float(np.sqrt(np.mean([max(t, 0.0) for t in _l2_terms(mass, True)]))),
        ace=float(gaps.mean()),
    )


def estimator_rows(store: DataStore, target: DiagTarget) -> list[EstimatorRow]:
    """:func:`estimators` of every calibrator (pending ones carry their message)."""
    spec = notion_spec(target.info, target.view)
    view = target.view
    rows = []
    for v in target.variants:
        if v.pred is None:
            rows.append(EstimatorRow(v.calibrator, message=v.message))
            continue
        key = ("est", spec, view.scheme, view.n_bins)
        row = _memo(store, v, key, lambda pred=v.pred: estimators(pred, spec, view))
        rows.append(EstimatorRow(**{**row.__dict__, "calibrator": v.calibrator}))
    return rows


# ------------------------------------------------------------ Hosmer-Lemeshow
@dataclass
class HosmerLemeshowRow:
    """Hosmer-Lemeshow test of one calibrator (held-out degrees of freedom)."""

    calibrator: str
    statistic: float | None = None
    dof: int | None = None
    p_value: float | None = None
    n_groups: int | None = None
    n: int | None = None
    small_sample: bool = False
    message: str | None = None


def _hosmer_lemeshow(pred: Predictions, groups: int) -> HosmerLemeshowRow:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SmallSampleWarning)
        try:
            result = hosmer_lemeshow(pred, n_groups=groups, holdout=True)
        except CalibrationInputError as exc:
            return HosmerLemeshowRow("", n=pred.n_samples, message=str(exc))
    return HosmerLemeshowRow(
        calibrator="",
        statistic=result.statistic,
        dof=result.dof,
        p_value=result.p_value,
        n_groups=result.n_groups,
        n=pred.n_samples,
        small_sample=any(issubclass(w.category, SmallSampleWarning) for w in caught),
    )


def hosmer_lemeshow_rows(
    store: DataStore, target: DiagTarget, groups: int = HL_DEFAULT_GROUPS
) -> list[HosmerLemeshowRow]:
    """Hosmer-Lemeshow (binary, or Fagerland's multinomial) of every calibrator, cached."""
    rows = []
    for v in target.variants:
        if v.pred is None:
            rows.append(HosmerLemeshowRow(v.calibrator, message=v.message))
            continue
        row = _memo(store, v, ("hl", groups), lambda pred=v.pred: _hosmer_lemeshow(pred, groups))
        rows.append(HosmerLemeshowRow(**{**row.__dict__, "calibrator": v.calibrator}))
    return rows


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
    return f"diag:test:{variant_handle}:{measure}:{binning}:{n_resamples}:{SEED}"


def _test_record(result: CalibrationTestResult) -> dict:
    """A test result as plain values for the disk store (no pickled core classes)."""
    return {
        "measure": result.measure,
        "observed": result.observed,
        "null": np.asarray(result.null, dtype=np.float64),
        "p_value": result.p_value,
        "n_resamples": result.n_resamples,
        "seed": result.seed,
        "n_bins": result.n_bins,
        "scheme": result.scheme,
    }


def _test_result(record: dict) -> CalibrationTestResult:
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
    progress: Callable[[int, int, str], None] | None = None,
) -> list[ResamplingRow]:
    """The resampling test of every calibrator: from the store, or computed (and stored).

    Parameters
    ----------
    compute : bool
        Run the missing tests (the background job); otherwise missing ones
        carry a "press Run" message.
    progress : callable(done, total, text), optional
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
    interval = BOOT_INTERVAL[plan.field]
    return (
        f"diag:boot:{variant_handle}:{plan.metric}:{plan.one_vs_rest}:{kw}:{interval}:"
        f"{level}:{n_resamples}:{SEED}"
    )


def bootstrap_one(pred: Predictions, plan: BootPlan, level: float, n_resamples: int):
    """:func:`calibration_core.bootstrap_ci` of one column (samples dropped)."""
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
        interval=BOOT_INTERVAL[plan.field],
        **dict(plan.kwargs),
    )
    return {
        "estimate": result.estimate,
        "lower": result.lower,
        "upper": result.upper,
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
    progress: Callable[[int, int, str], None] | None = None,
) -> list[BootRow]:
    """Bootstrap intervals of every metrics-table column and calibrator (stored, or computed)."""
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


# ------------------------------------------------------------------ decision
@dataclass
class DecisionView:
    """Costs, thresholds and expected costs of every calibrator (binary problems)."""

    comparison: DecisionComparison
    positive_rate: float
    cost_threshold: float
    train_prior: float
    deploy_prior: float | None
    curves: list[tuple[str, np.ndarray, np.ndarray]]
    pending: list[str] = field(default_factory=list)


def decision_view(
    target: DiagTarget,
    cost_fp: float,
    cost_fn: float,
    train_prior: float | None = None,
    deploy_prior: float | None = None,
) -> DecisionView:
    """Expected cost before and after each map at the cost-sensitive threshold.

    ``train_prior`` defaults to the scored rows' positive rate. With a
    ``deploy_prior`` the threshold moves (:func:`calibration_core.prior_shift_threshold`)
    and costs are those expected at the new rate.

    Raises
    ------
    CalibrationInputError
        For a model with K != 2 or invalid costs/priors.
    """
    if target.info.n_classes != 2:
        raise CalibrationInputError(
            f"the decision view is for binary problems; {target.info.name} has "
            f"{target.info.n_classes} classes."
        )
    ready = target.ready
    if not ready:
        raise CalibrationInputError("no scored predictions yet (the fit is running).")
    labels = ready[0].pred.labels
    rate = float(np.mean(labels == 1))
    comparison = compare_expected_costs(
        {v.calibrator: v.pred for v in ready},
        cost_fp=cost_fp,
        cost_fn=cost_fn,
        train_prior=train_prior,
        deploy_prior=deploy_prior,
    )
    curves = [
        (v.calibrator, *cost_curve(v.pred, None, cost_fp, cost_fn, prior=deploy_prior))
        for v in ready
    ]
    return DecisionView(
        comparison=comparison,
        positive_rate=rate,
        cost_threshold=cost_threshold(cost_fp, cost_fn),
        train_prior=rate if train_prior is None else train_prior,
        deploy_prior=deploy_prior,
        curves=curves,
        pending=[v.calibrator for v in target.variants if v.pred is None],
    )


def shifted_threshold(view: DecisionView) -> float | None:
    """The prior-shifted threshold, or None without a deployment prior."""
    if view.deploy_prior is None:
        return None
    return prior_shift_threshold(view.cost_threshold, view.train_prior, view.deploy_prior)


# ----------------------------------------------------------- human uncertainty
@dataclass
class HumanRow:
    """EntCE, RankCS and DistCE of one calibrator against the soft labels."""

    calibrator: str
    result: HumanUncertaintyResult | None = None
    message: str | None = None


def human_rows(store: DataStore, target: DiagTarget) -> list[HumanRow] | None:
    """Human-uncertainty measures of every calibrator; None when the model has no soft labels.

    In train/test mode the soft labels are restricted to the scored (test) rows.
    """
    handle = target.info.handle
    if not has_soft_labels(store, handle):
        return None
    cache: dict = {}

    def soft_labels() -> np.ndarray:  # read once, and only when a result is not memoised
        if "soft" not in cache:
            soft = get_soft_labels(store, handle)
            if soft is None:
                raise CalibrationInputError("the soft labels expired; upload the file again.")
            rows_of = store.scored_rows(handle, target.heldout)
            cache["soft"] = soft if rows_of is None else soft[np.asarray(rows_of)]
        return cache["soft"]

    rows = []
    for v in target.variants:
        if v.pred is None:
            rows.append(HumanRow(v.calibrator, message=v.message))
            continue

        def compute(pred=v.pred):
            soft = soft_labels()
            if pred.n_samples != soft.shape[0]:
                return None
            return human_uncertainty_calibration(pred, np.asarray(soft))

        result = _memo(store, v, ("human",), compute)
        if result is None:
            rows.append(HumanRow(v.calibrator, message="soft labels do not match these rows"))
        else:
            rows.append(HumanRow(v.calibrator, result=result))
    return rows


__all__ = [
    "UNCALIBRATED",
    "BootRow",
    "DecisionView",
    "DiagTarget",
    "EstimatorRow",
    "HosmerLemeshowRow",
    "HumanRow",
    "ResamplingRow",
]
