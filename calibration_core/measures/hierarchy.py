"""The calibration hierarchy of clinical prediction (Van Calster et al. 2016, 2019).

For one score column (binary, one class vs rest, or the top label), from the
weakest requirement to the strongest:

1. **Calibration in the large** (mean calibration): are as many events
   observed as predicted? Observed ``O = sum y`` against expected
   ``E = sum p``, the ratio ``O/E`` with the interval
   ``exp(ln(O/E) +- z sqrt(1/O - 1/N))`` (Debray et al. 2017), and the
   calibration-in-the-large intercept: ``a`` of ``logit P(y=1) = a + logit(p)``
   (slope fixed at 1, ``logit(p)`` an offset), > 0 when the model
   under-predicts.
2. **Weak calibration**: the logistic recalibration
   ``logit P(y=1) = a + b logit(p)``, fitted jointly by maximum likelihood
   (``rms::val.prob``'s ``Intercept`` and ``Slope``). ``b < 1``: predictions
   too extreme (over-confident, typical of an over-fitted model); ``b > 1``:
   too moderate. Wald intervals from the observed information.
3. **Moderate calibration**: the flexible calibration curve, ``E[y | p]``
   against ``p``. By default R's ``lowess(p, y, iter = 0)`` with span 2/3,
   as ``rms::val.prob`` (see :mod:`.lowess`), with a pointwise normal band.
   Its summaries (Austin & Steyerberg 2019), over the rows:
   ``|p_i - curve(p_i)|``: mean **ICI** (``Eavg`` in rms), median **E50**,
   90th percentile **E90** (R's default quantile, as numpy's), maximum
   **Emax**.

Spiegelhalter's Z is reported beside them (:mod:`.cumulative`).

Scores of exactly 0 or 1 have an infinite logit; ``rms`` drops those rows
from the logistic fits. Here every score is clipped to
``[clip, 1 - clip]`` (``clip = 1e-12``) for all measures instead, which
keeps every row (float32 probabilities are often exactly 1.0 for the top
class) and is how the reference values of ``rms-val-prob.md`` were computed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import CalibrationInputError
from ..notions import notion_columns
from ..predictions import measure_inputs
from ..validation import check_fraction, check_level
from .cumulative import SpiegelhalterResult, spiegelhalter_from_scores
from .lowess import lowess

#: Scores are clipped to [CLIP, 1 - CLIP] so that every logit is finite.
CLIP = 1e-12
#: Newton steps of the logistic fits before giving up.
MAX_NEWTON_STEPS = 100


def _z(level: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(0.5 + level / 2))


@dataclass(frozen=True)
class Estimate:
    """A number with its interval."""

    value: float
    lower: float
    upper: float


@dataclass(frozen=True)
class InTheLarge:
    """Calibration in the large of one score column.

    Attributes
    ----------
    observed, expected : float
        Observed and predicted events, ``sum y`` and ``sum p``.
    n_samples : int
    ratio : Estimate
        ``O / E`` with its interval (NaN bounds when ``O`` is 0).
    intercept : Estimate
        Calibration-in-the-large intercept (slope fixed at 1), Wald interval.
    """

    observed: float
    expected: float
    n_samples: int
    ratio: Estimate
    intercept: Estimate

    @property
    def observed_rate(self) -> float:
        """``O / N``."""
        return self.observed / self.n_samples

    @property
    def expected_rate(self) -> float:
        """``E / N``, the mean prediction."""
        return self.expected / self.n_samples


@dataclass(frozen=True)
class Recalibration:
    """Logistic recalibration ``logit P(y=1) = a + b logit(p)``.

    Attributes
    ----------
    intercept, slope : Estimate
        ``a`` and ``b`` with Wald intervals.
    converged : bool
    """

    intercept: Estimate
    slope: Estimate
    converged: bool

    @property
    def reading(self) -> str:
        """The slope in words: over-confident (< 1), under-confident (> 1) or neither."""
        s = self.slope
        if s.upper < 1:
            return "slope < 1: predictions too extreme (over-confident, as an over-fitted model)"
        if s.lower > 1:
            return "slope > 1: predictions too moderate (under-confident)"
        return "slope compatible with 1"


@dataclass(frozen=True, eq=False)
class FlexibleCurve:
    """The flexible calibration curve at the sorted scores, and its summaries.

    Attributes
    ----------
    score : numpy.ndarray, shape (N,)
        Sorted (clipped) scores.
    observed : numpy.ndarray, shape (N,)
        The smooth ``E[y | p]`` at ``score``.
    lower, upper : numpy.ndarray, shape (N,)
        Pointwise band ``observed +- z sqrt(observed (1 - observed) sum l^2)``, in [0, 1].
    ici, e50, e90, emax : float
        Mean, median, 90th percentile and maximum of ``|score - observed|``.
    method : str
        ``"lowess"``.
    span : float
    level : float
    """

    score: np.ndarray
    observed: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    ici: float
    e50: float
    e90: float
    emax: float
    method: str
    span: float
    level: float

    def thinned(self, max_points: int = 500) -> FlexibleCurve:
        """At most ``max_points`` evenly spaced points of the curve, for a plot."""
        n = self.score.shape[0]
        if n <= max_points:
            return self
        keep = np.unique(np.linspace(0, n - 1, max_points).astype(np.intp))
        return FlexibleCurve(
            self.score[keep], self.observed[keep], self.lower[keep], self.upper[keep],
            self.ici, self.e50, self.e90, self.emax, self.method, self.span, self.level,
        )  # fmt: skip


@dataclass(frozen=True, eq=False)
class CalibrationHierarchy:
    """Every level of the hierarchy for one score column (see the module docstring)."""

    in_the_large: InTheLarge
    recalibration: Recalibration
    curve: FlexibleCurve
    spiegelhalter: SpiegelhalterResult
    n_samples: int
    level: float

    def to_dict(self) -> dict:
        """The numbers (not the curve's arrays), for JSON."""
        c = self.curve
        return {
            "n_samples": self.n_samples,
            "level": self.level,
            "in_the_large": {
                **{k: v for k, v in asdict(self.in_the_large).items()},
                "observed_rate": self.in_the_large.observed_rate,
                "expected_rate": self.in_the_large.expected_rate,
            },
            "recalibration": {**asdict(self.recalibration), "reading": self.recalibration.reading},
            "curve": {
                "method": c.method,
                "span": c.span,
                "ici": c.ici,
                "e50": c.e50,
                "e90": c.e90,
                "emax": c.emax,
            },
            "spiegelhalter": self.spiegelhalter.to_dict(),
        }


# ------------------------------------------------------------ logistic fits
def _newton_logistic(design: np.ndarray, y: np.ndarray, offset: np.ndarray):
    """Maximum-likelihood logistic regression by Newton's method with step halving.

    Returns
    -------
    beta : numpy.ndarray, shape (d,)
    covariance : numpy.ndarray, shape (d, d)
        Inverse observed information at ``beta``.
    converged : bool
    """
    beta = np.zeros(design.shape[1])

    def deviance(b):
        eta = offset + design @ b
        return float(np.sum(np.logaddexp(0.0, eta) - y * eta))

    current = deviance(beta)
    for _ in range(MAX_NEWTON_STEPS):
        eta = offset + design @ beta
        mu = 0.5 * (1.0 + np.tanh(0.5 * eta))  # the logistic function, without overflow
        info = design.T @ (design * (mu * (1 - mu))[:, None])
        step = np.linalg.solve(info, design.T @ (y - mu))
        while True:
            trial = deviance(beta + step)
            if trial <= current + 1e-12 * abs(current) or np.max(np.abs(step)) < 1e-14:
                break
            step = step / 2
        beta, previous, current = beta + step, current, trial
        if (
            abs(previous - current) <= 1e-12 * max(1.0, abs(current))
            and np.max(np.abs(step)) < 1e-8
        ):
            eta = offset + design @ beta
            mu = 0.5 * (1.0 + np.tanh(0.5 * eta))
            info = design.T @ (design * (mu * (1 - mu))[:, None])
            return beta, np.linalg.inv(info), True
    return beta, np.linalg.inv(info), False


def _estimate(value: float, se: float, z: float) -> Estimate:
    return Estimate(float(value), float(value - z * se), float(value + z * se))


def _in_the_large(p, y, logit, z) -> InTheLarge:
    n = p.shape[0]
    observed, expected = float(y.sum()), float(p.sum())
    ratio = observed / expected
    if observed > 0:
        se = np.sqrt(max(1 / observed - 1 / n, 0.0))
        ratio_est = Estimate(ratio, ratio * np.exp(-z * se), ratio * np.exp(z * se))
    else:
        ratio_est = Estimate(ratio, float("nan"), float("nan"))
    beta, cov, _ = _newton_logistic(np.ones((n, 1)), y, logit)
    return InTheLarge(observed, expected, n, ratio_est, _estimate(beta[0], np.sqrt(cov[0, 0]), z))


def _recalibration(y, logit, z) -> Recalibration:
    design = np.column_stack([np.ones_like(logit), logit])
    beta, cov, converged = _newton_logistic(design, y, np.zeros_like(logit))
    se = np.sqrt(np.diag(cov))
    return Recalibration(_estimate(beta[0], se[0], z), _estimate(beta[1], se[1], z), converged)


def _curve(p, y, span, z, level) -> FlexibleCurve:
    score, observed, weight_sq, _ = lowess(p, y, span=span)
    err = np.abs(score - observed)  # each row once: the same multiset as at the observed p
    clipped = np.clip(observed, 0.0, 1.0)
    half = z * np.sqrt(clipped * (1 - clipped) * weight_sq)
    return FlexibleCurve(
        score=score, observed=observed,
        lower=np.clip(observed - half, 0.0, 1.0), upper=np.clip(observed + half, 0.0, 1.0),
        ici=float(err.mean()), e50=float(np.median(err)), e90=float(np.quantile(err, 0.9)),
        emax=float(err.max()), method="lowess", span=span, level=level,
    )  # fmt: skip


# ------------------------------------------------------------ public API
def _column(probs, labels, notion, class_index, clip, measure: str):
    if notion == "classwise":
        raise CalibrationInputError(
            "the calibration hierarchy is computed for one score column; choose 'binary', "
            "'confidence', or 'class' with a class_index (one vs rest), and loop over classes."
        )
    p, y, notion = measure_inputs(probs, labels, notion=notion, measure=measure)
    ((scores, targets),) = notion_columns(p, y, notion, class_index)
    if np.all(targets == targets[0]):
        raise CalibrationInputError(
            f"every row has target {int(targets[0])}: the logistic recalibration needs both "
            "events and non-events; add rows of the other outcome."
        )
    return np.clip(scores, clip, 1 - clip), targets.astype(np.float64)


def calibration_hierarchy(
    probs,
    labels=None,
    *,
    notion: str | None = None,
    class_index: int | None = None,
    span: float = 2 / 3,
    level: float = 0.95,
    clip: float = CLIP,
) -> CalibrationHierarchy:
    """Calibration in the large, logistic recalibration, flexible curve, ICI/E50/E90/Emax.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    notion : {"binary", "class", "confidence"}, optional
        ``"class"`` with ``class_index``: one class vs the rest. None (every
        measure's default): ``"binary"`` for an (N,) risk score,
        ``"confidence"`` for probability rows; pass ``notion="binary"`` for
        the positive class of 2-column rows or a binary Predictions.
    class_index : int, optional
    span : float
        lowess's ``f`` (2/3, as ``rms::val.prob``).
    level : float
        Coverage of every interval and of the curve's band.
    clip : float
        Scores are clipped to ``[clip, 1 - clip]`` (module docstring).

    Returns
    -------
    CalibrationHierarchy
    """
    level = check_level(level)
    span = check_fraction(span, "span", " (the share of rows in each local fit, e.g. 2/3)")
    p, y = _column(probs, labels, notion, class_index, clip, "calibration_hierarchy")
    z = _z(level)
    logit = np.log(p) - np.log1p(-p)
    return CalibrationHierarchy(
        in_the_large=_in_the_large(p, y, logit, z),
        recalibration=_recalibration(y, logit, z),
        curve=_curve(p, y, span, z, level),
        spiegelhalter=spiegelhalter_from_scores(p, y),
        n_samples=int(p.shape[0]),
        level=level,
    )


def integrated_calibration_index(
    probs, labels=None, *, notion: str | None = None, class_index: int | None = None,
    span: float = 2 / 3, clip: float = CLIP,
) -> float:  # fmt: skip
    """ICI (``Eavg``): mean ``|p - lowess curve(p)|`` over the rows (Austin & Steyerberg 2019).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    notion : {"binary", "class", "confidence"}, optional
        As :func:`calibration_hierarchy`.
    class_index : int, optional
    span : float
    clip : float

    Returns
    -------
    float
    """
    span = check_fraction(span, "span", " (the share of rows in each local fit, e.g. 2/3)")
    p, y = _column(probs, labels, notion, class_index, clip, "integrated_calibration_index")
    return _curve(p, y, span, 1.96, 0.95).ici
