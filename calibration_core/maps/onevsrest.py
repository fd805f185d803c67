"""One-vs-rest machinery shared by the four binary maps (not a map itself).

A binary map ``g: [0, 1] -> [0, 1]`` calibrates one score column against 0/1
targets. This module turns (N, K) probability rows into such columns, fits all
columns at once, and assembles calibrated rows again.

Columns and renormalisation
---------------------------
K = 2
    Only the positive-class column ``s = p[:, 1]`` is fitted, against
    ``label == 1``; the output row is ``[1 - g(s), g(s)]`` with ``g(s)``
    clipped to ``[eps, 1 - eps]``.
K > 2
    Column ``k`` is fitted against ``label == k`` for every class, and each
    calibrated row is renormalised by dividing by its sum::

        q_k = c_k / sum_j c_j,   c_k = clip(g_k(s_k), eps, 1 - eps)

    The clip makes every row sum positive, so a row that sums to 0 (or to a
    non-finite value) cannot occur for finite fits; should one occur anyway it
    becomes the uniform row ``1/K``, as in scikit-learn's
    ``CalibratedClassifierCV``. Every entry is then finite and strictly inside
    (0, 1) (at least about ``eps / K``), and rows sum to 1.

Vectorised fits (all columns together, never K separate Python fits)
--------------------------------------------------------------------
Logistic maps (Platt, beta)
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
Isotonic regression
    :func:`fit_isotonic_columns` sorts every column in one ``sort`` call
    (scores and targets packed into one int64 key), merges tied scores and
    then runs of equal targets with ``reduceat`` (neither changes the
    isotonic fit), and runs one compiled PAVA
    (``scipy.optimize.isotonic_regression``) over all columns concatenated,
    column ``c`` lifted by ``2 c`` so that no block can pool across columns.
    PAVA is sequential by nature; run merging leaves it about two points per
    positive row, so it costs a few milliseconds.
Histogram binning
    The core :class:`~calibration_core.binning.Binning` engine's classwise
    statistics (one ``bincount`` over (class, bin) for equal-width bins).

Columns are processed in cache-sized blocks of :data:`BLOCK_ELEMENTS` values
(all columns in one block up to N * K = 262144, two columns per block at
N = 1e5): a block's working arrays then stay in cache, which made the fits
1.3-1.7x faster than whole-matrix passes on the 2-core benchmark machine.
The logistic fits run their blocks on parallel threads
(:mod:`calibration_core.parallel`; ``CALIBRATION_CORE_THREADS=1`` turns it off).
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.lib.stride_tricks import as_strided
from scipy.optimize import isotonic_regression
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning

from ..parallel import map_blocks
from .base import EPS, CalibrationMap
from .linear import CalibrationFitWarning

__all__ = [
    "BinaryColumns",
    "IsotonicColumns",
    "LogisticColumnsFit",
    "OneVsRestMap",
    "assemble_rows",
    "column_scores",
    "fit_isotonic_columns",
    "fit_logistic_columns",
]

#: Ridge strength on the mean log-loss, pulling every logistic parameter towards
#: its starting value. It keeps the weights finite when the scores separate the
#: classes (or a class has no positive rows) and moves non-degenerate fits by
#: about 1e-12 / curvature, far below the 1e-6 agreement with scikit-learn.
RIDGE = 1e-12
#: A column whose training log-loss falls below this is (nearly) separable.
SEPARABLE_LOSS = 1e-6
#: Columns are fitted in blocks of at most this many values per array (2 MB),
#: so that the working arrays of a block stay in cache: all columns at once for
#: N * K up to 262144 (e.g. K = 100 at N = 2,600), two columns at N = 1e5.
BLOCK_ELEMENTS = 1 << 18
#: Logistic fits on more rows than ``WARM_START_FACTOR * WARM_START_ROWS`` start
#: from a fit on a seeded random subsample of ``WARM_START_ROWS`` rows (see
#: :func:`fit_logistic_columns`).
WARM_START_ROWS = 8192
WARM_START_FACTOR = 4


# --------------------------------------------------------------------- columns
def column_scores(probs: np.ndarray) -> np.ndarray:
    """The score columns a binary map calibrates: a (C, N) view of ``probs`` (no copy).

    ``C = 1`` (the positive class ``p[:, 1]``) when K = 2, ``C = K`` otherwise.
    Consumers transform it into new C-contiguous (C, N) arrays (``out=``), so
    the transposition costs no extra pass over the data.
    """
    if probs.shape[1] == 2:
        return probs[:, 1:].T
    return probs.T


class BinaryColumns:
    """The one-vs-rest view of validated ``(probs, labels)``.

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K)
    labels : numpy.ndarray, shape (N,)

    Attributes
    ----------
    n_classes : int
        K.
    classes : numpy.ndarray, shape (C,)
        The class each column stands for: ``[1]`` when K = 2, ``0..K-1`` otherwise.
    """

    def __init__(self, probs: np.ndarray, labels: np.ndarray) -> None:
        self.probs = probs
        self.labels = labels
        self.n_rows, self.n_classes = probs.shape
        self.classes = np.array([1]) if self.n_classes == 2 else np.arange(self.n_classes)

    @property
    def n_columns(self) -> int:
        """C, the number of fitted columns."""
        return int(self.classes.shape[0])

    @property
    def scores(self) -> np.ndarray:
        """Score columns, shape (C, N), a view of ``probs``."""
        return column_scores(self.probs)

    @cached_property
    def positive(self) -> np.ndarray:
        """Column each row is a positive of, or -1, shape (N,) intp."""
        if self.n_classes == 2:
            return np.where(self.labels == 1, 0, -1).astype(np.intp)
        return self.labels.astype(np.intp, copy=False)

    @cached_property
    def n_positive(self) -> np.ndarray:
        """Positive rows per column, shape (C,)."""
        if self.n_classes == 2:
            return np.array([np.count_nonzero(self.labels == 1)])
        return np.bincount(self.labels, minlength=self.n_classes)

    def targets(self, column: int) -> np.ndarray:
        """0/1 targets of one column, shape (N,) intp."""
        return (self.positive == column).astype(np.intp)

    def warn_one_sided(self, map_name: str) -> np.ndarray:
        """Warn about columns whose targets are all 0 or all 1; their mask, shape (C,)."""
        one_sided = (self.n_positive == 0) | (self.n_positive == self.n_rows)
        if one_sided.any():
            bad = self.classes[one_sided]
            shown = ", ".join(str(int(c)) for c in bad[:10])
            more = f" (and {bad.size - 10} more)" if bad.size > 10 else ""
            warnings.warn(
                f"{map_name}: class{'es' if bad.size > 1 else ''} {shown}{more} "
                "never (or always) occur in the fit labels, so their one-vs-rest map only "
                "learns that the class is absent (or certain); fit on more rows.",
                CalibrationFitWarning,
                stacklevel=5,
            )
        return one_sided


def assemble_rows(g: np.ndarray, n_classes: int, eps: float = EPS) -> np.ndarray:
    """Calibrated probability rows from calibrated columns (see the module docstring).

    Parameters
    ----------
    g : numpy.ndarray, shape (C, N)
        Calibrated one-vs-rest probabilities (C = 1 when K = 2, else K).
    n_classes : int
        K.
    eps : float
        Column values are clipped to ``[eps, 1 - eps]`` first.

    Returns
    -------
    numpy.ndarray, shape (N, K)
        Finite rows on the simplex, every entry strictly inside (0, 1).
    """
    g = np.clip(np.nan_to_num(g, nan=0.5), eps, 1.0 - eps)
    if n_classes == 2:
        return np.column_stack([1.0 - g[0], g[0]])
    total = g.sum(axis=0)
    bad = ~np.isfinite(total) | (total <= 0)
    out = g / np.where(bad, 1.0, total)
    if bad.any():
        out[:, bad] = 1.0 / n_classes
    return np.ascontiguousarray(out.T)


def _warn_few_rows(map_name: str, n_rows: int, n_params: int) -> None:
    if n_rows < n_params:
        warnings.warn(
            f"{map_name}: {n_rows} rows fit {n_params} parameters per column; the map is "
            "underdetermined and will overfit. Use more calibration rows or a simpler map.",
            CalibrationFitWarning,
            stacklevel=5,
        )


# -------------------------------------------------------------------- logistic
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
    log per chunk replaces one log per value (about 15x faster; the relative
    rounding error of a product, ``chunk * 1.1e-16``, is far below what matters).
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
    ridge: float = RIDGE,
    max_iter: int = 100,
    xtol: float = 1e-10,
    block_elements: int = BLOCK_ELEMENTS,
    warm_start_rows: int | None = WARM_START_ROWS,
    threads: int | None = None,
) -> LogisticColumnsFit:
    """Fit C independent logistic regressions at once by batched Newton steps.

    Column ``c`` models ``P(y_c = 1) = sigmoid(sum_j theta[c, j] x_j[c] + theta[c, F])``
    and minimises the mean log-loss ``mean_n softplus(z) - t z`` plus
    ``ridge / 2 * ||theta - init||^2``.

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
    t_pos = np.ones(n_cols) if t_pos is None else np.asarray(t_pos, dtype=np.float64)
    t_neg = np.zeros(n_cols) if t_neg is None else np.asarray(t_neg, dtype=np.float64)
    active = np.ones((n_cols, n_par), bool) if active is None else np.asarray(active, bool)
    start = init
    if warm_start_rows is not None and n > WARM_START_FACTOR * warm_start_rows:
        rows = np.sort(np.random.default_rng(0).choice(n, warm_start_rows, replace=False))
        warm = fit_logistic_columns(
            [x[:, rows] for x in features],
            positive[rows],
            init,
            t_pos=t_pos,
            t_neg=t_neg,
            active=active,
            ridge=ridge,
            max_iter=max_iter,
            xtol=xtol,
            block_elements=block_elements,
            warm_start_rows=None,
            threads=threads,
        )
        usable = warm.converged & (warm.loss >= SEPARABLE_LOSS) & np.isfinite(warm.params).all(1)
        start = np.where(usable[:, None], warm.params, init)
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
            ridge,
            max_iter,
            xtol,
        )

    for cols, result in map_blocks(fit_block, range(0, n_cols, width), threads):
        params[cols], converged[cols], n_iter[cols], loss[cols] = result
    return LogisticColumnsFit(params, converged, n_iter, loss)


