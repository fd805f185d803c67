"""R's ``lowess(x, y, f, iter = 0)``: locally linear, tricube-weighted smoothing.

A port of the algorithm of R's ``stats::lowess`` (Cleveland 1979, the C
routine ``clowess``) without the robustness iterations, which is what
``rms::val.prob`` uses for its calibration curve (``lowess(p, y, iter = 0)``,
span ``f = 2/3``). Kept as R computes it, so the numbers agree with R:

* ``x`` is sorted (stably, as R's ``order``); each local fit uses the
  ``ns = max(2, min(n, floor(f n + 1e-7)))`` nearest points (the window slides
  right while that shrinks its radius), with tricube weights
  ``(1 - (r/h)^3)^3`` where ``h`` is the window's radius; points within
  ``0.001 h`` get weight 1 and points beyond ``0.999 h`` weight 0; ties at the
  right edge are all taken in.
* The weighted straight line is evaluated at the point; when the weighted
  spread of ``x`` is below ``0.001 range(x)``, the weighted mean instead.
* Fits are computed only at points more than ``delta = 0.01 range(x)`` apart
  (R's default); the points between are interpolated linearly, and tied x
  share their fit.

Each local fit is a weighted sum ``sum_j l_j y_j``, so with independent
Bernoulli ``y_j`` its variance is about ``m (1 - m) sum_j l_j^2`` (``m`` the
fitted value): :func:`lowess` returns ``sum_j l_j^2`` too, for a pointwise
band. The band ignores the smoother's bias and, between fitted points, is
interpolated like the fit.

Cost: about 100 local fits (one per ``delta``) over ``f N`` points each, so
O(N) with a large constant (about 0.5 s for a million points).
"""

from __future__ import annotations

import numpy as np

#: R's default ``delta`` as a share of ``range(x)``.
DELTA_SHARE = 0.01
#: First chunk of candidates when sliding the window right (then doubled).
SLIDE_CHUNK = 64


def _slide(x: np.ndarray, i: int, nleft: int, ns: int) -> int:
    """Move the window ``[nleft, nleft + ns)`` right while that shrinks its radius around x[i]."""
    n = x.shape[0]
    step = SLIDE_CHUNK
    xi = x[i]
    while nleft < n - ns:
        hi = min(n - ns, nleft + step)
        moves = (xi - x[nleft:hi]) > (x[nleft + ns : hi + ns] - xi)
        if not moves.all():
            return nleft + int(np.argmin(moves))
        nleft, step = hi, step * 2
    return nleft


def _first_within(x: np.ndarray, lo: int, hi: int, xs: float, h9: float) -> int:
    """First j in [lo, hi) with ``xs - x[j] <= h9`` (x sorted; float differences as R's)."""
    j = int(np.searchsorted(x, xs - h9, side="left", sorter=None))
    j = min(max(j, lo), hi)
    while j > lo and xs - x[j - 1] <= h9:
        j -= 1
    while j < hi and xs - x[j] > h9:
        j += 1
    return j


def _end_within(x: np.ndarray, start: int, xs: float, h9: float) -> int:
    """One past the last j >= start with ``x[j] <= xs`` or ``x[j] - xs <= h9``."""
    n = x.shape[0]
    j = max(int(np.searchsorted(x, xs + h9, side="right")), start)
    while j < n and (x[j] <= xs or x[j] - xs <= h9):
        j += 1
    while j > start and x[j - 1] > xs and x[j - 1] - xs > h9:
        j -= 1
    return j


