"""Shared machinery of the multiclass linear maps (vector, matrix, Dirichlet).

Not a map itself. Each of these maps is a softmax of an affine function of
per-class input features ``x`` (logits, or log-probabilities):

``"vector"`` kind
    ``softmax(w * x + b)``, parameters ``w, b`` of shape (K,) (2K in all).
``"full"`` kind
    ``softmax(x @ W.T + b)``, parameters ``W`` (K, K) and ``b`` (K,) (K^2 + K).

They are fitted by minimising the mean softmax log-loss (negative
log-likelihood of the true class) plus a quadratic penalty, with the analytic
gradient, through ``scipy.optimize.minimize(method="L-BFGS-B", jac=True)``,
starting from the identity map (``W = I`` or ``w = 1``, ``b = 0``). Fits report
``converged_`` and ``n_iter_``, warn (:class:`CalibrationFitWarning`) when there
are fewer rows than parameters or the classes are separable, and warn
(``ConvergenceWarning``) when L-BFGS-B stops at ``max_iter``.

Penalties (``lam`` and ``mu`` are the user's strengths)
-----------------------------------------------------
``"full"``: ODIR, off-diagonal and intercept regularisation (Kull et al. 2019)::

    lam / (K (K - 1)) * sum_{i != j} W_ij^2  +  mu / K * sum_j b_j^2

It leaves the diagonal free, so a strong penalty leaves a per-class scaling.

``"vector"``: shrinkage towards one common temperature::

    lam / K * sum_j (w_j - mean(w))^2  +  mu / K * sum_j b_j^2

A strong penalty turns vector scaling into temperature scaling.

Speed
-----
* The objective is computed in float64 over class-major row blocks of at most
  :data:`BLOCK_ELEMENTS` values (bounded memory), with one ``exp`` pass and,
  for the full kind, two matrix products per block; the true-class terms are
  linear in the parameters and come from per-class feature totals computed once.
* L-BFGS-B runs on parameters rescaled by the Hessian diagonal at the start
  (about 30x fewer iterations for ODIR at K = 100, where penalised
  off-diagonal weights and free diagonal ones differ in curvature by 1e3).
* Fits use one BLAS thread (small products; measured up to 10x slower with
  two threads on a busy 2-core machine).
* With many rows, a fit starts from the fit on a strided subsample
  (:data:`SUBSAMPLE_ROWS`); strength selection warm-starts along the grid.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from ..errors import CalibrationInputError
from .base import CalibrationMap

__all__: list[str] = []  # shared machinery, no public map here

#: Row blocks of the objective hold at most this many float64 values (32 MB).
BLOCK_ELEMENTS = 1 << 22
#: Default tied (lambda = mu) strengths tried when a strength is left to validation.
DEFAULT_REG_GRID: tuple[float, ...] = (1e-2, 1e-1, 1.0, 10.0, 1e2, 1e3, 1e4, 1e5)
#: Share of rows held out (stratified, seeded) to choose the strengths.
VALIDATION_FRACTION = 0.2
#: Strengths are chosen on a strided subsample of this many rows when N is over twice as large.
SELECTION_ROWS = 25000
#: Looser L-BFGS-B ``ftol`` while choosing strengths: held-out log-losses are
#: then within about 1e-4 of their converged values, at half the iterations.
SELECTION_FTOL = 1e-7
#: Above 4x this many rows, a fit without strength selection starts from the fit on a
#: strided subsample of this many rows.
SUBSAMPLE_ROWS = 16384
#: A training log-loss below this means the classes are (nearly) separable.
SEPARABLE_LOSS = 1e-4
KINDS = ("vector", "full")


class CalibrationFitWarning(UserWarning):
    """A fit that ran but may be unreliable (too few rows, separable classes)."""


def map_features(
    probs: np.ndarray | None, logits: np.ndarray | None, *, raw_logits: bool
) -> np.ndarray:
    """Input features of a linear map, shape (N, K), float64.

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K), or None when logits are given
    logits : numpy.ndarray, shape (N, K), or None
    raw_logits : bool
        Use the logits as given when known (vector and matrix scaling, as in
        Guo et al. 2017); otherwise, and always when only probabilities are
        known, the log-probabilities ``ln s`` (Dirichlet calibration).
    """
    if raw_logits and logits is not None:
        return np.ascontiguousarray(logits, dtype=np.float64)
    return np.ascontiguousarray(CalibrationMap._log_inputs(probs, logits), dtype=np.float64)


def n_parameters(kind: str, k: int) -> int:
    """Number of free parameters of a ``kind`` map on K classes."""
    return 2 * k if kind == "vector" else k * k + k


def identity_parameters(kind: str, k: int) -> np.ndarray:
    """Flat parameters of the identity map: ``w = 1`` or ``W = I``, ``b = 0``."""
    if kind == "vector":
        return np.concatenate([np.ones(k), np.zeros(k)])
    return np.concatenate([np.eye(k).ravel(), np.zeros(k)])


def unpack(theta: np.ndarray, kind: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(w (K,) or W (K, K), b (K,))`` views of flat parameters."""
    if kind == "vector":
        return theta[:k], theta[k:]
    return theta[: k * k].reshape(k, k), theta[k * k :]


