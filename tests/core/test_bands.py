"""Binomial and consistency-resampling bands (calibration_core.bands)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibration_core import (
    Binning,
    BinStatistics,
    CalibrationInputError,
    SortedScores,
    binomial_band,
    consistency_band,
    consistency_band_from_statistics,
    reliability_curve,
)
from calibration_core.bands import (
    naive_consistency_band,
    naive_resampled_frequencies,
    resampled_frequencies,
)

METHODS = ("wilson", "clopper-pearson", "jeffreys")


def _stats_for(k, n) -> BinStatistics:
    """Bin statistics with positives ``k`` out of ``n`` per bin (scores irrelevant here)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.int64)
    m = n.shape[0]
    return BinStatistics(np.linspace(0.0, 1.0, m + 1), n, n * 0.5, k)


def _exact_coverage(n: int, p: float, method: str, level: float) -> float:
    """P(p in interval) summed over the binomial pmf of k (no simulation)."""
    k = np.arange(n + 1)
    lower, upper = binomial_band(_stats_for(k, np.full(n + 1, n)), method=method, level=level)
    return float(np.sum(stats.binom.pmf(k, n, p) * ((lower <= p) & (p <= upper))))


# ------------------------------------------------------------------ binomial
def test_wilson_hand_worked():
    # level = 2 Phi(2) - 1 makes z = 2 exactly; n = 4.
    # k = 0: centre (0 + 2)/(4 + 4) = 1/4, half 2/8 * sqrt(0 + 1) = 1/4  -> [0, 1/2].
    # k = 1: centre (1 + 2)/8 = 3/8, half 2/8 * sqrt(3/4 + 1) = sqrt(7)/8.
    # k = 4: mirror of k = 0 -> [1/2, 1].
    level = 2.0 * stats.norm.cdf(2.0) - 1.0
    lower, upper = binomial_band(_stats_for([0, 1, 4], [4, 4, 4]), method="wilson", level=level)
    np.testing.assert_allclose(lower, [0.0, 3 / 8 - np.sqrt(7) / 8, 0.5], atol=1e-12)
    np.testing.assert_allclose(upper, [0.5, 3 / 8 + np.sqrt(7) / 8, 1.0], atol=1e-12)


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
@pytest.mark.parametrize(("method", "scipy_method"), [("wilson", "wilson"), ("exact", "exact")])
def test_matches_scipy_binomtest(method, scipy_method, level):
    # scipy's "wilson" has no continuity correction ("wilsoncc" has), like ours.
    cases = [(0, 1), (1, 1), (0, 7), (3, 7), (7, 7), (1, 20), (13, 40), (250, 1000), (999, 1000)]
    k, n = np.array(cases).T
    lower, upper = binomial_band(_stats_for(k, n), method=method, level=level)
    for i, (ki, ni) in enumerate(cases):
        ci = stats.binomtest(int(ki), int(ni)).proportion_ci(
            confidence_level=level, method=scipy_method
        )
        assert lower[i] == pytest.approx(ci.low, abs=1e-10), (ki, ni)
        assert upper[i] == pytest.approx(ci.high, abs=1e-10), (ki, ni)


def test_clopper_pearson_alias_and_wilson_is_not_continuity_corrected():
    s = _stats_for([3, 0, 5], [10, 5, 5])
    cp = binomial_band(s, method="clopper-pearson")
    ex = binomial_band(s, method="exact")
    np.testing.assert_array_equal(cp[0], ex[0])
    np.testing.assert_array_equal(cp[1], ex[1])
    cc = stats.binomtest(3, 10).proportion_ci(method="wilsoncc")
    assert binomial_band(s, method="wilson")[0][0] != pytest.approx(cc.low, abs=1e-6)


