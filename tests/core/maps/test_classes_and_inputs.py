"""``classes_`` with arbitrary labels, ``n_features_in_``, and scikit-learn's input messages."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import softmax
from sklearn.exceptions import DataConversionWarning, NotFittedError

from calibration_core import CalibrationInputError
from calibration_core.maps import MAP_NAMES, CalibrationMap, make_map


def data(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = 1.5 * (rng.normal(size=(n, k)) + 1.2 * np.eye(k)[labels])
    return logits, softmax(logits, axis=1), labels


@pytest.mark.parametrize("name", MAP_NAMES)
@pytest.mark.parametrize(
    "names", [np.array(["cat", "dog", "emu"]), np.array([1, 2, 3]), np.array([-5.0, 0.0, 7.0])]
)
def test_other_labels_name_the_columns_in_sorted_order(name, names):
    logits, _probs, labels = data()
    by_index = make_map(name, input="logits").fit(logits, labels)
    by_name = make_map(name, input="logits").fit(logits, names[labels])
    np.testing.assert_array_equal(by_name.classes_, names)
    assert by_name.n_features_in_ == by_index.n_features_in_ == 3
    np.testing.assert_array_equal(by_name.predict_proba(logits), by_index.predict_proba(logits))
    np.testing.assert_array_equal(by_name.predict(logits), names[by_index.predict(logits)])
    assert by_name.score(logits, names[labels]) == by_index.score(logits, labels)
    back = CalibrationMap.from_json(by_name.to_json())
    np.testing.assert_array_equal(back.classes_, names)
    np.testing.assert_array_equal(back.predict(logits), by_name.predict(logits))


def test_column_indices_keep_every_class_even_when_one_is_absent():
    _logits, probs, labels = data(k=4)
    labels = np.where(labels == 3, 0, labels)  # class 3 never occurs
    m = make_map("temperature").fit(probs, labels)
    np.testing.assert_array_equal(m.classes_, [0, 1, 2, 3])
    assert "classes" not in m.to_dict()  # the default needs no list in the export


@pytest.mark.parametrize("name", ["platt", "isotonic", "histogram", "beta", "temperature"])
def test_binary_score_with_minus_one_plus_one_labels(name):
    _logits, probs, labels = data(k=2)
    y = np.where(labels == 1, 1, -1)
    m = make_map(name).fit(probs[:, 1], y)
    ref = make_map(name).fit(probs[:, 1], labels)
    np.testing.assert_array_equal(m.classes_, [-1, 1])
    assert m.n_features_in_ == 2
    np.testing.assert_array_equal(m.predict_proba(probs[:, 1]), ref.predict_proba(probs[:, 1]))
    assert set(np.unique(m.predict(probs[:, 1]))) <= {-1, 1}


@pytest.mark.parametrize(
    "y, match",
    [
        (np.array(["a", "b"] * 150), "2 distinct values \\('a', 'b'\\) for 3 probability/logit"),
        (np.arange(300) % 4 + 1, "4 distinct values"),
        (np.linspace(0, 1, 300), "Unknown label type: .* continuous labels"),
        (np.array([object()] * 300), "Unknown label type"),
        (np.array([1, "a"] * 150, dtype=object), "Unknown label type"),
        (np.r_[np.nan, np.zeros(299)], "NaN or infinite|whole class indices"),
    ],
)
def test_labels_that_do_not_match_the_columns_are_clear_errors(y, match):
    _logits, probs, _labels = data()
    with pytest.raises(CalibrationInputError, match=match):
        make_map("temperature").fit(probs, y)


def test_column_vector_labels_warn_and_fit():
    _logits, probs, labels = data()
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        m = make_map("temperature").fit(probs, labels[:, None])
    ref = make_map("temperature").fit(probs, labels)
    assert m.temperature_ == ref.temperature_


def test_fit_without_labels_and_predict_before_fit():
    _logits, probs, _labels = data()
    with pytest.raises(CalibrationInputError, match="requires y to be passed"):
        make_map("platt").fit(probs, None)
    for method in ("predict", "predict_proba"):
        with pytest.raises(NotFittedError):
            getattr(make_map("platt"), method)(probs)


@pytest.mark.parametrize("inp", ["probs", "logits"])
def test_scikit_learn_messages_for_sparse_complex_empty_and_object_input(inp):
    logits, probs, labels = data()
    X = probs if inp == "probs" else logits
    m = make_map("vector", input=inp)
    with pytest.raises(CalibrationInputError, match=r"sparse .*toarray"):
        m.fit(sp.csr_array(X), labels)
    with pytest.raises(CalibrationInputError, match="Complex data not supported"):
        m.fit(X + 0j, labels)
    with pytest.raises(CalibrationInputError, match="0 sample\\(s\\)"):
        m.fit(X[:0], labels[:0])
    with pytest.raises(CalibrationInputError, match="0 feature\\(s\\)"):
        m.fit(X[:, :0], labels)
    # Object arrays of numbers are numbers; anything else is numpy's TypeError.
    fitted = make_map("vector", input=inp).fit(X.astype(object), labels)
    np.testing.assert_array_equal(fitted.coef_, m.fit(X, labels).coef_)
    bad = X.astype(object)
    bad[0, 0] = {"a": 1}
    with pytest.raises(TypeError, match=r"must be a string or a (real )?number"):
        m.fit(bad, labels)


def test_wrong_column_count_uses_scikit_learn_s_message():
    logits, _probs, labels = data()
    m = make_map("dirichlet", input="logits").fit(logits, labels)
    with pytest.raises(CalibrationInputError, match="X has 1 features, but DirichletCalibration"):
        m.predict_proba(logits[:, :1])
    with pytest.raises(CalibrationInputError, match=r"X has 4 features.*expecting 3"):
        m.predict(np.c_[logits, logits[:, :1]])


def test_export_with_bad_classes_is_refused():
    _logits, probs, labels = data()
    d = make_map("temperature").fit(probs, np.array(["a", "b", "c"])[labels]).to_dict()
    d["classes"] = ["a", "b"]
    with pytest.raises(CalibrationInputError, match="expected 3 labels"):
        CalibrationMap.from_dict(d)


@pytest.mark.parametrize("name", MAP_NAMES)
def test_transform_is_the_calibrated_probabilities_in_a_pipeline(name):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    rng = np.random.default_rng(3)
    logits = rng.normal(size=(300, 4)) * 2
    y = np.array([rng.choice(4, p=p) for p in softmax(logits / 1.5, axis=1)])
    fitted = make_map(name, input="logits").fit(logits, y)
    assert np.array_equal(fitted.transform(logits), fitted.predict_proba(logits))
    # A map stands where scikit-learn expects a transformer (fit_transform included).
    pipe = make_pipeline(FunctionTransformer(), make_map(name, input="logits"))
    out = pipe.fit(logits, y).transform(logits)
    np.testing.assert_allclose(out, fitted.predict_proba(logits), rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        make_map(name, input="logits").fit_transform(logits, y), out, rtol=0, atol=1e-12
    )