def _newton_block(X, pos_rows, pos_cols, init, start, t_pos, t_neg, active, ridge, max_iter, xtol):
    """Batched Newton for one block of columns from ``start``; see :func:`fit_logistic_columns`."""
    n_cols, n = X[0].shape
    n_feat = len(X)
    n_par = n_feat + 1
    # Sums that do not depend on the parameters: sum_n x (A) and sum_n t x (T).
    n_pos = np.bincount(pos_cols, minlength=n_cols).astype(np.float64)
    A = np.empty((n_cols, n_par))
    B = np.empty((n_cols, n_par))
    for j, x in enumerate(X):
        A[:, j] = x.sum(axis=1)
        B[:, j] = np.bincount(pos_cols, weights=x[pos_cols, pos_rows], minlength=n_cols)
    A[:, n_feat] = n
    B[:, n_feat] = n_pos
    T = t_neg[:, None] * A + (t_pos - t_neg)[:, None] * B
    theta = np.where(active, start, init)
    inactive = ~active
    eye = np.eye(n_par, dtype=bool)
    free_pairs = active[:, :, None] & active[:, None, :]
    z = np.empty((n_cols, n))
    p = np.empty((n_cols, n))
    tmp = np.empty((n_cols, n))
    wx = np.empty((n_cols, n))

    def evaluate(th):
        """Objective per column, shape (C,); leaves z and p = sigmoid(z) at ``th``."""
        np.multiply(X[0], th[:, 0:1], out=z)
        for j in range(1, n_feat):
            np.add(z, np.multiply(X[j], th[:, j : j + 1], out=tmp), out=z)
        np.add(z, th[:, n_feat : n_feat + 1], out=z)
        expit(z, out=p)
        # softplus(z) = max(z, 0) - ln max(p, 1 - p), the log of values in [1/2, 1].
        np.subtract(1.0, p, out=tmp)
        np.maximum(tmp, p, out=tmp)
        softplus = -_row_log_sum(tmp)
        np.maximum(z, 0.0, out=tmp)
        softplus += tmp.sum(axis=1)
        data = (softplus - (th * T).sum(axis=1)) / n
        dev = th - init
        return data, data + 0.5 * ridge * (dev * dev).sum(axis=1)

    data, obj = evaluate(theta)
    done = np.zeros(n_cols, bool)
    converged = np.zeros(n_cols, bool)
    iters = np.zeros(n_cols, np.int64)
    for _ in range(max_iter):
        np.subtract(1.0, p, out=tmp)
        w = np.multiply(p, tmp, out=tmp)
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
        grad = (grad - T) / n + ridge * (theta - init)
        hess /= n
        hess += ridge * eye
        grad[inactive] = 0.0
        hess = np.where(free_pairs, hess, 0.0)
        hess[:, eye] += inactive
        try:
            delta = -np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            delta = -np.einsum("cij,cj->ci", np.linalg.pinv(hess), grad)
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
        step = np.ones(n_cols)
        for _ls in range(60):
            trial = theta + step[:, None] * delta
            new_data, new_obj = evaluate(trial)
            # Armijo, with slack for rounding in the mean (the loss is an O(1) mean).
            ok = done | small | (new_obj <= obj - 1e-4 * step * decrement + 1e-13)
            if ok.all():
                break
            step = np.where(ok, step, 0.5 * step)
        else:
            # No decrease found: the column sits at the rounding floor of its objective.
            stuck = ~ok
            converged |= stuck & (decrement < 1e-12)
            done |= stuck
            step[stuck] = 0.0
            trial = theta + step[:, None] * delta
            new_data, new_obj = evaluate(trial)
        theta, data, obj = trial, new_data, new_obj
        converged |= last & ~done
        done |= last
        if done.all():
            break
    return theta, converged, iters, data


