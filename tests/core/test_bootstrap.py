"""Bootstrap intervals: fast paths equal the metric on the same resampled rows, exactly."""

from __future__ import annotations

import numpy as np
import pytest

import calibration_core.bootstrap as boot
from calibration_core import Binning, CalibrationInputError, Predictions, accuracy, brier_score
from calibration_core.bootstrap import METRICS, bootstrap_ci


def _data(n, k, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.6), n)
    y = (rng.random(n)[:, None] >= np.cumsum(p, axis=1)).sum(axis=1).clip(max=k - 1)
    return p, y


FAST_CASES = [
    ("accuracy", {}),
    ("brier_score", {}),
    ("log_loss", {"eps": 1e-6}),
    ("confidence_ece", {}),
    ("confidence_ece", {"scheme": "frequency", "n_bins": 7}),
    ("confidence_mce", {"scheme": "frequency", "n_bins": 4}),
    ("confidence_mce", {"n_bins": 10}),
    ("adaptive_ece", {"n_bins": 9}),
    ("debiased_ece", {}),
    ("debiased_ece", {"notion": "class", "class_index": 1, "scheme": "width"}),
    ("classwise_ece", {"n_bins": 6}),
    ("classwise_mce", {}),
]


@pytest.mark.parametrize(("name", "kwargs"), FAST_CASES)
def test_fast_paths_equal_the_metric_on_the_same_rows(monkeypatch, name, kwargs):
    p, y = _data(157, 4, seed=1)
    rng = np.random.default_rng(9)
    blocks = [rng.integers(0, 157, (3, 157)), rng.integers(0, 157, (2, 157))]
    monkeypatch.setattr(boot, "_blocks", lambda *_: iter(blocks))
    result = bootstrap_ci(name, p, y, n_resamples=5, seed=0, **kwargs)
    assert result.method != "loop"
    expected = [METRICS[name](p[idx], y[idx], **kwargs) for idx in np.concatenate(blocks)]
    np.testing.assert_allclose(result.samples, expected, rtol=1e-10, atol=1e-13)
    assert result.estimate == METRICS[name](p, y, **kwargs)


def test_binary_fast_path_and_classwise_fixed_edges(monkeypatch):
    p, y = _data(120, 2, seed=2)
    idx = np.random.default_rng(3).integers(0, 120, (4, 120))
    monkeypatch.setattr(boot, "_blocks", lambda *_: iter([idx]))
    binary = bootstrap_ci("binary_ece", p, y, n_resamples=4, scheme="frequency", n_bins=5)
    expected = [METRICS["binary_ece"](p[i], y[i], scheme="frequency", n_bins=5) for i in idx]
    np.testing.assert_allclose(binary.samples, expected, rtol=1e-12)
    # Equal-frequency classwise: the edges of the original rows, kept for every resample.
    result = bootstrap_ci("classwise_ece", p, y, n_resamples=4, scheme="frequency", n_bins=5)
    assert result.method == "sparse-counts-fixed-edges"
    binning = Binning("frequency", 5)
    for sample, rows in zip(result.samples, idx, strict=True):
        eces = [
            binning.statistics(p[rows, j], (y[rows] == j).astype(int), binning.edges(p[:, j])).ece()
            for j in range(2)
        ]
        assert sample == pytest.approx(np.mean(eces), rel=1e-12)


def test_hand_worked_two_rows():
    # One right and one wrong prediction: resampled accuracy is 0, 1/2 or 1
    # with probabilities 1/4, 1/2, 1/4.
    p = np.array([[0.9, 0.1], [0.8, 0.2]])
    result = bootstrap_ci("accuracy", p, [0, 1], n_resamples=4000, seed=0)
    assert result.estimate == 0.5
    shares = [np.mean(result.samples == v) for v in (0.0, 0.5, 1.0)]
    np.testing.assert_allclose(shares, [0.25, 0.5, 0.25], atol=0.03)
    assert (result.lower, result.upper) == (0.0, 1.0)


def test_spread_matches_the_standard_error_of_a_mean():
    p, y = _data(2000, 3, seed=4)
    result = bootstrap_ci("brier_score", p, y, n_resamples=2000, seed=1)
    rows = np.einsum("ij,ij->i", p, p) - 2 * p[np.arange(2000), y] + 1
    assert result.samples.std() == pytest.approx(rows.std() / np.sqrt(2000), rel=0.1)
    assert result.lower < result.estimate < result.upper
    assert result.estimate == brier_score(p, y)
    z = 1.959964
    assert result.upper - result.lower == pytest.approx(2 * z * rows.std() / np.sqrt(2000), rel=0.1)


