"""Temperature scaling: softmax(z / T), T > 0 fitted on ln T."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import check_grad, minimize_scalar
from scipy.special import log_softmax, softmax

from calibration_core import accuracy, confidence_ece
from calibration_core.errors import CalibrationFitWarning
from calibration_core.maps import TemperatureScaling
from calibration_core.maps.temperature import T_MAX, T_MIN, TemperatureObjective, fit_temperature


def sample(n, k, temperature, seed=0, scale=3.0):
    """Logits z and labels drawn from softmax(z / temperature)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=scale, size=(n, k))
    p = softmax(z / temperature, axis=1)
    return z, (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)


def reference_nll(t, z, y):
    """The plain formula: mean -log softmax(z / t)[y]."""
    return -np.mean(log_softmax(z / t, axis=1)[np.arange(len(y)), y])


def reference_temperature(z, y):
    """Independent fit: bounded Brent on T itself (no log, no derivatives)."""
    res = minimize_scalar(
        reference_nll, bounds=(0.05, 50.0), args=(z, y), method="bounded", options={"xatol": 1e-10}
    )
    return res.x


@pytest.mark.parametrize("true_t", [0.5, 1.0, 2.5])
def test_matches_reference_fit_to_1e_6(true_t):
    z, y = sample(4000, 7, true_t, seed=1)
    m = TemperatureScaling(input="logits").fit(z, y)
    assert m.converged_
    assert abs(m.temperature_ - reference_temperature(z, y)) < 1e-6


def test_matches_reference_on_probabilities():
    z, y = sample(3000, 5, 1.7, seed=2)
    p = softmax(z, axis=1)
    m = TemperatureScaling().fit(p, y)
    assert abs(m.temperature_ - reference_temperature(np.log(p), y)) < 1e-6


@pytest.mark.parametrize("true_t", [0.6, 2.0])
def test_recovers_a_known_temperature(true_t):
    z, y = sample(40000, 10, true_t, seed=3)
    t = TemperatureScaling(input="logits").fit(z, y).temperature_
    assert abs(t - true_t) < 0.05 * true_t


def test_convention_is_softmax_of_z_over_t():
    """Not the survey's printed exp(-z / t): T = 1 is the identity, T > 1 softens."""
    z, y = sample(2000, 4, 3.0, seed=4)
    m = TemperatureScaling(input="logits").fit(z, y)
    assert m.temperature_ > 2.5
    np.testing.assert_allclose(m.predict_proba(z), softmax(z / m.temperature_, axis=1), rtol=1e-12)
    assert m.predict_proba(z).max(axis=1).mean() < softmax(z, axis=1).max(axis=1).mean()


def test_argmax_never_changes():
    for seed, t in [(5, 0.3), (6, 4.0)]:
        z, y = sample(3000, 12, t, seed=seed)
        m = TemperatureScaling(input="logits").fit(z, y)
        assert np.array_equal(m.predict(z), z.argmax(axis=1))
        p = softmax(z, axis=1)
        mp = TemperatureScaling().fit(p, y)
        assert np.array_equal(mp.predict(p), p.argmax(axis=1))


def test_derivatives_match_finite_differences():
    z, y = sample(500, 6, 1.5, seed=7)
    obj = TemperatureObjective(z, y)
    for u in (-1.0, 0.0, 0.4, 2.0):
        assert obj.loss(u) == pytest.approx(reference_nll(math.exp(u), z, y), rel=1e-12)
        g, _h = obj.derivatives(u)
        grad = lambda v: np.array([obj.derivatives(v[0])[0]])  # noqa: E731
        assert check_grad(lambda v: obj.loss(v[0]), grad, np.array([u])) < 1e-7 * max(1, abs(g))
        hess = lambda v: np.array([obj.derivatives(v[0])[1]])  # noqa: E731
        assert check_grad(lambda v: obj.derivatives(v[0])[0], hess, np.array([u])) < 1e-6


def test_subsample_start_gives_the_same_temperature():
    """Above 4 * SUBSAMPLE_ROWS rows Newton starts from a subsample fit."""
    z, y = sample(70000, 4, 1.8, seed=13)
    t, n_iter, converged = fit_temperature(z, y)
    assert converged and n_iter <= 4
    assert abs(t - reference_temperature(z, y)) < 1e-6


def test_newton_takes_few_steps():
    z, y = sample(5000, 10, 2.0, seed=8)
    _, n_iter, converged = fit_temperature(z, y)
    assert converged and n_iter <= 10


def test_separable_rows_stop_at_the_lower_bound():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 4, 200)
    z = rng.normal(size=(200, 4))
    z[np.arange(200), y] += 10
    with pytest.warns(CalibrationFitWarning, match="lower bound"):
        m = TemperatureScaling(input="logits").fit(z, y)
    assert m.temperature_ == T_MIN
    assert np.isfinite(m.predict_proba(z)).all()


def test_uninformative_inputs_stop_at_the_upper_bound():
    rng = np.random.default_rng(10)
    z = rng.normal(size=(300, 3))
    y = z.argmin(axis=1)  # the model is always wrong: uniform is best
    with pytest.warns(CalibrationFitWarning, match="upper bound"):
        m = TemperatureScaling(input="logits").fit(z, y)
    assert m.temperature_ == T_MAX
    np.testing.assert_allclose(m.predict_proba(z), 1 / 3, atol=1e-3)


def test_interior_optimum_near_a_bound_is_found_by_bisection():
    """One wrong row among many confident right ones: a small but interior T."""
    rng = np.random.default_rng(11)
    y = rng.integers(0, 3, 500)
    z = rng.normal(size=(500, 3))
    z[np.arange(500), y] += 6
    z[0, y[0]] -= 12  # one confident mistake
    m = TemperatureScaling(input="logits").fit(z, y)
    assert T_MIN < m.temperature_ < 1 and m.converged_
    assert abs(m.temperature_ - reference_temperature_wide(z, y)) < 1e-6


def reference_temperature_wide(z, y):
    res = minimize_scalar(
        reference_nll, bounds=(1e-3, 5.0), args=(z, y), method="bounded", options={"xatol": 1e-11}
    )
    return res.x


def test_json_state_holds_the_temperature():
    z, y = sample(500, 3, 2.0, seed=12)
    m = TemperatureScaling(input="logits").fit(z, y)
    state = m.to_dict()["state"]
    assert state["temperature"] == m.temperature_


@pytest.mark.realdata
def test_densenet_cifar100_temperature_scaling(realdata):
    data = np.load(realdata["densenet-bc-100-cifar-100"])
    probs = data["predictions"].astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    labels = data["ground_truth"]
    rows = np.random.default_rng(0).permutation(len(labels))
    fit_rows, test_rows = rows[: len(rows) // 2], rows[len(rows) // 2 :]
    m = TemperatureScaling().fit(probs[fit_rows], labels[fit_rows])
    calibrated = m.predict_proba(probs[test_rows])
    before = confidence_ece(probs[test_rows], labels[test_rows], n_bins=15)
    after = confidence_ece(calibrated, labels[test_rows], n_bins=15)
    # measured: ECE 13.99 % -> 1.42 %, T = 2.117 (seed 0 split)
    assert 0.12 < before < 0.16
    assert after < 0.02
    assert 1.8 < m.temperature_ < 2.4
    assert accuracy(calibrated, labels[test_rows]) == accuracy(probs[test_rows], labels[test_rows])
    assert np.array_equal(calibrated.argmax(axis=1), probs[test_rows].argmax(axis=1))