def test_jeffreys_quantiles_and_boundary_convention():
    k = np.array([0, 2, 9, 10])
    n = np.array([10, 10, 10, 10])
    lower, upper = binomial_band(_stats_for(k, n), method="jeffreys", level=0.9)
    a, b = k + 0.5, n - k + 0.5
    # Interior ends are the 5% / 95% quantiles of Beta(k + 1/2, n - k + 1/2) ...
    np.testing.assert_allclose(lower[1:3], stats.beta.ppf(0.05, a[1:3], b[1:3]), rtol=1e-12)
    np.testing.assert_allclose(upper[1:3], stats.beta.ppf(0.95, a[1:3], b[1:3]), rtol=1e-12)
    np.testing.assert_allclose(upper[0], stats.beta.ppf(0.95, 0.5, 10.5), rtol=1e-12)
    np.testing.assert_allclose(lower[3], stats.beta.ppf(0.05, 10.5, 0.5), rtol=1e-12)
    # ... except lower = 0 when k = 0 and upper = 1 when k = n.
    assert lower[0] == 0.0
    assert upper[3] == 1.0
    assert stats.beta.ppf(0.05, 0.5, 10.5) > 0  # the convention really changes something


@pytest.mark.parametrize("method", METHODS)
def test_empty_bins_are_nan_and_bands_contain_the_frequency(method):
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.0, 0.45, 500)  # bins above 0.5 stay empty
    targets = rng.random(500) < scores
    curve = reliability_curve(scores, targets, n_bins=10)
    lower, upper = binomial_band(curve, method=method)
    assert lower.shape == upper.shape == (10,)
    empty = curve.count == 0
    assert empty[5:].all() and not empty[:5].any()
    assert np.isnan(lower[empty]).all() and np.isnan(upper[empty]).all()
    full = ~empty
    assert np.all((lower[full] <= curve.y[full]) & (curve.y[full] <= upper[full]))
    assert np.all((lower[full] >= 0) & (upper[full] <= 1))
    # A BinStatistics gives the same as the curve it was read from.
    lo2, up2 = binomial_band(curve.stats, method=method)
    np.testing.assert_array_equal(lo2, lower)
    np.testing.assert_array_equal(up2, upper)


@pytest.mark.parametrize("method", METHODS)
def test_wider_at_higher_level_and_narrower_with_more_data(method):
    s = _stats_for([3, 30, 300], [10, 100, 1000])
    lo90, up90 = binomial_band(s, method=method, level=0.90)
    lo99, up99 = binomial_band(s, method=method, level=0.99)
    assert np.all(lo99 < lo90) and np.all(up99 > up90)
    width = up90 - lo90
    assert width[0] > width[1] > width[2]


def test_stacked_classwise_statistics():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(3), 400)
    labels = np.array([rng.choice(3, p=p) for p in probs])
    stacked = Binning("width", 6).classwise_statistics(probs, labels)
    lower, upper = binomial_band(stacked, method="wilson")
    assert lower.shape == (3, 6)
    for k in range(3):
        lo_k, up_k = binomial_band(stacked[k], method="wilson")
        np.testing.assert_array_equal(lower[k], lo_k)
        np.testing.assert_array_equal(upper[k], up_k)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "agresti"}, "method must be one of"),
        ({"method": "Wilson"}, "method must be one of"),
        ({"level": 1.0}, "strictly between 0 and 1"),
        ({"level": 0}, "strictly between 0 and 1"),
        ({"level": 95}, "strictly between 0 and 1"),
        ({"level": "0.95"}, "level must be a number"),
    ],
)
def test_binomial_bad_arguments(kwargs, message):
    with pytest.raises(CalibrationInputError, match=message):
        binomial_band(_stats_for([1], [2]), **kwargs)


def test_binomial_rejects_raw_arrays():
    with pytest.raises(CalibrationInputError, match="ReliabilityCurve"):
        binomial_band(np.array([0.1, 0.2]))


