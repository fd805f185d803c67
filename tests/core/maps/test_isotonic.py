"""Isotonic calibration: agreement with scikit-learn, interpolation, clipping."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression

from calibration_core import CalibrationInputError
from calibration_core.maps import IsotonicCalibration, make_map


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
    assert isinstance(make_map("isotonic"), IsotonicCalibration)


def test_hand_worked_interpolation():
    # PAVA on targets 0, 1, 0, 1 pools the middle two: fitted 0, 1/2, 1/2, 1.
    s = np.array([0.1, 0.2, 0.3, 0.4])
    y = np.array([0, 1, 0, 1])
    m = IsotonicCalibration(eps=0.0).fit(s, y)
    np.testing.assert_allclose(m.x_thresholds_, s)
    np.testing.assert_allclose(m.y_thresholds_, [0, 0.5, 0.5, 1])
    query = np.array([0.0, 0.1, 0.15, 0.25, 0.35, 0.4, 1.0])
    # Linear between steps, constant beyond the fit range (clip).
    np.testing.assert_allclose(m.predict_proba(query)[:, 1], [0, 0, 0.25, 0.5, 0.75, 1, 1])


def test_matches_sklearn_isotonic_regression():
    s, y = binary_data(3000)
    test = np.concatenate([np.random.default_rng(1).random(2000), [0.0, 1.0]])
    ours = IsotonicCalibration().fit(s, y).predict_proba(test)[:, 1]
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(s, y).predict(test)
    # eps = 1e-7 clips the ends; elsewhere the two agree to rounding.
    np.testing.assert_allclose(ours, np.clip(ref, 1e-7, 1 - 1e-7), atol=1e-12)
    np.testing.assert_allclose(ours, ref, atol=1e-6)


def test_matches_sklearn_with_ties_and_rounded_scores():
    s, y = binary_data(2000, seed=3)
    s = np.round(s, 2)
    m = IsotonicCalibration(eps=0.0).fit(s, y)
    ref = IsotonicRegression(out_of_bounds="clip").fit(s, y)
    np.testing.assert_allclose(m.y_thresholds_, ref.y_thresholds_, atol=1e-12)
    grid = np.linspace(0, 1, 1001)
    np.testing.assert_allclose(m.predict_proba(grid)[:, 1], ref.predict(grid), atol=1e-12)


@pytest.mark.parametrize("k", [2, 4])
def test_matches_calibrated_classifier_cv(k):
    rng = np.random.default_rng(k)
    labels = rng.integers(0, k, 3000)
    probs = softmax(rng.normal(size=(3000, k)) * 2 + 2.5 * np.eye(k)[labels], axis=1)
    fit, test = slice(0, 2000), slice(2000, None)
    ref = CalibratedClassifierCV(
        FrozenEstimator(Passthrough().fit(probs, labels)), method="isotonic"
    )
    ref.fit(probs[fit], labels[fit])
    ours = IsotonicCalibration(eps=1e-9).fit(probs[fit], labels[fit])
    np.testing.assert_allclose(
        ours.predict_proba(probs[test]), ref.predict_proba(probs[test]), atol=1e-6
    )


def test_monotone_and_clipped():
    s, y = binary_data(5000, seed=4)
    m = IsotonicCalibration(eps=1e-3).fit(s, y)
    grid = np.linspace(0, 1, 5001)
    g = m.predict_proba(grid)[:, 1]
    assert np.all(np.diff(g) >= 0)
    assert g.min() == pytest.approx(1e-3) and g.max() <= 1 - 1e-3
    assert np.all(np.diff(m.x_thresholds_) >= 0)


def test_thresholds_are_trimmed_like_sklearn():
    s, y = binary_data(4000, seed=5)
    m = IsotonicCalibration().fit(s, y)
    ref = IsotonicRegression(out_of_bounds="clip").fit(s, y)
    assert m.x_thresholds_.size == ref.X_thresholds_.size < 200
    np.testing.assert_array_equal(m.offsets_, [0, m.x_thresholds_.size])


@pytest.mark.realdata
def test_real_data_matches_sklearn_column_by_column(realdata):
    with np.load(realdata["wideresnet-16-4-cifar-10"]) as data:
        probs = data["predictions"].astype(np.float64)
        labels = data["ground_truth"]
    probs /= probs.sum(axis=1, keepdims=True)
    fit, test = slice(0, 5000), slice(5000, None)
    m = IsotonicCalibration(eps=0.0).fit(probs[fit], labels[fit])
    g = m._predict_columns(np.ascontiguousarray(probs[test].T))
    for k in range(10):
        ref = IsotonicRegression(out_of_bounds="clip").fit(probs[fit, k], labels[fit] == k)
        np.testing.assert_allclose(g[k], ref.predict(probs[test, k]), atol=1e-6, err_msg=str(k))


@pytest.mark.parametrize("eps", [-0.1, 0.5, "small"])
def test_bad_eps_raises(eps):
    s, y = binary_data(100)
    with pytest.raises(CalibrationInputError, match="eps"):
        IsotonicCalibration(eps=eps).fit(s, y)
