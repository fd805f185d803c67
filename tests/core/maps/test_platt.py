"""Platt scaling: agreement with scikit-learn's sigmoid calibration, transforms, degenerate data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, logit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV, _SigmoidCalibration
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator

from calibration_core import CalibrationInputError, Predictions
from calibration_core.errors import CalibrationFitWarning
from calibration_core.maps import PlattScaling, make_map


class Passthrough(ClassifierMixin, BaseEstimator):
    """A 'classifier' whose predict_proba is its input, to calibrate given probabilities."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.asarray(X, dtype=np.float64)

    def predict(self, X):
        return np.asarray(X).argmax(axis=1)


def binary_data(n, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 3, n)
    y = (rng.random(n) < s**1.7).astype(int)
    return s, y


def test_registry_name():
    assert isinstance(make_map("platt"), PlattScaling)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_sklearn_sigmoid_calibration(seed):
    s, y = binary_data(2000, seed)
    m = PlattScaling(input_transform="raw", platt_targets=True).fit(s, y)
    ref = _SigmoidCalibration().fit(s, y)
    # scikit-learn writes 1 / (1 + exp(A f + B)): A = -w, B = -b.
    np.testing.assert_allclose(m.coef_[0], [-ref.a_, -ref.b_], atol=1e-6)
    test = np.random.default_rng(seed + 10).random(1000)
    np.testing.assert_allclose(m.predict_proba(test)[:, 1], ref.predict(test), atol=1e-6)
    assert m.converged_


@pytest.mark.parametrize("k", [2, 3])
def test_matches_calibrated_classifier_cv_sigmoid(k):
    rng = np.random.default_rng(k)
    labels = rng.integers(0, k, 3000)
    probs = softmax(rng.normal(size=(3000, k)) * 2 + 2.5 * np.eye(k)[labels], axis=1)
    fit, test = slice(0, 2000), slice(2000, None)
    ref = CalibratedClassifierCV(
        FrozenEstimator(Passthrough().fit(probs, labels)), method="sigmoid"
    )
    ref.fit(probs[fit], labels[fit])
    ours = PlattScaling("raw", platt_targets=True).fit(probs[fit], labels[fit])
    np.testing.assert_allclose(
        ours.predict_proba(probs[test]), ref.predict_proba(probs[test]), atol=1e-6
    )


def test_default_fit_is_the_plain_log_loss_minimum_on_the_logit():
    s, y = binary_data(1500, seed=5)
    x = logit(s)

    def loss(v):
        z = v[0] * x + v[1]
        return np.mean(np.logaddexp(0, z) - y * z), np.array(
            [np.mean((expit(z) - y) * x), np.mean(expit(z) - y)]
        )

    ref = minimize(
        loss, [1.0, 0.0], jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 0}
    ).x
    m = PlattScaling().fit(s, y)
    np.testing.assert_allclose(m.coef_[0], ref, atol=1e-6)
    np.testing.assert_allclose(m.predict_proba(s)[:, 1], expit(ref[0] * x + ref[1]), atol=1e-7)


def test_log_transform():
    s, y = binary_data(1500, seed=6)
    m = PlattScaling(input_transform="log").fit(s, y)
    w, b = m.coef_[0]
    np.testing.assert_allclose(m.predict_proba(s)[:, 1], expit(w * np.log(s) + b), atol=1e-12)
    # Its gradient vanishes at the fit.
    p = expit(w * np.log(s) + b)
    assert abs(np.mean((p - y) * np.log(s))) < 1e-8 and abs(np.mean(p - y)) < 1e-8


def test_identity_on_calibrated_data():
    rng = np.random.default_rng(7)
    s = rng.random(200_000)
    y = (rng.random(200_000) < s).astype(int)
    m = PlattScaling().fit(s, y)
    np.testing.assert_allclose(m.coef_[0], [1.0, 0.0], atol=0.03)


def test_separable_scores_warn_and_stay_finite():
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.8])
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.warns(CalibrationFitWarning, match="separate the classes"):
        m = PlattScaling().fit(s, y)
    assert np.isfinite(m.coef_).all() and np.abs(m.coef_).max() < 1e3
    out = m.predict_proba(np.linspace(0, 1, 11))
    assert np.isfinite(out).all() and (out > 0).all() and (out < 1).all()
    # Platt's smoothed targets keep the maximum-likelihood fit finite: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PlattScaling(platt_targets=True).fit(s, y)


def test_convergence_is_reported(monkeypatch):
    import calibration_core.maps.logistic_columns as logistic_columns

    s, y = binary_data(500, seed=8)
    original = logistic_columns.fit_logistic_columns
    monkeypatch.setattr(
        "calibration_core.maps.platt.fit_logistic_columns",
        lambda *a, **kw: original(*a, **{**kw, "max_iter": 1}),
    )
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        m = PlattScaling().fit(s, y)
    assert m.converged_ is False
    assert m.to_dict()["converged"] is False


def test_predictions_input_uses_its_probabilities():
    rng = np.random.default_rng(9)
    z = rng.normal(size=(600, 3)) * 2
    labels = rng.integers(0, 3, 600)
    pred = Predictions.from_logits(z, labels)
    a = PlattScaling().fit(pred, None).predict_proba(pred)
    b = PlattScaling().fit(np.asarray(pred.probs), labels).predict_proba(np.asarray(pred.probs))
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_two_rows_fit_without_nan():
    with pytest.warns(CalibrationFitWarning, match="separate"):
        m = PlattScaling().fit(np.array([0.3, 0.6]), np.array([0, 1]))
    assert np.isfinite(m.predict_proba(np.array([0.0, 0.5, 1.0]))).all()


@pytest.mark.parametrize(
    "params, match",
    [({"input_transform": "probit"}, "input_transform"), ({"platt_targets": "yes"}, "platt")],
)
def test_bad_parameters_raise(params, match):
    s, y = binary_data(100)
    with pytest.raises(CalibrationInputError, match=match):
        PlattScaling(**params).fit(s, y)


def test_logit_input_where_probabilities_belong_is_an_error():
    rng = np.random.default_rng(10)
    z = rng.normal(size=(50, 3))
    with pytest.raises(CalibrationInputError, match="input='logits'"):
        PlattScaling().fit(z, rng.integers(0, 3, 50))


@pytest.mark.realdata
def test_real_data_matches_sklearn_per_class(realdata):
    with np.load(realdata["lenet-5-cifar-10"]) as data:
        probs = data["predictions"].astype(np.float64)
        labels = data["ground_truth"]
    probs /= probs.sum(axis=1, keepdims=True)
    half = probs.shape[0] // 2
    m = PlattScaling("raw", platt_targets=True).fit(probs[:half], labels[:half])
    for k in range(10):
        ref = _SigmoidCalibration().fit(probs[:half, k], (labels[:half] == k).astype(float))
        g = expit(m.coef_[k, 0] * probs[half:, k] + m.coef_[k, 1])
        np.testing.assert_allclose(g, ref.predict(probs[half:, k]), atol=1e-6, err_msg=str(k))