@pytest.mark.parametrize("method", METHODS)
def test_binomial_coverage_in_simulation(method):
    # 2000 simulated bins of n = 50 at p = 0.3.  The exact coverage at this (n, p)
    # is 0.957 (Wilson, Jeffreys) and 0.970 (Clopper-Pearson, conservative); the
    # simulation's standard error is sqrt(.95 * .05 / 2000) = 0.005.
    rng = np.random.default_rng(11)
    n, p, level = 50, 0.3, 0.95
    k = rng.binomial(n, p, size=2000)
    lower, upper = binomial_band(_stats_for(k, np.full(k.shape, n)), method=method, level=level)
    coverage = np.mean((lower <= p) & (p <= upper))
    assert coverage == pytest.approx(_exact_coverage(n, p, method, level), abs=0.02)
    if method == "clopper-pearson":
        assert level - 0.015 <= coverage <= 0.995
    else:
        assert abs(coverage - level) <= 0.03


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 300),
    p=st.floats(0.001, 0.999),
    level=st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99]),
)
def test_clopper_pearson_exact_coverage_never_below_level(n, p, level):
    # Clopper-Pearson guarantees coverage >= level for every n and p.
    assert _exact_coverage(n, p, "clopper-pearson", level) >= level - 1e-9


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(30, 300),
    level=st.sampled_from([0.8, 0.9, 0.95]),
    method=st.sampled_from(["wilson", "jeffreys"]),
)
def test_wilson_jeffreys_average_coverage_is_nominal(n, level, method):
    # Coverage oscillates with p, but averaged over p in [0.1, 0.9] it is close
    # to nominal (Brown, Cai & DasGupta 2001), and never far below it there.
    grid = np.linspace(0.1, 0.9, 81)
    cov = np.array([_exact_coverage(n, p, method, level) for p in grid])
    assert abs(cov.mean() - level) < 0.02
    assert cov.min() > level - 0.1


# --------------------------------------------------------------- consistency
def _calibrated_data(n, rng):
    scores = rng.beta(2.0, 2.0, n)
    return scores, (rng.random(n) < scores).astype(np.int64)


def test_consistency_band_seeded_and_reproducible():
    rng = np.random.default_rng(0)
    s, y = _calibrated_data(3000, rng)
    a = consistency_band(s, y, n_bins=10, seed=42)
    b = consistency_band(s, y, n_bins=10, seed=42)
    c = consistency_band(s, y, n_bins=10, seed=43)
    d = consistency_band(s, y, n_bins=10, seed=np.random.default_rng(42))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[0], d[0])
    assert not np.array_equal(a[0], c[0])


def test_consistency_band_ignores_labels_and_brackets_mean_score():
    rng = np.random.default_rng(1)
    s, y = _calibrated_data(3000, rng)
    lo, up = consistency_band(s, y, n_bins=8, seed=7)
    lo2, up2 = consistency_band(s, 1 - y, n_bins=8, seed=7)
    np.testing.assert_array_equal(lo, lo2)
    np.testing.assert_array_equal(up, up2)
    curve = reliability_curve(s, y, n_bins=8)
    assert np.all((lo < curve.x) & (curve.x < up))


def test_consistency_band_empty_bins_and_pure_bins():
    s = np.array([0.05] * 30 + [0.95] * 30 + [0.0] * 10 + [1.0] * 10)
    y = np.array([0] * 28 + [1] * 2 + [1] * 29 + [0] + [0] * 10 + [1] * 10)
    lo, up = consistency_band(s, y, n_bins=10, seed=0)
    assert np.isnan(lo[1:9]).all() and np.isnan(up[1:9]).all()
    assert np.isfinite(lo[[0, 9]]).all()
    # Bin 0 holds scores 0.05 and 0.0, mean 0.0375: frequencies near 0; never below 0.
    assert 0.0 <= lo[0] < 0.0375 < up[0] < 0.2
    assert 0.8 < lo[9] < 0.9625 < up[9] <= 1.0


