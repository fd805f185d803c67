"""The four binary maps as scikit-learn classifiers: clone, Pipeline, GridSearchCV, JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from calibration_core.maps import (
    BetaCalibration,
    CalibrationMap,
    HistogramBinning,
    IsotonicCalibration,
    PlattScaling,
    get_map_class,
)

# Each map with non-default parameters (to see them survive) and a small grid.
CASES = [
    (HistogramBinning, {"n_bins": 7, "scheme": "frequency", "alpha": 0.5}, {"n_bins": [5, 15]}),
    (IsotonicCalibration, {"eps": 1e-4}, {"eps": [1e-6, 1e-3]}),
    (
        PlattScaling,
        {"input_transform": "log", "platt_targets": True},
        {"input_transform": ["logit", "raw"]},
    ),
    (BetaCalibration, {"parameters": "ab"}, {"parameters": ["abm", "am"]}),
]
IDS = [c[0].__name__ for c in CASES]


def data(n=1500, k=3, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    probs = softmax(1.8 * (rng.normal(size=(n, k)) + 1.5 * np.eye(k)[labels]), axis=1)
    return probs, labels


@pytest.mark.parametrize("klass, params, grid", CASES, ids=IDS)
def test_is_a_classifier_with_params(klass, params, grid):
    m = klass(**params)
    assert is_classifier(m)
    assert m.get_params() == {**klass().get_params(), **params}
    m.set_params(**{k: v[0] for k, v in grid.items()})
    assert all(m.get_params()[k] == v[0] for k, v in grid.items())
    assert get_map_class(klass.name) is klass


@pytest.mark.parametrize("klass, params, grid", CASES, ids=IDS)
def test_clone_is_unfitted_with_the_same_params(klass, params, grid):
    probs, labels = data()
    m = klass(**params).fit(probs, labels)
    c = clone(m)
    assert c.get_params() == m.get_params()
    assert not hasattr(c, "classes_")
    np.testing.assert_array_equal(c.fit(probs, labels).predict_proba(probs), m.predict_proba(probs))


@pytest.mark.parametrize("klass, params, grid", CASES, ids=IDS)
def test_fit_returns_self_and_fitted_attributes_end_in_underscore(klass, params, grid):
    probs, labels = data()
    m = klass(**params)
    assert m.fit(probs, labels) is m
    np.testing.assert_array_equal(m.classes_, [0, 1, 2])
    assert isinstance(m.converged_, bool) and m.fit_seconds_ >= 0
    assert (m.predict(probs) == m.predict_proba(probs).argmax(axis=1)).all()


@pytest.mark.parametrize("klass, params, grid", CASES, ids=IDS)
def test_inside_a_pipeline(klass, params, grid):
    probs, labels = data()
    # A preceding step: the pipeline hands the map the (unchanged) probabilities.
    pipe = Pipeline([("same", FunctionTransformer(lambda x: x)), ("map", klass(**params))])
    pipe.fit(probs, labels)
    direct = klass(**params).fit(probs, labels)
    np.testing.assert_array_equal(pipe.predict_proba(probs), direct.predict_proba(probs))
    assert pipe.score(probs, labels) == pytest.approx(direct.score(probs, labels))


@pytest.mark.parametrize("klass, params, grid", CASES, ids=IDS)
def test_grid_search_on_log_loss(klass, params, grid):
    probs, labels = data(n=1800)
    search = GridSearchCV(klass(**params), grid, scoring="neg_log_loss", cv=3)
    search.fit(probs, labels)
    ((key, values),) = grid.items()
    assert search.best_params_[key] in values
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_score_ < 0
    out = search.predict_proba(probs)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("klass, params, grid", CASES, ids=IDS)
def test_json_round_trip_gives_identical_predictions(klass, params, grid, k):
    probs, labels = data(k=k)
    m = klass(**params).fit(probs[:1000], labels[:1000])
    text = m.to_json()
    assert "pickle" not in text
    json.loads(text)  # plain JSON
    for back in (CalibrationMap.from_json(text), klass.from_json(text)):
        assert type(back) is klass
        assert back.get_params() == m.get_params()
        np.testing.assert_array_equal(
            back.predict_proba(probs[1000:]), m.predict_proba(probs[1000:])
        )
        assert back.converged_ == m.converged_
