"""Dirichlet calibration softmax(W ln s + b) with ODIR."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax, softmax

from calibration_core import confidence_ece, log_loss
from calibration_core.maps import DirichletCalibration, TemperatureScaling
from calibration_core.maps.linear import SoftmaxLinearObjective


def sample(n, w, b, seed=0, alpha=1.0):
    """Probabilities s ~ Dirichlet(alpha) and labels drawn from softmax(W ln s + b)."""
    rng = np.random.default_rng(seed)
    s = rng.dirichlet(np.full(len(b), alpha), size=n)
    s = np.clip(s, 1e-9, None)
    s /= s.sum(axis=1, keepdims=True)
    p = softmax(np.log(s) @ w.T + b, axis=1)
    return s, (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1), p


def test_predictions_follow_the_formula():
    w = np.array([[1.5, 0.2, 0.0], [0.0, 0.8, 0.3], [0.0, 0.0, 1.1]])
    s, y, truth = sample(20000, w, np.array([0.2, 0.0, -0.2]), seed=1)
    m = DirichletCalibration(reg_lambda=0.0, reg_mu=0.0).fit(s, y)
    np.testing.assert_allclose(
        m.predict_proba(s), softmax(np.log(s) @ m.coef_.T + m.intercept_, axis=1)
    )
    assert np.abs(m.predict_proba(s) - truth).mean() < 0.01


def test_logits_are_turned_into_log_probabilities():
    rng = np.random.default_rng(2)
    z = rng.normal(scale=2, size=(800, 4))
    y = rng.integers(0, 4, 800)
    a = DirichletCalibration(reg_lambda=1.0, reg_mu=1.0, input="logits").fit(z, y)
    b = DirichletCalibration(reg_lambda=1.0, reg_mu=1.0).fit(softmax(z, axis=1), y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    z_shifted = z + rng.normal(size=(800, 1))  # ln s ignores per-row shifts of z
    np.testing.assert_allclose(a.predict_proba(z_shifted), a.predict_proba(z), atol=1e-12)
    np.testing.assert_allclose(
        a.predict_proba(z), softmax(log_softmax(z, axis=1) @ a.coef_.T + a.intercept_, axis=1)
    )


def test_stays_near_identity_on_calibrated_data():
    s, y, _ = sample(20000, np.eye(4), np.zeros(4), seed=3)
    m = DirichletCalibration().fit(s, y)
    assert np.abs(m.predict_proba(s) - s).mean() < 0.01
    assert np.abs(np.diag(m.coef_) - 1).max() < 0.1


def test_odir_penalty_is_scaled_as_in_the_paper():
    s, y, _ = sample(300, np.eye(3), np.zeros(3), seed=4)
    m = DirichletCalibration(reg_lambda=6.0, reg_mu=3.0).fit(s, y)
    obj = SoftmaxLinearObjective(np.log(s), y, "full", reg_lambda=6.0, reg_mu=3.0)
    theta = np.concatenate([m.coef_.ravel(), m.intercept_])
    off = m.coef_[~np.eye(3, dtype=bool)]
    expected = 6.0 / (3 * 2) * np.sum(off**2) + 3.0 / 3 * np.sum(m.intercept_**2)
    assert obj.penalty(theta)[0] == pytest.approx(expected, rel=1e-12)
    assert np.max(np.abs(obj(theta)[1])) < 1e-5  # the fit is a stationary point


def test_strengths_chosen_by_validation_when_unset():
    w = np.eye(4) * 1.5 + 0.3 * np.roll(np.eye(4), 1, axis=1)
    s, y, _ = sample(3000, w, np.zeros(4), seed=5)
    m = DirichletCalibration().fit(s, y)
    losses = [r["val_loss"] for r in m.reg_path_]
    assert len(losses) >= 2
    best = m.reg_path_[int(np.argmin(losses))]
    assert m.reg_lambda_ == pytest.approx(best["reg_lambda"] * best["n_fit"] / len(y))
    again = DirichletCalibration().fit(s, y)
    assert again.reg_path_ == m.reg_path_  # seeded
    fixed = DirichletCalibration(reg_lambda=0.5, reg_mu=0.5).fit(s, y)
    assert fixed.reg_path_ == [] and fixed.reg_lambda_ == 0.5


def test_lower_log_loss_than_temperature_on_a_dirichlet_miscalibration():
    w = np.array([[2.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 0.6]])
    b = np.array([0.0, 0.3, -0.3])
    s, y, _ = sample(5000, w, b, seed=6)
    st, yt, _ = sample(5000, w, b, seed=7)
    dirichlet = log_loss(DirichletCalibration().fit(s, y).predict_proba(st), yt)
    temp = log_loss(TemperatureScaling().fit(s, y).predict_proba(st), yt)
    assert dirichlet < temp - 0.02


@pytest.mark.realdata
def test_dirichlet_odir_does_not_overfit_k100(realdata):
    """Dirichlet with ODIR (strengths chosen by validation) on 5,000 rows of K = 100.

    Measured held-out log-loss (seed 0 halves), temperature vs Dirichlet-ODIR:
    DenseNet 0.8757 vs 0.8734 (lambda chosen 1e4, refitted at 8e3), WideResNet
    0.9509 vs 0.9224 (1e3, refitted at 8e2); LeNet-5 (not run here, 10 s)
    3.7954 vs 3.6703. Over split seeds 0-4, Dirichlet minus temperature
    ranged from -0.002 to +0.008 nats on DenseNet and from -0.031 to -0.017 on
    WideResNet: the 0.02-nat margin is 2.5x the worst measured disadvantage.
    """
    for name in ["densenet-bc-100-cifar-100", "wideresnet-16-4-cifar-100"]:
        data = np.load(realdata[name])
        probs = data["predictions"].astype(np.float64)
        probs /= probs.sum(axis=1, keepdims=True)
        labels = data["ground_truth"]
        rows = np.random.default_rng(0).permutation(len(labels))
        a, b = rows[:5000], rows[5000:]
        temp = TemperatureScaling().fit(probs[a], labels[a]).predict_proba(probs[b])
        with pytest.warns(UserWarning, match="parameters but only"):
            m = DirichletCalibration().fit(probs[a], labels[a])
        q = m.predict_proba(probs[b])
        assert m.converged_ and np.isfinite(q).all()
        assert log_loss(q, labels[b]) < log_loss(temp, labels[b]) + 0.02, name
        assert confidence_ece(q, labels[b]) < confidence_ece(probs[b], labels[b])