def test_consistency_band_from_sorted_statistics_matches():
    rng = np.random.default_rng(2)
    s, y = _calibrated_data(5000, rng)
    sorted_scores = SortedScores(s, y)
    for scheme in ("width", "frequency"):
        stats_sorted = sorted_scores.statistics(Binning(scheme, 12))
        a = consistency_band_from_statistics(stats_sorted, seed=9, n_resamples=300)
        b = consistency_band(s, y, n_bins=12, scheme=scheme, seed=9, n_resamples=300)
        np.testing.assert_allclose(a[0], b[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(a[1], b[1], rtol=0, atol=1e-12)


def test_consistency_band_stacked_statistics():
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(3), 900)
    labels = np.array([rng.choice(3, p=p) for p in probs])
    stacked = Binning("width", 5).classwise_statistics(probs, labels)
    lower, upper = consistency_band_from_statistics(stacked, seed=1, n_resamples=200)
    assert lower.shape == upper.shape == (3, 5)
    gen = np.random.default_rng(1)
    for k in range(3):
        lo_k, up_k = consistency_band_from_statistics(stacked[k], seed=gen, n_resamples=200)
        np.testing.assert_array_equal(lower[k], lo_k)
        np.testing.assert_array_equal(upper[k], up_k)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_resamples": 0}, "at least 1"),
        ({"n_resamples": 10.5}, "whole number"),
        ({"level": 1.5}, "strictly between 0 and 1"),
        ({"seed": -1}, "seed must be"),
        ({"seed": "abc"}, "seed must be"),
        ({"n_bins": 0}, "n_bins"),
        ({"scheme": "quantile"}, "scheme must be"),
    ],
)
def test_consistency_bad_arguments(kwargs, message):
    s = np.array([0.2, 0.4, 0.9])
    with pytest.raises(CalibrationInputError, match=message):
        consistency_band(s, [0, 1, 1], **kwargs)


def test_consistency_bad_inputs():
    with pytest.raises(CalibrationInputError, match=r"\[0, 1\]"):
        consistency_band([0.2, 1.4], [0, 1])
    with pytest.raises(CalibrationInputError, match="labels"):
        consistency_band([0.2, 0.4], [0, 1, 1])
    with pytest.raises(CalibrationInputError, match="BinStatistics"):
        consistency_band_from_statistics(np.array([1, 2]))


def _bin_moments_exact(count: np.ndarray, mean_score: np.ndarray, n: int):
    """Exact mean and variance of a bin's resampled frequency (given it is non-empty).

    C ~ Binomial(N, n_m/N) rows land in the bin, positives ~ Binomial(C, sbar_m), so
    E[F] = sbar_m and Var[F] = sbar_m (1 - sbar_m) E[1/C | C > 0].
    """
    c = np.arange(1, n + 1)
    inv = np.array(
        [
            np.sum(stats.binom.pmf(c, n, nm / n) / c) / (1.0 - stats.binom.pmf(0, n, nm / n))
            for nm in count
        ]
    )
    return mean_score, mean_score * (1.0 - mean_score) * inv


