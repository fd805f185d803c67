"""Batched Newton fits of C one-vs-rest logistic regressions (Platt, beta), with a warm start.

:func:`fit_logistic_columns` runs one batched Newton iteration with an
Armijo backtracking line search for all columns at once: the gradients
(C, P) and Hessians (C, P, P) are row reductions over (C, N) arrays and
the C Newton systems are solved by one batched ``numpy.linalg.solve``.
Newton converges in a handful of iterations (6-7 on CIFAR-like data),
which is why it is used instead of ``scipy.optimize.minimize`` (L-BFGS-B)
on the block-diagonal problem: one L-BFGS-B run on all C * P parameters
needs as many iterations as its worst class, each touching all columns,
and scikit-learn's per-class L-BFGS-B needs tens of iterations per class.
On many rows the Newton iterations start from the fit on a random
subsample of :data:`WARM_START_ROWS` rows, whose parameters differ from
the full-data fit by the subsample's statistical error (about 0.08 at
K = 10, 0.2-0.5 at K = 100 where a class has few positives): three or
four full-data iterations then reach the same optimum (the subsample
only chooses the starting point) instead of six or seven from the
identity map.

Column blocks (:data:`~calibration_core.maps.binary_columns.BLOCK_ELEMENTS`
values each) run on parallel threads (:mod:`calibration_core.parallel`;
``CALIBRATION_CORE_THREADS=1`` turns it off).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided
from scipy.special import expit

from ..parallel import map_blocks
from .binary_columns import BLOCK_ELEMENTS

__all__ = [
    "RIDGE",
    "SEPARABLE_LOSS",
    "WARM_START_FACTOR",
    "WARM_START_ROWS",
    "LogisticColumnsFit",
    "LogisticObjective",
    "fit_logistic_columns",
    "newton_columns",
]

#: Ridge strength on the mean log-loss, pulling every logistic parameter towards
#: its starting value. It keeps the weights finite when the scores separate the
#: classes (or a class has no positive rows) and moves non-degenerate fits by
#: about 1e-12 / curvature, far below the 1e-6 agreement with scikit-learn.
RIDGE = 1e-12
#: A column whose training log-loss falls below this is (nearly) separable.
SEPARABLE_LOSS = 1e-6
#: Logistic fits on more rows than ``WARM_START_FACTOR * WARM_START_ROWS`` start
#: from a fit on a seeded random subsample of ``WARM_START_ROWS`` rows (see
#: :func:`fit_logistic_columns`).
WARM_START_ROWS = 8192
WARM_START_FACTOR = 4


@dataclass(frozen=True)
class LogisticColumnsFit:
    """Result of :func:`fit_logistic_columns`.

    Attributes
    ----------
    params : numpy.ndarray, shape (C, P)
        ``[w_1, ..., w_F, intercept]`` per column.
    converged : numpy.ndarray, shape (C,), bool
    n_iter : numpy.ndarray, shape (C,), int
        Newton iterations per column.
    loss : numpy.ndarray, shape (C,)
        Mean log-loss against the (possibly smoothed) targets at the solution,
        without the ridge.
    """

    params: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray
    loss: np.ndarray


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b)


def _row_log_sum(q: np.ndarray, chunk: int = 256) -> np.ndarray:
    """``ln(q).sum(axis=1)`` for q in [1/2, 1], shape (C, N) -> (C,).

    Products of ``chunk`` values stay above ``2**-256`` (no underflow), so one
    log per chunk replaces one log per value (the relative rounding error of a
    product, ``chunk * 1.1e-16``, is far below what matters).
    """
    n_cols, n = q.shape
    full = n // chunk * chunk
    blocks = as_strided(
        q,
        shape=(n_cols, full // chunk, chunk),
        strides=(q.strides[0], chunk * q.strides[1], q.strides[1]),
    )
    return np.log(np.multiply.reduce(blocks, axis=2)).sum(axis=1) + np.log(q[:, full:]).sum(axis=1)


def fit_logistic_columns(
    features,
    positive: np.ndarray,
    init: np.ndarray,
    *,
    t_pos: np.ndarray | None = None,
    t_neg: np.ndarray | None = None,
    active: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    ridge: float = RIDGE,
    max_iter: int = 100,
    xtol: float = 1e-10,
    block_elements: int = BLOCK_ELEMENTS,
    warm_start_rows: int | None = WARM_START_ROWS,
    threads: int | None = None,
) -> LogisticColumnsFit:
    """Fit C independent logistic regressions at once by batched Newton steps.

    Column ``c`` models ``P(y_c = 1) = sigmoid(sum_j theta[c, j] x_j[c] + theta[c, F])``
    and minimises the mean log-loss ``mean_n softplus(z) - t z`` (weighted
    by ``weights`` when given) plus ``ridge / 2 * ||theta - init||^2``.

    Parameters
    ----------
    features : sequence of F numpy.ndarray, each shape (C, N), float64
        The regressors of each column.
    positive : numpy.ndarray, shape (N,), intp
        Column that row n is a positive of, or -1 (one-vs-rest targets).
    init : numpy.ndarray, shape (C, F + 1)
        Starting parameters (and the ridge's centre).
    t_pos, t_neg : numpy.ndarray, shape (C,), optional
        Targets of positive and negative rows, 1 and 0 by default (Platt's
        smoothed targets are ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)``).
    active : numpy.ndarray, shape (C, F + 1), bool, optional
        Parameters to fit; the others stay at their ``init`` value.
    weights : numpy.ndarray, shape (N,), optional
        Positive row weights: the loss is ``sum_n w_n l_n / sum_n w_n``, so
        integer weights fit as repeated rows. None weighs every row 1.
    ridge : float
        Ridge strength (see :data:`RIDGE`).
    max_iter : int
        Newton iterations at most.
    xtol : float
        A column has converged when its Newton step is at most
        ``xtol * (1 + max |theta|)``, or at most
        ``sqrt(xtol) / 10 * (1 + max |theta|)`` (Newton's quadratic
        convergence leaves an error of order ``xtol / 100`` after such a full
        step), or when the step's predicted decrease of the objective (the
        squared Newton decrement) is below 1e-20; the step is then applied.
        ``loss`` may be evaluated before that last step (it differs from the
        loss after it by about the decrement).
    block_elements : int
        Columns are processed in blocks of at most this many values per array.
    warm_start_rows : int or None
        With more than ``WARM_START_FACTOR`` times this many rows, Newton's
        method starts from a fit on this many rows drawn at random (seed 0)
        instead of from ``init``; columns whose subsample fit did not converge
        or separates the classes start from ``init``. ``None`` never does.
        The starting point does not change the optimum (the objective is
        strictly convex), only the number of full-data iterations, which
        ``n_iter`` counts (the subsample's are not counted).
    threads : int, optional
        Column blocks are fitted on this many threads
        (:func:`calibration_core.parallel.n_threads` by default); the result
        does not depend on it.

    Returns
    -------
    LogisticColumnsFit
    """
    features = [np.ascontiguousarray(x, dtype=np.float64) for x in features]
    n_cols, n = features[0].shape
    n_par = len(features) + 1
    init = np.asarray(init, dtype=np.float64).reshape(n_cols, n_par)
    options: dict[str, Any] = dict(
        t_pos=np.ones(n_cols) if t_pos is None else np.asarray(t_pos, dtype=np.float64),
        t_neg=np.zeros(n_cols) if t_neg is None else np.asarray(t_neg, dtype=np.float64),
        active=np.ones((n_cols, n_par), bool) if active is None else np.asarray(active, bool),
        ridge=ridge,
        max_iter=max_iter,
        xtol=xtol,
        block_elements=block_elements,
        threads=threads,
    )
    start = init
    if warm_start_rows is not None and n > WARM_START_FACTOR * warm_start_rows:
        start = _warm_start(features, positive, init, weights, warm_start_rows, options)
    return _fit_blocks(features, positive, init, start, weights, **options)


def _fit_blocks(
    features: list[np.ndarray],
    positive: np.ndarray,
    init: np.ndarray,
    start: np.ndarray,
    weights: np.ndarray | None,
    *,
    t_pos: np.ndarray,
    t_neg: np.ndarray,
    active: np.ndarray,
    ridge: float,
    max_iter: int,
    xtol: float,
    block_elements: int,
    threads: int | None,
) -> LogisticColumnsFit:
    """Newton's method from ``start`` on blocks of columns, on ``threads`` threads.

    The step of :func:`fit_logistic_columns` (which describes the arguments)
    after its warm start.
    """
    n_cols, n = features[0].shape
    params = init.copy()
    converged = np.zeros(n_cols, bool)
    n_iter = np.zeros(n_cols, np.int64)
    loss = np.zeros(n_cols)
    width = max(1, block_elements // max(n, 1))
    pos_rows = np.flatnonzero(positive >= 0)
    pos_cols = positive[pos_rows]

    def fit_block(c0: int):
        cols = slice(c0, min(n_cols, c0 + width))
        in_block = (pos_cols >= c0) & (pos_cols < cols.stop)
        return cols, _newton_block(
            [x[cols] for x in features],
            pos_rows[in_block],
            pos_cols[in_block] - c0,
            init[cols],
            start[cols],
            t_pos[cols],
            t_neg[cols],
            active[cols],
            weights,
            ridge,
            max_iter,
            xtol,
        )

    for cols, result in map_blocks(fit_block, range(0, n_cols, width), threads):
        params[cols], converged[cols], n_iter[cols], loss[cols] = result
    return LogisticColumnsFit(params, converged, n_iter, loss)


def _warm_start(
    features: list[np.ndarray],
    positive: np.ndarray,
    init: np.ndarray,
    weights: np.ndarray | None,
    n_rows: int,
    options: dict,
) -> np.ndarray:
    """Starting parameters, shape (C, F + 1), fitted on ``n_rows`` rows drawn with seed 0.

    Columns whose subsample fit did not converge, separates the classes or is
    not finite start from ``init``.
    """
    rows = np.sort(np.random.default_rng(0).choice(features[0].shape[1], n_rows, replace=False))
    warm = fit_logistic_columns(
        [x[:, rows] for x in features],
        positive[rows],
        init,
        weights=None if weights is None else weights[rows],
        warm_start_rows=None,
        **options,
    )
    usable = warm.converged & (warm.loss >= SEPARABLE_LOSS) & np.isfinite(warm.params).all(1)
    return np.where(usable[:, None], warm.params, init)


def _newton_block(
    X, pos_rows, pos_cols, init, start, t_pos, t_neg, active, weights, ridge, max_iter, xtol
):
    """Batched Newton for one block of columns from ``start``; see :func:`fit_logistic_columns`."""
    block = _LogisticBlock(X, pos_rows, pos_cols, init, t_pos, t_neg, active, weights, ridge)
    return newton_columns(block, np.where(active, start, init), max_iter, xtol)


def newton_columns(objective: LogisticObjective, theta: np.ndarray, max_iter: int, xtol: float):
    """Newton's method with an Armijo line search on C columns of a logistic objective.

    The iteration of :func:`fit_logistic_columns` (its convergence rules are
    described there), on any :class:`LogisticObjective`: a block of columns in
    memory, or a whole dataset whose sums come from its partitions (Dask). Each
    :meth:`~LogisticObjective.evaluate` is one pass over the rows.

    Returns
    -------
    theta, converged, n_iter, loss : numpy.ndarray
        Shapes (C, P), (C,), (C,) and (C,).
    """
    n_cols = theta.shape[0]
    data, obj = objective.evaluate(theta)
    done = np.zeros(n_cols, bool)
    converged = np.zeros(n_cols, bool)
    iters = np.zeros(n_cols, np.int64)
    for _ in range(max_iter):
        grad, delta = objective.newton_step(theta)
        delta[done] = 0.0
        iters[~done] += 1
        decrement = -(grad * delta).sum(axis=1)
        # Converged: a tiny step, or a predicted decrease of the (O(1), mean)
        # objective far below its rounding (flat separable optima end so).
        size = np.abs(delta).max(axis=1)
        scale = 1.0 + np.abs(theta).max(axis=1)
        small = (size <= xtol * scale) | (decrement < 1e-20)
        # Newton converges quadratically: a full step of size h leaves an error
        # of order h**2, so a step below sqrt(xtol) / 10 is the last one needed
        # and is applied without evaluating the objective once more.
        last = small | (size <= 0.1 * np.sqrt(xtol) * scale)
        if (done | last).all():
            theta = theta + delta
            converged |= last & ~done
            break
        theta, data, obj, stuck = _line_search(
            objective, theta, delta, obj, decrement, done | small
        )
        converged |= stuck & (decrement < 1e-12)
        done |= stuck
        converged |= last & ~done
        done |= last
        if done.all():
            break
    return theta, converged, iters, data


class LogisticObjective:
    """The penalised mean log-loss of C logistic columns, from its sums over rows.

    Holds what does not depend on the rows (the targets' sums, the ridge, the
    fixed parameters) and turns row sums into the objective and the Newton
    step. Subclasses compute the sums: :class:`_LogisticBlock` from arrays in
    memory, the Dask engine from every partition of a dataset.

    Parameters
    ----------
    n : float
        Divisor of the mean: rows, or summed weight.
    init : numpy.ndarray, shape (C, P)
        Centre of the ridge.
    target_sums : numpy.ndarray, shape (C, P)
        ``sum_n w_n t_n x_n`` per column and parameter (the intercept's x is 1).
    active : numpy.ndarray, shape (C, P), bool
    ridge : float
    """

    def __init__(self, n, init, target_sums, active, ridge) -> None:
        self.n, self.init, self.T, self.ridge = n, init, target_sums, ridge
        self.inactive = ~active
        self.eye = np.eye(init.shape[1], dtype=bool)
        self.free_pairs = active[:, :, None] & active[:, None, :]

    def evaluate(self, th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean log-loss and penalised objective per column at ``th``, shape (C,) each."""
        raise NotImplementedError

    def newton_step(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Newton step at ``theta`` (the point last evaluated), shape (C, P)."""
        raise NotImplementedError

    def objective(self, th: np.ndarray, softplus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`evaluate` from the (weighted) sums of ``softplus(z)`` per column."""
        data = (softplus - (th * self.T).sum(axis=1)) / self.n
        dev = th - self.init
        return data, data + 0.5 * self.ridge * (dev * dev).sum(axis=1)

    def step(
        self, theta: np.ndarray, grad_sum: np.ndarray, hess_sum: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`newton_step` from the sums ``sum w p x`` (C, P) and ``sum w p(1-p) x x'``."""
        grad = (grad_sum - self.T) / self.n + self.ridge * (theta - self.init)
        hess = hess_sum / self.n
        hess += self.ridge * self.eye
        # Fixed parameters: zero gradient, identity rows and columns.
        grad[self.inactive] = 0.0
        hess = np.where(self.free_pairs, hess, 0.0)
        hess[:, self.eye] += self.inactive
        try:
            delta = -np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            delta = -np.einsum("cij,cj->ci", np.linalg.pinv(hess), grad)
        return grad, delta


class _LogisticBlock(LogisticObjective):
    """One block of C columns in memory: its data, work buffers and row sums.

    ``n`` is the divisor of the mean loss: the row count, or the summed weight.
    """

    def __init__(self, X, pos_rows, pos_cols, init, t_pos, t_neg, active, weights, ridge) -> None:
        n_cols, n = X[0].shape
        super().__init__(
            n if weights is None else float(weights.sum()),
            init,
            _target_sums(X, pos_rows, pos_cols, t_pos, t_neg, weights),
            active,
            ridge,
        )
        self.X, self.n_feat, self.weights = X, len(X), weights
        self.z = np.empty((n_cols, n))
        self.p = np.empty((n_cols, n))
        self.tmp = np.empty((n_cols, n))
        self.wx = np.empty((n_cols, n))

    def evaluate(self, th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean log-loss and penalised objective per column, shape (C,) each.

        Leaves ``z`` and ``p = sigmoid(z)`` at ``th`` for :meth:`newton_step`.
        """
        X, z, p, tmp, n_feat = self.X, self.z, self.p, self.tmp, self.n_feat
        np.multiply(X[0], th[:, 0:1], out=z)
        for j in range(1, n_feat):
            np.add(z, np.multiply(X[j], th[:, j : j + 1], out=tmp), out=z)
        np.add(z, th[:, n_feat : n_feat + 1], out=z)
        expit(z, out=p)
        # softplus(z) = max(z, 0) - ln max(p, 1 - p), the log of values in [1/2, 1].
        np.subtract(1.0, p, out=tmp)
        np.maximum(tmp, p, out=tmp)
        if self.weights is None:
            softplus = -_row_log_sum(tmp)
            np.maximum(z, 0.0, out=tmp)
            softplus += tmp.sum(axis=1)
        else:
            softplus = -(np.log(tmp, out=tmp) @ self.weights)
            np.maximum(z, 0.0, out=tmp)
            softplus += tmp @ self.weights
        return self.objective(th, softplus)

    def newton_step(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Newton step at ``theta`` (the point last evaluated), shape (C, F + 1)."""
        X, p, tmp, wx, n_feat = self.X, self.p, self.tmp, self.wx, self.n_feat
        n_cols, n_par = theta.shape
        np.subtract(1.0, p, out=tmp)
        w = np.multiply(p, tmp, out=tmp)
        if self.weights is not None:  # each row's terms times its weight
            w *= self.weights
            p = p * self.weights
        grad = np.empty((n_cols, n_par))
        hess = np.empty((n_cols, n_par, n_par))
        for j, x in enumerate(X):
            grad[:, j] = _rowdot(p, x)
            np.multiply(w, x, out=wx)
            for k in range(j, n_feat):
                hess[:, j, k] = hess[:, k, j] = _rowdot(wx, X[k])
            hess[:, j, n_feat] = hess[:, n_feat, j] = wx.sum(axis=1)
        grad[:, n_feat] = p.sum(axis=1)
        hess[:, n_feat, n_feat] = w.sum(axis=1)
        return self.step(theta, grad, hess)


def _target_sums(X, pos_rows, pos_cols, t_pos, t_neg, weights=None) -> np.ndarray:
    """``sum_n w_n t_n x_n`` per column and parameter, shape (C, F + 1) (constant in theta).

    From the (weighted) sums of every row (A) and of the positive rows (B) of
    each feature and of the intercept's 1; ``w_n = 1`` when ``weights`` is None.
    """
    n_cols, n = X[0].shape
    n_feat = len(X)
    A = np.empty((n_cols, n_feat + 1))
    B = np.empty((n_cols, n_feat + 1))
    if weights is None:
        n_pos: np.ndarray = np.bincount(pos_cols, minlength=n_cols).astype(np.float64)
        for j, x in enumerate(X):
            A[:, j] = x.sum(axis=1)
            B[:, j] = np.bincount(pos_cols, weights=x[pos_cols, pos_rows], minlength=n_cols)
        A[:, n_feat] = n
    else:
        pos_w = weights[pos_rows]
        n_pos = np.bincount(pos_cols, weights=pos_w, minlength=n_cols)
        for j, x in enumerate(X):
            A[:, j] = x @ weights
            B[:, j] = np.bincount(pos_cols, weights=x[pos_cols, pos_rows] * pos_w, minlength=n_cols)
        A[:, n_feat] = weights.sum()
    B[:, n_feat] = n_pos
    return t_neg[:, None] * A + (t_pos - t_neg)[:, None] * B


def _line_search(block: LogisticObjective, theta, delta, obj, decrement, settled):
    """Backtracking (Armijo) along ``delta`` per column: ``(theta, data, obj, stuck)``.

    Columns in ``settled`` accept the full step. ``stuck`` marks the columns for
    which no decrease was found in 60 halvings; they stay at ``theta``.
    """
    step = np.ones(theta.shape[0])
    for _ in range(60):
        trial = theta + step[:, None] * delta
        new_data, new_obj = block.evaluate(trial)
        # Armijo, with slack for rounding in the mean (the loss is an O(1) mean).
        ok = settled | (new_obj <= obj - 1e-4 * step * decrement + 1e-13)
        if ok.all():
            return trial, new_data, new_obj, np.zeros(theta.shape[0], bool)
        step = np.where(ok, step, 0.5 * step)
    # No decrease found: the column sits at the rounding floor of its objective.
    stuck = ~ok
    step[stuck] = 0.0
    trial = theta + step[:, None] * delta
    new_data, new_obj = block.evaluate(trial)
    return trial, new_data, new_obj, stuck
