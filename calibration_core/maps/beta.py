"""Beta calibration (Kull et al. 2017; survey §5.3, eq. 9-10).

``g(s) = sigmoid(a ln s - b ln(1 - s) + c)``, a logistic regression on the
features ``ln s`` and ``-ln(1 - s)`` (scores clipped to ``[EPS, 1 - EPS]``,
``EPS = 1e-12``). ``a = b = 1, c = 0`` is the identity map, which is where the
fit starts, so an already calibrated model is left (nearly) alone.

Parametrisations (``parameters``), as in the ``betacal`` package
------------------------------------------------------------------
``"abm"`` (default)
    ``a``, ``b`` and ``c`` free (three parameters).
``"ab"``
    ``a`` and ``b`` free with the midpoint ``m = 1/2`` fixed, i.e.
    ``c = (a - b) ln 2`` (a logistic regression on ``ln 2s`` and
    ``-ln 2(1 - s)`` without intercept).
``"am"``
    ``a = b`` and ``c`` free: Platt scaling on the logit of the score.

Constrained refit (``"abm"`` and ``"ab"``)
------------------------------------------
A beta map needs ``a, b >= 0`` (otherwise it is not monotone). As the beta
calibration paper prescribes: if the fitted ``a`` is negative the column is
refitted with ``a = 0`` (the feature ``ln s`` dropped); otherwise, if ``b``
is negative it is refitted with ``b = 0``. A coefficient that is still
negative after that refit is dropped as well (leaving a constant map for
``"abm"``), so every fitted map is monotone. ``constrained_`` records which
coefficients were fixed at 0.

This is a deliberate departure from the ``betacal`` package, whose ``"ab"``
fit does *not* drop a negative coefficient: on U-shaped data (a reliability
curve that falls then rises) it returns e.g. ``a = -0.56``, a non-monotone
map, where this class returns ``a = 0`` (predictions of the two differ by up
to 0.475 there). A calibration map that reverses the order of scores changes
the ranking of the predictions; the monotone fit is the one this library
keeps.

All columns are fitted together by the batched Newton method of
:mod:`~calibration_core.maps.onevsrest`, and the refits of all constrained
columns together again. With ``sample_weight`` every fit and refit minimises
the weighted mean log-loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from ..errors import CalibrationInputError
from .base import EPS
from .binary_columns import BinaryColumns, warn_few_rows
from .counts import one_vs_rest_parameters
from .logistic_columns import LogisticColumnsFit, fit_logistic_columns
from .onevsrest import OneVsRestMap
from .registry import register
from .state import score_columns, state_array

__all__ = ["BetaCalibration"]

PARAMETERIZATIONS = ("abm", "ab", "am")
LN2 = float(np.log(2.0))


def beta_features(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ln s, -ln(1 - s))`` of score columns (C, N) clipped to ``[EPS, 1 - EPS]``.

    Returns new C-contiguous (C, N) arrays.
    """
    s = np.clip(scores, EPS, 1.0 - EPS, out=np.empty(scores.shape))
    minus_log_1ms = np.log(np.subtract(1.0, s))
    np.negative(minus_log_1ms, out=minus_log_1ms)
    return np.log(s, out=s), minus_log_1ms


def refit_targets(positive: np.ndarray, redo: np.ndarray, n_cols: int) -> np.ndarray:
    """The one-vs-rest targets of the columns ``redo`` only (-1 for rows of no such column)."""
    sub = np.full(positive.shape[0], -1, np.intp)
    where = np.full(n_cols, -1, np.intp)
    where[redo] = np.arange(redo.size)
    sub[positive >= 0] = where[positive[positive >= 0]]
    return sub


def constrained_refits(
    features: list[np.ndarray], columns: BinaryColumns, fit: LogisticColumnsFit, active: np.ndarray
) -> LogisticColumnsFit:
    """The fit with a negative ``a`` or ``b`` dropped (see the module docstring).

    Drops ``a`` if ``a < 0``, else ``b`` if ``b < 0``, refits those columns
    together, then drops any coefficient still negative. ``active`` (C, 3) is
    updated in place: a dropped coefficient is no longer active.
    """
    params, converged = fit.params.copy(), fit.converged.copy()
    n_iter, loss = fit.n_iter.copy(), fit.loss.copy()
    for _ in range(2):
        neg_a = params[:, 0] < 0
        drop = np.column_stack([neg_a, ~neg_a & (params[:, 1] < 0)])
        redo = np.flatnonzero(drop.any(axis=1))
        if redo.size == 0:
            break
        active[redo, :2] &= ~drop[redo]
        init = np.where(active[redo], np.tile([1.0, 1.0, 0.0], (redo.size, 1)), 0.0)
        refit = fit_logistic_columns(
            [f[redo] for f in features],
            refit_targets(columns.positive, redo, columns.n_columns),
            init,
            active=active[redo],
            weights=columns.weights,
        )
        params[redo] = refit.params
        converged[redo] = refit.converged
        n_iter[redo] += refit.n_iter
        loss[redo] = refit.loss
    return LogisticColumnsFit(params, converged, n_iter, loss)


