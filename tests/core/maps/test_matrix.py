"""Matrix scaling: softmax(W z + b), with ODIR regularisation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from calibration_core import log_loss
from calibration_core.maps import (
    DirichletCalibration,
    MatrixScaling,
    TemperatureScaling,
    same_model_as,
)


def sample(n, w, b, seed=0):
    """Logits z and labels drawn from softmax(z @ w.T + b)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=2.0, size=(n, len(b)))
    p = softmax(z @ w.T + b, axis=1)
    return z, (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)


def test_predictions_follow_the_formula_on_raw_logits():
    w = np.array([[1.0, 0.3, 0.0], [0.0, 0.8, 0.0], [0.2, 0.0, 1.2]])
    z, y = sample(20000, w, np.array([0.1, 0.0, -0.1]), seed=1)
    m = MatrixScaling(reg_lambda=0.0, reg_mu=0.0, input="logits").fit(z, y)
    assert m.coef_.shape == (3, 3) and m.intercept_.shape == (3,)
    np.testing.assert_allclose(m.predict_proba(z), softmax(z @ m.coef_.T + m.intercept_, axis=1))
    # the generating map is recovered (W is identified up to W + 1 v^T, b up to b + c)
    np.testing.assert_allclose(m.coef_ - m.coef_.mean(axis=0), w - w.mean(axis=0), atol=0.08)
    truth = softmax(z @ w.T + np.array([0.1, 0.0, -0.1]), axis=1)
    assert np.abs(m.predict_proba(z) - truth).mean() < 0.01


def test_stays_near_identity_on_calibrated_data():
    z, y = sample(20000, np.eye(4), np.zeros(4), seed=2)
    m = MatrixScaling(input="logits").fit(z, y)
    assert np.abs(m.predict_proba(z) - softmax(z, axis=1)).mean() < 0.01
    off = m.coef_[~np.eye(4, dtype=bool)]
    assert np.abs(off).max() < 0.05


def test_odir_shrinks_off_diagonal_weights_and_intercepts():
    w = np.eye(5) + 0.5 * np.roll(np.eye(5), 1, axis=1)
    z, y = sample(2000, w, np.linspace(-0.5, 0.5, 5), seed=3)
    free = MatrixScaling(reg_lambda=0.0, reg_mu=0.0, input="logits").fit(z, y)
    odir = MatrixScaling(reg_lambda=1e3, reg_mu=1e3, input="logits").fit(z, y)

    def off(m):
        return np.linalg.norm(m.coef_[~np.eye(5, dtype=bool)])

    assert off(odir) < 0.2 * off(free)
    assert np.linalg.norm(odir.intercept_) < 0.2 * np.linalg.norm(free.intercept_)
    assert (odir.reg_lambda_, odir.reg_mu_, odir.reg_path_) == (1e3, 1e3, [])


def test_default_chooses_strengths_by_validation():
    z, y = sample(1500, np.eye(3) * 0.5, np.zeros(3), seed=4)
    m = MatrixScaling(input="logits").fit(z, y)
    assert m.reg_path_ and m.reg_lambda_ == m.reg_mu_
    best = min(m.reg_path_, key=lambda r: r["val_loss"])
    assert m.reg_lambda_ == pytest.approx(best["reg_lambda"] * best["n_fit"] / len(y))


def test_uses_raw_logits_unlike_dirichlet():
    w = np.array([[1.0, 0.5], [0.0, 1.0]])
    z, y = sample(2000, w, np.zeros(2), seed=5)
    z = z + np.random.default_rng(6).normal(scale=3, size=(len(z), 1))  # per-row shifts
    mat = MatrixScaling(reg_lambda=0.0, reg_mu=0.0, input="logits").fit(z, y)
    dirichlet = DirichletCalibration(reg_lambda=0.0, reg_mu=0.0, input="logits").fit(z, y)
    assert not np.allclose(mat.predict_proba(z), dirichlet.predict_proba(z), atol=1e-3)


def test_same_model_as_dirichlet_on_probabilities_only():
    z, y = sample(3000, np.eye(4) * 0.7, np.zeros(4), seed=7)
    probs = softmax(z, axis=1)
    mat = MatrixScaling().fit(probs, y)
    dirichlet = DirichletCalibration().fit(probs, y)
    assert np.array_equal(mat.predict_proba(probs), dirichlet.predict_proba(probs))
    assert mat.to_dict()["state"] == dirichlet.to_dict()["state"]
    assert same_model_as("matrix", has_logits=False) == "dirichlet"
    assert same_model_as("dirichlet", has_logits=False) == "matrix"
    for name in ("matrix", "dirichlet", "temperature", "vector"):
        assert same_model_as(name, has_logits=True) is None
    assert same_model_as("temperature", has_logits=False) is None


@pytest.mark.realdata
def test_regularised_matrix_scaling_does_not_overfit_k100(realdata):
    """ODIR-regularised matrix scaling (10,100 parameters) on 5,000 rows of K = 100.

    Measured held-out log-loss (seed 0 halves), temperature vs matrix
    (lambda = mu = 1e4): DenseNet 0.8757 vs 0.8741, WideResNet 0.9509 vs 0.9348,
    LeNet-5 3.7954 vs 3.6990. Unregularised matrix scaling reaches 12.7 on DenseNet.
    Over split seeds 0-4, matrix minus temperature ranged from -0.003 to
    +0.008 nats on DenseNet and from -0.018 to -0.007 on WideResNet: the
    0.02-nat margin is 2.5x the worst measured disadvantage.
    """
    files = ["densenet-bc-100-cifar-100", "wideresnet-16-4-cifar-100", "lenet-5-cifar-100"]
    for name in files:
        data = np.load(realdata[name])
        probs = data["predictions"].astype(np.float64)
        probs /= probs.sum(axis=1, keepdims=True)
        labels = data["ground_truth"]
        rows = np.random.default_rng(0).permutation(len(labels))
        a, b = rows[:5000], rows[5000:]
        temp = log_loss(
            TemperatureScaling().fit(probs[a], labels[a]).predict_proba(probs[b]), labels[b]
        )
        with pytest.warns(UserWarning, match="parameters but only"):
            m = MatrixScaling(reg_lambda=1e4, reg_mu=1e4).fit(probs[a], labels[a])
        q = m.predict_proba(probs[b])
        assert m.converged_
        assert np.isfinite(q).all()
        assert log_loss(q, labels[b]) < temp + 0.02, name
