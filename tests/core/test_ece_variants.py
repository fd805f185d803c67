"""Adaptive ECE, ACE and the debiased L2 estimator against independent implementations."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from calibration_core import CalibrationInputError, Predictions, classwise_ece, confidence_ece
from calibration_core.measures.ece_variants import (
    adaptive_classwise_ece,
    adaptive_ece,
    debiased_ece,
    plugin_calibration_error,
)


def _data(n, k, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), n)
    y = (rng.random(n)[:, None] >= np.cumsum(p**1.5 / (p**1.5).sum(1, keepdims=True), 1)).sum(1)
    return p, y.clip(max=k - 1)


def _kumar_squared(scores, targets, groups):
    """Kumar et al.'s ``unbiased_square_ce`` written out with plain loops over bins."""
    total = 0.0
    for g in np.unique(groups):
        s, t = scores[groups == g], targets[groups == g]
        if len(s) < 2:
            continue
        ybar = t.mean()
        total += len(s) / len(scores) * ((s.mean() - ybar) ** 2 - ybar * (1 - ybar) / (len(s) - 1))
    return total


def test_hand_worked_debiased_and_plugin():
    s = np.array([0.25, 0.25, 0.25, 0.25, 0.75, 0.75])
    y = np.array([1, 0, 0, 0, 1, 1])
    # bin 0: gap 0, variance .25*.75/3 = .0625; bin 1: gap .25^2 = .0625, variance 0
    plug = plugin_calibration_error(s, y, notion="binary", n_bins=2, scheme="width")
    assert plug == pytest.approx(np.sqrt(2 / 6 * 0.0625))
    # (4 * (0 - .0625) + 2 * (.0625 - 0)) / 6 < 0, clipped to 0
    assert debiased_ece(s, y, notion="binary", n_bins=2, scheme="width") == 0.0
    y2 = np.array([1, 1, 0, 0, 1, 1])  # bin 0: gap .25^2, variance .25/3
    expected = (4 * (0.0625 - 0.25 / 3) + 2 * 0.0625) / 6
    got = debiased_ece(s, y2, notion="binary", n_bins=2, scheme="width")
    assert got == pytest.approx(np.sqrt(expected))


@pytest.mark.parametrize("notion", ["confidence", "binary"])
def test_debiased_matches_independent_implementation(notion):
    k = 2 if notion == "binary" else 4
    p, y = _data(1500, k, seed=7)
    if notion == "binary":
        scores, targets = p[:, 1], (y == 1).astype(float)
    else:
        scores, targets = p.max(1), (p.argmax(1) == y).astype(float)
    groups = pd.qcut(scores, 15, labels=False)  # equal-mass bins, 100 rows each
    expected = np.sqrt(max(_kumar_squared(scores, targets, groups), 0.0))
    assert debiased_ece(p, y, notion=notion) == pytest.approx(expected, rel=1e-10)
    widths = np.minimum((scores * 10).astype(int), 9)
    expected_w = np.sqrt(max(_kumar_squared(scores, targets, widths), 0.0))
    got_w = debiased_ece(p, y, notion=notion, n_bins=10, scheme="width")
    assert got_w == pytest.approx(expected_w, rel=1e-10)


def test_classwise_debiased_is_their_marginal_mode():
    p, y = _data(1200, 3, seed=2)
    squares = []
    for j in range(3):
        groups = pd.qcut(p[:, j], 15, labels=False)
        squares.append(max(_kumar_squared(p[:, j], (y == j).astype(float), groups), 0.0))
    assert debiased_ece(p, y, notion="classwise") == pytest.approx(np.sqrt(np.mean(squares)))


def test_debiased_is_closer_to_the_known_true_error():
    # A binned model: 10 score values at the bin centres, true frequencies q_b.
    values = (np.arange(10) + 0.5) / 10
    offsets = np.array([0.05, -0.04, 0.06, -0.05, 0.04, -0.06, 0.05, -0.04, 0.06, -0.05])
    q = values + offsets
    true_l2 = np.sqrt(np.mean(offsets**2))  # equal bin weights: 0.0506
    rng = np.random.default_rng(0)
    plug, debiased = [], []
    kw = {"notion": "binary", "n_bins": 10, "scheme": "width"}
    for _ in range(300):
        b = rng.integers(0, 10, 1000)
        y = (rng.random(1000) < q[b]).astype(int)
        plug.append(plugin_calibration_error(values[b], y, **kw))
        debiased.append(debiased_ece(values[b], y, **kw))
    plug, debiased = np.array(plug), np.array(debiased)
    plug_bias = np.mean(plug) - true_l2
    assert plug_bias > 0.008  # the plug-in is biased upwards (about +0.013 here)
    assert abs(np.mean(debiased) - true_l2) < 0.3 * plug_bias
    assert np.mean(np.abs(debiased - true_l2)) < np.mean(np.abs(plug - true_l2))
    # On the squared scale, where the estimator is unbiased, the error is much smaller.
    mse_plug = np.mean((plug**2 - true_l2**2) ** 2)
    assert np.mean((debiased**2 - true_l2**2) ** 2) < 0.6 * mse_plug