# ------------------------------------------------------------------- isotonic
@dataclass(frozen=True)
class IsotonicColumns:
    """Piecewise-linear isotonic fits of C columns, stored flat.

    Column ``c`` interpolates linearly through the points
    ``(x[offsets[c]:offsets[c+1]], y[...])`` (x non-decreasing) and is constant
    beyond the first and last point (scikit-learn's ``out_of_bounds="clip"``).

    Attributes
    ----------
    x, y : numpy.ndarray, shape (T,)
        Threshold scores and fitted values of all columns, concatenated.
    offsets : numpy.ndarray, shape (C + 1,)
        Where each column's points start and end.
    """

    x: np.ndarray
    y: np.ndarray
    offsets: np.ndarray

    def predict(self, scores: np.ndarray) -> np.ndarray:
        """Interpolated values, shape (C, N), for score columns of shape (C, N)."""
        out = np.empty_like(scores)
        for c in range(scores.shape[0]):
            part = slice(self.offsets[c], self.offsets[c + 1])
            out[c] = np.interp(scores[c], self.x[part], self.y[part])
        return out


def _isotonic_runs(scores: np.ndarray, positive: np.ndarray, first_col: int):
    """Tie- and run-merged points of a block of columns (steps 1-2 of the fit).

    Returns ``(x_lo, x_hi, weight, mean, col)``, each of shape (R,): the lowest
    and highest score of every run, its row count, its mean target and its
    (global) column index.
    """
    n_cols, n = scores.shape
    size = n_cols * n
    # Non-negative float64 bit patterns sort like the floats; the freed last
    # mantissa bit carries the target, so one sort orders (score, target) pairs
    # (targets 0 before 1 among tied scores).
    enc = np.add(scores, 0.0, out=np.empty(scores.shape)).view(np.int64)  # -0.0 -> +0.0
    enc &= ~np.int64(1)
    enc |= positive == np.arange(first_col, first_col + n_cols)[:, None]
    enc.sort(axis=1)
    enc = enc.ravel()
    # The targets are the lowest bit: read the lowest byte of every value.
    low = 0 if sys.byteorder == "little" else 7
    target = (enc.view(np.uint8)[low::8] & 1).view(bool)
    enc &= ~np.int64(1)
    x = enc.view(np.float64)
    col_start = np.zeros(size, bool)
    col_start[::n] = True
    # 1. Ties: one point per distinct score (weight = count, target = mean).
    new = np.empty(size, bool)
    new[0] = True
    np.not_equal(enc[1:], enc[:-1], out=new[1:])
    new |= col_start
    if new.all():  # no ties: every score is its own point
        weight, mean, x_lo, x_hi, starts = None, target, x, x, col_start
    else:
        group = np.flatnonzero(new)
        weight = np.diff(group, append=size).astype(np.float64)
        mean = np.add.reduceat(target.astype(np.float64), group) / weight
        x_lo = x[group]
        x_hi = x[np.r_[group[1:] - 1, size - 1]]
        starts = col_start[group]
    # 2. Runs of equal mean targets are never split by isotonic regression
    #    (pooling them leaves the fit unchanged), so merge them before PAVA.
    run_new = np.empty(mean.size, bool)
    run_new[0] = True
    np.not_equal(mean[1:], mean[:-1], out=run_new[1:])
    run_new |= starts
    first = np.flatnonzero(run_new)
    last = np.r_[first[1:] - 1, mean.size - 1]
    if weight is None:
        run_weight = np.diff(first, append=mean.size).astype(np.float64)
    else:
        run_weight = np.add.reduceat(weight, first)
    run_col = np.cumsum(starts[first]) - 1 + first_col
    return x_lo[first], x_hi[last], run_weight, mean[first].astype(np.float64), run_col


