"""Smooth ECE and the smoothed reliability curve against relplot (Błasiok & Nakkiran's code)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration_core import CalibrationInputError, Predictions
from calibration_core.measures import smooth_ece, smooth_reliability_curve
from calibration_core.measures.smooth import reflected_smooth

try:
    import relplot
except ImportError:  # the requires_tool("relplot") probe skips the tests (fails them under CI)
    relplot = None

#: The reference implementation, probed once per session (tests/external_tools.py).
needs_relplot = pytest.mark.requires_tool("relplot")


def _binary(n, seed, power=1.0):
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 1, n)
    return s, (rng.random(n) < s**power).astype(int)


@needs_relplot
@pytest.mark.parametrize("n", [30, 1000, 20_000])
@pytest.mark.parametrize("sigma", [0.002, 0.01, 0.05, 0.3])
def test_fixed_bandwidth_equals_relplot(n, sigma):
    s, y = _binary(n, n, power=1.4)
    ours = smooth_ece(Predictions.from_scores(s, y), notion="binary", bandwidth=sigma)
    assert ours.value == pytest.approx(relplot.smECE_sigma(s, y.astype(float), sigma), abs=1e-6)
    assert ours.bandwidth == sigma and not ours.automatic


@needs_relplot
@pytest.mark.parametrize("seed", range(4))
def test_automatic_bandwidth_equals_relplot(seed):
    s, y = _binary(3000, seed, power=1.0 + seed / 2)
    value, width = relplot.smECE(s, y.astype(float), return_width=True)
    ours = smooth_ece(Predictions.from_scores(s, y), notion="binary")
    assert ours.value == pytest.approx(value, abs=1e-3)
    assert abs(ours.bandwidth - width) <= 1 / 1024
    assert ours.automatic


def test_reflection_keeps_the_mass_and_a_constant_stays_constant():
    values = np.zeros(101)
    values[0] = 1.0  # all mass at the boundary
    smoothed = reflected_smooth(values, 0.1)
    flat = reflected_smooth(np.ones(101), 0.1)
    assert np.ptp(flat[1:-1]) / flat.mean() < 1e-3  # no boundary dip for a uniform density
    assert smoothed[0] > smoothed[10] > smoothed[50]


@needs_relplot
def test_reliability_curve_follows_the_truth_with_a_seeded_band():
    s, y = _binary(20_000, 7, power=2.0)
    pred = Predictions.from_scores(s, y)
    narrow = smooth_reliability_curve(pred, notion="binary", bandwidth=0.02, n_resamples=0)
    inside = (narrow.mesh > 0.3) & (narrow.mesh < 0.9)
    assert np.abs(narrow.observed[inside] - narrow.mesh[inside] ** 2).max() < 0.05
    assert np.isnan(narrow.lower).all()
    curve = smooth_reliability_curve(pred, notion="binary", n_resamples=40, seed=3)
    assert np.all(curve.lower[inside] <= curve.observed[inside] + 1e-12)
    assert np.all(curve.observed[inside] <= curve.upper[inside] + 1e-12)
    again = smooth_reliability_curve(pred, notion="binary", n_resamples=40, seed=3)
    np.testing.assert_array_equal(curve.upper, again.upper)
    assert curve.density.mean() == pytest.approx(1.0)
    # relplot's kernel smoother (its main line before bagging) at the same bandwidth
    kernel = relplot.kernels.ReflectedGaussianKernel(curve.smooth_ece.bandwidth)
    theirs, _ = kernel.smooth(s, y.astype(float), curve.mesh)
    np.testing.assert_allclose(curve.observed, theirs, atol=1e-6)


def test_bad_bandwidth_and_notion_are_refused():
    s, y = _binary(100, 0)
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        smooth_ece(Predictions.from_scores(s, y), notion="binary", bandwidth=0)
    with pytest.raises(CalibrationInputError, match="one score column"):
        smooth_reliability_curve(np.column_stack([1 - s, s]), y, notion="classwise")


@needs_relplot
@pytest.mark.realdata
def test_cifar_smooth_ece_equals_relplot(realdata):
    for name in ("densenet-bc-100-cifar-100", "lenet-5-cifar-10"):
        with np.load(realdata[name]) as d:
            p, g = d["predictions"], d["ground_truth"]
        conf, correct = relplot.multiclass_logits_to_confidences(p, g, probs=True)
        value, width = relplot.smECE(conf, correct, return_width=True)
        ours = smooth_ece(p.astype(np.float64), g)
        assert ours.value == pytest.approx(value, abs=1e-6)  # same bandwidth found here
        assert ours.bandwidth == width
        fixed = smooth_ece(p.astype(np.float64), g, bandwidth=0.05).value
        assert fixed == pytest.approx(relplot.smECE_sigma(conf, correct, 0.05), abs=1e-6)
