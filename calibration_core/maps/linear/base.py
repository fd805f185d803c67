"""The base classes of the multiclass linear maps (vector, matrix, Dirichlet).

The model and the fit are described in :mod:`calibration_core.maps.linear`.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from ...errors import CalibrationFitWarning, CalibrationInputError
from ..base import CalibrationMap
from ..counts import linear_parameters
from ..state import state_array
from .fit import LinearFit, check_strength, fit_linear_map
from .objective import linear_logits, map_features, unpack

__all__ = ["LinearCalibrationMap", "OdirLinearMap"]

#: A training log-loss below this means the classes are (nearly) separable.
SEPARABLE_LOSS = 1e-4


class LinearCalibrationMap(CalibrationMap):
    """Base of the vector, matrix and Dirichlet maps (not registered).

    Subclasses set ``kind`` and ``raw_logits`` and implement
    :meth:`_strengths`.

    Attributes
    ----------
    coef_ : numpy.ndarray, shape (K,) or (K, K)
        ``w`` (vector kind) or ``W`` (full kind).
    intercept_ : numpy.ndarray, shape (K,)
        ``b``.
    reg_lambda_, reg_mu_ : float
        Penalty strengths of the final fit: as given, or the chosen grid value
        times ``n_fit / N`` (see :func:`fit_linear_map`).
    n_iter_ : int
        L-BFGS-B iterations of the final fit.
    converged_ : bool
        Whether L-BFGS-B reported convergence.
    train_loss_ : float
        Mean log-loss (without penalty) on the fitting rows.
    reg_path_ : list of dict
        ``reg_lambda``, ``reg_mu``, held-out ``val_loss`` and ``n_fit`` (rows fitted
        on) of each tried strength; empty when none was chosen.
    n_parameters_ : int
        ``2 K`` (vector kind) or ``K (K + 1)`` (full kind).
    """

    kind: ClassVar[str] = ""
    needs_probs_with_logits = False
    #: Use logits as given when known (True) or always log-probabilities (False).
    raw_logits: ClassVar[bool] = True

    def _strengths(self) -> tuple[float | None, float | None]:
        """``(reg_lambda, reg_mu)``; None where validation chooses."""
        raise NotImplementedError

    def _features_of(self, probs: np.ndarray | None, logits: np.ndarray | None) -> np.ndarray:
        return map_features(probs, logits, raw_logits=self.raw_logits)

    def _fit(
        self,
        probs: np.ndarray | None,
        logits: np.ndarray | None,
        labels: np.ndarray,
        sample_weight: np.ndarray | None = None,
    ) -> None:
        reg_lambda, reg_mu = self._strengths()
        max_iter = int(getattr(self, "max_iter", 1000))
        if max_iter < 1:
            raise CalibrationInputError(f"max_iter must be a positive integer, got {max_iter}.")
        x = self._features_of(probs, logits)
        self._warn_few_rows(*x.shape)
        # One BLAS thread: the (K, n) @ (n, K) products are too small to gain from
        # several, which compete with each other and with parallel fits.
        with threadpool_limits(limits=1, user_api="blas"):
            fit = fit_linear_map(
                x,
                labels,
                self.kind,
                reg_lambda=reg_lambda,
                reg_mu=reg_mu,
                reg_grid=getattr(self, "reg_grid", None),
                max_iter=max_iter,
                random_state=getattr(self, "random_state", 0),
                sample_weight=sample_weight,
            )
        self._keep_fit(fit, x.shape[1])
        self._warn_about_fit(fit)

    def _warn_few_rows(self, n: int, k: int) -> None:
        """Warn when the map has more parameters than the ``n`` rows to fit them on.

        Called by :meth:`_fit` only: the warning names the caller of ``fit``.
        """
        n_params = linear_parameters(self.kind, k)
        if n < n_params:
            warnings.warn(
                f"{type(self).__name__} has {n_params} parameters but only {n} rows to fit "
                "them on; expect overfitting (use stronger regularisation, more rows, or "
                "temperature scaling).",
                CalibrationFitWarning,
                stacklevel=4,
            )

    def _keep_fit(self, fit: LinearFit, k: int) -> None:
        """Set the fitted attributes (see the class docstring) from ``fit``."""
        coef, b = unpack(fit.theta, self.kind, k)
        self.coef_ = coef.copy()
        self.intercept_ = b.copy()
        self.reg_lambda_ = fit.reg_lambda
        self.reg_mu_ = fit.reg_mu
        self.reg_path_ = fit.path
        self.n_iter_ = fit.n_iter
        self.converged_ = fit.converged
        self.train_loss_ = fit.data_loss

    def _warn_about_fit(self, fit: LinearFit) -> None:
        """Warn when ``fit`` did not converge or the classes are (nearly) separable.

        Called by :meth:`_fit` only: the warnings name the caller of ``fit``.
        """
        name = type(self).__name__
        if not fit.converged:
            warnings.warn(
                f"{name} did not converge in {fit.n_iter} L-BFGS-B iterations "
                f"({fit.message}); raise max_iter or regularise more.",
                ConvergenceWarning,
                stacklevel=4,
            )
        if fit.data_loss < SEPARABLE_LOSS:
            warnings.warn(
                f"{name}: the training log-loss is {fit.data_loss:.2g}, so the classes are "
                "(nearly) separable and the fitted scale is limited only by the optimiser's "
                "tolerance and the penalty; calibrated probabilities will be extreme.",
                CalibrationFitWarning,
                stacklevel=4,
            )

    def _predict_proba(self, probs: np.ndarray | None, logits: np.ndarray | None) -> np.ndarray:
        from scipy.special import log_softmax

        x = self._features_of(probs, logits)
        return np.exp(log_softmax(linear_logits(x, self.coef_, self.intercept_), axis=1))

    def _count_parameters(self) -> int:
        return linear_parameters(self.kind, int(self.n_classes_))

    def planned_parameters(self, n_classes: int) -> int | None:
        """Weights and intercepts on K classes (:meth:`CalibrationMap.planned_parameters`)."""
        return linear_parameters(self.kind, int(n_classes))

    def _fitted_state(self) -> dict[str, Any]:
        return {
            "coef": self.coef_.tolist(),
            "intercept": self.intercept_.tolist(),
            "reg_lambda": float(self.reg_lambda_),
            "reg_mu": float(self.reg_mu_),
            "n_iter": int(self.n_iter_),
        }

    def _load_fitted_state(self, state: dict[str, Any]) -> None:
        k = self.n_classes_
        shape = (k,) if self.kind == "vector" else (k, k)
        coef = state_array(state, "coef", shape)
        intercept = state_array(state, "intercept", (k,))
        if not (np.isfinite(coef).all() and np.isfinite(intercept).all()):
            raise CalibrationInputError("the map export holds non-finite coefficients.")
        self.coef_ = coef
        self.intercept_ = intercept
        self.reg_lambda_ = float(state.get("reg_lambda", 0.0))
        self.reg_mu_ = float(state.get("reg_mu", 0.0))
        self.n_iter_ = int(state.get("n_iter", 0))
        self.reg_path_ = []


class OdirLinearMap(LinearCalibrationMap):
    """Base of the full-matrix maps regularised with ODIR (matrix, Dirichlet).

    Parameters
    ----------
    reg_lambda : float or None
        Off-diagonal penalty ``reg_lambda / (K (K - 1)) * sum_{i != j} W_ij^2``.
    reg_mu : float or None
        Intercept penalty ``reg_mu / K * sum_j b_j^2``. None (either strength)
        picks it from ``reg_grid`` by held-out log-loss.
    reg_grid : sequence of float or None
        Strengths tried when one is None; None means :data:`DEFAULT_REG_GRID`.
    input : {"probs", "logits"}
    max_iter : int
        L-BFGS-B iteration limit.
    random_state : int
        Seed of the validation split.
    """

    kind = "full"

    def __init__(
        self,
        reg_lambda: float | None = None,
        reg_mu: float | None = None,
        reg_grid=None,
        input: str = "probs",
        max_iter: int = 1000,
        random_state: int = 0,
    ) -> None:
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.reg_grid = reg_grid
        self.input = input
        self.max_iter = max_iter
        self.random_state = random_state

    def _strengths(self) -> tuple[float | None, float | None]:
        return (
            check_strength("reg_lambda", self.reg_lambda),
            check_strength("reg_mu", self.reg_mu),
        )
