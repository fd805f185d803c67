"""Resampling test of calibration (survey arXiv 2112.10327, §6, alg. 1).

Null hypothesis: the predictions are calibrated, i.e. the label of row ``i``
is a draw from its own predicted vector ``p_i``. Keeping the scores fixed, we
draw R label sets from the predicted vectors, compute the chosen measure on
each, and compare the observed value with this null distribution.

How the null is drawn (exactly, and without a Python loop over rows)
--------------------------------------------------------------------
* Scores are fixed, so every row keeps its bin (equal-frequency edges are
  computed once, from the scores; they do not depend on the labels). Only
  the per-bin target sums change, and those of a block of resamples come
  from one ``np.bincount`` over ``(resample, bin)`` pairs.
* ``confidence_*`` and ``binary_*``: the score of a row is fixed and so is
  its top class; under the null "the top class is right" (resp. "the label
  is 1") is ``Bernoulli(score)``, since ``P(Y = argmax p_i) = max p_i``. One
  uniform per row and resample is compared with the score: exact, and much
  cheaper than drawing full categorical labels.
* ``classwise_*``, ``brier_score``, ``log_loss`` need the drawn class
  itself: for K = 2 one uniform against ``p_i1``; for K >= 3 Walker's alias
  method (tables built once per row, vectorised over rows; O(1) per draw,
  two gathers), exactly ``Categorical(p_i)`` up to float rounding.
* Resamples are processed in blocks of about 2 million (resample, row)
  pairs, so memory stays bounded (tens of MB) whatever N and R.

p-value convention
------------------
``p = (1 + #{T(null) > T(observed)} + floor(U (E + 1))) / (1 + R)``, the
Monte Carlo p-value (Davison & Hinkley 1997, §4.2) with ties broken at
random: ``E`` null values equal the observed one and ``U`` is one uniform
drawn from the test's generator after the null (so a seed still fixes the
p-value). It counts the observed data as one more draw under the null, is
never 0, and is exactly uniform on ``{1, ..., R + 1} / (R + 1)`` under the
null, so "reject when ``p <= alpha``" has size ``alpha`` whenever
``alpha (R + 1)`` is a whole number (R = 199, 999), for every measure. Ties
are frequent for the MCE (the largest gap of a few sparse bins takes few
values); counting them all as extreme made the MCE tests conservative
(1-3 % size at alpha = 0.05). One implementation serves every resampling
test of the package: :func:`monte_carlo_p_value`. The survey's alg. 1 uses
the plain share ``#{null > observed} / R``; it is available as
:attr:`CalibrationTestResult.share_exceeding`.

Which departures each measure can see (the ``sides`` of the test)
-----------------------------------------------------------------
* ECE and MCE (confidence, binary, classwise) are sums or maxima of
  *absolute* gaps, so they grow with over- and with under-confidence alike:
  ``T`` is the measure itself and the test is one-sided in ``T``
  (``sides = "upper"``), which already sees both directions.
* Brier score and log-loss are proper scores, not distances: an
  under-confident model (predictions softer than the truth) scores *better*
  than its own null, an over-confident one worse. Their test is
  **two-sided** (``sides = "two-sided"``): ``T = |score - E0[score]|``, with
  the exact null mean ``E0`` given the fixed scores (Brier: ``1 - mean_i
  sum_k p_ik^2``; log-loss: the mean entropy of the rows, with the same clip).
  The survey's alg. 1 reads "larger is worse" for every measure; for these
  two that one-sided reading cannot detect under-confidence at all.

Size and power of every test by K and N: docs/statistics.md (produced by
``benchmarks/stats_sim.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import Binning, Scheme, check_binning_args, ece_from_sums, mce_from_sums
from ..errors import CalibrationInputError
from ..metrics import LOG_LOSS_EPS
from ..notions import notion_scores
from ..predictions import measure_inputs
from ..validation import check_seed, check_whole_number

#: Measure name -> (how labels are drawn, what is computed).
MEASURES: dict[str, tuple[str, str]] = {
    "confidence_ece": ("confidence", "ece"),
    "confidence_mce": ("confidence", "mce"),
    "binary_ece": ("binary", "ece"),
    "binary_mce": ("binary", "mce"),
    "classwise_ece": ("classwise", "ece"),
    "classwise_mce": ("classwise", "mce"),
    "brier_score": ("categorical", "brier"),
    "log_loss": ("categorical", "log_loss"),
}
#: Measures whose test is two-sided (proper scores: both directions move them).
TWO_SIDED = frozenset({"brier_score", "log_loss"})
#: What a rejection by each measure can mean, for the page and the docs.
DETECTS: dict[str, str] = {
    **{
        m: "over- and under-confidence alike (absolute gaps per bin); one-sided in the gap"
        for m in MEASURES
        if m.endswith("_ece")
    },
    **{
        m: "one badly calibrated bin (the largest gap); over- and under-confidence alike"
        for m in MEASURES
        if m.endswith("_mce")
    },
    "brier_score": "two-sided: a Brier score worse (over-confidence) or better "
    "(under-confidence) than calibrated predictions would give",
    "log_loss": "two-sided: a log-loss worse (over-confidence) or better "
    "(under-confidence) than calibrated predictions would give",
}
#: About this many (resample, row) pairs are drawn at once.
BLOCK_ELEMENTS = 1 << 21


@dataclass(frozen=True, eq=False)
class CalibrationTestResult:
    """Outcome of :func:`calibration_test`.

    Attributes
    ----------
    measure : str
        The measure tested (a name of :data:`MEASURES`).
    observed : float
        The measure on the observed labels.
    null : numpy.ndarray, shape (n_resamples,)
        The measure on each label set drawn under the null (for a histogram).
    p_value : float
        ``(1 + #{T(null) > T(observed)} + randomised ties) / (1 + n_resamples)``
        (:func:`monte_carlo_p_value`), with ``T`` the measure (``sides =
        "upper"``) or its absolute distance to the null mean (``sides =
        "two-sided"``); see the module docstring.
    n_resamples : int
    seed : int or None
    n_bins, scheme : int and str, or None
        The binning of ECE/MCE measures (None for Brier and log-loss).
    """

    measure: str
    observed: float
    null: np.ndarray
    p_value: float
    n_resamples: int
    seed: int | None = None
    n_bins: int | None = None
    scheme: Scheme | None = None
    sides: str = "upper"
    null_mean: float | None = None

    @property
    def share_exceeding(self) -> float:
        """The survey's alg. 1 p-value: the share of null values strictly above ``observed``."""
        return float(np.mean(self.null > self.observed))

    def rejects(self, alpha: float = 0.05) -> bool:
        """True when calibration is rejected at level ``alpha`` (``p_value <= alpha``)."""
        return bool(self.p_value <= alpha)


# --------------------------------------------------------------- sampling
def alias_tables(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker/Vose alias tables of every row, built in lockstep over rows.

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K)

    Returns
    -------
    keep : numpy.ndarray, shape (N, K), float64
        Probability of keeping column ``j`` once ``j`` is drawn uniformly.
    alias : numpy.ndarray, shape (N, K), int32
        The column taken otherwise. Row ``i`` then draws class ``c`` with
        probability ``(keep[i, c] + sum_{j: alias[i, j] = c} (1 - keep[i, j])) / K
        = probs[i, c]``; a zero-probability class has ``keep = 0`` and is never
        an alias, so it is never drawn.
    """
    n, k = probs.shape
    q = probs * k
    keep = np.ones((n, k))
    alias = np.tile(np.arange(k, dtype=np.int32), (n, 1))
    small = q < 1.0
    small_stack = np.argsort(~small, axis=1, kind="stable")  # small columns first
    large_stack = np.argsort(small, axis=1, kind="stable")  # large columns first
    n_small = small.sum(axis=1)
    n_large = k - n_small
    while True:
        rows = np.flatnonzero((n_small > 0) & (n_large > 0))
        if rows.size == 0:
            break
        s = small_stack[rows, n_small[rows] - 1]
        g = large_stack[rows, n_large[rows] - 1]
        keep[rows, s] = q[rows, s]
        alias[rows, s] = g
        n_small[rows] -= 1
        q[rows, g] += q[rows, s] - 1.0
        now_small = q[rows, g] < 1.0
        moved = rows[now_small]
        n_large[moved] -= 1
        small_stack[moved, n_small[moved]] = g[now_small]
        n_small[moved] += 1
    return keep, alias


class CategoricalSampler:
    """Draws one class per row from its predicted vector, for many resamples at once."""

    def __init__(self, probs: np.ndarray) -> None:
        self.n, self.k = probs.shape
        self.base = np.arange(self.n, dtype=np.intp) * self.k
        if self.k == 2:
            self.positive = np.ascontiguousarray(probs[:, 1])
        else:
            keep, alias = alias_tables(probs)
            self.keep, self.alias = keep.ravel(), alias.ravel()

    def draw(self, rng: np.random.Generator, n_resamples: int) -> np.ndarray:
        """Flat indices ``i * K + class`` of the drawn labels, shape (n_resamples, N)."""
        u = rng.random((n_resamples, self.n))
        if self.k == 2:
            return self.base + (u < self.positive)
        x = u * self.k
        column = np.minimum(x.astype(np.intp), self.k - 1)
        flat = column + self.base
        taken = np.where(x - column < self.keep[flat], column, self.alias[flat])
        return taken + self.base


# ------------------------------------------------------------ statistics
def _binned_values(sum_target, count, sum_score, stat: str) -> np.ndarray:
    """ECE or MCE of stacked per-bin target sums, shape (R, ..., M) -> (R,).

    Extra middle axes (classes) are averaged (ECE) or maximised (MCE) over.
    """
    if stat == "ece":
        value = ece_from_sums(count, sum_score, sum_target)
        return value.reshape(value.shape[0], -1).mean(axis=1)
    value = mce_from_sums(count, sum_score, sum_target)
    return value.reshape(value.shape[0], -1).max(axis=1)


def _block_sizes(n_resamples: int, n: int):
    size = max(1, min(n_resamples, BLOCK_ELEMENTS // max(n, 1)))
    for start in range(0, n_resamples, size):
        yield min(size, n_resamples - start)


def _test_top(p, y, family, stat, binning, rng, sizes) -> tuple[float, np.ndarray]:
    notion = "confidence" if family == "confidence" else "binary"
    scores, targets = notion_scores(p, y, notion)
    n, m = scores.shape[0], binning.n_bins
    bins = binning.assign(scores)
    count = np.bincount(bins, minlength=m)
    sum_score = np.bincount(bins, weights=scores, minlength=m)
    observed = _binned_values(
        np.bincount(bins, weights=targets, minlength=m)[None], count, sum_score, stat
    )[0]
    null = []
    for size in sizes:
        hits = rng.random((size, n)) < scores
        codes = bins + (np.arange(size, dtype=np.intp) * m)[:, None]
        sum_target = np.bincount(codes[hits], minlength=size * m).reshape(size, m)
        null.append(_binned_values(sum_target, count, sum_score, stat))
    return observed, np.concatenate(null)


def _test_classwise(p, y, stat, binning, rng, sizes) -> tuple[float, np.ndarray]:
    n, k = p.shape
    m = binning.n_bins
    bins = np.empty((n, k), dtype=np.intp)
    for j in range(k):
        bins[:, j] = binning.assign(np.ascontiguousarray(p[:, j]))
    codes = (bins + np.arange(k) * m).ravel()  # (class, bin) code of every cell
    count = np.bincount(codes, minlength=k * m).reshape(k, m)
    sum_score = np.bincount(codes, weights=p.ravel(), minlength=k * m).reshape(k, m)
    sampler = CategoricalSampler(p)

    def values(flat: np.ndarray) -> np.ndarray:
        size = flat.shape[0]
        cell = codes[flat] + (np.arange(size, dtype=np.intp) * (k * m))[:, None]
        sum_target = np.bincount(cell.ravel(), minlength=size * k * m).reshape(size, k, m)
        return _binned_values(sum_target, count, sum_score, stat)

    observed = values((sampler.base + y)[None])[0]
    null = np.concatenate([values(sampler.draw(rng, size)) for size in sizes])
    return observed, null


def scoring_rule_null_mean(p: np.ndarray, stat: str, eps: float = LOG_LOSS_EPS) -> float:
    """Exact mean of the Brier score or log-loss when labels are drawn from ``p``.

    Parameters
    ----------
    p : numpy.ndarray, shape (N, K)
    stat : {"brier", "log_loss"}
    eps : float
        Log-loss clip, as :func:`calibration_core.log_loss`.

    Returns
    -------
    float
        Brier: ``1 - mean_i sum_k p_ik^2``; log-loss: ``-mean_i sum_k p_ik log(clip(p_ik))``.
    """
    if stat == "brier":
        return float(1.0 - np.mean(np.einsum("ij,ij->i", p, p)))
    return float(-np.mean(np.einsum("ij,ij->i", p, np.log(np.clip(p, eps, 1.0)))))


def _test_scoring_rule(p, y, stat, eps, rng, sizes) -> tuple[float, np.ndarray]:
    sampler = CategoricalSampler(p)
    if stat == "brier":
        flat_p = p.ravel()
        mean_square = float(np.mean(np.einsum("ij,ij->i", p, p)))

        def values(flat):
            return mean_square + 1.0 - 2.0 * flat_p[flat].mean(axis=1)
    else:
        flat_logp = np.log(np.clip(p, eps, 1.0)).ravel()

        def values(flat):
            return -flat_logp[flat].mean(axis=1)

    observed = values((sampler.base + y)[None])[0]
    null = np.concatenate([values(sampler.draw(rng, size)) for size in sizes])
    return observed, null


def monte_carlo_p_value(
    observed: float,
    null: np.ndarray,
    centre: float | None = None,
    rng: np.random.Generator | None = None,
) -> float:
    """Monte Carlo p-value of ``observed`` against R null values, ties broken at random.

    ``T = x`` (one-sided, upper) or ``T = |x - centre|`` (two-sided). With
    ``G = #{T(null) > T(observed)}`` and ``E`` null values tied with the
    observed one (equal up to a relative 1e-12, so that float rounding of
    equal values counts as a tie)::

        p = (1 + G + floor(U (E + 1))) / (1 + R),   U ~ Uniform[0, 1) from ``rng``

    Why: under the null the observed value and the R null values are
    exchangeable, so the observed one's rank among all R + 1, ties broken
    by an independent coin, is uniform; ``p`` is then exactly uniform on
    ``{1, ..., R + 1} / (R + 1)`` and "reject when ``p <= alpha``" has size
    ``floor(alpha (R + 1)) / (R + 1)`` (exactly alpha for R = 199, 999) even
    for discrete statistics (MCE, counts). Counting every tie as extreme,
    ``(1 + G + E) / (1 + R)`` (Davison & Hinkley 1997, §4.2; what ``rng=None``
    gives), is valid but conservative when ties are frequent: MCE tests
    rejected 1-3 % of calibrated data sets at alpha = 0.05 (docs/statistics.md).
    Without ties both are the same number. With a degenerate null (every null
    value equal to the observed one) the randomised p-value is uniform on
    ``{1, ..., R + 1} / (R + 1)``: the data carry no evidence either way.

    Parameters
    ----------
    observed : float
    null : numpy.ndarray, shape (R,)
    centre : float, optional
        Null mean of a two-sided test; None for the one-sided (upper) test.
    rng : numpy.random.Generator, optional
        Source of ``U``: the caller's generator, after its null draws, so a
        seeded test gives the same p-value every time. None counts every tie
        as extreme (conservative).

    Returns
    -------
    float
    """
    observed_t = float(observed) if centre is None else abs(float(observed) - centre)
    null_t = np.asarray(null, dtype=np.float64)
    if centre is not None:
        null_t = np.abs(null_t - centre)
    tolerance = 1e-12 * abs(observed_t) if np.isfinite(observed_t) else 0.0
    above = int(np.count_nonzero(null_t > observed_t + tolerance))
    ties = int(np.count_nonzero(null_t >= observed_t - tolerance)) - above
    if rng is None:
        extreme = above + ties
    else:
        extreme = above + min(int(rng.random() * (ties + 1)), ties)
    return float((1.0 + extreme) / (1.0 + null_t.shape[0]))


# ------------------------------------------------------------------ test
def calibration_test(
    probs,
    labels=None,
    *,
    measure: str = "confidence_ece",
    n_resamples: int = 1000,
    seed: int | None = 0,
    n_bins: int = 15,
    scheme: Scheme = "width",
    eps: float = LOG_LOSS_EPS,
) -> CalibrationTestResult:
    """Resampling test of calibration for any measure (survey §6, alg. 1).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
        Predicted probability rows, or P(class 1) of a binary problem (refused
        by the top-label measures: see :func:`~calibration_core.confidence_ece`).
    labels : array-like, shape (N,), optional
        True class indices; taken from ``probs`` when it is a Predictions.
    measure : str
        One of :data:`MEASURES`: ``confidence_ece``, ``confidence_mce``,
        ``binary_ece``, ``binary_mce`` (K = 2), ``classwise_ece``,
        ``classwise_mce``, ``brier_score`` (summed over classes) or
        ``log_loss``; each exactly as the core metric of that name.
    n_resamples : int
        R, the number of label sets drawn under the null (survey: 1,000).
    seed : None, int or numpy.random.Generator
        Source of randomness (:func:`~calibration_core.validation.check_seed`);
        the same int gives the same null distribution (0 by default, as every
        seeded function of the core; None draws fresh entropy).
    n_bins, scheme
        Binning of the ECE/MCE measures (ignored by Brier and log-loss).
    eps : float
        Log-loss clip, as :func:`calibration_core.log_loss`.

    Returns
    -------
    CalibrationTestResult
        ``.observed``, ``.null`` (R,), ``.p_value`` (see the module docstring
        for the convention and the sides), ``.share_exceeding`` (the survey's).
        Brier score and log-loss are tested two-sided, so they detect
        under-confidence too; size and power: docs/statistics.md.
    """
    if measure not in MEASURES:
        raise CalibrationInputError(
            f"unknown measure {measure!r} for the calibration test; choose one of "
            f"{', '.join(MEASURES)}."
        )
    family, stat = MEASURES[measure]
    notion = family if family in ("confidence", "binary", "classwise") else None
    p, y, _ = measure_inputs(probs, labels, notion=notion, measure=f"calibration_test of {measure}")
    r = check_whole_number(n_resamples, "n_resamples")
    rng = check_seed(seed)
    sizes = list(_block_sizes(r, p.shape[0]))
    binned = family != "categorical"
    if binned:
        n_bins, scheme = check_binning_args(n_bins, scheme)
        binning = Binning(scheme, n_bins)
    if family in ("confidence", "binary"):
        observed, null = _test_top(p, y, family, stat, binning, rng, sizes)
    elif family == "classwise":
        observed, null = _test_classwise(p, y, stat, binning, rng, sizes)
    else:
        observed, null = _test_scoring_rule(p, y, stat, eps, rng, sizes)
    centre = scoring_rule_null_mean(p, stat, eps) if measure in TWO_SIDED else None
    p_value = monte_carlo_p_value(observed, null, centre, rng)
    return CalibrationTestResult(
        measure=measure,
        observed=float(observed),
        null=null,
        p_value=float(p_value),
        n_resamples=r,
        seed=seed,
        n_bins=int(n_bins) if binned else None,
        scheme=scheme if binned else None,
        sides="two-sided" if centre is not None else "upper",
        null_mean=centre,
    )
