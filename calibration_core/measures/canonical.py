"""Canonical (multi-class, whole-vector) calibration: SKCE and the vector-binned ECE.

A model is canonically calibrated when ``P(Y = k | p(X) = p) = p_k`` for the
whole vector ``p``, not only for its top class or each class alone; this is
the strongest of the survey's three notions and neither the confidence nor
the classwise ECE can see its failures.

Squared kernel calibration error (Widmann, Lindsten & Zachariah 2019,
"Calibration tests in multi-class classification: a unifying framework")
---------------------------------------------------------------------------
With a matrix-valued kernel ``k(p, q) I_K``,
``SKCE = E[h((p, y), (p', y'))]`` over two independent rows, where
``h = k(p, p') <e_y - p, e_y' - p'>`` and
``<e_y - p, e_y' - p'> = [y = y'] - p_y' - p'_y + <p, p'>``. SKCE is 0 exactly
for a calibrated model (for a characteristic kernel) and needs no binning.

* ``k`` is the exponential (Laplacian) kernel ``exp(-||p - q||_2 / nu)``, as
  in Widmann et al.'s experiments, with ``nu`` by the median heuristic: the
  median distance between the rows of random pairs (at most
  :data:`BANDWIDTH_PAIRS` of them). It depends on the predictions only, never
  on the labels, so under the null (labels drawn from the predictions) the
  tests below stay valid with it.
* **Unbiased estimator** ``(2 / (n (n - 1))) sum_{i < j} h_ij`` (a U-statistic,
  O(n^2 K)); above ``max_rows`` rows (2000 by default) it is computed on a
  seeded random subsample of that many rows, and the result says so
  (``n_quadratic``). It can be negative (it is unbiased for a quantity that
  is >= 0).
* **Linear-time estimator** ``(1 / m) sum_i h_{2i-1, 2i}`` over ``m = floor(N/2)``
  disjoint pairs of a seeded random permutation of the rows (the permutation
  protects against files sorted by class). Unbiased, higher variance, O(N K).
* **Tests** of the null "the labels are draws from the predictions":
  - consistency resampling of the unbiased estimator (Widmann et al.'s
    resampling test; the survey's alg. 1): on the same rows, labels are
    drawn from the predicted vectors ``n_resamples`` times and the estimator
    recomputed; ``p = (1 + #{null > observed} + randomised ties) / (1 +
    n_resamples)`` (:func:`calibration_core.measures.significance.monte_carlo_p_value`,
    the one Monte Carlo p-value of the package). Exact up to Monte Carlo
    error at any N, and the more powerful of the two.
  - the asymptotic test of the linear estimator, on all rows: the ``m``
    terms are independent with mean 0 under calibration, so
    ``z = mean / (sd / sqrt(m))`` is asymptotically standard normal, with the
    one-sided p-value ``Phi(-z)`` (the SKCE is >= 0). Cheap, but it has little
    power unless N is large.
  ``p <= alpha`` rejects calibration.

Vector-binned ECE
-----------------
Every coordinate of ``p`` is cut into ``M`` equal-width bins (the
project's rule, ``min(floor(p_k M), M - 1)``), which partitions the cube into
``M^K`` cells (Widmann et al.'s "uniform binning"); the ECE is
``sum_c n_c / N * TV(ybar_c, pbar_c)`` with the total variation distance
``TV(a, b) = 1/2 sum_k |a_k - b_k|`` between the cell's label frequencies
and its mean prediction. For K = 2 it equals the binary ECE with ``M``
equal-width bins (up to scores lying exactly on a bin edge). It is only
meaningful when few cells are occupied and each holds many rows, i.e. for
small K; the number of occupied cells is returned beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CalibrationInputError
from ..predictions import measure_inputs
from ..validation import check_seed, check_whole_number
from .significance import monte_carlo_p_value

#: Default rows of the quadratic (unbiased) estimator; larger inputs are subsampled.
MAX_QUADRATIC_ROWS = 2000
#: Default label sets drawn for the resampling test.
N_RESAMPLES = 200
#: Random pairs whose median distance is the kernel bandwidth.
BANDWIDTH_PAIRS = 100_000
#: Rows per block of the quadratic estimator (a block x n matrix at a time).
QUADRATIC_BLOCK_ROWS = 512


def median_bandwidth(probs: np.ndarray, rng: np.random.Generator) -> float:
    """Median distance between the rows of random pairs (the median heuristic).

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K)
    rng : numpy.random.Generator

    Returns
    -------
    float
        > 0; 1.0 when every sampled pair is identical (any positive value
        then gives the same kernel on them).
    """
    n = probs.shape[0]
    pairs = min(BANDWIDTH_PAIRS, n * (n - 1) // 2)
    i = rng.integers(0, n, pairs)
    j = (i + rng.integers(1, n, pairs)) % n  # never i itself
    distances = np.linalg.norm(probs[i] - probs[j], axis=1)
    nu = float(np.median(distances))
    return nu if nu > 0 else 1.0


def pair_terms(p: np.ndarray, y: np.ndarray, q: np.ndarray, z: np.ndarray, nu: float) -> np.ndarray:
    """``h`` of the row pairs ``(p[i], y[i])``, ``(q[i], z[i])``, shape (m,).

    Parameters
    ----------
    p, q : numpy.ndarray, shape (m, K)
    y, z : numpy.ndarray, shape (m,)
        Class indices.
    nu : float
        Kernel bandwidth.
    """
    rows = np.arange(p.shape[0])
    kernel = np.exp(-np.linalg.norm(p - q, axis=1) / nu)
    inner = (y == z) - p[rows, z] - q[rows, y] + np.einsum("ij,ij->i", p, q)
    return kernel * inner


def kernel_matrix(p: np.ndarray, nu: float) -> np.ndarray:
    """``exp(-||p_i - p_j|| / nu)`` of every pair of rows, shape (n, n).

    Built in row blocks (``QUADRATIC_BLOCK_ROWS`` at a time) to bound the temporaries.
    """
    n = p.shape[0]
    sq = np.einsum("ij,ij->i", p, p)
    out = np.empty((n, n))
    for start in range(0, n, QUADRATIC_BLOCK_ROWS):
        block = slice(start, min(n, start + QUADRATIC_BLOCK_ROWS))
        d2 = sq[block, None] + sq[None, :] - 2 * (p[block] @ p.T)
        out[block] = np.exp(-np.sqrt(np.maximum(d2, 0.0)) / nu)
    np.fill_diagonal(out, 1.0)
    return out


class _UStatistic:
    """The unbiased estimator on fixed rows, for any labels (observed or drawn).

    ``sum_{i != j} K_ij ([y_i = y_j] - p_i[y_j] - p_j[y_i] + <p_i, p_j>)``: the
    label-free part and ``K P`` are computed once, so a new label set costs
    the sums of ``K`` over the blocks of equal labels, about ``n^2 / K``
    reads for balanced classes, instead of O(n^2 K).
    """

    def __init__(self, p: np.ndarray, nu: float) -> None:
        self.p, self.k = p, kernel_matrix(p, nu)
        n = p.shape[0]
        self.pairs = n * (n - 1)
        gram = p @ p.T
        self.constant = float(np.sum(self.k * gram) - np.trace(gram))
        self.kp = self.k @ p  # (K P)[j, c] = sum_i K_ij p_i[c]

    def __call__(self, y: np.ndarray) -> float:
        rows = np.arange(y.shape[0])
        order = np.argsort(y, kind="stable")
        groups = np.split(order, np.flatnonzero(np.diff(y[order])) + 1)
        same = sum(float(self.k[np.ix_(g, g)].sum()) for g in groups) - y.shape[0]
        cross = float(np.sum(self.kp[rows, y]) - np.sum(self.p[rows, y]))  # minus i == j
        return (same - 2 * cross + self.constant) / self.pairs


@dataclass(frozen=True)
class SkceResult:
    """The squared kernel calibration error: both estimators and both tests.

    Attributes
    ----------
    unbiased : float
        The U-statistic on ``n_quadratic`` rows (may be slightly negative).
    n_quadratic : int
        Rows it used: all of them, or a random subsample of ``max_rows``.
    p_value : float
        Consistency-resampling p-value of the unbiased estimator (NaN when
        ``n_resamples`` is 0).
    n_resamples : int
    linear : float
        The linear-time estimate on all rows.
    linear_z : float
        Normalised linear estimate, ``mean / (sd / sqrt(m))``.
    linear_p_value : float
        One-sided asymptotic p-value ``Phi(-linear_z)``.
    bandwidth : float
        The kernel bandwidth ``nu``.
    n_samples : int
    seed : int or None
    """

    unbiased: float
    n_quadratic: int
    p_value: float
    n_resamples: int
    linear: float
    linear_z: float
    linear_p_value: float
    bandwidth: float
    n_samples: int
    seed: int | None

    def to_dict(self) -> dict:
        """Plain floats and ints (NaN as None), for JSON."""
        return {
            name: None if isinstance(v, float) and np.isnan(v) else v
            for name, v in ((n, getattr(self, n)) for n in self.__dataclass_fields__)
        }


def _linear(p, y, nu) -> tuple[float, float, float]:
    m = p.shape[0] // 2
    terms = pair_terms(p[:m], y[:m], p[m : 2 * m], y[m : 2 * m], nu)
    mean = float(terms.mean())
    sd = float(terms.std(ddof=1)) if m > 1 else 0.0
    if sd == 0:
        return mean, float("nan"), float("nan")
    z = mean / (sd / np.sqrt(m))
    from scipy.special import ndtr

    return mean, float(z), float(ndtr(-z))


def draw_labels(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row drawn from its own predicted vector, shape (n,)."""
    drawn = (rng.random(len(p))[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return np.minimum(drawn, p.shape[1] - 1)


def _resampling_p_value(stat: _UStatistic, observed: float, n_resamples, rng) -> float:
    if n_resamples == 0:
        return float("nan")
    null = np.array([stat(draw_labels(stat.p, rng)) for _ in range(n_resamples)])
    return monte_carlo_p_value(observed, null, rng=rng)


def skce(
    probs,
    labels=None,
    *,
    max_rows: int = MAX_QUADRATIC_ROWS,
    n_resamples: int = N_RESAMPLES,
    bandwidth=None,
    seed=0,
) -> SkceResult:
    """Squared kernel calibration error (Widmann et al. 2019) with its calibration tests.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    max_rows : int
        Rows of the quadratic unbiased estimator and its resampling test; a
        larger N is subsampled (seeded). Memory ``8 max_rows^2`` bytes.
    n_resamples : int
        Label sets drawn for the resampling test (0: skip it); each costs
        O(max_rows^2).
    bandwidth : float, optional
        Kernel bandwidth ``nu`` > 0; None: the median heuristic.
    seed : int, Generator or None
        Seeds the permutation (pairs and subsample), the median heuristic's
        pairs and the resampled labels.

    Returns
    -------
    SkceResult
    """
    p, y, _ = measure_inputs(probs, labels, measure="skce")
    max_rows = check_whole_number(max_rows, "max_rows", minimum=2)
    n_resamples = check_whole_number(n_resamples, "n_resamples", minimum=0)
    if p.shape[0] < 4:
        raise CalibrationInputError(
            f"the SKCE needs at least 4 rows (2 pairs), got {p.shape[0]}; add predictions."
        )
    rng = check_seed(seed)
    order = rng.permutation(p.shape[0])
    p, y = np.ascontiguousarray(p[order], dtype=np.float64), y[order]
    nu = median_bandwidth(p, rng) if bandwidth is None else _positive(bandwidth)
    linear, z, linear_p = _linear(p, y, nu)
    sub = min(max_rows, p.shape[0])  # the permuted rows: their first ones are a random subsample
    stat = _UStatistic(p[:sub], nu)
    unbiased = stat(y[:sub])
    p_value = _resampling_p_value(stat, unbiased, n_resamples, rng)
    seed_out = int(seed) if isinstance(seed, (int, np.integer)) else None
    return SkceResult(
        unbiased, sub, p_value, n_resamples, linear, z, linear_p, nu, int(p.shape[0]), seed_out
    )


def _positive(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not value > 0:
        raise CalibrationInputError(
            f"bandwidth must be a positive number (a distance between probability vectors, "
            f"e.g. 0.5), got {value!r}; leave it None for the median heuristic."
        )
    return float(value)


# ------------------------------------------------------------ vector binning
@dataclass(frozen=True)
class VectorBinnedEce:
    """ECE over cells of the whole probability vector.

    Attributes
    ----------
    value : float
        ``sum_c n_c / N * TV(ybar_c, pbar_c)``.
    n_bins : int
        Bins per coordinate, M.
    n_occupied : int
        Cells holding at least one row.
    n_cells : int
        ``M^K``, all cells of the cube.
    n_samples : int
    """

    value: float
    n_bins: int
    n_occupied: int
    n_cells: int
    n_samples: int

    @property
    def rows_per_cell(self) -> float:
        """Mean rows per occupied cell: the value means little when it is small."""
        return self.n_samples / self.n_occupied

    def to_dict(self) -> dict:
        """Plain numbers, for JSON."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["rows_per_cell"] = self.rows_per_cell
        return out


def vector_binned_ece(probs, labels=None, *, n_bins: int = 5) -> VectorBinnedEce:
    """Exact ECE over equal-width cells of the whole probability vector (small K only).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    n_bins : int
        Bins per coordinate, M; ``M^K`` must stay below ``2^62``.

    Returns
    -------
    VectorBinnedEce
    """
    p, y, _ = measure_inputs(probs, labels, measure="vector_binned_ece")
    n, k = p.shape
    n_bins = check_whole_number(n_bins, "n_bins", minimum=1)
    if k * np.log2(n_bins) >= 62:
        raise CalibrationInputError(
            f"{n_bins}^{k} cells is too many to index: the vector-binned ECE is for a few "
            "classes; use fewer bins, the SKCE, or the classwise ECE."
        )
    index = np.minimum((p * n_bins).astype(np.int64), n_bins - 1)
    code = index @ (np.int64(n_bins) ** np.arange(k, dtype=np.int64))
    cells, cell = np.unique(code, return_inverse=True)
    c = cells.shape[0]
    count = np.bincount(cell, minlength=c).astype(np.float64)
    mean_p = np.stack([np.bincount(cell, p[:, j], minlength=c) for j in range(k)], axis=1)
    freq = np.bincount(cell * k + y, minlength=c * k).reshape(c, k).astype(np.float64)
    tv = 0.5 * np.abs(freq - mean_p).sum(axis=1) / count  # sums / count = means
    value = float(np.dot(count, tv) / n)
    return VectorBinnedEce(value, n_bins, int(c), int(n_bins) ** k, int(n))