def test_loop_for_callables_seeded_and_predictions():
    p, y = _data(80, 3, seed=5)

    def top2_hits(probs, labels):
        return float(np.mean((np.argsort(-probs, axis=1)[:, :2] == labels[:, None]).any(1)))

    a = bootstrap_ci(top2_hits, p, y, n_resamples=50, seed=3, level=0.9, interval="percentile")
    b = bootstrap_ci(top2_hits, Predictions.from_probs(p, y), n_resamples=50, seed=3, level=0.9)
    c = bootstrap_ci(top2_hits, p, y, n_resamples=50, seed=4, level=0.9)
    assert a.method == "loop" and a.metric == "top2_hits" and a.level == 0.9
    np.testing.assert_array_equal(a.samples, b.samples)
    assert not np.array_equal(a.samples, c.samples)
    assert a.lower == np.quantile(a.samples, 0.05) and a.upper == np.quantile(a.samples, 0.95)
    fast1 = bootstrap_ci("confidence_ece", p, y, n_resamples=30, seed=3)
    fast2 = bootstrap_ci("confidence_ece", p, y, n_resamples=30, seed=3)
    np.testing.assert_array_equal(fast1.samples, fast2.samples)
    assert bootstrap_ci(accuracy, p, y, n_resamples=3).method == "loop"


def test_basic_interval_reflects_the_percentiles():
    p, y = _data(300, 4, seed=8)
    pct = bootstrap_ci("classwise_ece", p, y, n_resamples=400, seed=2, interval="percentile")
    basic = bootstrap_ci("classwise_ece", p, y, n_resamples=400, seed=2, interval="basic")
    np.testing.assert_array_equal(pct.samples, basic.samples)
    assert basic.lower == pytest.approx(2 * pct.estimate - pct.upper)
    assert basic.upper == pytest.approx(2 * pct.estimate - pct.lower)
    # ECE is biased upwards and resamples more so: the percentile interval sits higher.
    assert np.median(pct.samples) > pct.estimate
    assert basic.lower < pct.lower and basic.interval == "basic"
    with pytest.raises(CalibrationInputError, match="interval"):
        bootstrap_ci("accuracy", p, y, interval="bca")


def test_default_interval_is_hybrid_holds_the_estimate_and_never_goes_below_zero():
    # Calibrated binary scores: the ECE's bootstrap values sit above the estimate, so the
    # basic interval lies entirely below it and its lower end is negative (issue 15 item 6).
    rng = np.random.default_rng(6)
    s = rng.random(400)
    y = (rng.random(400) < s).astype(int)
    hybrid = bootstrap_ci("binary_ece", s, y, n_resamples=300, seed=1)
    basic = bootstrap_ci("binary_ece", s, y, n_resamples=300, seed=1, interval="basic")
    q_lo, q_hi = np.quantile(hybrid.samples, [0.025, 0.975])
    assert hybrid.interval == "hybrid"
    assert 2 * hybrid.estimate - q_hi < 0  # unclipped, the lower end would be negative
    assert hybrid.lower == 0.0 and basic.lower == 0.0  # clipped to the metric's range
    assert hybrid.upper == pytest.approx(q_hi) and hybrid.lower <= hybrid.estimate <= hybrid.upper
    assert basic.upper == pytest.approx(2 * basic.estimate - q_lo)
    assert basic.upper < basic.estimate  # the basic interval lies entirely below its estimate
    assert hybrid.corrected == pytest.approx(max(2 * hybrid.estimate - hybrid.samples.mean(), 0))


def test_bounds_stay_in_each_metrics_range():
    p, y = _data(60, 3, seed=11)
    for metric in ("accuracy", "brier_score", "log_loss", "confidence_ece", "classwise_ece"):
        for interval in ("hybrid", "basic", "percentile"):
            r = bootstrap_ci(metric, p, y, n_resamples=200, seed=0, interval=interval)
            assert 0.0 <= r.lower <= r.upper, (metric, interval)
    perfect = np.eye(3)[y] * 0.98 + 0.01 / 1.5  # nearly always right: accuracy near 1
    r = bootstrap_ci("accuracy", perfect / perfect.sum(1, keepdims=True), y, n_resamples=200)
    assert r.upper <= 1.0 and r.corrected <= 1.0


def test_blocks_cover_every_resample(monkeypatch):
    monkeypatch.setattr(boot, "BLOCK_ELEMENTS", 3 * 50)
    p, y = _data(50, 3, seed=6)
    for name in ("confidence_ece", "brier_score", "classwise_ece"):
        result = bootstrap_ci(name, p, y, n_resamples=10, seed=0)
        assert result.samples.shape == (10,) and np.all(np.isfinite(result.samples))


