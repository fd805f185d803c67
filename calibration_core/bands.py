"""Uncertainty bands around a reliability curve (survey arXiv 2112.10327, §4.1).

Two kinds of band, both of fixed length M with NaN for empty bins:

* :func:`binomial_band` -- a confidence interval for each bin's *observed
  frequency*, treating its ``k`` positives out of ``n`` as a binomial sample
  (Wilson, Clopper-Pearson or Jeffreys). It answers "where could the true
  frequency of this bin be?".
* :func:`consistency_band` -- consistency resampling (Bröcker & Smith 2007):
  the range of observed frequencies a *perfectly calibrated* forecaster with
  these scores would produce in each bin. It answers "is the observed
  frequency surprising if the scores were calibrated?"; a point outside its
  band is evidence of miscalibration in that bin.

Consistency resampling, exactly and fast
-----------------------------------------
The textbook procedure repeats R times: draw N rows with replacement, draw a
label for each as ``Bernoulli(score)``, bin the rows and record each bin's
frequency. That is O(N R). It is not needed, because the distribution of what
it records is known in closed form once the data are binned:

1. Bins are **fixed by the original data** (the same edges for every
   resample; for equal-frequency bins the edges are the order statistics of
   the original scores and are *not* recomputed per resample). A resampled
   row keeps its score, hence its bin.
2. The number of resampled rows in each bin is then
   ``Multinomial(N, n_m / N)``.
3. Given that ``c`` rows land in bin ``m``, each is a uniform draw from the
   bin's members, independent of the others, and is positive with probability
   equal to its score; averaged over the uniform draw that is the bin's mean
   score ``sbar_m``. So the positives are ``Binomial(c, sbar_m)``.

Drawing (2) and (3) costs O(M R) after one binning pass, and gives the same
distribution as the naive loop (kept as :func:`naive_consistency_band`, the
test oracle). Resamples in which a bin receives no rows are ignored for that
bin; the band is NaN where the bin is empty in the data. The band depends on
the scores only, never on the observed labels.
"""

from __future__ import annotations

import warnings
from statistics import NormalDist

import numpy as np

from .binning import Binning, BinStatistics, Scheme
from .errors import CalibrationInputError
from .reliability import ReliabilityCurve
from .validation import (
    check_binary_targets,
    check_level,
    check_scores,
    check_seed,
    check_whole_number,
)

#: Method names accepted by :func:`binomial_band` (``"exact"`` is Clopper-Pearson).
BINOMIAL_METHODS: tuple[str, ...] = ("wilson", "clopper-pearson", "exact", "jeffreys")


def _counts(curve) -> tuple[np.ndarray, np.ndarray]:
    """Positives ``k`` and counts ``n`` (float64) of a curve or of bin statistics."""
    if isinstance(curve, ReliabilityCurve):
        stats = curve.stats
    elif isinstance(curve, BinStatistics):
        stats = curve
    else:
        raise CalibrationInputError(
            "binomial_band needs a ReliabilityCurve (from reliability_curve) or BinStatistics "
            f"(from Binning.statistics), got {type(curve).__name__}."
        )
    n = np.asarray(stats.count, dtype=np.float64)
    k = np.rint(np.asarray(stats.sum_target, dtype=np.float64))
    return k, n


