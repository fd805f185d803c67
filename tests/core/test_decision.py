"""Decision view: cost threshold, prior shift (derived and simulated), expected cost."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from calibration_core import CalibrationInputError, Predictions
from calibration_core.decision import (
    adjust_scores_for_prior,
    compare_expected_costs,
    cost_curve,
    cost_threshold,
    expected_cost,
    prior_shift_threshold,
)


def test_cost_threshold_hand_worked():
    assert cost_threshold(1, 4) == pytest.approx(0.2)  # C(+|-) / (C(+|-) + C(-|+))
    assert cost_threshold(3, 1) == pytest.approx(0.75)
    assert cost_threshold(0, 5) == 0.0


def test_prior_shift_threshold_hand_worked_and_survey_special_case():
    # Equal costs, r = 1 (pi = .5) -> r' = .25 (pi' = .2): t = r / (r + r') = 0.8.
    assert prior_shift_threshold(0.5, 0.5, 0.2) == pytest.approx(0.8)
    # General c: t = c r / (c r + (1 - c) r'), r = 1/3, r' = 1, c = 0.2 -> (1/15) / (1/15 + .8).
    assert prior_shift_threshold(0.2, 0.25, 0.5) == pytest.approx((1 / 15) / (1 / 15 + 0.8))
    assert prior_shift_threshold(0.3, 0.4, 0.4) == pytest.approx(0.3)  # no shift


def test_threshold_on_adjusted_scores_equals_shifted_threshold():
    s = np.linspace(0.001, 0.999, 999)
    for c, pi, pi2 in [(0.5, 0.5, 0.1), (0.2, 0.3, 0.7), (0.9, 0.6, 0.05)]:
        t = prior_shift_threshold(c, pi, pi2)
        adjusted = adjust_scores_for_prior(s, pi, pi2)
        far = np.abs(s - t) > 1e-9
        np.testing.assert_array_equal((adjusted >= c)[far], (s >= t)[far])


def test_cost_threshold_is_optimal_for_calibrated_scores():
    rng = np.random.default_rng(0)
    s = rng.random(40000)
    y = (rng.random(40000) < s).astype(int)
    c = cost_threshold(1, 4)
    thresholds, costs = cost_curve(s, y, 1, 4)
    assert abs(thresholds[np.argmin(costs)] - c) < 0.03
    # Theory, s uniform: E[(1-s) 1(s>=c) + 4 s 1(s<c)] = (1-c)^2/2 + 2c^2 = 0.32 + 0.08.
    assert expected_cost(s, y, 1, 4) == pytest.approx(0.40, abs=0.01)
    assert expected_cost(s, y, 1, 4) <= expected_cost(s, y, 1, 4, threshold=0.5)


def test_prior_shift_simulation():
    # x | y ~ N(+-1, 1); with pi = .5 the calibrated score is expit(2x).
    rng = np.random.default_rng(1)
    n = 60000
    y = (rng.random(n) < 0.1).astype(int)  # deployment prior 0.1
    x = rng.normal(np.where(y == 1, 1.0, -1.0), 1.0)
    s = expit(2 * x)
    t = prior_shift_threshold(0.5, 0.5, 0.1)
    assert t == pytest.approx(0.9)
    thresholds, costs = cost_curve(s, y, 1, 1)
    assert abs(thresholds[np.argmin(costs)] - t) < 0.05
    assert expected_cost(s, y, 1, 1, threshold=t) < expected_cost(s, y, 1, 1, threshold=0.5)


def test_expected_cost_hand_worked_and_with_prior():
    s = np.array([0.9, 0.3, 0.6, 0.2, 0.1])
    y = np.array([1, 1, 0, 0, 0])
    # threshold .5: one FN (0.3), one FP (0.6)
    assert expected_cost(s, y, 2, 5, threshold=0.5) == pytest.approx((2 + 5) / 5)
    # at prior .5: .5 * 5 * FNR(1/2) + .5 * 2 * FPR(1/3)
    got = expected_cost(s, y, 2, 5, threshold=0.5, prior=0.5)
    assert got == pytest.approx(0.5 * 5 * 0.5 + 0.5 * 2 / 3)
    # default threshold 2 / 7 = .2857: predicted + for .9, .3, .6 -> one FP
    assert expected_cost(s, y, 2, 5) == pytest.approx(2 / 5)
    two_col = np.column_stack([1 - s, s])
    assert expected_cost(Predictions.from_probs(two_col, y), None, 2, 5) == pytest.approx(2 / 5)
    thresholds, costs = cost_curve(s, y, 2, 5)
    for t, c in zip(thresholds, costs, strict=True):
        assert c == pytest.approx(expected_cost(s, y, 2, 5, threshold=t))
    assert thresholds[-1] > s.max() and costs[-1] == pytest.approx(2 * 5 / 5)


def test_compare_expected_costs():
    y = np.array([1, 1, 0, 0, 0])
    raw = np.array([0.9, 0.3, 0.6, 0.2, 0.1])
    better = np.array([0.8, 0.7, 0.4, 0.2, 0.1])
    result = compare_expected_costs(
        {"uncalibrated": Predictions.from_scores(raw, y), "platt": better}, cost_fp=1, cost_fn=1
    )
    assert result.names == ("uncalibrated", "platt") and result.threshold == 0.5
    np.testing.assert_allclose(result.expected_cost, [2 / 5, 0.0])
    np.testing.assert_array_equal(result.false_positives, [1, 0])
    np.testing.assert_array_equal(result.false_negatives, [1, 0])
    np.testing.assert_allclose(result.best_cost, [1 / 5, 0.0])
    shifted = compare_expected_costs({"a": raw}, y, cost_fp=1, cost_fn=1, deploy_prior=0.2)
    assert shifted.threshold == pytest.approx(prior_shift_threshold(0.5, 0.4, 0.2))
    assert shifted.prior == 0.2


def test_bad_input():
    with pytest.raises(CalibrationInputError, match="both 0"):
        cost_threshold(0, 0)
    with pytest.raises(CalibrationInputError, match="cost_fp"):
        cost_threshold(-1, 2)
    with pytest.raises(CalibrationInputError, match="deploy_prior"):
        prior_shift_threshold(0.5, 0.5, 1.0)
    three = Predictions.from_probs(np.full((2, 3), 1 / 3), [0, 1])
    with pytest.raises(CalibrationInputError, match="binary"):
        expected_cost(three, None, 1, 1)
    with pytest.raises(CalibrationInputError, match="both classes"):
        expected_cost([0.2, 0.7], [1, 1], 1, 1, prior=0.3)
    with pytest.raises(CalibrationInputError, match="labels are missing"):
        compare_expected_costs({"a": np.array([0.2])}, cost_fp=1, cost_fn=1)
