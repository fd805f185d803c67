"""The built-in demo: real models' held-out predictions on scikit-learn's bundled data."""

from __future__ import annotations

import numpy as np
import pytest

from calibration_core import Predictions, accuracy, confidence_ece
from calibration_core.demo import demo_predictions

NAMES = [
    f"{data} · {model}"
    for data in ("breast cancer", "digits")
    for model in ("naive Bayes", "random forest", "logistic regression", "MLP")
]


@pytest.fixture(scope="module")
def demo() -> dict[str, Predictions]:
    return {p.name: p for p in demo_predictions()}


def test_eight_models_with_the_bundled_data_sets(demo):
    assert list(demo) == NAMES
    for name, pred in demo.items():
        expected = (569, 2) if name.startswith("breast cancer") else (1797, 10)
        assert pred.probs.shape == expected
        np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-9)
    assert demo["breast cancer · MLP"].class_names == ("malignant", "benign")
    assert demo["digits · MLP"].class_names == tuple(str(d) for d in range(10))


def test_labels_are_the_data_sets_targets(demo):
    from sklearn.datasets import load_breast_cancer, load_digits

    np.testing.assert_array_equal(demo["digits · naive Bayes"].labels, load_digits().target)
    np.testing.assert_array_equal(
        demo["breast cancer · random forest"].labels, load_breast_cancer().target
    )


def test_logits_kept_for_logistic_regression_and_mlp_only(demo):
    for name, pred in demo.items():
        has_logits = name.endswith(("logistic regression", "MLP"))
        assert (pred.logits is not None) == has_logits, name
        if has_logits:
            z = pred.logits - pred.logits.max(axis=1, keepdims=True)
            np.testing.assert_allclose(
                pred.probs, np.exp(z) / np.exp(z).sum(axis=1, keepdims=True), atol=1e-12
            )


def test_predictions_are_held_out_not_training_fits(demo):
    # In-sample, a random forest would be (nearly) perfect on digits; held out it is not.
    assert (
        accuracy(demo["digits · random forest"].probs, demo["digits · random forest"].labels) < 0.99
    )
    for pred in demo.values():
        assert 0.8 < accuracy(pred.probs, pred.labels) < 1.0


def test_over_under_and_well_calibrated_cases(demo):
    nb, rf, lr = (
        demo[f"digits · {m}"] for m in ("naive Bayes", "random forest", "logistic regression")
    )

    def gap(p):  # mean confidence minus accuracy: > 0 over-confident, < 0 under-confident
        return float(p.confidence.mean() - accuracy(p.probs, p.labels))

    assert gap(nb) > 0.05
    assert gap(rf) < -0.1
    assert abs(gap(lr)) < 0.03
    ece = {p.name: confidence_ece(p.probs, p.labels) for p in (nb, rf, lr)}
    assert ece[lr.name] < ece[nb.name] and ece[lr.name] < ece[rf.name]


def test_computed_once_per_process_and_seeded():
    first, again = demo_predictions(), demo_predictions()
    assert all(a is b for a, b in zip(first, again, strict=True))
    other = demo_predictions(seed=1)
    assert other[1] is not first[1]
    # Another seed changes the folds and the forest, hence the predictions.
    assert not np.array_equal(other[1].probs, first[1].probs)


def test_shipped_outputs_are_what_training_gives():
    """The package's demo-seed0.npz must equal a fresh training (rewrite it with
    ``python -m calibration_core.demo`` after changing the models or scikit-learn)."""
    from calibration_core.demo import (
        SHIPPED_OUTPUTS,
        load_demo_outputs,
        train_demo_outputs,
    )

    assert SHIPPED_OUTPUTS.is_file()
    shipped, trained = load_demo_outputs(SHIPPED_OUTPUTS), train_demo_outputs(0)
    assert len(shipped) == len(trained) == 8
    for got, want in zip(shipped, trained, strict=True):
        assert got[0] == want[0] and got[1] == want[1] and got[3:5] == want[3:5]
        np.testing.assert_array_equal(got[2], want[2])
        # Exact on the machine that wrote it; other BLAS builds may differ in the last bits.
        np.testing.assert_allclose(got[5], want[5], rtol=1e-7, atol=1e-10)


def test_demo_reads_the_shipped_outputs_and_trains_without_them(tmp_path, monkeypatch):
    from calibration_core import demo as demo_module

    shipped = demo_module.demo_predictions()  # seed 0: read from the package
    monkeypatch.setattr(demo_module, "SHIPPED_OUTPUTS", tmp_path / "damaged.npz")
    (tmp_path / "damaged.npz").write_bytes(b"not an npz")
    demo_module._demo.cache_clear()
    try:
        trained = demo_module.demo_predictions()  # a damaged file: trained instead
        assert [p.name for p in trained] == [p.name for p in shipped]
        for a, b in zip(trained, shipped, strict=True):
            np.testing.assert_allclose(a.probs, b.probs, rtol=1e-7, atol=1e-10)
    finally:
        demo_module._demo.cache_clear()
