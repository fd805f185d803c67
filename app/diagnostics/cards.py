"""The Hosmer-Lemeshow, decision and human-uncertainty cards of the Diagnostics section.

For every calibrator of a :class:`~app.diagnostics.target.DiagTarget`:

* **Hosmer-Lemeshow** (:func:`calibration_core.hosmer_lemeshow`) with the
  held-out degrees of freedom ``G (K - 1)``: the dashboard's predictions are
  test predictions, and every map is scored on rows it was not fitted on;
* the **decision view** (binary problems,
  :func:`calibration_core.compare_expected_costs`): expected costs at the
  cost-sensitive threshold, optionally under a shifted positive rate;
* **human-uncertainty calibration** (:func:`calibration_core.human_uncertainty_calibration`)
  when the upload carried soft labels.

These follow the calibrators only (not the notion or the binning), and are cheap.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

# Diagnostics come from their modules: ``calibration_core`` loads them lazily, and
# ``from calibration_core import hosmer_lemeshow`` can yield the submodule of that name.
from calibration_core import CalibrationInputError, Predictions
from calibration_core.decision import (
    DecisionComparison,
    compare_expected_costs,
    cost_curve,
    cost_threshold,
    prior_shift_threshold,
)
from calibration_core.errors import SmallSampleWarning
from calibration_core.measures.goodness_of_fit import (
    DEFAULT_RESAMPLES,
    MIN_RECOMMENDED_SAMPLES,
    P_VALUE_METHODS,
    hosmer_lemeshow,
)
from calibration_core.measures.human_uncertainty import (
    HumanUncertaintyResult,
    human_uncertainty_calibration,
)

from ..store.data_store import DataStore
from ..store.soft_label_store import get_soft_labels, has_soft_labels
from .target import HL_DEFAULT_GROUPS, DiagTarget, memo

#: Below this many rows the Hosmer-Lemeshow test has little power (survey §6).
HL_SMALL_SAMPLE = MIN_RECOMMENDED_SAMPLES
#: The p-value the page shows: the core's default (parametric bootstrap).
HL_P_VALUE = P_VALUE_METHODS[0]
#: Label draws (rows x label sets) of one bootstrap p-value on the page: 1,000 label sets up to
#: 100,000 rows, fewer above (at least 199; a Monte Carlo p-value is valid for any number).
HL_MAX_DRAWS = 10**8
HL_MIN_RESAMPLES = 199


def hl_resamples(n_rows: int) -> int:
    """Label sets of the page's bootstrap p-value for ``n_rows`` rows (see :data:`HL_MAX_DRAWS`)."""
    return int(min(DEFAULT_RESAMPLES, max(HL_MIN_RESAMPLES, HL_MAX_DRAWS // max(n_rows, 1))))


# ------------------------------------------------------------ Hosmer-Lemeshow
@dataclass
class HosmerLemeshowRow:
    """Hosmer-Lemeshow test of one calibrator (the core's default, bootstrap p-value)."""

    calibrator: str
    statistic: float | None = None
    dof: int | None = None
    p_value: float | None = None
    n_groups: int | None = None
    n: int | None = None
    small_sample: bool = False
    message: str | None = None


def hosmer_lemeshow_row(pred: Predictions, groups: int) -> HosmerLemeshowRow:
    """The test of one calibrator with the core's defaults; a refusal becomes the row's message."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SmallSampleWarning)
        try:
            result = hosmer_lemeshow(
                pred, n_groups=groups, n_resamples=hl_resamples(pred.n_samples)
            )
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
    """Hosmer-Lemeshow (binary, or Fagerland's multinomial) of every calibrator, cached.

    Parameters
    ----------
    store : DataStore
    target : DiagTarget
    groups : int
        Number of risk groups ``G`` (parsed by :func:`~app.diagnostics.target.parse_groups`).

    Returns
    -------
    list of HosmerLemeshowRow
        One per calibrator, in the target's order (pending ones carry their message).
    """
    rows = []
    for v in target.variants:
        if v.pred is None:
            rows.append(HosmerLemeshowRow(v.calibrator, message=v.message))
            continue
        row = memo(
            store,
            v,
            ("hl", groups, HL_P_VALUE),
            lambda pred=v.pred: hosmer_lemeshow_row(pred, groups),
        )
        rows.append(HosmerLemeshowRow(**{**row.__dict__, "calibrator": v.calibrator}))
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
    #: ``(calibrator, thresholds, expected costs)``, both arrays of shape ``(T,)``.
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

    The soft labels (shape ``(N, K)``: one distribution over the classes per
    row) are read once, and only when a result is not memoised. In train/test
    mode they are restricted to the scored (test) rows.
    """
    handle = target.info.handle
    if not has_soft_labels(store, handle):
        return None
    cache: dict = {}

    def soft_labels() -> np.ndarray:  # shape (N, K), N the scored rows
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

        result = memo(store, v, ("human",), compute)
        if result is None:
            rows.append(HumanRow(v.calibrator, message="soft labels do not match these rows"))
        else:
            rows.append(HumanRow(v.calibrator, result=result))
    return rows
