"""Beta calibration: identity on calibrated data, constrained refits, parametrisations."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, softmax

from calibration_core import CalibrationInputError
from calibration_core.errors import CalibrationFitWarning
from calibration_core.maps import BetaCalibration, PlattScaling, make_map


def logistic_reference(features, y):
    """Independent unpenalised logistic regression with intercept (L-BFGS-B, tight)."""
    X = np.column_stack([*features, np.ones_like(y, dtype=float)])

    def f(v):
        z = X @ v
        return np.mean(np.logaddexp(0, z) - y * z), X.T @ (expit(z) - y) / len(y)

    return minimize(
        f,
        np.zeros(X.shape[1]),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 0, "maxiter": 10_000},
    ).x


def beta_draw(n, a, b, c, seed):
    """Scores and targets drawn from the beta map sigmoid(a ln s - b ln(1-s) + c)."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.001, 0.999, n)
    p = expit(a * np.log(s) - b * np.log1p(-s) + c)
    return s, (rng.random(n) < p).astype(int)


def test_registry_name():
    assert isinstance(make_map("beta"), BetaCalibration)


def test_identity_on_calibrated_data():
    rng = np.random.default_rng(0)
    s = rng.random(200_000)
    y = (rng.random(200_000) < s).astype(int)
    m = BetaCalibration().fit(s, y)
    np.testing.assert_allclose(m.coef_[0], [1.0, 1.0, 0.0], atol=0.04)
    assert not m.constrained_.any()
    grid = np.linspace(0.01, 0.99, 99)
    np.testing.assert_allclose(m.predict_proba(grid)[:, 1], grid, atol=0.01)


def test_identity_parameters_give_the_identity_map():
    m = BetaCalibration().fit(*beta_draw(500, 1, 1, 0, seed=1))
    m.coef_ = np.array([[1.0, 1.0, 0.0]])
    s = np.linspace(0.001, 0.999, 50)
    np.testing.assert_allclose(m.predict_proba(s)[:, 1], s, atol=1e-12)


def test_unconstrained_fit_is_the_logistic_regression_on_the_beta_features():
    s, y = beta_draw(3000, 2.0, 0.6, -0.3, seed=2)
    m = BetaCalibration().fit(s, y)
    ref = logistic_reference([np.log(s), -np.log1p(-s)], y)
    np.testing.assert_allclose(m.coef_[0], ref, atol=1e-6)
    assert not m.constrained_.any()
    assert m.converged_


def test_negative_a_is_refitted_without_ln_s():
    # Targets from a map with a < 0: the free fit finds a < 0, so ln s is dropped.
    s, y = beta_draw(4000, -1.0, 1.5, 0.2, seed=3)
    free = logistic_reference([np.log(s), -np.log1p(-s)], y)
    assert free[0] < 0  # the constrained path is really exercised
    m = BetaCalibration().fit(s, y)
    np.testing.assert_array_equal(m.constrained_, [[True, False]])
    ref_b, ref_c = logistic_reference([-np.log1p(-s)], y)
    np.testing.assert_allclose(m.coef_[0], [0.0, ref_b, ref_c], atol=1e-6)
    assert m.converged_


def test_negative_b_is_refitted_without_ln_1_minus_s():
    s, y = beta_draw(4000, 1.5, -1.0, 0.0, seed=4)
    free = logistic_reference([np.log(s), -np.log1p(-s)], y)
    assert free[1] < 0 <= free[0]
    m = BetaCalibration().fit(s, y)
    np.testing.assert_array_equal(m.constrained_, [[False, True]])
    ref_a, ref_c = logistic_reference([np.log(s)], y)
    np.testing.assert_allclose(m.coef_[0], [ref_a, 0.0, ref_c], atol=1e-6)
    # The map is monotone (non-decreasing) after the refit.
    assert np.all(np.diff(m.predict_proba(np.linspace(0, 1, 201))[:, 1]) >= 0)


def test_both_negative_leaves_the_base_rate():
    # Positives more likely at both ends' opposite: a decreasing map (a, b < 0).
    s, y = beta_draw(4000, -1.0, -1.0, 0.0, seed=5)
    m = BetaCalibration().fit(s, y)
    np.testing.assert_array_equal(m.constrained_, [[True, True]])
    np.testing.assert_allclose(m.predict_proba(np.array([0.2, 0.8]))[:, 1], y.mean(), atol=1e-6)


def test_am_is_platt_on_the_logit():
    s, y = beta_draw(2000, 1.3, 1.3, 0.4, seed=6)
    m = BetaCalibration(parameters="am").fit(s, y)
    p = PlattScaling().fit(s, y)
    a, b, c = m.coef_[0]
    assert a == b
    np.testing.assert_allclose([a, c], p.coef_[0], atol=1e-9)


def test_ab_fixes_the_midpoint_at_one_half():
    s, y = beta_draw(3000, 1.8, 0.7, (1.8 - 0.7) * np.log(2), seed=7)
    m = BetaCalibration(parameters="ab").fit(s, y)
    a, b, c = m.coef_[0]
    assert c == pytest.approx((a - b) * np.log(2))
    # g(1/2) = sigmoid(-(a - b) ln 2 + c) = 1/2 exactly: m = 1/2.
    assert m.predict_proba(np.array([0.5]))[0, 1] == pytest.approx(0.5, abs=1e-12)
    ref = logistic_reference([np.log(2 * s), -np.log(2 * (1 - s))], y)  # has an intercept
    assert abs(ref[2]) < 0.1  # the data really has its midpoint near 1/2
    np.testing.assert_allclose([a, b], [1.8, 0.7], atol=0.25)


def test_multiclass_rows_and_vectorised_refits():
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 6, 6000)
    probs = softmax(rng.normal(size=(6000, 6)) + 2.0 * np.eye(6)[labels], axis=1)
    m = BetaCalibration().fit(probs, labels)
    assert m.coef_.shape == (6, 3)
    for k in range(6):
        pk = np.clip(probs[:, k], 1e-12, 1 - 1e-12)
        single = BetaCalibration().fit(pk, (labels == k).astype(int))
        np.testing.assert_allclose(m.coef_[k], single.coef_[0], atol=1e-8)
    out = m.predict_proba(probs)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)


def test_separable_warns_and_stays_finite():
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.8])
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.warns(CalibrationFitWarning, match="separate"):
        m = BetaCalibration().fit(s, y)
    out = m.predict_proba(np.linspace(0, 1, 11))
    assert np.isfinite(m.coef_).all() and np.isfinite(out).all()
    assert (out > 0).all() and (out < 1).all()


def test_fewer_rows_than_parameters_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = BetaCalibration().fit(np.array([0.3, 0.6]), np.array([0, 1]))
    messages = [str(w.message) for w in caught if w.category is CalibrationFitWarning]
    assert any("2 rows fit 3 parameters" in msg for msg in messages)
    assert any("separate the classes" in msg for msg in messages)  # two rows always do
    assert np.isfinite(m.predict_proba(np.array([0.0, 1.0]))).all()


def test_bad_parametrisation_raises():
    with pytest.raises(CalibrationInputError, match="parameters"):
        BetaCalibration(parameters="abc").fit(np.array([0.3, 0.6]), np.array([0, 1]))