def test_bad_input():
    p, y = _data(20, 3, seed=7)
    with pytest.raises(CalibrationInputError, match="unknown metric"):
        bootstrap_ci("ece", p, y)
    with pytest.raises(CalibrationInputError, match="level"):
        bootstrap_ci("accuracy", p, y, level=95)
    with pytest.raises(CalibrationInputError, match="n_resamples"):
        bootstrap_ci("accuracy", p, y, n_resamples=0)
    with pytest.raises(CalibrationInputError, match="metric must be"):
        bootstrap_ci(3, p, y)


def test_level_may_be_any_real_number_type():
    p, y = _data(60, 3, seed=8)
    a = bootstrap_ci("accuracy", p, y, n_resamples=20, seed=0, level=0.9)
    b = bootstrap_ci("accuracy", p, y, n_resamples=20, seed=0, level=np.float32(0.9))
    assert b.level == pytest.approx(0.9) and (b.lower, b.upper) == pytest.approx((a.lower, a.upper))


@pytest.mark.parametrize("seed", [-1, "abc", 1.5, True])
def test_bad_seed_is_an_input_error(seed):
    p, y = _data(20, 3, seed=7)
    with pytest.raises(CalibrationInputError, match="seed must be"):
        bootstrap_ci("accuracy", p, y, n_resamples=5, seed=seed)


def test_wilson_bounds_match_published_values():
    # Wilson 95 % intervals (z = 1.96): 9/10 -> [0.596, 0.982], 2/10 -> [0.057, 0.510], 0/10
    # -> [0, 0.278]: wide in small samples and near 0 or 1, where the Wald interval collapses.
    lo, hi = boot.wilson_bounds(np.array([9.0, 2.0, 0.0]), np.array([10, 10, 10]), 1.959964)
    np.testing.assert_allclose(lo, [0.5958, 0.0567, 0.0], atol=1e-4)
    np.testing.assert_allclose(hi, [0.9821, 0.5098, 0.2775], atol=1e-4)


def test_mce_default_interval_bounds_the_largest_gap_bin_by_bin():
    # Two bins of 10 rows: scores 0.25 with 9 hits (gap +0.65), scores 0.75 with 2 hits (-0.55).
    s = np.repeat([0.25, 0.75], 10)
    y = np.array([1] * 9 + [0] + [1] * 2 + [0] * 8)
    r = bootstrap_ci("binary_mce", s, y, n_resamples=20, seed=0)
    assert r.interval == "max-of-bins" and r.estimate == pytest.approx(0.65)
    # Upper: each bin at the one-sided 97.5 % level; the largest |gap| bound wins.
    assert r.upper == pytest.approx(max(0.9821 - 0.25, 0.75 - 0.0567), abs=1e-4)
    # Lower: Bonferroni over the 2 bins (z at 1 - 0.05 / 4), the largest lower bound of |gap|.
    (hits_low, _), (_, misses_high) = (
        boot.wilson_bounds(np.array([v]), np.array([10]), 2.241403) for v in (9.0, 2.0)
    )
    assert r.lower == pytest.approx(max(hits_low[0] - 0.25, 0.75 - misses_high[0]))
    assert 0.0 < r.lower < r.estimate < r.upper
    # The resamples are still drawn (histogram, corrected estimate); other kinds on request.
    hybrid = bootstrap_ci("binary_mce", s, y, n_resamples=20, seed=0, interval="hybrid")
    np.testing.assert_array_equal(hybrid.samples, r.samples)
    assert hybrid.interval == "hybrid" and hybrid.upper == pytest.approx(
        np.quantile(r.samples, 0.975)
    )


def test_max_of_bins_is_the_mce_default_only():
    p, y = _data(300, 3, seed=12)
    assert boot.default_interval("confidence_mce") == boot.default_interval("binary_mce")
    assert boot.default_interval("confidence_mce") == boot.MAX_GAP_INTERVAL
    assert boot.default_interval("classwise_mce") == boot.default_interval("confidence_ece")
    r = bootstrap_ci("confidence_mce", p, y, n_resamples=30, seed=1, n_bins=10)
    assert r.lower <= r.estimate <= r.upper and r.interval == boot.MAX_GAP_INTERVAL
    with pytest.raises(CalibrationInputError, match="interval must be one of"):
        bootstrap_ci("confidence_ece", p, y, n_resamples=30, interval=boot.MAX_GAP_INTERVAL)
