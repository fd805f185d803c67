"""KS calibration error, Kuiper, Spiegelhalter and the cumulative curve against plain loops."""

from __future__ import annotations

import numpy as np
import pytest

from calibration_core import CalibrationInputError, Predictions
from calibration_core.measures import (
    classwise_ks_errors,
    cumulative_differences,
    cumulative_test,
    ks_calibration_error,
    spiegelhalter_test,
)
from calibration_core.measures.cumulative import brownian_range_sf, sup_abs_brownian_sf


def _binary(n, seed, slope=1.0):
    """Scores uniform on [0, 1], labels Bernoulli(expit(slope logit s)).

    Calibrated when slope = 1; over-confident scores (too extreme) when slope < 1.
    """
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    truth = 1 / (1 + np.exp(-slope * np.log(s / (1 - s))))
    return s, (rng.random(n) < truth).astype(int)


def _gupta_loop(scores, labels):
    """Gupta et al.'s KS error as written: sort, accumulate, largest gap (no ties)."""
    order = np.argsort(scores)
    h = h_tilde = best = 0.0
    for i in order:
        h += labels[i] / len(scores)
        h_tilde += scores[i] / len(scores)
        best = max(best, abs(h - h_tilde))
    return best


def test_ks_error_equals_the_definition_top_label_and_per_class():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(4), 300)
    y = rng.integers(0, 4, 300)
    conf, correct = p.max(1), (p.argmax(1) == y).astype(int)
    assert ks_calibration_error(p, y) == pytest.approx(_gupta_loop(conf, correct), abs=1e-12)
    per_class = [_gupta_loop(p[:, k], (y == k).astype(int)) for k in range(4)]
    np.testing.assert_allclose(classwise_ks_errors(p, y), per_class, atol=1e-12)
    assert ks_calibration_error(p, y, notion="classwise") == pytest.approx(np.mean(per_class))
    assert ks_calibration_error(p, y, notion="class", class_index=2) == pytest.approx(per_class[2])


def test_kuiper_and_the_curve_by_hand():
    s = np.array([0.2, 0.4, 0.6, 0.8])
    y = np.array([1, 0, 0, 1])
    curve = cumulative_differences(Predictions.from_scores(s, y), notion="binary")
    np.testing.assert_allclose(curve.difference, [0, 0.2, 0.1, -0.05, 0.0], atol=1e-15)
    np.testing.assert_allclose(curve.rank, [0, 0.25, 0.5, 0.75, 1])
    var = np.cumsum(s * (1 - s))
    np.testing.assert_allclose(curve.std[1:], np.sqrt(var) / 4)
    np.testing.assert_allclose(curve.band(0.95), 1.959963984540054 * curve.std)
    result = cumulative_test(Predictions.from_scores(s, y), notion="binary")
    assert result.ks_error == pytest.approx(0.2)
    assert result.kuiper == pytest.approx(0.25)
    assert result.sigma == pytest.approx(np.sqrt(var[-1]) / 4)


def test_ties_enter_at_once_so_row_order_does_not_matter():
    s = np.array([0.5, 0.5, 0.5, 0.5, 0.9])
    y = np.array([1, 1, 0, 0, 1])
    a = cumulative_test(Predictions.from_scores(s, y), notion="binary")
    b = cumulative_test(Predictions.from_scores(s[::-1].copy(), y[::-1].copy()), notion="binary")
    assert a == b
    assert a.ks_error == pytest.approx(0.02)  # (2 - 2.0)/5 after the tie, then 0.1 * 1/5


def test_brownian_laws_against_simulated_random_walks():
    # A walk of n steps misses the continuous extremes by about 0.5826 / sqrt(n) each
    # (Siegmund's correction), so it is compared at x + 0.5826 / sqrt(n) (one extreme,
    # sup |B|) and x + 2 * 0.5826 / sqrt(n) (two, the range).
    rng = np.random.default_rng(0)
    steps, paths = 1000, 8000
    shift = 0.5826 / np.sqrt(steps)
    walk = np.cumsum(rng.standard_normal((paths, steps)), axis=1) / np.sqrt(steps)
    walk = np.concatenate([np.zeros((paths, 1)), walk], axis=1)
    sup, span = np.abs(walk).max(1), walk.max(1) - walk.min(1)
    for x in (0.8, 1.2, 1.8, 2.4):
        assert sup_abs_brownian_sf(x + shift) == pytest.approx((sup >= x).mean(), abs=0.015)
    for x in (1.2, 1.8, 2.4, 3.0):
        assert brownian_range_sf(x + 2 * shift) == pytest.approx((span >= x).mean(), abs=0.015)
    assert sup_abs_brownian_sf(0.01) == 1.0 and brownian_range_sf(0.0) == 1.0
    assert sup_abs_brownian_sf(6.0) == pytest.approx(4 * 9.865876450377e-10, rel=1e-6)


