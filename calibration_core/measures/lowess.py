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

Cost: about 100 local fits (one per ``delta``). A fit over more than
:data:`MOMENT_WINDOW` points does not touch them one by one: the tricube
weight is a polynomial of degree 9 in ``x - x0`` on each side of ``x0``, so
its sums come from per-block power sums (:class:`_Moments`, built once in
O(20 N)); only the partial blocks at the window's ends and the points within
``0.001 h`` (weight exactly 1) are summed directly. The results agree with
the direct sums to about 1e-13.
"""

from __future__ import annotations

import math

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


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum a * b`` without BLAS: OpenBLAS threads cost milliseconds per call on a busy machine."""
    return float(np.einsum("i,i->", a, b))


def _tricube(d: np.ndarray, h: float) -> np.ndarray:
    """``(1 - (|d|/h)^3)^3``."""
    u = np.abs(d)
    u /= h
    w = u * u
    w *= u
    np.subtract(1.0, w, out=w)
    np.multiply(w, w, out=u)
    w *= u
    return w


def _direct_sums(d: np.ndarray, yw: np.ndarray, h: float, near: slice) -> np.ndarray:
    """The weighted sums of one local fit, from the points themselves.

    Returns ``[sum w, sum w d, sum w d^2, sum w y, sum w d y, sum w^2, sum w^2 d,
    sum w^2 d^2]`` with the tricube weights ``w`` (1 within ``0.001 h``).
    """
    if h > 0:
        w = _tricube(d, h)
        w[near] = 1.0
    else:
        w = np.ones_like(d)
    wd, w2 = w * d, w * w
    return np.array(
        [w.sum(), wd.sum(), _dot(wd, d), _dot(w, yw), _dot(wd, yw),
         w2.sum(), _dot(w2, d), _dot(w2 * d, d)]
    )  # fmt: skip


#: Highest power of ``d`` the moment path needs (``w^2 d^2`` is of degree 20).
MAX_POWER = 20
#: Rows per block of the moment path's power sums.
MOMENT_BLOCK = 2048
#: Windows of more rows than this take the moment path.
MOMENT_WINDOW = 16 * MOMENT_BLOCK
_Q, _R = np.tril_indices(MAX_POWER + 1)  # all (q, r) with r <= q
_BINOMIAL = np.array([float(math.comb(q, r)) for q, r in zip(_Q, _R, strict=True)])