def binomial_band(curve, *, method: str = "wilson", level: float = 0.95):
    """Binomial confidence interval for each bin's observed frequency.

    Parameters
    ----------
    curve : ReliabilityCurve or BinStatistics
        Per-bin counts ``n`` and positives ``k``; arrays of shape (M,) (stacked
        classwise statistics of shape (K, M) work too).
    method : {"wilson", "clopper-pearson", "exact", "jeffreys"}
        * ``"wilson"``: the Wilson score interval **without** continuity
          correction, ``(k + z²/2)/(n + z²) ± z/(n + z²) sqrt(k(n-k)/n + z²/4)``
          with ``z`` the ``(1 + level)/2`` normal quantile. Identical to
          ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``.
        * ``"clopper-pearson"`` (alias ``"exact"``): beta quantiles
          ``B(α/2; k, n-k+1)`` and ``B(1-α/2; k+1, n-k)``, with lower = 0 when
          ``k = 0`` and upper = 1 when ``k = n``. Identical to scipy's
          ``method="exact"``; conservative (coverage >= level).
        * ``"jeffreys"``: equal-tailed quantiles of the Jeffreys posterior
          ``Beta(k + 1/2, n - k + 1/2)``, with the usual convention (Brown, Cai
          & DasGupta 2001) lower = 0 when ``k = 0`` and upper = 1 when ``k = n``.
    level : float
        Confidence level in (0, 1), e.g. 0.95.

    Returns
    -------
    lower, upper : numpy.ndarray, shape (M,) (or the shape of the counts)
        Interval ends in [0, 1]; NaN for empty bins.
    """
    level = check_level(level)
    if method not in BINOMIAL_METHODS:
        raise CalibrationInputError(
            f"method must be one of {', '.join(repr(m) for m in BINOMIAL_METHODS)}, got {method!r}."
        )
    k, n = _counts(curve)
    alpha = 1.0 - level
    empty = n == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "wilson":
            # The standard normal quantile (the stdlib's, Wichura's AS241 to full double
            # precision, as scipy.special.ndtri, which is slow to import).
            z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
            z2 = z * z
            centre = (k + z2 / 2.0) / (n + z2)
            half = z / (n + z2) * np.sqrt(k * (n - k) / n + z2 / 4.0)
            lower = np.clip(centre - half, 0.0, 1.0)
            upper = np.clip(centre + half, 0.0, 1.0)
        else:
            if method == "jeffreys":
                a_lo, b_lo, a_hi, b_hi = k + 0.5, n - k + 0.5, k + 0.5, n - k + 0.5
            else:
                a_lo, b_lo, a_hi, b_hi = k, n - k + 1.0, k + 1.0, n - k
            from scipy import special

            # Beta quantiles (scipy.special.betaincinv, what scipy.stats.beta.ppf
            # computes, without importing scipy.stats); a zero shape gives NaN,
            # and those ends are set here.
            lower = np.where(
                k > 0, special.betaincinv(np.maximum(a_lo, 1e-300), b_lo, alpha / 2.0), 0.0
            )
            upper = np.where(
                k < n, special.betaincinv(a_hi, np.maximum(b_hi, 1e-300), 1.0 - alpha / 2.0), 1.0
            )
    lower = np.where(empty, np.nan, lower)
    upper = np.where(empty, np.nan, upper)
    return lower, upper


