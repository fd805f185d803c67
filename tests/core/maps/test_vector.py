"""Vector scaling: softmax(w * z + b)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from calibration_core.maps import TemperatureScaling, VectorScaling


def sample(n, w, b, seed=0):
    """Logits z and labels drawn from softmax(w * z + b)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=2.0, size=(n, len(w)))
    p = softmax(z * w + b, axis=1)
    return z, (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)


def test_predictions_follow_the_formula_on_raw_logits():
    z, y = sample(2000, np.array([0.5, 1.0, 2.0]), np.array([0.3, 0.0, -0.3]), seed=1)
    m = VectorScaling(input="logits").fit(z, y)
    assert m.coef_.shape == (3,) and m.intercept_.shape == (3,)
    np.testing.assert_allclose(m.predict_proba(z), softmax(z * m.coef_ + m.intercept_, axis=1))
    # raw logits, not log-softmax: a per-row shift of z changes the output when w is not uniform
    shifted = z + np.arange(len(z))[:, None] % 7
    assert not np.allclose(m.predict_proba(shifted), m.predict_proba(z), atol=1e-3)


def test_probabilities_use_log_probabilities():
    z, y = sample(1500, np.array([0.7, 1.3, 1.0, 0.8]), np.zeros(4), seed=2)
    p = softmax(z, axis=1)
    m = VectorScaling().fit(p, y)
    np.testing.assert_allclose(
        m.predict_proba(p), softmax(np.log(p) * m.coef_ + m.intercept_, axis=1), rtol=1e-10
    )


def test_recovers_known_weights_and_intercepts():
    w = np.array([0.5, 1.0, 1.5, 2.0])
    b = np.array([0.4, -0.2, 0.0, -0.2])
    z, y = sample(60000, w, b, seed=3)
    m = VectorScaling(reg=0.0, input="logits").fit(z, y)
    # intercepts are identified only up to a common shift
    np.testing.assert_allclose(m.coef_, w, atol=0.05)
    np.testing.assert_allclose(m.intercept_ - m.intercept_.mean(), b - b.mean(), atol=0.05)


def test_stays_near_identity_on_calibrated_data():
    z, y = sample(20000, np.ones(5), np.zeros(5), seed=4)
    m = VectorScaling(input="logits").fit(z, y)
    np.testing.assert_allclose(m.coef_, 1.0, atol=0.05)
    np.testing.assert_allclose(m.intercept_ - m.intercept_.mean(), 0.0, atol=0.05)
    assert np.abs(m.predict_proba(z) - softmax(z, axis=1)).mean() < 0.01


def test_strong_penalty_gives_temperature_scaling():
    z, y = sample(5000, np.array([0.4, 0.5, 0.6]), np.array([0.2, -0.1, 0.0]), seed=5)
    strong = VectorScaling(reg=1e6, input="logits").fit(z, y)
    t = TemperatureScaling(input="logits").fit(z, y).temperature_
    np.testing.assert_allclose(strong.coef_, 1.0 / t, rtol=1e-3)
    np.testing.assert_allclose(strong.intercept_, 0.0, atol=1e-4)
    weak = VectorScaling(reg=0.0, input="logits").fit(z, y)
    assert np.ptp(weak.coef_) > 10 * np.ptp(strong.coef_)


def test_lower_log_loss_than_temperature_when_classes_differ():
    z, y = sample(8000, np.array([0.3, 1.0, 2.0]), np.array([0.5, 0.0, -0.5]), seed=6)
    zt, yt = sample(8000, np.array([0.3, 1.0, 2.0]), np.array([0.5, 0.0, -0.5]), seed=7)

    def nll(q):
        return -np.mean(np.log(q[np.arange(len(yt)), yt]))

    vec = nll(VectorScaling(input="logits").fit(z, y).predict_proba(zt))
    temp = nll(TemperatureScaling(input="logits").fit(z, y).predict_proba(zt))
    assert vec < temp - 0.01


@pytest.mark.parametrize("reg", [0.0, 1e-2])
def test_rare_class_keeps_outputs_finite(reg):
    z, y = sample(400, np.ones(4), np.zeros(4), seed=8)
    y[y == 3] = 0  # class 3 never seen in the fit
    m = VectorScaling(reg=reg, input="logits").fit(z, y)
    q = m.predict_proba(z)
    assert np.isfinite(q).all() and q[:, 3].mean() < 0.02
