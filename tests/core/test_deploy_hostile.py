"""Hostile map documents: load_map refuses them with CalibrationInputError, fast and bounded.

Each case is one of issue 31's (items 4 and 7): deep nesting, bad or huge
``n_classes``, arrays longer than the map's shape, and a document too large to parse.
"""

from __future__ import annotations

import copy
import json
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibration_core import CalibrationInputError, Predictions, stable_softmax
from calibration_core.deploy import deployable_map, load_map, map_byte_limit
from calibration_core.maps import available_maps


def three_class_predictions() -> Predictions:
    rng = np.random.default_rng(1)
    z = 2.0 * rng.normal(size=(300, 3))
    y = (stable_softmax(z / 2.0).cumsum(axis=1) > rng.random(300)[:, None]).argmax(axis=1)
    return Predictions.from_logits(z, y, class_names=("a", "b", "c"), name="net")


@pytest.fixture(scope="module")
def documents() -> dict[str, dict]:
    """One valid deployable document per map kind."""
    preds = three_class_predictions()
    return {name: deployable_map(preds, name, folds=2).to_dict() for name in available_maps()}


def write(tmp_path, text: str):
    path = tmp_path / "map.json"
    path.write_text(text, encoding="utf-8")
    return path


def refusal(source, **kwargs) -> str:
    """load_map's CalibrationInputError message (and no other exception)."""
    with pytest.raises(CalibrationInputError) as info:
        load_map(source, **kwargs)
    return str(info.value)


# ---------------------------------------------------------------- item 4
def test_deep_nesting_is_refused_without_recursion_error(tmp_path):
    message = refusal(write(tmp_path, "[" * 100_000))
    assert "nest" in message and "export the map again" in message


def test_deep_nesting_inside_a_valid_document_is_refused(tmp_path, documents):
    text = json.dumps(documents["temperature"])
    deep = text[:-1] + ', "extra": ' + "[" * 5_000 + "]" * 5_000 + "}"
    assert "nest" in refusal(write(tmp_path, deep))


def test_brackets_inside_strings_are_not_nesting(tmp_path, documents):
    doc = copy.deepcopy(documents["temperature"])
    doc["model"] = "[" * 10_000
    assert load_map(write(tmp_path, json.dumps(doc))).n_classes_ == 3


@pytest.mark.parametrize(
    "value",
    [-5, 0, 1, 1e9, 1e12, 1_000_000_000, 10**12, True, 3.0, "3", None, [3]],
    ids=repr,
)
@pytest.mark.parametrize("where", ["document", "entry"])
def test_bad_n_classes_is_refused_before_any_allocation(tmp_path, documents, value, where):
    doc = copy.deepcopy(documents["temperature"])
    (doc if where == "document" else doc["map"])["n_classes"] = value
    message = refusal(write(tmp_path, json.dumps(doc)))
    assert "n_classes" in message
    assert "export the map again" in message or "larger max_classes" in message


def test_a_5001_digit_n_classes_is_refused(tmp_path, documents):
    text = json.dumps(documents["temperature"]).replace(
        '"n_classes": 3', '"n_classes": ' + "9" * 5001
    )
    message = refusal(write(tmp_path, text))
    assert len(message) < 600 and "9" * 100 not in message


def test_n_classes_above_max_classes_names_the_limit(documents):
    message = refusal(documents["temperature"], max_classes=2)
    assert "max_classes" in message and "3" in message


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("vector", "coef"),
        ("matrix", "coef"),
        ("dirichlet", "intercept"),
        ("platt", "coef"),
        ("beta", "coef"),
        ("isotonic", "offsets"),
        ("histogram", "values"),
    ],
)
def test_an_array_longer_than_the_shape_is_refused(documents, name, key):
    doc = copy.deepcopy(documents[name])
    doc["map"]["state"][key] = [0.5] * 100_000
    message = refusal(doc)
    assert key in message and len(message) < 600


def test_labels_list_longer_than_n_classes_is_refused(documents):
    doc = copy.deepcopy(documents["temperature"])
    doc["map"]["classes"] = list(range(10_000_000))
    start = time.perf_counter()
    message = refusal(doc)
    assert time.perf_counter() - start < 1.0
    assert "classes" in message and len(message) < 600


