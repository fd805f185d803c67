"""Resampling calibration test: exact observed values, a naive loop oracle, null uniformity."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from calibration_core import CalibrationInputError, Predictions, metrics
from calibration_core.significance import (
    MEASURES,
    alias_tables,
    calibration_test,
    monte_carlo_p_value,
)

SCORING_RULES = ("brier_score", "log_loss")


def _data(n, k, seed, concentration=0.7):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, concentration), n)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(max=k - 1)
    return p, y


def _measures(k):
    return [m for m in MEASURES if k == 2 or not m.startswith("binary")]


def _core(measure, p, y, scheme="width"):
    kwargs = {} if measure in SCORING_RULES else {"scheme": scheme}
    return getattr(metrics, measure)(p, y, **kwargs)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("scheme", ["width", "frequency"])
def test_observed_is_the_core_metric(k, scheme):
    p, y = _data(500, k, seed=k)
    for measure in _measures(k):
        result = calibration_test(p, y, measure=measure, n_resamples=5, seed=0, scheme=scheme)
        assert result.observed == pytest.approx(_core(measure, p, y, scheme), abs=1e-12)
        assert result.null.shape == (5,)


def _naive_null(measure, p, n_resamples, seed, scheme):
    """One Python loop over resamples: full categorical labels, then the core metric."""
    rng = np.random.default_rng(seed)
    cum = np.cumsum(p, axis=1)
    out = []
    for _ in range(n_resamples):
        labels = (rng.random(p.shape[0])[:, None] >= cum).sum(axis=1).clip(max=p.shape[1] - 1)
        out.append(_core(measure, p, labels, scheme))
    return np.array(out)


@pytest.mark.parametrize("k", [2, 4])
def test_null_distribution_matches_naive_loop(k):
    p, y = _data(300, k, seed=10 + k)
    r = 400
    for measure in _measures(k):
        scheme = "frequency" if measure.endswith("mce") else "width"
        fast = calibration_test(p, y, measure=measure, n_resamples=r, seed=1, scheme=scheme).null
        naive = _naive_null(measure, p, r, seed=2, scheme=scheme)
        se = np.sqrt(fast.var() / r + naive.var() / r)
        assert abs(fast.mean() - naive.mean()) < 4.5 * se, measure
        assert stats.ks_2samp(fast, naive).pvalue > 1e-3, measure
        for q in (0.1, 0.5, 0.9):
            assert abs(np.quantile(fast, q) - np.quantile(naive, q)) < 6 * np.sqrt(
                fast.var() / r
            ), (measure, q)


@pytest.mark.parametrize("measure", ["confidence_ece", "classwise_ece", "brier_score"])
def test_p_value_is_uniform_under_the_null(measure):
    rng = np.random.default_rng(123)
    p_values = []
    for _ in range(200):
        p = rng.dirichlet(np.ones(3), 200)
        y = (rng.random(200)[:, None] >= np.cumsum(p, axis=1)).sum(axis=1).clip(max=2)
        seed = int(rng.integers(1 << 30))
        p_values.append(calibration_test(p, y, measure=measure, n_resamples=99, seed=seed).p_value)
    p_values = np.array(p_values)
    # 200 draws: the share below 0.05 has standard error 0.015 under uniformity.
    assert 0.01 <= np.mean(p_values <= 0.05) <= 0.10
    assert abs(p_values.mean() - 0.5) < 0.07
    assert stats.kstest(p_values, "uniform").pvalue > 1e-3


def test_miscalibrated_model_is_rejected():
    rng = np.random.default_rng(5)
    true = rng.dirichlet(np.ones(4), 3000)
    y = (rng.random(3000)[:, None] >= np.cumsum(true, axis=1)).sum(axis=1).clip(max=3)
    sharp = true**3 / (true**3).sum(axis=1, keepdims=True)  # over-confident
    for measure in ("confidence_ece", "classwise_ece", "log_loss"):
        result = calibration_test(sharp, y, measure=measure, n_resamples=199, seed=0)
        assert result.p_value == pytest.approx(1 / 200)
        assert result.rejects(0.05)
        assert result.observed > result.null.max()


def test_hand_worked_degenerate_cases_and_p_value_convention():
    # One-hot predictions: the null labels are certain, so every null ECE is 0.
    p = np.eye(3)[[0, 1, 2, 0, 1]]
    right = calibration_test(p, [0, 1, 2, 0, 1], n_resamples=9, seed=0)
    assert np.all(right.null == 0) and right.observed == 0
    assert right.p_value == 1.0  # (1 + 9 ties) / (1 + 9)
    assert right.share_exceeding == 0.0  # the survey's strict share
    wrong = calibration_test(p, [1, 2, 0, 0, 1], n_resamples=9, seed=0)
    assert wrong.observed == pytest.approx(0.6)  # 3 of 5 confident mistakes
    assert wrong.p_value == pytest.approx(0.1)  # (1 + 0) / (1 + 9)
    assert wrong.share_exceeding == 0.0


def test_seeded_and_reproducible():
    p, y = _data(400, 5, seed=3)
    a = calibration_test(p, y, measure="classwise_ece", n_resamples=50, seed=7)
    b = calibration_test(p, y, measure="classwise_ece", n_resamples=50, seed=7)
    c = calibration_test(p, y, measure="classwise_ece", n_resamples=50, seed=8)
    np.testing.assert_array_equal(a.null, b.null)
    assert not np.array_equal(a.null, c.null)
    assert a.seed == 7 and a.n_bins == 15 and a.scheme == "width"
    assert calibration_test(p, y, measure="log_loss", n_resamples=3).n_bins is None


def test_alias_tables_reproduce_the_rows_exactly():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(7, 0.4), 300)
    p[:, 2] = 0.0
    p[:10] = np.eye(7)[[0, 1, 3, 4, 5, 6, 0, 1, 3, 4]]
    p /= p.sum(axis=1, keepdims=True)
    keep, alias = alias_tables(p)
    implied = keep / 7
    np.add.at(implied, (np.repeat(np.arange(300), 7), alias.ravel()), (1 - keep.ravel()) / 7)
    np.testing.assert_allclose(implied, p, atol=1e-12)
    assert np.all(keep[:, 2] == 0) and not np.any(alias == 2)


def test_blocks_do_not_change_the_distribution(monkeypatch):
    import calibration_core.significance as sig

    p, y = _data(200, 3, seed=4)
    whole = calibration_test(p, y, measure="confidence_ece", n_resamples=300, seed=1).null
    monkeypatch.setattr(sig, "BLOCK_ELEMENTS", 200 * 7)  # 7 resamples per block
    blocked = calibration_test(p, y, measure="confidence_ece", n_resamples=300, seed=2).null
    assert blocked.shape == (300,)
    assert stats.ks_2samp(whole, blocked).pvalue > 1e-3


def test_accepts_predictions_and_rejects_bad_input():
    p, y = _data(100, 3, seed=9)
    pred = Predictions.from_probs(p, y)
    a = calibration_test(pred, measure="brier_score", n_resamples=20, seed=0)
    b = calibration_test(p, y, measure="brier_score", n_resamples=20, seed=0)
    np.testing.assert_array_equal(a.null, b.null)
    with pytest.raises(CalibrationInputError, match="unknown measure"):
        calibration_test(p, y, measure="ece")
    with pytest.raises(CalibrationInputError, match="binary notion needs exactly 2"):
        calibration_test(p, y, measure="binary_ece")
    with pytest.raises(CalibrationInputError, match="n_resamples"):
        calibration_test(p, y, n_resamples=0)
    with pytest.raises(CalibrationInputError, match="labels are missing"):
        calibration_test(p)


@pytest.mark.parametrize("seed", [-1, "abc", 1.5, True])
def test_bad_seed_is_an_input_error(seed):
    p, y = _data(50, 3, seed=9)
    with pytest.raises(CalibrationInputError, match="seed must be"):
        calibration_test(p, y, measure="brier_score", n_resamples=5, seed=seed)


def test_seed_may_be_a_generator_or_a_numpy_int():
    p, y = _data(50, 3, seed=9)
    a = calibration_test(p, y, measure="brier_score", n_resamples=20, seed=4)
    b = calibration_test(p, y, measure="brier_score", n_resamples=20, seed=np.int64(4))
    c = calibration_test(p, y, measure="brier_score", n_resamples=20, seed=np.random.default_rng(4))
    np.testing.assert_array_equal(a.null, b.null)
    np.testing.assert_array_equal(a.null, c.null)


def _issue_16_example(seed: int, n: int = 1000, k: int = 3):
    """Predictions softmax(z), labels from softmax(z / 0.8): softer than the truth."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 1.5, (n, k))
    truth = np.exp(z / 0.8)
    truth /= truth.sum(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(max=k - 1)
    return p, y


@pytest.mark.parametrize("measure", SCORING_RULES)
def test_scoring_rule_tests_are_two_sided_and_see_under_confidence(measure):
    # Issue 16: a one-sided test gave p = 1.000 here (the score is better than its null).
    p, y = _issue_16_example(0)
    result = calibration_test(p, y, measure=measure, n_resamples=999, seed=0)
    assert result.sides == "two-sided"
    assert result.observed < np.min(result.null)  # better than any calibrated draw
    assert result.p_value == pytest.approx(1 / 1000)
    assert result.share_exceeding == 1.0  # the survey's one-sided share would never reject
    assert result.null_mean == pytest.approx(result.null.mean(), abs=4 * result.null.std() / 30)


def test_null_mean_of_scoring_rules_is_exact():
    p, _ = _data(500, 4, seed=9)
    brier = calibration_test(p, np.zeros(500, int), measure="brier_score", n_resamples=3)
    assert brier.null_mean == pytest.approx(1 - np.mean(np.sum(p**2, axis=1)))
    loss = calibration_test(p, np.zeros(500, int), measure="log_loss", n_resamples=3)
    assert loss.null_mean == pytest.approx(-np.mean(np.sum(p * np.log(p), axis=1)))
    ece = calibration_test(p, np.zeros(500, int), n_resamples=3)
    assert ece.sides == "upper" and ece.null_mean is None


def test_two_sided_p_value_counts_both_tails():
    null = np.array([0.1, 0.2, 0.3, 0.5, 0.7])
    assert monte_carlo_p_value(0.6, null, centre=0.4) == pytest.approx((1 + 3) / 6)  # .1 .7 .2
    assert monte_carlo_p_value(0.6, null) == pytest.approx((1 + 1) / 6)  # only 0.7
    assert monte_carlo_p_value(0.2, null, centre=0.4) == pytest.approx((1 + 3) / 6)