# ------------------------------------------------------------ consistency
def resampled_frequencies(
    count: np.ndarray, mean_score: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Bin frequencies of R consistency resamples, shape (R, M); NaN where a bin got no rows.

    Parameters
    ----------
    count : numpy.ndarray, shape (M,)
        Rows per bin in the data.
    mean_score : numpy.ndarray, shape (M,)
        Mean score per bin (NaN where empty).
    """
    count = np.asarray(count, dtype=np.int64)
    total = int(count.sum())
    if total == 0:
        return np.full((n_resamples, count.shape[0]), np.nan)
    p_bin = count / total
    p_bin = p_bin / p_bin.sum()
    resampled_count = rng.multinomial(total, p_bin, size=n_resamples)
    p_pos = np.clip(np.where(count > 0, mean_score, 0.0), 0.0, 1.0)
    positives = rng.binomial(resampled_count, p_pos)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(resampled_count > 0, positives / resampled_count, np.nan)


def _band_from_samples(freq: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of each bin's frequencies."""
    alpha = 1.0 - level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns (empty bins)
        lower, upper = np.nanquantile(freq, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
    return lower, upper


def consistency_band_from_statistics(
    stats: BinStatistics, *, n_resamples: int = 1000, level: float = 0.95, seed=0
) -> tuple[np.ndarray, np.ndarray]:
    """Consistency-resampling band from precomputed bin statistics.

    The fast path of :func:`consistency_band` for statistics already at hand
    (e.g. from :class:`~calibration_core.binning.SortedScores` at load time):
    it uses only the per-bin counts and mean scores, in O(M R).

    Parameters
    ----------
    stats : BinStatistics
        Statistics of shape (M,), or stacked (K, M) (each class row is
        resampled independently, with its own N).
    n_resamples : int
        R, the number of resamples.
    level : float
        Band level in (0, 1); the band is the ``(1-level)/2`` and
        ``(1+level)/2`` quantiles (numpy's default linear interpolation) of the
        resampled frequencies of each bin.
    seed : None, int or numpy.random.Generator
        Source of randomness; the same int gives the same band (0 by default).

    Returns
    -------
    lower, upper : numpy.ndarray, shape (M,) (or (K, M))
        NaN where the bin is empty in the data.
    """
    if not isinstance(stats, BinStatistics):
        raise CalibrationInputError(
            "consistency_band_from_statistics needs BinStatistics (e.g. Binning.statistics "
            f"or SortedScores.statistics), got {type(stats).__name__}."
        )
    n_resamples = check_whole_number(n_resamples, "n_resamples")
    level = check_level(level)
    rng = check_seed(seed)
    count = np.asarray(stats.count)
    mean = np.asarray(stats.mean_score)
    if count.ndim == 1:
        return _band_from_samples(resampled_frequencies(count, mean, n_resamples, rng), level)
    lows, highs = zip(
        *(
            _band_from_samples(resampled_frequencies(c, s, n_resamples, rng), level)
            for c, s in zip(count, mean, strict=True)
        ),
        strict=True,
    )
    return np.stack(lows), np.stack(highs)


def consistency_band(
    scores,
    targets,
    *,
    n_bins: int = 15,
    scheme: Scheme = "width",
    n_resamples: int = 1000,
    level: float = 0.95,
    seed=0,
) -> tuple[np.ndarray, np.ndarray]:
    """Consistency-resampling band (Bröcker & Smith 2007; survey §4.1) per bin.

    The range of observed frequencies that a perfectly calibrated forecaster
    issuing these scores would produce in each bin, from R bootstrap
    resamples of the rows with labels redrawn as ``Bernoulli(score)``. Bins
    are fixed by the original data (equal-frequency edges are not recomputed
    per resample). Computed exactly in O(M R) after one binning pass; see the
    module docstring for why this equals the naive O(N R) loop.

    Parameters
    ----------
    scores : array-like, shape (N,)
        Scores in [0, 1].
    targets : array-like, shape (N,)
        0/1 outcomes (validated; they do not change the band, which depends
        on the scores only).
    n_bins : int
        Number of bins M.
    scheme : {"width", "frequency"}
        Binning scheme, as for :func:`~calibration_core.reliability_curve`.
    n_resamples : int
        R, the number of resamples.
    level : float
        Band level in (0, 1).
    seed : None, int or numpy.random.Generator
        Source of randomness; the same int gives the same band (0 by default).

    Returns
    -------
    lower, upper : numpy.ndarray, shape (M,)
        Band ends per bin; NaN where the bin is empty.
    """
    s = check_scores(scores)
    t = check_binary_targets(targets, s.shape[0])
    stats = Binning(scheme, n_bins).statistics(s, t)
    return consistency_band_from_statistics(stats, n_resamples=n_resamples, level=level, seed=seed)


def naive_resampled_frequencies(
    scores: np.ndarray, binning: Binning, edges: np.ndarray, n_resamples: int, rng
) -> np.ndarray:
    """The textbook O(N R) consistency resampling loop (test oracle, benchmark reference).

    Each resample draws N rows with replacement, a label ``Bernoulli(score)``
    for each, bins them with the ORIGINAL edges and records each bin's
    frequency. Returns shape (R, M), NaN where a bin received no rows.
    """
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    m = binning.n_bins
    # Equal width: the engine's floor rule; equal frequency: the original data's edges.
    fixed_edges = None if binning.scheme == "width" else edges
    out = np.empty((n_resamples, m))
    for r in range(n_resamples):
        rows = rng.integers(0, n, size=n)
        s = scores[rows]
        y = rng.random(n) < s
        idx = binning.assign(s, fixed_edges)
        count = np.bincount(idx, minlength=m)
        positives = np.bincount(idx, weights=y, minlength=m)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[r] = np.where(count > 0, positives / count, np.nan)
    return out


def naive_consistency_band(
    scores,
    *,
    n_bins: int = 15,
    scheme: Scheme = "width",
    n_resamples: int = 1000,
    level: float = 0.95,
    seed=0,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`consistency_band` by the naive O(N R) loop (oracle; not for production)."""
    s = check_scores(scores)
    binning = Binning(scheme, n_bins)
    edges = binning.edges(s)
    freq = naive_resampled_frequencies(
        s, binning, edges, check_whole_number(n_resamples, "n_resamples"), check_seed(seed)
    )
    return _band_from_samples(freq, check_level(level))