def _local_fit(x, y, i, nleft, nright, x_range) -> tuple[float, float] | None:
    """R's ``lowest``: the local linear fit at x[i] and ``sum l_j^2``; None if all weights are 0.

    Points with weight 0 (beyond ``0.999 h``) are cut off by binary search, so
    the weights are computed on the points that count only; the weighted sums
    are taken around ``x[i]`` (well conditioned) instead of R's two passes.
    """
    xs = x[i]
    h = max(xs - x[nleft], x[nright] - xs)
    h9, h1 = 0.999 * h, 0.001 * h
    lo = _first_within(x, nleft, i, xs, h9)
    hi = _end_within(x, max(lo, i), xs, h9)
    if hi <= lo:
        return None
    d = x[lo:hi] - xs
    yw = y[lo:hi]
    if h > 0:
        u = np.abs(d)
        u /= h
        w = u * u
        w *= u
        np.subtract(1.0, w, out=w)
        np.multiply(w, w, out=u)
        w *= u  # (1 - (r/h)^3)^3
        near = slice(_first_within(x, lo, hi, xs, h1) - lo, _end_within(x, lo, xs, h1) - lo)
        w[near] = 1.0
    else:
        w = np.ones_like(d)
    total = w.sum()
    if total <= 0:
        return None
    w /= total
    wd = w * d
    mean_d = float(wd.sum())
    wy = float(np.dot(w, yw))
    spread = float(np.dot(wd, d)) - mean_d * mean_d
    if h > 0 and spread > 0 and np.sqrt(spread) > 0.001 * x_range:
        slope = -mean_d / spread  # R: b = (xs - a) / c with a the weighted centre
        fit = wy + slope * (float(np.dot(wd, yw)) - mean_d * wy)
        # final weights l_j = w_j (1 + slope (d_j - mean_d)) = w_j c + slope w_j d_j
        c = 1.0 - slope * mean_d
        wd *= slope
        wd += c * w
        return fit, float(np.dot(wd, wd))
    return wy, float(np.dot(w, w))


def lowess(x, y, *, span: float = 2 / 3, delta: float | None = None):
    """R's ``lowess(x, y, f = span, iter = 0, delta)`` with the sum of squared weights.

    Parameters
    ----------
    x, y : array-like, shape (N,)
    span : float
        ``f``, the share of points in each local fit (2/3 as R and rms).
    delta : float, optional
        Fits are computed only at points this far apart; None: ``0.01 range(x)``.

    Returns
    -------
    x_sorted : numpy.ndarray, shape (N,)
        ``x`` sorted (stable).
    fitted : numpy.ndarray, shape (N,)
        The smooth at ``x_sorted`` (R's ``lowess(...)$y``).
    weight_sq : numpy.ndarray, shape (N,)
        ``sum_j l_j^2`` of each fit (interpolated between fitted points).
    order : numpy.ndarray, shape (N,)
        The stable sort order: ``x_sorted = x[order]``.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    n = xs.shape[0]
    x_range = float(xs[-1] - xs[0]) if n else 0.0
    delta = DELTA_SHARE * x_range if delta is None else float(delta)
    fitted, weight_sq = np.empty(n), np.empty(n)
    if n < 2:
        fitted[:], weight_sq[:] = ys, 1.0
        return xs, fitted, weight_sq, order
    ns = max(2, min(n, int(span * n + 1e-7)))
    _fit_all(xs, ys, ns, delta, x_range, fitted, weight_sq)
    return xs, fitted, weight_sq, order


def _fit_all(xs, ys, ns, delta, x_range, fitted, weight_sq) -> None:
    """clowess's main loop (one pass, no robustness iterations), filling the outputs."""
    n = xs.shape[0]
    nleft, last, i = 0, -1, 0
    while True:
        nleft = _slide(xs, i, nleft, ns)
        fit = _local_fit(xs, ys, i, nleft, nleft + ns - 1, x_range)
        fitted[i], weight_sq[i] = fit if fit is not None else (ys[i], 1.0)
        if last < i - 1:
            alpha = (xs[last + 1 : i] - xs[last]) / (xs[i] - xs[last])
            fitted[last + 1 : i] = alpha * fitted[i] + (1 - alpha) * fitted[last]
            weight_sq[last + 1 : i] = alpha * weight_sq[i] + (1 - alpha) * weight_sq[last]
        last = i
        cut = xs[last] + delta
        tie_end = int(np.searchsorted(xs, xs[last], side="right")) - 1
        fitted[last + 1 : tie_end + 1], weight_sq[last + 1 : tie_end + 1] = (
            fitted[last],
            weight_sq[last],
        )
        last = tie_end
        beyond = int(np.searchsorted(xs, cut, side="right"))
        i = max(last + 1, beyond - 1)
        if last >= n - 1:
            return
