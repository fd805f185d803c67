"""ECE sensitivity sweep: hand-worked values, agreement with the core metrics, the cache."""

from __future__ import annotations

import numpy as np
import pytest

from calibration_core import (
    CalibrationInputError,
    Predictions,
    binary_ece,
    classwise_ece,
    confidence_ece,
)
from calibration_core.measures.sensitivity import ece_sensitivity


def test_hand_worked_example():
    s = np.array([0.2, 0.4, 0.6, 0.8])
    y = np.array([0, 1, 0, 1])
    result = ece_sensitivity(s, y, notion="binary", bins=[1, 2, 3, 4])
    # 1 bin: |2 - 2.0| / 4. 2 bins: (|1 - .6| + |1 - 1.4|) / 4.
    # 3 width bins {.2}, {.4, .6}, {.8}: (.2 + 0 + .2) / 4.
    # 3 frequency bins (edges .4, .6) {.2}, {.4}, {.6, .8}: (.2 + .6 + .4) / 4.
    # 4 bins, one score each: (.2 + .6 + .6 + .2) / 4.
    np.testing.assert_allclose(result.width, [0.0, 0.2, 0.1, 0.4], atol=1e-12)
    np.testing.assert_allclose(result.frequency, [0.0, 0.2, 0.3, 0.4], atol=1e-12)
    np.testing.assert_array_equal(result.n_bins, [1, 2, 3, 4])
    assert result.spread == pytest.approx(0.4)
    frame = result.to_frame()
    assert list(frame.columns) == ["n_bins", "width", "frequency"]
    np.testing.assert_array_equal(frame["frequency"], result.by_scheme("frequency"))


@pytest.mark.parametrize("scheme", ["width", "frequency"])
def test_matches_core_metrics_for_every_bin_count(scheme):
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(5, 0.5), 700)
    y = rng.integers(0, 5, 700)
    pred = Predictions.from_probs(p, y)
    conf = ece_sensitivity(pred)
    cw = ece_sensitivity(pred, notion="classwise", bins=range(2, 40, 3))
    one = ece_sensitivity(p, y, notion="class", class_index=3, bins=[5, 15])
    for m, value in zip(conf.n_bins, conf.by_scheme(scheme), strict=True):
        assert value == pytest.approx(confidence_ece(p, y, n_bins=int(m), scheme=scheme), abs=1e-12)
    for m, value in zip(cw.n_bins, cw.by_scheme(scheme), strict=True):
        assert value == pytest.approx(classwise_ece(p, y, n_bins=int(m), scheme=scheme), abs=1e-12)
    for m, value in zip(one.n_bins, one.by_scheme(scheme), strict=True):
        expected = binary_ece(p[:, 3], (y == 3).astype(int), n_bins=int(m), scheme=scheme)
        assert value == pytest.approx(expected, abs=1e-12)
    assert one.class_index == 3 and conf.class_index is None


def test_uses_and_fills_the_predictions_cache():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(3), 300)
    y = rng.integers(0, 3, 300)
    pred = Predictions.from_probs(p, y)
    a = ece_sensitivity(pred, notion="classwise", bins=[3, 10])
    assert set(pred._sorted) == {("class", 0), ("class", 1), ("class", 2)}
    b = ece_sensitivity(p, y, notion="classwise", bins=[3, 10])
    np.testing.assert_array_equal(a.width, b.width)
    np.testing.assert_array_equal(a.frequency, b.frequency)


def test_realdata_sweep(realdata):
    data = np.load(realdata["densenet-bc-100-cifar-100"])
    pred = Predictions.from_probs(data["predictions"], data["ground_truth"], renormalize=True)
    result = ece_sensitivity(pred)
    assert result.n_bins.tolist() == list(range(2, 101))
    assert result.width[13] == pytest.approx(confidence_ece(pred.probs, pred.labels), abs=1e-12)
    assert 0.12 < result.width[13] < 0.16  # the README's 14.2 % at 15 bins


def test_bad_input():
    p = np.array([[0.3, 0.7], [0.6, 0.4]])
    with pytest.raises(CalibrationInputError, match="unknown notion"):
        ece_sensitivity(p, [0, 1], notion="top")
    with pytest.raises(CalibrationInputError, match="bins must be"):
        ece_sensitivity(p, [0, 1], bins=[])
    with pytest.raises(CalibrationInputError, match="between 1 and"):
        ece_sensitivity(p, [0, 1], bins=[0, 5])
    with pytest.raises(CalibrationInputError, match="labels are missing"):
        ece_sensitivity(p)
    with pytest.raises(CalibrationInputError, match="class index"):
        ece_sensitivity(p, [0, 1], notion="class")