def fit_isotonic_columns(
    scores: np.ndarray, positive: np.ndarray, *, block_elements: int = BLOCK_ELEMENTS
) -> IsotonicColumns:
    """Increasing isotonic regression of 0/1 targets on every score column at once.

    The result equals scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``
    fitted column by column, with one difference in what counts as a tie:
    scores are tied when equal after clearing the last bit of their float64
    mantissa (a relative 2.2e-16; scikit-learn pools scores within 1e-15 of
    each other in absolute terms), and the threshold scores are stored with
    that bit cleared.

    Parameters
    ----------
    scores : numpy.ndarray, shape (C, N)
        Score columns in [0, 1] (any memory layout, e.g. ``probs.T``).
    positive : numpy.ndarray, shape (N,)
        Column each row is a positive of, or -1.
    block_elements : int
        Sorting and merging run over cache-sized blocks of columns; the PAVA
        runs once over all of them.

    Returns
    -------
    IsotonicColumns
        Only the first and last point of each constant piece are kept (as
        scikit-learn's ``X_thresholds_``), so the fit is small.
    """
    n_cols, n = scores.shape
    width = max(1, block_elements // max(n, 1))
    parts = [
        _isotonic_runs(scores[c0 : c0 + width], positive, c0) for c0 in range(0, n_cols, width)
    ]
    x_lo, x_hi, run_weight, run_mean, run_col = (
        np.concatenate(a) for a in zip(*parts, strict=True)
    )
    # 3. One PAVA over all columns, column c lifted by 2c (values in [0, 1]).
    lift = 2.0 * run_col
    fitted = isotonic_regression(run_mean + lift, weights=run_weight, increasing=True).x - lift
    np.clip(fitted, 0.0, 1.0, out=fitted)
    # 4. Points: the first and last score of every constant piece of the fit
    #    (once when they coincide), as scikit-learn's trimmed thresholds.
    piece_new = np.empty(fitted.size, bool)
    piece_new[0] = True
    np.not_equal(fitted[1:], fitted[:-1], out=piece_new[1:])
    piece_new |= run_col != np.r_[-1, run_col[:-1]]
    piece_first = np.flatnonzero(piece_new)
    piece_last = np.r_[piece_first[1:] - 1, fitted.size - 1]
    lo = x_lo[piece_first]
    hi = x_hi[piece_last]
    px = np.column_stack([lo, hi]).ravel()
    py = np.repeat(fitted[piece_first], 2)
    pcol = np.repeat(run_col[piece_first], 2)
    keep = np.ones(px.size, bool)
    keep[1::2] = hi != lo
    px, py, pcol = px[keep], py[keep], pcol[keep]
    offsets = np.searchsorted(pcol, np.arange(n_cols + 1), side="left")
    return IsotonicColumns(px, py, offsets)


# ------------------------------------------------------------------- base map
class OneVsRestMap(CalibrationMap):
    """Base of the binary maps: one-vs-rest columns in, renormalised rows out.

    Subclasses implement ``_fit_columns(columns: BinaryColumns)`` and
    ``_predict_columns(scores (C, N)) -> (C, N)`` and set ``converged_`` when
    they iterate. Inputs are probabilities (logits are turned into
    probabilities by a softmax; a Predictions gives its probabilities).
    """

    family = "binary"

    def _fit(self, probs: np.ndarray, logits: np.ndarray | None, labels: np.ndarray) -> None:
        self._fit_columns(BinaryColumns(probs, labels))

    def _predict_proba(self, probs: np.ndarray, logits: np.ndarray | None) -> np.ndarray:
        g = self._predict_columns(column_scores(probs))
        return assemble_rows(g, self.n_classes_, self._output_eps())

    def _output_eps(self) -> float:
        """Clip of the calibrated columns (see :func:`assemble_rows`)."""
        return EPS

    def _fit_columns(self, columns: BinaryColumns) -> None:
        raise NotImplementedError

    def _predict_columns(self, scores: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # ---------------------------------------------------------- helpers
    def _report_logistic(
        self,
        fit: LogisticColumnsFit,
        columns: BinaryColumns,
        one_sided: np.ndarray,
        hard_targets: bool = True,
    ) -> None:
        """Set ``converged_``/``n_iter_`` and warn about non-convergence or separation."""
        name = type(self).__name__
        self.converged_ = bool(fit.converged.all())
        self.n_iter_ = int(fit.n_iter.max())
        if not self.converged_:
            bad = columns.classes[~fit.converged]
            warnings.warn(
                f"{name}: Newton's method did not converge for class(es) "
                f"{', '.join(str(int(c)) for c in bad[:10])} in {self.n_iter_} iterations; "
                "the map may be unreliable.",
                ConvergenceWarning,
                stacklevel=5,
            )
        if not hard_targets:  # smoothed targets: the maximum-likelihood fit always exists
            return
        separable = (fit.loss < SEPARABLE_LOSS) & ~one_sided
        if separable.any():
            bad = columns.classes[separable]
            warnings.warn(
                f"{name}: the scores separate the classes perfectly for class(es) "
                f"{', '.join(str(int(c)) for c in bad[:10])}; the maximum-likelihood "
                "weights do not exist, so they are held finite by a tiny ridge penalty and "
                "the calibrated probabilities are (nearly) 0 or 1.",
                CalibrationFitWarning,
                stacklevel=5,
            )
