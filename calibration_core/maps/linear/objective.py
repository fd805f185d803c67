"""Objective of the multiclass linear maps: parametrisation, log-loss and penalty.

Each linear map (vector, matrix, Dirichlet) is a softmax of an affine function
of per-class input features ``x`` (logits, or log-probabilities):

``"vector"`` kind
    ``softmax(w * x + b)``, parameters ``w, b`` of shape (K,) (2K in all).
``"full"`` kind
    ``softmax(x @ W.T + b)``, parameters ``W`` (K, K) and ``b`` (K,) (K^2 + K).

:class:`SoftmaxLinearObjective` is the mean softmax log-loss (negative
log-likelihood of the true class; the weighted mean with sample weights) plus
a quadratic penalty, with the analytic
gradient and the Hessian diagonal; the helpers here convert between flat
parameters and ``(coef, intercept)``. Fitting lives in
:mod:`~calibration_core.maps.linear.fit`.

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
The objective is computed in float64 over class-major row blocks of at most
:data:`BLOCK_ELEMENTS` values (bounded memory), with one ``exp`` pass and,
for the full kind, two matrix products per block; the true-class terms are
linear in the parameters and come from per-class feature totals computed once.
"""

from __future__ import annotations

import numpy as np

from ..base import log_inputs
from ..counts import linear_parameters

__all__ = [
    "BLOCK_ELEMENTS",
    "KINDS",
    "SoftmaxLinearObjective",
    "identity_parameters",
    "linear_logits",
    "map_features",
    "unpack",
]

#: Row blocks of the objective hold at most this many float64 values (32 MB).
BLOCK_ELEMENTS = 1 << 22
KINDS = ("vector", "full")


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
    return np.ascontiguousarray(log_inputs(probs, logits), dtype=np.float64)


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
    weights : numpy.ndarray, shape (N,), optional
        Positive row weights: the log-loss is then ``sum_n w_n l_n / sum_n w_n``
        (integer weights act as repeated rows). None weighs every row 1.

    Attributes
    ----------
    n : int
        Rows.
    total : float
        The divisor of the mean log-loss: N, or the summed weight.

    Calling the objective with flat parameters ``theta`` returns
    ``(value, gradient)`` as ``scipy.optimize.minimize(jac=True)`` expects.

    Notes
    -----
    The features are stored class-major, as contiguous (K, n) blocks of at
    most :data:`BLOCK_ELEMENTS` values: the per-row reductions of the softmax
    (max, sum over classes) then run along contiguous memory rather than over
    short rows when K is small.
    """

    def __init__(
        self,
        x: np.ndarray,
        labels: np.ndarray,
        kind: str,
        *,
        reg_lambda: float = 0.0,
        reg_mu: float = 0.0,
        weights: np.ndarray | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        x = np.asarray(x, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.intp)
        self.kind = kind
        self.n, self.k = x.shape
        self.reg_lambda = float(reg_lambda)
        self.reg_mu = float(reg_mu)
        self.total = self.n if weights is None else float(weights.sum())
        cols = max(1, BLOCK_ELEMENTS // self.k)
        starts = range(0, self.n, cols)
        self._blocks = [np.ascontiguousarray(x[i : i + cols].T) for i in starts]
        self._block_weights = [None if weights is None else weights[i : i + cols] for i in starts]
        # The true-class outputs are linear in the parameters, so their sum is computed from
        # per-class totals of the (weighted) features, once:
        # sum_n w_n out[y_n, n] = <coef, S> + <b, C>.
        self._class_counts = np.bincount(labels, weights=weights, minlength=self.k).astype(
            np.float64
        )
        if kind == "vector":  # S_j = sum of w_n x_nj over rows of class j
            true = x[np.arange(self.n), labels]
            self._class_sums: np.ndarray = np.bincount(
                labels, weights=true if weights is None else true * weights, minlength=self.k
            )
        else:  # S_j. = sum of the feature rows w_n x_n. of class j, shape (K, K)
            self._class_sums = np.zeros((self.k, self.k))
            np.add.at(self._class_sums, labels, x if weights is None else x * weights[:, None])
        self.n_evaluations = 0

    @property
    def n_params(self) -> int:
        return linear_parameters(self.kind, self.k)

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
        for xt, wt in zip(self._blocks, self._block_weights, strict=True):
            out = self._outputs(xt, coef, b)
            top = out.max(axis=0)
            out -= top
            np.exp(out, out=out)
            norm = out.sum(axis=0)
            if wt is None:
                total += float(np.sum(np.log(norm)) + np.sum(top))
            else:
                total += float(np.log(norm) @ wt + top @ wt)
            if gradient:
                out /= norm  # softmax; the one-hot part of the residual is in gcoef, gb
                if wt is not None:
                    out *= wt
                if self.kind == "vector":
                    gcoef += np.einsum("ij,ij->i", out, xt)
                else:
                    gcoef += out @ xt.T
                gb += out.sum(axis=1)
        if gcoef is None or gb is None:  # no gradient asked for
            return total / self.total, None
        grad = np.concatenate([gcoef.ravel(), gb]) / self.total
        return total / self.total, grad

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
        for xt, wt in zip(self._blocks, self._block_weights, strict=True):
            out = self._outputs(xt, coef, b)
            out -= out.max(axis=0)
            np.exp(out, out=out)
            out /= out.sum(axis=0)
            out *= 1.0 - out  # p (1 - p)
            if wt is not None:
                out *= wt
            hb += out.sum(axis=1)
            if self.kind == "vector":
                hcoef += np.einsum("ij,ij,ij->i", out, xt, xt)
            else:
                hcoef += out @ (xt * xt).T
        hcoef /= self.total
        hb /= self.total
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