def test_tests_hold_their_size_under_calibration_and_have_power():
    p_ks, p_kuiper, p_spiegel = [], [], []
    for seed in range(300):
        s, y = _binary(400, seed)
        pred = Predictions.from_scores(s, y)
        r = cumulative_test(pred, notion="binary")
        p_ks.append(r.ks_p_value)
        p_kuiper.append(r.kuiper_p_value)
        p_spiegel.append(spiegelhalter_test(pred, notion="binary").p_value)
    for pv in (p_ks, p_kuiper, p_spiegel):
        assert 0.015 <= np.mean(np.array(pv) <= 0.05) <= 0.09
    s, y = _binary(2000, 1, slope=0.6)  # over-confident
    pred = Predictions.from_scores(s, y)
    assert cumulative_test(pred, notion="binary").ks_p_value < 1e-6
    assert cumulative_test(pred, notion="binary").kuiper_p_value < 1e-6
    assert spiegelhalter_test(pred, notion="binary").p_value < 0.01


def test_spiegelhalter_by_its_formula_and_degenerate_scores():
    s, y = _binary(500, 7)
    z = np.sum((y - s) * (1 - 2 * s)) / np.sqrt(np.sum((1 - 2 * s) ** 2 * s * (1 - s)))
    r = spiegelhalter_test(Predictions.from_scores(s, y), notion="binary")
    assert r.z == pytest.approx(z, rel=1e-12)
    half = spiegelhalter_test(np.full(4, 0.5), np.array([0, 1, 1, 1]), notion="binary")
    assert np.isnan(half.z) and half.to_dict()["z"] is None


def test_thinned_curve_keeps_the_statistics():
    s, y = _binary(20_000, 2, slope=0.8)
    curve = cumulative_differences(Predictions.from_scores(s, y), notion="binary")
    thin = curve.thinned(300)
    assert len(thin.rank) <= 300 and thin.rank[0] == 0 and thin.rank[-1] == 1
    assert np.abs(thin.difference).max() == np.abs(curve.difference).max()
    assert np.ptp(thin.difference) == np.ptp(curve.difference)


def test_classwise_notion_is_refused_for_one_curve():
    p = np.array([[0.7, 0.3], [0.2, 0.8]])
    with pytest.raises(CalibrationInputError, match="one score column"):
        cumulative_differences(p, [0, 1], notion="classwise")


@pytest.mark.realdata
def test_cifar_spiegelhalter_matches_rms_and_ks_matches_the_loop(realdata):
    # ../shared/references/rms-val-prob.md: S:z of rms::val.prob on two real problems.
    with np.load(realdata["wideresnet-16-4-cifar-10"]) as d:
        p, g = d["predictions"].astype(np.float64), d["ground_truth"]
    s = np.clip(p[:, 3], 1e-12, 1 - 1e-12)
    y = (g == 3).astype(int)
    r = spiegelhalter_test(Predictions.from_scores(s, y), notion="binary")
    assert r.z == pytest.approx(31.98963, abs=1e-5)
    assert r.p_value == pytest.approx(1.52e-224, rel=0.01)
    with np.load(realdata["densenet-bc-100-cifar-100"]) as d:
        p, g = d["predictions"].astype(np.float64), d["ground_truth"]
    conf = np.clip(p.max(1), 1e-12, 1 - 1e-12)
    correct = (p.argmax(1) == g).astype(int)
    r = spiegelhalter_test(Predictions.from_scores(conf, correct), notion="binary")
    assert r.z == pytest.approx(79.29952, abs=1e-5)
    # Ties among float32 confidences: compare with the loop on the tie-group ends.
    conf32 = p.max(1)
    test = cumulative_test(p, g)
    assert test.ks_error == pytest.approx(_gupta_loop_ties(conf32, correct), abs=1e-12)
    assert test.ks_p_value < 1e-10  # DenseNet is clearly over-confident


def _gupta_loop_ties(scores, labels):
    order = np.argsort(scores, kind="stable")
    d, best, n = 0.0, 0.0, len(scores)
    for pos, i in enumerate(order):
        d += (labels[i] - scores[i]) / n
        if pos == n - 1 or scores[order[pos + 1]] != scores[i]:
            best = max(best, abs(d))
    return best


@pytest.mark.realdata
def test_cifar10_classwise_ks_equals_the_loop(realdata):
    with np.load(realdata["lenet-5-cifar-10"]) as d:
        p, g = d["predictions"].astype(np.float64), d["ground_truth"]
    want = [_gupta_loop_ties(p[:, k], (g == k).astype(int)) for k in range(10)]
    np.testing.assert_allclose(classwise_ks_errors(p, g), want, atol=1e-12)