def test_nan_and_infinity_literals_are_refused(tmp_path, documents):
    text = json.dumps(documents["vector"]).replace('"reg_lambda": ', '"reg_lambda": NaN, "x": ')
    assert "NaN" in refusal(write(tmp_path, text))


# ---------------------------------------------------------------- item 7
def huge_array_document(documents) -> str:
    """A document whose temperature entry carries a 1e8-element array (200 MB of text)."""
    text = json.dumps(documents["temperature"])
    return text[:-1] + ', "extra": [' + "0," * (10**8 - 1) + "0]}"


@pytest.mark.slow
def test_a_1e8_element_document_is_refused_by_size_before_parsing(tmp_path, documents):
    path = write(tmp_path, huge_array_document(documents))
    start = time.perf_counter()
    message = refusal(path)
    assert time.perf_counter() - start < 2.0
    assert "bytes" in message and "max_bytes" in message and len(message) < 600


def test_the_size_limit_follows_max_classes(tmp_path, documents):
    text = json.dumps(documents["temperature"])
    padded = text[:-1] + ', "extra": [' + "0," * 20_000 + "0]}"
    path = write(tmp_path, padded)
    assert load_map(path, max_bytes=len(padded) + 1).n_classes_ == 3
    assert "max_bytes" in refusal(path, max_bytes=len(padded) - 1)
    assert map_byte_limit(3000) > map_byte_limit(10) > 0
    assert map_byte_limit(3000) > 3000 * 3001 * 20  # room for the K (K + 1) numbers


def test_messages_quote_only_an_excerpt(documents):
    doc = copy.deepcopy(documents["temperature"])
    doc["map"]["params"] = ["x" * 1000] * 1000
    message = refusal(doc)
    assert len(message) < 600


def test_a_file_that_is_not_a_regular_file_is_refused(tmp_path):
    assert "folder" in refusal(tmp_path)


# ------------------------------------------------------- property: any mutation
def nested(depth: int) -> list:
    """``[[[...]]]``, ``depth`` lists deep."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


HOSTILE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([10**9, 10**12, -5, 0, 1, 2, 10_001]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=50),
    st.lists(st.lists(st.integers(-3, 3), max_size=5), max_size=5),
    st.integers(0, 2_000).map(lambda n: [0.5] * n),
    st.integers(1, 200).map(lambda d: nested(d)),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def locations(node, path=()):
    """Every (path, key) of a document's objects and arrays, the document itself included."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        yield path, key
        if isinstance(value, (dict, list)) and len(value) < 50:
            yield from locations(value, (*path, key))


def mutated(doc: dict, data) -> dict:
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        path, key = data.draw(st.sampled_from(list(locations(doc))))
        parent = doc
        for step in path:
            parent = parent[step]
        if isinstance(parent, dict) and data.draw(st.booleans()):
            del parent[key]
        else:
            parent[key] = data.draw(HOSTILE_VALUES)
        if not doc:
            break
    return doc


@settings(max_examples=150, deadline=2_000, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(available_maps())), data=st.data())
def test_a_mutated_document_loads_or_is_refused_as_bad_input(documents, name, data):
    doc = mutated(documents[name], data)
    try:
        fitted = load_map(doc)
    except CalibrationInputError as exc:
        assert len(str(exc)) < 1_000
        return
    k = fitted.n_classes_
    rows = np.tile(np.linspace(-1.0, 1.0, k), (2, 1)) if fitted.input == "logits" else None
    out = fitted.predict_proba(np.full((2, k), 1 / k) if rows is None else rows)
    assert out.shape == (2, k) and np.isfinite(out).all()


@settings(max_examples=60, deadline=2_000, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(available_maps())), data=st.data())
def test_a_mutated_file_loads_or_is_refused_as_bad_input(tmp_path_factory, documents, name, data):
    text = json.dumps(mutated(documents[name], data))
    cut = data.draw(st.integers(0, len(text)))
    text = data.draw(st.sampled_from([text, text[:cut], text[:cut] + "[" * 2_000 + text[cut:]]))
    path = tmp_path_factory.mktemp("hostile") / "map.json"
    path.write_text(text, encoding="utf-8")
    try:
        load_map(path)
    except CalibrationInputError as exc:
        assert len(str(exc)) < 1_000