def test_adaptive_ece_is_the_equal_mass_ece():
    p, y = _data(999, 5, seed=4)
    assert adaptive_ece(p, y) == confidence_ece(p, y, scheme="frequency")
    assert adaptive_ece(p, y, notion="classwise", n_bins=7) == pytest.approx(
        classwise_ece(p, y, n_bins=7, scheme="frequency")
    )
    pred = Predictions.from_probs(p, y)
    assert adaptive_ece(pred) == adaptive_ece(p, y)
    assert plugin_calibration_error(p, y, p=1) == pytest.approx(adaptive_ece(p, y))


def test_ace_matches_independent_implementation():
    p, y = _data(1000, 4, seed=5)
    gaps = []
    for j in range(4):
        order = np.argsort(p[:, j])
        for rows in np.array_split(order, 10):  # equal-mass ranges of 100 rows
            gaps.append(abs(np.mean(y[rows] == j) - np.mean(p[rows, j])))
    assert adaptive_classwise_ece(p, y, n_bins=10) == pytest.approx(np.mean(gaps), rel=1e-12)


def test_bad_input():
    p, y = _data(50, 3, seed=0)
    with pytest.raises(CalibrationInputError, match="p=2"):
        debiased_ece(p, y, p=1)
    with pytest.raises(CalibrationInputError, match="unknown notion"):
        adaptive_ece(p, y, notion="top")
    with pytest.raises(CalibrationInputError, match="p must be"):
        plugin_calibration_error(p, y, p=0)


def _tace_loop(p, y, n_bins, threshold):
    """Nixon et al.'s TACE: per class, equal-mass ranges of the probabilities above the
    threshold, unweighted mean of the gaps of the non-empty ranges. The ranges follow the
    project's documented rule: interior edges at the sorted values of positions
    floor(m n / M), range m is [e_m, e_m+1), so ties are never split."""
    gaps = []
    for k in range(p.shape[1]):
        kept = p[:, k] > threshold
        s, t = p[kept, k], (y[kept] == k).astype(float)
        if not len(s):
            continue
        ordered = np.sort(s)
        edges = [0.0] + [ordered[m * len(s) // n_bins] for m in range(1, n_bins)] + [np.inf]
        for lo, hi in itertools.pairwise(edges):
            inside = (s >= lo) & (s < hi)
            if inside.any():
                gaps.append(abs(t[inside].mean() - s[inside].mean()))
    return float(np.mean(gaps))


def test_tace_equals_the_loop_without_ties():
    from calibration_core.measures.ece_variants import thresholded_adaptive_ece

    p, y = _data(3000, 5, 11)
    for threshold in (0.0, 0.01, 0.2):
        assert thresholded_adaptive_ece(p, y, n_bins=10, threshold=threshold) == pytest.approx(
            _tace_loop(p, y, 10, threshold), abs=1e-12
        )
    # with no probability at or below the threshold, TACE is ACE
    assert thresholded_adaptive_ece(p, y, n_bins=10, threshold=0.0) == pytest.approx(
        adaptive_classwise_ece(p, y, n_bins=10)
    )
    with pytest.raises(CalibrationInputError, match="threshold"):
        thresholded_adaptive_ece(p, y, threshold=1.0)


@pytest.mark.realdata
def test_cifar_tace_equals_the_loop(realdata):
    from calibration_core.measures.ece_variants import thresholded_adaptive_ece

    with np.load(realdata["wideresnet-16-4-cifar-10"]) as d:
        p, g = d["predictions"].astype(np.float64), d["ground_truth"]
    # float32 probabilities have many ties: the loop keeps them together, as the rule says
    got = thresholded_adaptive_ece(p, g, n_bins=15, threshold=0.01)
    assert got == pytest.approx(_tace_loop(p, g, 15, 0.01), abs=1e-9)
