"""Temperature scaling (Guo et al. 2017; survey §5.4, eq. 11-12).

Convention: ``softmax(z / T)`` with one temperature ``T > 0``. The survey
prints ``exp(-z_j / t)``, which is ``softmax(-z)`` at ``t = 1`` and contradicts
its own text ("t = 1 gives the usual softmax"); that minus sign is a slip, and
this module uses the form of Guo et al.: T = 1 is the identity, T > 1 softens
over-confident predictions, T < 1 sharpens them. Dividing by a positive T keeps
the order of every row, so the predicted class (argmax) never changes.

Inputs: the logits ``z`` when known (``input="logits"`` or a Predictions with
logits), else the log-probabilities ``ln s`` (``softmax(ln s / T)``, the same
map since a softmax ignores a per-row shift).

Fit: the mean log-loss (weighted by ``sample_weight`` when given) is minimised
over ``u = ln T`` (so T stays positive) by a safeguarded Newton iteration with
the analytic first and second derivatives; the derivative in ``u`` changes
sign once (the loss is convex in ``1/T``), so a bisection bracket keeps every
step safe. Each step costs one pass over the (N, K) inputs.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Protocol

import numpy as np
from scipy.special import log_softmax

from ..errors import CalibrationFitWarning, CalibrationInputError, excerpt
from .base import JSON_FORMAT, CalibrationMap, log_inputs
from .registry import register

__all__ = ["TemperatureScaling"]


#: Temperatures are searched in [T_MIN, T_MAX].
T_MIN = 1e-4
T_MAX = 1e4


class TemperatureObjective:
    """Mean log-loss of ``softmax(x / T)`` as a function of ``u = ln T``.

    Parameters
    ----------
    x : numpy.ndarray, shape (N, K)
        Logits or log-probabilities.
    labels : numpy.ndarray, shape (N,)
    weights : numpy.ndarray, shape (N,), optional
        Positive row weights: every mean over rows is then the weighted mean
        ``sum_n w_n v_n / sum_n w_n`` (integer weights act as repeated rows).

    Notes
    -----
    Kept class-major with each row's maximum at 0: with ``a = 1 / T > 0``,
    ``a * x <= 0``, so ``exp`` never overflows and the sums over classes run
    along contiguous memory. With ``E_p`` the mean under ``softmax(a x)``, the
    loss is ``mean(ln sum exp(a x) - a x_y)``, its derivative in ``a`` is
    ``mean(E_p[x] - x_y)`` and its second derivative ``mean(Var_p[x]) >= 0``.
    """

    def __init__(
        self, x: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
    ) -> None:
        labels = np.asarray(labels, dtype=np.intp)
        self._share = None if weights is None else weights / weights.sum()
        self._xt = np.ascontiguousarray(np.asarray(x, dtype=np.float64).T)
        self._xt -= self._xt.max(axis=0)
        true = self._xt[labels, np.arange(self._xt.shape[1])]
        self._mean_true = self._mean(true)
        self._work = np.empty_like(self._xt)
        #: The true class attains every row's maximum: the loss falls as T -> 0.
        self.separable = bool(np.all(true == 0.0))
        #: d loss / d(1/T) at 1/T = 0 (uniform predictions): >= 0 means T -> infinity.
        self.slope_at_infinite_temperature = self._mean(self._xt.mean(axis=0)) - self._mean_true

    def _mean(self, values: np.ndarray) -> float:
        """Mean over rows of ``values`` (N,), weighted when the rows are."""
        return float(values.mean() if self._share is None else values @ self._share)

    def loss(self, u: float) -> float:
        """Mean log-loss at ``T = exp(u)``."""
        work = np.multiply(self._xt, math.exp(-u), out=self._work)
        np.exp(work, out=work)
        return self._mean(np.log(work.sum(axis=0))) - math.exp(-u) * self._mean_true

    def derivatives(self, u: float) -> tuple[float, float]:
        """First and second derivatives of :meth:`loss` in ``u``; one pass over x."""
        a = math.exp(-u)  # inverse temperature
        xt, work = self._xt, self._work
        np.multiply(xt, a, out=work)
        np.exp(work, out=work)
        s0 = work.sum(axis=0)
        np.multiply(work, xt, out=work)
        m1 = work.sum(axis=0) / s0  # E_p[x]
        np.multiply(work, xt, out=work)
        m2 = work.sum(axis=0) / s0  # E_p[x^2]
        fa = self._mean(m1) - self._mean_true  # d loss / da
        faa = self._mean(m2 - m1 * m1)  # d2 loss / da2
        # chain rule with a = exp(-u): da/du = -a
        return -a * fa, a * a * faa + a * fa


#: Above this many rows, Newton first runs on a strided subsample of SUBSAMPLE_ROWS rows.
SUBSAMPLE_ROWS = 16384


def fit_temperature(
    x: np.ndarray,
    labels: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    bounds: tuple[float, float] = (T_MIN, T_MAX),
    step_tol: float = 1e-6,
    max_iter: int = 100,
) -> tuple[float, int, bool]:
    """Temperature minimising the mean log-loss of ``softmax(x / T)``.

    Safeguarded Newton on ``u = ln T`` (rtsafe): the derivative in ``u`` changes
    sign once, so each step either follows Newton inside the current bracket
    or, when Newton would leave it or does not halve the previous step, bisects
    it (first trying an untested bound, where the loss may keep falling). With
    more than ``4 * SUBSAMPLE_ROWS`` rows, the fit first converges on every
    ``N // SUBSAMPLE_ROWS``-th row and starts the full-data Newton from there,
    which then needs two or three passes instead of five or six.

    Parameters
    ----------
    x : numpy.ndarray, shape (N, K)
        Logits or log-probabilities.
    labels : numpy.ndarray, shape (N,)
    weights : numpy.ndarray, shape (N,), optional
        Positive row weights of the mean log-loss (None: every row 1).
    bounds : (float, float)
        Search interval for T; a bound is returned when the loss keeps
        falling towards it (separable rows, or inputs no better than uniform).
    step_tol : float
        Stop after a Newton step on ``ln T`` smaller than this: Newton
        converges quadratically, so the remaining error is about its square
        (1e-12); bisection stops when the bracket is narrower than 1e-12.
    max_iter : int

    Returns
    -------
    temperature : float
    n_iter : int
        Full-data Newton or bisection steps (one pass over x each).
    converged : bool
        False when the iteration ran out of steps.
    """
    x = np.asarray(x, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.intp)
    start = 1.0
    if x.shape[0] > 4 * SUBSAMPLE_ROWS:
        stride = x.shape[0] // SUBSAMPLE_ROWS
        sub_weights = None if weights is None else weights[::stride]
        start, _, _ = newton_temperature(
            TemperatureObjective(x[::stride], labels[::stride], sub_weights),
            bounds,
            1.0,
            step_tol,
            max_iter,
        )
    objective = TemperatureObjective(x, labels, weights)
    return newton_temperature(objective, bounds, start, step_tol, max_iter)


class NewtonObjective(Protocol):
    """What :func:`newton_temperature` reads of an objective (:class:`TemperatureObjective`,
    or the Dask engine's, whose sums come from every partition of a dataset)."""

    @property
    def separable(self) -> bool: ...

    @property
    def slope_at_infinite_temperature(self) -> float: ...

    def derivatives(self, u: float) -> tuple[float, float]: ...


def newton_temperature(
    objective: NewtonObjective,
    bounds: tuple[float, float],
    start: float,
    step_tol: float,
    max_iter: int,
) -> tuple[float, int, bool]:
    """The safeguarded Newton iteration of :func:`fit_temperature` on any objective.

    ``objective`` needs ``separable``, ``slope_at_infinite_temperature`` and
    ``derivatives(u)`` (:class:`NewtonObjective`) as :class:`TemperatureObjective`
    has them; the Dask engine passes one whose sums come from every partition of a
    dataset.

    Returns
    -------
    temperature : float
    n_iter : int
    converged : bool
    """
    # The loss is convex in a = 1/T. It keeps falling as T -> 0 when the true class
    # attains the maximum of every row (separable), and as T -> infinity when its slope in
    # a is >= 0 at a = 0: both bounds are then exact answers.
    if objective.separable:
        return float(bounds[0]), 0, True
    if objective.slope_at_infinite_temperature >= 0:
        return float(bounds[1]), 0, True
    lo, hi = math.log(bounds[0]), math.log(bounds[1])
    lo_checked = hi_checked = False  # has the derivative been evaluated at a bound?
    u = min(max(math.log(start), lo), hi)
    last_step = hi - lo
    for n_iter in range(1, max_iter + 1):
        g, h = objective.derivatives(u)
        if g == 0:
            return math.exp(u), n_iter, True
        if g > 0:
            hi, hi_checked = u, True
        else:
            lo, lo_checked = u, True
        new = u - g / h if h > 0 else math.nan
        if lo < new < hi and abs(new - u) <= 0.5 * last_step:
            if abs(new - u) < step_tol:
                return math.exp(new), n_iter, True
        elif g > 0 and not lo_checked:
            new, lo_checked = lo, True
        elif g < 0 and not hi_checked:
            new, hi_checked = hi, True
        else:
            new = 0.5 * (lo + hi)
            if hi - lo < 1e-12:
                return math.exp(new), n_iter, True
        last_step = abs(new - u)
        u = new
    return math.exp(u), max_iter, False


@register
class TemperatureScaling(CalibrationMap):
    """Temperature scaling: ``softmax(z / T)`` with one fitted ``T > 0``.

    Parameters
    ----------
    input : {"probs", "logits"}
        What ``X`` holds; with probabilities the map applies to ``ln s``.

    Attributes
    ----------
    temperature_ : float
        Fitted T (> 1 softens, < 1 sharpens).
    n_iter_ : int
        Newton steps of the fit.
    converged_ : bool
    n_parameters_ : int
        1 (``T``).

    Notes
    -----
    The survey's eq. 11 prints ``exp(-z_j / t)``; we use ``softmax(z / T)`` (see
    the module docstring). Degenerate data: when every row is already
    correctly classified by a margin, the log-loss keeps falling as T -> 0;
    the fit then stops at ``T_MIN`` (1e-4) with a warning, and outputs stay
    finite.
    """

    name = "temperature"
    family = "multiclass"
    needs_probs_with_logits = False

    def __init__(self, input: str = "probs") -> None:
        self.input = input

    @classmethod
    def _scores(cls, probs: np.ndarray | None, logits: np.ndarray | None) -> np.ndarray:
        """The logits as given (softmax ignores their per-row shift), else ``ln s``."""
        return logits if logits is not None else log_inputs(probs, None)

    def _fit(
        self,
        probs: np.ndarray | None,
        logits: np.ndarray | None,
        labels: np.ndarray,
        sample_weight: np.ndarray | None = None,
    ) -> None:
        x = self._scores(probs, logits)
        temperature, n_iter, converged = fit_temperature(x, labels, weights=sample_weight)
        self.temperature_ = float(temperature)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        if temperature <= T_MIN * (1 + 1e-9):
            warnings.warn(
                f"TemperatureScaling: the log-loss keeps falling as T -> 0 (the classes are "
                f"separable on these rows); T stops at its lower bound {T_MIN:g} and the "
                "calibrated probabilities are 0 or 1.",
                CalibrationFitWarning,
                stacklevel=3,
            )
        elif temperature >= T_MAX * (1 - 1e-9):
            warnings.warn(
                f"TemperatureScaling: the log-loss keeps falling as T grows (the inputs carry "
                f"no information about the labels); T stops at its upper bound {T_MAX:g} and "
                "the calibrated probabilities are nearly uniform.",
                CalibrationFitWarning,
                stacklevel=3,
            )

    def _predict_proba(self, probs: np.ndarray | None, logits: np.ndarray | None) -> np.ndarray:
        x = self._scores(probs, logits)
        return np.exp(log_softmax(x / self.temperature_, axis=1))

    @classmethod
    def identity(cls, n_classes: int, input: str = "probs") -> TemperatureScaling:
        """A fitted map that returns the predictions unchanged: ``T = 1``.

        ``softmax(z / 1)`` of the logits is the model's probabilities, and of
        ``ln s`` it is ``s`` (up to the clip at ``EPS``). It is the deployable
        map of the uncalibrated predictions when the verdict recommends them.

        Parameters
        ----------
        n_classes : int
            K.
        input : {"probs", "logits"}

        Returns
        -------
        TemperatureScaling
        """
        return cls.from_dict(
            {
                "format": JSON_FORMAT,
                "map": cls.name,
                "params": {"input": input},
                "n_classes": int(n_classes),
                "state": {"temperature": 1.0},
            }
        )

    def _count_parameters(self) -> int:
        return 1

    def planned_parameters(self, n_classes: int) -> int | None:
        """1, whatever the classes (:meth:`CalibrationMap.planned_parameters`)."""
        return 1

    def _fitted_state(self) -> dict[str, Any]:
        return {"temperature": float(self.temperature_), "n_iter": int(self.n_iter_)}

    def _load_fitted_state(self, state: dict[str, Any]) -> None:
        t = state.get("temperature")
        if not isinstance(t, (int, float)) or not (math.isfinite(t) and t > 0):
            raise CalibrationInputError(
                f"the temperature export holds temperature={excerpt(t)}; expected a positive "
                "number."
            )
        self.temperature_ = float(t)
        self.n_iter_ = int(state.get("n_iter", 0))