@register
class BetaCalibration(OneVsRestMap):
    """Beta calibration, one-vs-rest for K > 2 (registry name ``"beta"``).

    Parameters
    ----------
    parameters : {"abm", "ab", "am"}
        Which parameters are free (see the module docstring).
    input : {"probs", "logits"}
        What ``X`` holds; logits are turned into probabilities by a softmax.

    Attributes
    ----------
    coef_ : numpy.ndarray, shape (C, 3)
        ``[a, b, c]`` per fitted column (C = 1 for K = 2, the positive class; else K),
        always in the form ``g(s) = sigmoid(a ln s - b ln(1 - s) + c)``.
    constrained_ : numpy.ndarray, shape (C, 2), bool
        Whether ``a`` (column 0) or ``b`` (column 1) was fixed at 0 by the
        constrained refit.
    converged_ : bool
        Newton's method converged for every column (and every refit).
    n_iter_ : int
        Newton iterations of the slowest column, refits included.
    n_parameters_ : int
        Free parameters per fitted column times C: 3 for ``"abm"``, 2 for
        ``"ab"`` and ``"am"``.
    """

    name = "beta"

    def __init__(self, parameters: str = "abm", input: str = "probs") -> None:
        self.parameters = parameters
        self.input = input

    def _fit_columns(self, columns: BinaryColumns) -> None:
        if self.parameters not in PARAMETERIZATIONS:
            raise CalibrationInputError(
                f"BetaCalibration parameters must be one of {', '.join(PARAMETERIZATIONS)}, "
                f"got {self.parameters!r}."
            )
        name = type(self).__name__
        n_params = 3 if self.parameters == "abm" else 2
        warn_few_rows(name, columns.n_rows, n_params)
        one_sided = columns.warn_one_sided(name)
        log_s, log_1ms = beta_features(columns.scores)
        if self.parameters == "am":
            fit = self._fit_am(log_s, log_1ms, columns)
        else:
            fit = self._fit_ab(log_s, log_1ms, columns)
        self._report_logistic(fit, columns, one_sided)

    def _fit_am(
        self, log_s: np.ndarray, log_1ms: np.ndarray, columns: BinaryColumns
    ) -> LogisticColumnsFit:
        """``"am"``: Platt scaling on ``ln s - ln(1 - s)``; sets ``coef_`` with ``a = b``."""
        n_cols = columns.n_columns
        fit = fit_logistic_columns(
            [log_s + log_1ms],
            columns.positive,
            np.tile([1.0, 0.0], (n_cols, 1)),
            weights=columns.weights,
        )
        a = fit.params[:, 0]
        self.coef_ = np.column_stack([a, a, fit.params[:, 1]])
        self.constrained_ = np.zeros((n_cols, 2), bool)
        return fit

    def _fit_ab(
        self, log_s: np.ndarray, log_1ms: np.ndarray, columns: BinaryColumns
    ) -> LogisticColumnsFit:
        """``"abm"`` and ``"ab"``: the free fit, then the constrained refits; sets ``coef_``."""
        n_cols = columns.n_columns
        if self.parameters == "ab":
            features = [log_s + LN2, log_1ms - LN2]
        else:
            features = [log_s, log_1ms]
        active = np.ones((n_cols, 3), bool)
        active[:, 2] = self.parameters == "abm"
        fit = fit_logistic_columns(
            features,
            columns.positive,
            np.tile([1.0, 1.0, 0.0], (n_cols, 1)),
            active=active,
            weights=columns.weights,
        )
        fit = constrained_refits(features, columns, fit, active)
        if self.parameters == "ab":
            fit.params[:, 2] = (fit.params[:, 0] - fit.params[:, 1]) * LN2
        self.coef_ = fit.params
        self.constrained_ = ~active[:, :2]
        return fit

    def _predict_columns(self, scores: np.ndarray) -> np.ndarray:
        log_s, log_1ms = beta_features(scores)
        a, b, c = (self.coef_[:, j : j + 1] for j in range(3))
        return expit(a * log_s + b * log_1ms + c)

    def _count_parameters(self) -> int:
        return int(self.coef_.shape[0]) * self._per_column()

    def planned_parameters(self, n_classes: int) -> int | None:
        """3 (2 for "ab"/"am") per score column (:meth:`CalibrationMap.planned_parameters`)."""
        return one_vs_rest_parameters(self._per_column(), n_classes)

    def _per_column(self) -> int:
        return 3 if self.parameters == "abm" else 2  # "ab": c = (a - b) ln 2; "am": a = b

    def _fitted_state(self) -> dict[str, Any]:
        return {
            "coef": self.coef_.tolist(),
            "constrained": self.constrained_.tolist(),
            "n_iter": int(self.n_iter_),
        }

    def _load_fitted_state(self, state: dict[str, Any]) -> None:
        columns = score_columns(self.n_classes_)
        self.coef_ = state_array(state, "coef", (columns, 3))
        self.constrained_ = state_array(state, "constrained", (columns, 2), dtype=bool)
        self.n_iter_ = int(state.get("n_iter", 0))
