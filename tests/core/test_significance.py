"""Resampling calibration test: exact observed values, a naive loop oracle, null uniformity."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from calibration_core import CalibrationInputError, Predictions, metrics
from calibration_core.measures.significance import (
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
    # All 9 null values tie: the randomised p-value is one of 1/10, ..., 10/10.
    assert right.p_value in {k / 10 for k in range(1, 11)}
    assert monte_carlo_p_value(right.observed, right.null) == 1.0  # rng=None: ties all extreme
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
    import calibration_core.measures.significance as sig

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


class _FixedUniform:
    """Stands in for a Generator whose next ``random()`` is ``u``."""

    def __init__(self, u: float) -> None:
        self.u = u

    def random(self) -> float:
        return self.u


def _exact_p_value_law(law, r: int, randomised: bool, centre=None) -> dict:
    """Exact law of the p-value when the observed and R null values are i.i.d. from ``law``.

    Every configuration of the R + 1 values is enumerated; the tie-breaking uniform is
    integrated exactly over the midpoints of a grid of lcm(1..R+1) cells (on each cell
    ``floor(U (E + 1))`` is constant for every possible number of ties E <= R).
    """
    cells = math.lcm(*range(1, r + 2))
    grid = [_FixedUniform((i + 0.5) / cells) for i in range(cells)] if randomised else [None]
    out: dict[Fraction, Fraction] = {}
    for values in itertools.product(law, repeat=r + 1):
        weight = math.prod(law[v] for v in values) / len(grid)
        for rng in grid:
            p = monte_carlo_p_value(values[0], np.array(values[1:]), centre, rng)
            key = Fraction(p).limit_denominator(r + 1)
            out[key] = out.get(key, Fraction(0)) + weight
    return out


#: A statistic with three values, one of them very likely: ties everywhere.
DISCRETE_LAW = {0.0: Fraction(1, 2), 0.25: Fraction(1, 3), 1.0: Fraction(1, 6)}


@pytest.mark.parametrize("centre", [None, 0.5])  # two-sided: |x - 0.5| ties 0.0 with 1.0
@pytest.mark.parametrize("r", [3, 4])
def test_randomised_ties_make_the_p_value_exactly_uniform_under_a_discrete_null(centre, r):
    law = _exact_p_value_law(DISCRETE_LAW, r, randomised=True, centre=centre)
    assert law == {Fraction(j, r + 1): Fraction(1, r + 1) for j in range(1, r + 2)}


def test_counting_every_tie_as_extreme_is_conservative_under_a_discrete_null():
    law = _exact_p_value_law(DISCRETE_LAW, 3, randomised=False)
    assert sum(law.values()) == 1
    assert law[Fraction(1, 4)] < Fraction(1, 4)  # the smallest p-value is rarer than 1/4


def test_randomised_p_value_lies_between_strict_and_all_ties_and_is_seeded():
    # MCE on few rows: the largest gap of sparse bins takes few values, so ties occur.
    p, y = _data(40, 10, seed=4)
    for measure in ("confidence_mce", "classwise_mce"):
        a = calibration_test(p, y, measure=measure, n_resamples=199, seed=11)
        b = calibration_test(p, y, measure=measure, n_resamples=199, seed=11)
        assert a.p_value == b.p_value  # the tie-breaking uniform comes from the seed too
        above = np.count_nonzero(a.null > a.observed)
        ties = np.count_nonzero(a.null == a.observed)
        assert ties > 0, measure  # the case this is about
        assert (1 + above) / 200 <= a.p_value <= (1 + above + ties) / 200
    # Across seeds the tie-breaking differs: the p-values are not all the all-ties value.
    values = {
        calibration_test(p, y, measure="confidence_mce", n_resamples=199, seed=s).p_value
        for s in range(20)
    }
    assert len(values) > 1


def test_mce_test_has_its_size_on_sparse_bins():
    # K = 10, N = 100: many null MCEs tie with the observed one. Counting ties as
    # extreme rejected well under alpha; randomised ties give p <= 1/20 in 1/20 of
    # calibrated data sets (400 data sets: 95 % range 2.9-7.1 %).
    rng = np.random.default_rng(2024)
    rejected = old_rejected = 0
    for _ in range(400):
        p, y = _data(100, 10, seed=int(rng.integers(1 << 30)), concentration=0.3)
        result = calibration_test(p, y, measure="confidence_mce", n_resamples=19, seed=rng)
        rejected += result.p_value <= 0.05
        old_rejected += monte_carlo_p_value(result.observed, result.null) <= 0.05
    assert 0.029 <= rejected / 400 <= 0.071
    assert old_rejected < rejected