def linear_logits(x: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
    """Map outputs before the softmax, shape (N, K).

    Parameters
    ----------
    x : numpy.ndarray, shape (N, K)
    coef : numpy.ndarray, shape (K,) (vector kind) or (K, K) (full kind)
    intercept : numpy.ndarray, shape (K,)
    """
    out = x * coef if coef.ndim == 1 else x @ coef.T
    out += intercept
    return out


class SoftmaxLinearObjective:
    """Mean softmax log-loss of a linear map plus its penalty, with the gradient.

    Parameters
    ----------
    x : numpy.ndarray, shape (N, K)
        Features (logits or log-probabilities), float64.
    labels : numpy.ndarray, shape (N,)
        True classes in 0..K-1.
    kind : {"vector", "full"}
    reg_lambda, reg_mu : float
        Penalty strengths (see the module docstring); 0 for none.

    Calling the objective with flat parameters ``theta`` returns
    ``(value, gradient)`` as ``scipy.optimize.minimize(jac=True)`` expects.

    Notes
    -----
    The features are stored class-major, as contiguous (K, n) blocks of at
    most :data:`BLOCK_ELEMENTS` values: the per-row reductions of the softmax
    (max, sum over classes) then run along contiguous memory, which is several
    times faster than reducing short rows when K is small.
    """

    def __init__(
        self,
        x: np.ndarray,
        labels: np.ndarray,
        kind: str,
        *,
        reg_lambda: float = 0.0,
        reg_mu: float = 0.0,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        x = np.asarray(x, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.intp)
        self.kind = kind
        self.n, self.k = x.shape
        self.reg_lambda = float(reg_lambda)
        self.reg_mu = float(reg_mu)
        cols = max(1, BLOCK_ELEMENTS // self.k)
        self._blocks = [np.ascontiguousarray(x[i : i + cols].T) for i in range(0, self.n, cols)]
        # The true-class outputs are linear in the parameters, so their sum is computed from
        # per-class totals of the features, once: sum_n out[y_n, n] = <coef, S> + <b, C>.
        self._class_counts = np.bincount(labels, minlength=self.k).astype(np.float64)
        if kind == "vector":  # S_j = sum of x_nj over rows of class j
            self._class_sums = np.bincount(
                labels, weights=x[np.arange(self.n), labels], minlength=self.k
            )
        else:  # S_j. = sum of the feature rows x_n. of class j, shape (K, K)
            self._class_sums = np.zeros((self.k, self.k))
            np.add.at(self._class_sums, labels, x)
        self.n_evaluations = 0

    @property
    def n_params(self) -> int:
        return n_parameters(self.kind, self.k)

    def data_loss(self, theta: np.ndarray) -> float:
        """Mean log-loss without the penalty."""
        return self._data_term(theta, gradient=False)[0]

    def penalty(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Penalty value and its gradient, shape (n_params,)."""
        k = self.k
        coef, b = unpack(theta, self.kind, k)
        grad = np.zeros_like(theta)
        gcoef, gb = unpack(grad, self.kind, k)
        value = 0.0
        if self.reg_lambda:
            if self.kind == "vector":
                dev = coef - coef.mean()
                scale = self.reg_lambda / k
            else:
                dev = coef.copy()
                np.fill_diagonal(dev, 0.0)
                scale = self.reg_lambda / (k * (k - 1))
            value += scale * float(np.sum(dev * dev))
            gcoef += 2.0 * scale * dev
        if self.reg_mu:
            scale = self.reg_mu / k
            value += scale * float(b @ b)
            gb += 2.0 * scale * b
        return value, grad

    def _outputs(self, xt: np.ndarray, coef: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Map outputs of one block, class-major, shape (K, n)."""
        out = coef[:, None] * xt if self.kind == "vector" else coef @ xt
        out += b[:, None]
        return out

    def _data_term(self, theta: np.ndarray, gradient: bool) -> tuple[float, np.ndarray | None]:
        k = self.k
        coef, b = unpack(np.asarray(theta, dtype=np.float64), self.kind, k)
        # sum_n log sum_j exp(out_jn), then minus the true-class outputs (see __init__)
        total = -float(np.sum(coef * self._class_sums) + b @ self._class_counts)
        gcoef = -self._class_sums.copy() if gradient else None
        gb = -self._class_counts.copy() if gradient else None
        for xt in self._blocks:
            out = self._outputs(xt, coef, b)
            top = out.max(axis=0)
            out -= top
            np.exp(out, out=out)
            norm = out.sum(axis=0)
            total += float(np.sum(np.log(norm)) + np.sum(top))
            if gradient:
                out /= norm  # softmax; the one-hot part of the residual is in gcoef, gb
                if self.kind == "vector":
                    gcoef += np.einsum("ij,ij->i", out, xt)
                else:
                    gcoef += out @ xt.T
                gb += out.sum(axis=1)
        if not gradient:
            return total / self.n, None
        grad = np.concatenate([gcoef.ravel(), gb]) / self.n
        return total / self.n, grad

    def hessian_diagonal(self, theta: np.ndarray) -> np.ndarray:
        """Diagonal of the objective's Hessian at ``theta``, shape (n_params,).

        Data term: ``mean_n p_nj (1 - p_nj) x_n.^2`` for the weights of class j
        (Gauss-Newton diagonal of the softmax log-loss), ``mean_n p_nj (1 - p_nj)``
        for its intercept; plus the penalty's (constant) diagonal. Used to
        precondition L-BFGS-B.
        """
        k = self.k
        coef, b = unpack(np.asarray(theta, dtype=np.float64), self.kind, k)
        hcoef = np.zeros_like(coef)
        hb = np.zeros(k)
        for xt in self._blocks:
            out = self._outputs(xt, coef, b)
            out -= out.max(axis=0)
            np.exp(out, out=out)
            out /= out.sum(axis=0)
            out *= 1.0 - out  # p (1 - p)
            hb += out.sum(axis=1)
            if self.kind == "vector":
                hcoef += np.einsum("ij,ij,ij->i", out, xt, xt)
            else:
                hcoef += out @ (xt * xt).T
        hcoef /= self.n
        hb /= self.n
        if self.reg_lambda:
            if self.kind == "vector":
                hcoef += 2.0 * self.reg_lambda / k * (1.0 - 1.0 / k)
            else:
                off = 2.0 * self.reg_lambda / (k * (k - 1))
                hcoef += off
                hcoef[np.diag_indices(k)] -= off
        if self.reg_mu:
            hb += 2.0 * self.reg_mu / k
        return np.concatenate([hcoef.ravel(), hb])

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        self.n_evaluations += 1
        value, grad = self._data_term(theta, gradient=True)
        pen, gpen = self.penalty(theta)
        return value + pen, grad + gpen


@dataclass
class LinearFit:
    """Result of :func:`fit_linear_map`."""

    theta: np.ndarray
    loss: float
    data_loss: float
    converged: bool
    n_iter: int
    message: str
    reg_lambda: float = 0.0
    reg_mu: float = 0.0
    path: list[dict[str, float]] = field(default_factory=list)


def minimize_objective(
    objective: SoftmaxLinearObjective,
    theta0: np.ndarray,
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
    ftol: float = 1e-11,
) -> LinearFit:
    """Minimise with L-BFGS-B and the analytic gradient, from ``theta0``.

    The parameters are rescaled by the inverse square root of the Hessian
    diagonal at ``theta0`` (:meth:`SoftmaxLinearObjective.hessian_diagonal`), a
    change of variables that leaves the minimiser unchanged but makes the
    strongly penalised off-diagonal weights and the free diagonal ones look
    alike to L-BFGS-B (on K = 100 this cuts the iterations about 30-fold).
    Convergence: the relative change of the objective in one iteration falls
    below ``ftol``, or the largest rescaled gradient entry below ``tol``.
    """
    theta0 = np.asarray(theta0, dtype=np.float64)
    diag = objective.hessian_diagonal(theta0)
    floor = 1e-10 * max(float(diag.max()), 1e-300)
    scale = 1.0 / np.sqrt(np.maximum(diag, floor))

    def scaled(u: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = objective(u * scale)
        return value, grad * scale

    res = minimize(
        scaled,
        theta0 / scale,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": int(max_iter), "gtol": float(tol), "ftol": float(ftol), "maxcor": 20},
    )
    theta = np.asarray(res.x, dtype=np.float64) * scale
    if not np.all(np.isfinite(theta)):  # pragma: no cover - defensive
        raise FloatingPointError("the optimiser returned non-finite parameters")
    # An abnormal line search at the optimum (gradient at rounding level) is convergence too.
    grad_ok = res.jac is not None and bool(np.max(np.abs(res.jac)) <= 10 * tol)
    return LinearFit(
        theta=theta,
        loss=float(res.fun),
        data_loss=objective.data_loss(theta),
        converged=bool(res.success) or grad_ok,
        n_iter=int(res.nit),
        message=str(res.message),
        reg_lambda=objective.reg_lambda,
        reg_mu=objective.reg_mu,
    )


def stratified_holdout(labels: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Boolean mask of validation rows: every ``1/fraction``-th row of each class.

    Rows are ordered by class and, within a class, randomly (seeded), so each
    class gives the same share of validation rows (up to rounding).
    """
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(labels.shape[0]), labels))
    step = max(2, round(1.0 / fraction))
    mask = np.zeros(labels.shape[0], dtype=bool)
    mask[order[rng.integers(step) :: step]] = True
    return mask


def fit_linear_map(
    x: np.ndarray,
    labels: np.ndarray,
    kind: str,
    *,
    reg_lambda: float | None,
    reg_mu: float | None,
    reg_grid=None,
    max_iter: int = 1000,
    tol: float = 1e-6,
    random_state: int | None = 0,
) -> LinearFit:
    """Fit a linear map; choose unset strengths by validation log-loss.

    When ``reg_lambda`` or ``reg_mu`` is None, a stratified, seeded
    :data:`VALIDATION_FRACTION` of the rows (of a strided subsample of
    :data:`SELECTION_ROWS` rows when there are more than twice as many) is
    held out; the map is fitted on the rest for each value of ``reg_grid``
    from the largest down (each fit warm started from the previous one, with
    the looser :data:`SELECTION_FTOL`; both strengths take the grid value when
    both are unset, the unset one only otherwise) until the held-out log-loss
    stops falling. The map is then refitted on all N rows from the best
    solution, with the chosen strength scaled by ``n_fit / N`` (``n_fit`` the
    rows it was fitted on): the penalty is added to a *mean* log-loss, so this
    keeps its weight against the summed log-likelihood fixed, as refitting
    with the same ``C`` does in scikit-learn's ``LogisticRegressionCV``. With
    no row to hold out, the largest grid value is used.

    Returns
    -------
    LinearFit
        ``path`` lists each tried ``reg_lambda``, ``reg_mu`` and held-out
        ``val_loss``, and ``n_fit``, the rows each was fitted on.
    """
    n, k = x.shape
    theta0 = identity_parameters(kind, k)
    path: list[dict[str, float]] = []
    if reg_lambda is None or reg_mu is None:
        grid = _check_grid(reg_grid)
        seed = 0 if random_state is None else int(random_state)
        stride = n // SELECTION_ROWS if n > 2 * SELECTION_ROWS else 1
        xs, ys = x[::stride], labels[::stride]
        mask = stratified_holdout(ys, VALIDATION_FRACTION, seed)
        if mask.all() or not mask.any():  # too few rows to hold any out: strongest penalty
            strongest = max(grid)
            reg_lambda = strongest if reg_lambda is None else reg_lambda
            reg_mu = strongest if reg_mu is None else reg_mu
        else:
            val = SoftmaxLinearObjective(xs[mask], ys[mask], kind)
            train = SoftmaxLinearObjective(xs[~mask], ys[~mask], kind)
            best: tuple[float, float, float, np.ndarray] | None = None
            theta = theta0
            for value in sorted(grid, reverse=True):
                lam = value if reg_lambda is None else reg_lambda
                mu = value if reg_mu is None else reg_mu
                train.reg_lambda, train.reg_mu = lam, mu
                fit = minimize_objective(
                    train, theta, max_iter=max_iter, tol=tol, ftol=SELECTION_FTOL
                )
                theta = fit.theta
                val_loss = val.data_loss(theta)
                path.append(
                    {"reg_lambda": lam, "reg_mu": mu, "val_loss": val_loss, "n_fit": train.n}
                )
                if best is not None and val_loss >= best[2]:
                    break  # the validation curve has turned: weaker penalties only overfit more
                best = (lam, mu, val_loss, theta)
            scale = train.n / n
            lam, mu, _, theta0 = best
            reg_lambda = lam * scale if reg_lambda is None else reg_lambda
            reg_mu = mu * scale if reg_mu is None else reg_mu
    elif n > 4 * SUBSAMPLE_ROWS:
        # Many rows: start from the fit on a strided subsample (a few cheap iterations).
        stride = n // SUBSAMPLE_ROWS
        sub = SoftmaxLinearObjective(
            x[::stride], labels[::stride], kind, reg_lambda=reg_lambda, reg_mu=reg_mu
        )
        theta0 = minimize_objective(
            sub, theta0, max_iter=max_iter, tol=tol, ftol=SELECTION_FTOL
        ).theta
    objective = SoftmaxLinearObjective(x, labels, kind, reg_lambda=reg_lambda, reg_mu=reg_mu)
    result = minimize_objective(objective, theta0, max_iter=max_iter, tol=tol)
    result.path = path
    return result


def _check_grid(reg_grid) -> list[float]:
    if reg_grid is None:
        return list(DEFAULT_REG_GRID)
    try:
        grid = [float(v) for v in np.atleast_1d(np.asarray(reg_grid, dtype=float))]
    except (TypeError, ValueError):
        grid = []
    if not grid or not all(np.isfinite(v) and v >= 0 for v in grid):
        raise CalibrationInputError(
            f"reg_grid must be a non-empty list of non-negative numbers, got {reg_grid!r}."
        )
    return grid


def _check_strength(name: str, value) -> float | None:
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        value = float("nan")
    if not (np.isfinite(value) and value >= 0):
        raise CalibrationInputError(f"{name} must be a non-negative number or None, got {value!r}.")
    return value


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
    """

    kind: ClassVar[str] = ""
    needs_probs_with_logits = False
    #: Use logits as given when known (True) or always log-probabilities (False).
    raw_logits: ClassVar[bool] = True

    def _strengths(self) -> tuple[float | None, float | None]:
        """``(reg_lambda, reg_mu)``; None where validation chooses."""
        raise NotImplementedError

    def _features_of(self, probs: np.ndarray, logits: np.ndarray | None) -> np.ndarray:
        return map_features(probs, logits, raw_logits=self.raw_logits)

    def _fit(self, probs: np.ndarray, logits: np.ndarray | None, labels: np.ndarray) -> None:
        reg_lambda, reg_mu = self._strengths()
        max_iter = int(getattr(self, "max_iter", 1000))
        if max_iter < 1:
            raise CalibrationInputError(f"max_iter must be a positive integer, got {max_iter}.")
        x = self._features_of(probs, logits)
        n, k = x.shape
        n_params = n_parameters(self.kind, k)
        name = type(self).__name__
        if n < n_params:
            warnings.warn(
                f"{name} has {n_params} parameters but only {n} rows to fit them on; "
                "expect overfitting (use stronger regularisation, more rows, or "
                "temperature scaling).",
                CalibrationFitWarning,
                stacklevel=3,
            )
        # One BLAS thread: the (K, n) @ (n, K) products are small, and several threads
        # on a busy machine (or beside parallel fits) were measured up to 10x slower.
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
            )
        coef, b = unpack(fit.theta, self.kind, k)
        self.coef_ = coef.copy()
        self.intercept_ = b.copy()
        self.reg_lambda_ = fit.reg_lambda
        self.reg_mu_ = fit.reg_mu
        self.reg_path_ = fit.path
        self.n_iter_ = fit.n_iter
        self.converged_ = fit.converged
        self.train_loss_ = fit.data_loss
        if not fit.converged:
            warnings.warn(
                f"{name} did not converge in {fit.n_iter} L-BFGS-B iterations "
                f"({fit.message}); raise max_iter or regularise more.",
                ConvergenceWarning,
                stacklevel=3,
            )
        if fit.data_loss < SEPARABLE_LOSS:
            warnings.warn(
                f"{name}: the training log-loss is {fit.data_loss:.2g}, so the classes are "
                "(nearly) separable and the fitted scale is limited only by the optimiser's "
                "tolerance and the penalty; calibrated probabilities will be extreme.",
                CalibrationFitWarning,
                stacklevel=3,
            )

    def _predict_proba(self, probs: np.ndarray, logits: np.ndarray | None) -> np.ndarray:
        from scipy.special import log_softmax

        x = self._features_of(probs, logits)
        return np.exp(log_softmax(linear_logits(x, self.coef_, self.intercept_), axis=1))

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
        coef = np.asarray(state["coef"], dtype=np.float64)
        intercept = np.asarray(state["intercept"], dtype=np.float64)
        shape = (k,) if self.kind == "vector" else (k, k)
        if coef.shape != shape or intercept.shape != (k,):
            raise CalibrationInputError(
                f"the {type(self).__name__} export holds coefficients of shape {coef.shape} "
                f"and intercepts of shape {intercept.shape}; expected {shape} and ({k},)."
            )
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
            _check_strength("reg_lambda", self.reg_lambda),
            _check_strength("reg_mu", self.reg_mu),
        )