class _Moments:
    """Power sums per block of the sorted rows, so that a local fit costs O(blocks).

    The tricube weight is a polynomial in ``d = x - x0`` on each side of
    ``x0``: ``(1 -+ d^3/h^3)^3``. Every weighted sum of a fit is therefore a
    combination of ``sum d^q`` and ``sum d^q y`` (q <= 20) over a range of rows.
    Over whole blocks these come from the blocks' power sums around their
    first row ``r_b`` by the binomial theorem, ``(t + delta)^q`` with
    ``t = x - r_b`` and ``delta = r_b - x0`` (both at most the window's width,
    so no cancellation); the partial blocks at the ends are summed directly.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        n = x.shape[0]
        self.x, self.y = x, y
        self.starts = np.arange(0, n, MOMENT_BLOCK)
        self.refs = x[self.starts]
        t = x - np.repeat(self.refs, MOMENT_BLOCK)[:n]
        self.power = np.empty((self.starts.shape[0], MAX_POWER + 1))
        self.power_y = np.empty((self.starts.shape[0], MAX_POWER // 2 + 1))
        term = np.ones(n)
        for q in range(MAX_POWER + 1):
            self.power[:, q] = np.add.reduceat(term, self.starts)
            if q <= MAX_POWER // 2:
                self.power_y[:, q] = np.add.reduceat(term * y, self.starts)
            term *= t

    def _direct(self, a: int, b: int, x0: float) -> tuple[np.ndarray, np.ndarray]:
        d = self.x[a:b] - x0
        powers = np.cumprod(np.column_stack([np.ones_like(d)] + [d] * MAX_POWER), axis=1)
        return powers.sum(axis=0), np.einsum(
            "i,ij->j", self.y[a:b], powers[:, : MAX_POWER // 2 + 1]
        )

    def sums(self, a: int, b: int, x0: float) -> tuple[np.ndarray, np.ndarray]:
        """``sum d^q`` (q <= 20) and ``sum d^q y`` (q <= 10) over rows ``[a, b)``."""
        first, last = -(-a // MOMENT_BLOCK), b // MOMENT_BLOCK  # whole blocks [first, last)
        if first >= last:
            return self._direct(a, b, x0)
        m, my = self._direct(a, first * MOMENT_BLOCK, x0)
        m2, my2 = self._direct(last * MOMENT_BLOCK, b, x0)
        delta = self.refs[first:last] - x0
        shifts = np.cumprod(np.column_stack([np.ones_like(delta)] + [delta] * MAX_POWER), axis=1)
        # mixed[r, k] = sum_b P[b, r] delta_b^k; sum (t + delta)^q = sum_r C(q, r) mixed[r, q - r]
        mixed = np.einsum("br,bk->rk", self.power[first:last], shifts)  # no BLAS threads
        whole = np.bincount(_Q, _BINOMIAL * mixed[_R, _Q - _R], minlength=MAX_POWER + 1)
        ky = MAX_POWER // 2 + 1
        mixed_y = np.einsum("br,bk->rk", self.power_y[first:last], shifts[:, :ky])
        keep = _Q < ky
        q, r = _Q[keep], _R[keep]
        whole_y = np.bincount(q, _BINOMIAL[keep] * mixed_y[r, q - r], minlength=ky)
        return m + m2 + whole, my + my2 + whole_y

    def side_sums(self, a: int, b: int, x0: float, h: float, sign: float) -> np.ndarray:
        """The eight weighted sums of :func:`_direct_sums` over ``[a, b)``, all on one side."""
        m, my = self.sums(a, b, x0)
        k3 = np.arange(4)
        coef = np.array([1, 3, 3, 1]) * (-sign) ** k3 / h ** (3 * k3)
        k6 = np.arange(7)
        coef2 = np.array([1, 6, 15, 20, 15, 6, 1]) * (-sign) ** k6 / h ** (3 * k6)
        return np.array(
            [coef @ m[3 * k3], coef @ m[3 * k3 + 1], coef @ m[3 * k3 + 2],
             coef @ my[3 * k3], coef @ my[3 * k3 + 1],
             coef2 @ m[3 * k6], coef2 @ m[3 * k6 + 1], coef2 @ m[3 * k6 + 2]]
        )  # fmt: skip


def _moment_sums(moments: _Moments, lo, hi, xs, h, near: slice) -> np.ndarray:
    """The weighted sums of a large window from the block moments (+ exact 1 near ``xs``)."""
    split = int(np.searchsorted(moments.x, xs, side="right"))  # d <= 0 before, d > 0 after
    split = min(max(split, lo), hi)
    sums = moments.side_sums(lo, split, xs, h, -1.0) + moments.side_sums(split, hi, xs, h, 1.0)
    d = moments.x[lo:hi][near] - xs
    if d.size:  # within 0.001 h the weight is 1, not the polynomial's value
        yw = moments.y[lo:hi][near]
        sums += _direct_sums(d, yw, 0.0, slice(0, 0))  # weight 1 ...
        sums -= _direct_sums(d, yw, h, slice(0, 0))  # ... instead of the polynomial's
    return sums


def _local_fit(x, y, i, nleft, nright, x_range, moments) -> tuple[float, float] | None:
    """R's ``lowest``: the local linear fit at x[i] and ``sum l_j^2``; None if all weights are 0.

    Points with weight 0 (beyond ``0.999 h``) are cut off by binary search.
    The weighted sums are taken around ``x[i]`` (well conditioned); R's
    straight line through them is then evaluated at ``x[i]``.
    """
    xs = x[i]
    h = max(xs - x[nleft], x[nright] - xs)
    h9, h1 = 0.999 * h, 0.001 * h
    lo = _first_within(x, nleft, i, xs, h9)
    hi = _end_within(x, max(lo, i), xs, h9)
    if hi <= lo:
        return None
    near = slice(_first_within(x, lo, hi, xs, h1) - lo, _end_within(x, lo, xs, h1) - lo)
    if h > 0 and moments is not None and hi - lo > MOMENT_WINDOW:
        sums = _moment_sums(moments, lo, hi, xs, h, near)
    else:
        sums = _direct_sums(x[lo:hi] - xs, y[lo:hi], h, near)
    w0, w1, w2, wy, w1y, v0, v1, v2 = sums
    if w0 <= 0:
        return None
    mean_d, wy = w1 / w0, wy / w0
    spread = w2 / w0 - mean_d * mean_d
    if h > 0 and spread > 0 and np.sqrt(spread) > 0.001 * x_range:
        slope = -mean_d / spread  # R: b = (xs - a) / c with a the weighted centre
        fit = wy + slope * (w1y / w0 - mean_d * wy)
        c = 1.0 - slope * mean_d  # final weights l_j = w_j (c + slope d_j) / sum w
        return float(fit), float((c * c * v0 + 2 * c * slope * v1 + slope * slope * v2) / w0**2)
    return float(wy), float(v0 / w0**2)


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
    moments = _Moments(xs, ys) if ns > MOMENT_WINDOW else None
    _fit_all(xs, ys, ns, delta, x_range, fitted, weight_sq, moments)
    return xs, fitted, weight_sq, order


def _fit_all(xs, ys, ns, delta, x_range, fitted, weight_sq, moments) -> None:
    """clowess's main loop (one pass, no robustness iterations), filling the outputs."""
    n = xs.shape[0]
    nleft, last, i = 0, -1, 0
    while True:
        nleft = _slide(xs, i, nleft, ns)
        fit = _local_fit(xs, ys, i, nleft, nleft + ns - 1, x_range, moments)
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