@pytest.mark.parametrize("scheme", ["width", "frequency"])
def test_fast_band_agrees_with_naive_loop_within_monte_carlo_error(scheme):
    """The O(M R) draw and the O(N R) loop give the same distribution per bin.

    Tolerances (R = 4000 resamples each, sigma_m = sd of bin m's frequency):
    * mean: the difference of two sample means has sd sigma_m sqrt(2/R); allow 4 sd.
    * variance: a sample variance has sd ~ sigma_m^2 sqrt(2/R) (near-normal), the
      difference sigma_m^2 * 2/sqrt(R); allow 4 sd.
    * 2.5% / 97.5% quantiles: a sample p-quantile has sd sqrt(p(1-p)/R) / f(q_p),
      with the near-normal density f(q_p) = phi(z_p) / sigma_m; the difference
      has sqrt(2) times that; allow 4 sd plus one lattice step 1/n_m (frequencies
      are ratios k/c, so quantiles move in steps of about 1/n_m).
    Both are also checked against the exact mean and variance (_bin_moments_exact).
    """
    n, r, level = 2000, 4000, 0.95
    rng = np.random.default_rng(2024)
    s, y = _calibrated_data(n, rng)
    binning = Binning(scheme, 10)
    data_stats = binning.statistics(s, y)
    fast = resampled_frequencies(
        data_stats.count, data_stats.mean_score, r, np.random.default_rng(1)
    )
    naive = naive_resampled_frequencies(s, binning, data_stats.edges, r, np.random.default_rng(2))
    assert not np.isnan(fast).any() and not np.isnan(naive).any()  # every bin is well filled
    exact_mean, exact_var = _bin_moments_exact(data_stats.count, data_stats.mean_score, n)
    sigma = np.sqrt(exact_var)

    mean_f, mean_n = fast.mean(axis=0), naive.mean(axis=0)
    assert np.all(np.abs(mean_f - mean_n) <= 4 * sigma * np.sqrt(2 / r))
    assert np.all(np.abs(mean_f - exact_mean) <= 4 * sigma / np.sqrt(r))
    assert np.all(np.abs(mean_n - exact_mean) <= 4 * sigma / np.sqrt(r))

    var_f, var_n = fast.var(axis=0, ddof=1), naive.var(axis=0, ddof=1)
    assert np.all(np.abs(var_f - var_n) <= 4 * exact_var * 2 / np.sqrt(r))
    assert np.all(np.abs(var_f - exact_var) <= 4 * exact_var * np.sqrt(2 / r))
    assert np.all(np.abs(var_n - exact_var) <= 4 * exact_var * np.sqrt(2 / r))

    p = (1 - level) / 2
    q_sd = sigma * np.sqrt(p * (1 - p) / r) / stats.norm.pdf(stats.norm.ppf(p))
    tol = 4 * np.sqrt(2) * q_sd + 1.0 / data_stats.count
    lo_f, up_f = consistency_band_from_statistics(data_stats, n_resamples=r, seed=1)
    lo_n, up_n = naive_consistency_band(s, n_bins=10, scheme=scheme, n_resamples=r, seed=2)
    assert np.all(np.abs(lo_f - lo_n) <= tol)
    assert np.all(np.abs(up_f - up_n) <= tol)

    # Whole distributions: two-sample KS per bin (conservative for discrete data).
    pvalues = [stats.ks_2samp(fast[:, m], naive[:, m], method="asymp").pvalue for m in range(10)]
    assert min(pvalues) > 1e-3


def test_consistency_band_coverage_for_calibrated_forecaster():
    # 300 data sets of N = 1000 from a calibrated forecaster (labels ~ Bernoulli(score)),
    # 10 equal-width bins: the observed frequency falls in its 95% band ~95% of the time.
    # (Slightly conservative: the band also carries the bootstrap's count variation and
    # uses sbar(1 - sbar) instead of the smaller mean of s(1 - s) within a bin.)
    rng = np.random.default_rng(77)
    inside, total = 0, 0
    for _ in range(300):
        s, y = _calibrated_data(1000, rng)
        curve = reliability_curve(s, y, n_bins=10)
        lo, up = consistency_band_from_statistics(curve.stats, n_resamples=400, seed=rng)
        ok = curve.count >= 5
        inside += int(np.sum((lo[ok] <= curve.y[ok]) & (curve.y[ok] <= up[ok])))
        total += int(ok.sum())
    coverage = inside / total
    assert 0.93 <= coverage <= 0.98, coverage


def test_numpy_float_levels_give_the_same_bands():
    s = np.array([0.1, 0.2, 0.4, 0.6, 0.9, 0.95])
    y = np.array([0, 0, 1, 1, 1, 1])
    curve = reliability_curve(s, y, n_bins=5)
    for level in (np.float32(0.9), np.float64(0.9)):
        np.testing.assert_allclose(
            binomial_band(curve, level=level), binomial_band(curve, level=0.9), rtol=1e-6
        )
        np.testing.assert_allclose(
            consistency_band(s, y, n_bins=5, level=level, seed=1),
            consistency_band(s, y, n_bins=5, level=0.9, seed=1),
            rtol=1e-6,
        )
