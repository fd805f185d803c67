"""EntCE, RankCS and DistCE: hand-worked values, scipy entropy, a per-row loop oracle, ties."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import entropy

from calibration_core import CalibrationInputError, Predictions
from calibration_core.measures.human_uncertainty import (
    distribution_calibration_error,
    entropy_calibration_error,
    human_uncertainty_calibration,
    rank_calibration_score,
)


def _h(q):
    return -sum(v * math.log(v) for v in q if v > 0)


def test_hand_worked_example():
    p = np.array([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1]])
    votes = np.array([[1, 2, 7], [2, 2, 6]])  # ten annotators per instance
    result = human_uncertainty_calibration(p, votes)
    e0 = _h([0.1, 0.2, 0.7]) - _h([0.1, 0.2, 0.7])  # identical: 0
    e1 = _h([0.6, 0.3, 0.1]) - _h([0.2, 0.2, 0.6])
    assert result.entce == pytest.approx((abs(e0) + abs(e1)) / 2)
    assert result.entce_signed == pytest.approx((e0 + e1) / 2)
    # TVD: 0, and (|.6-.2| + |.3-.2| + |.1-.6|) / 2 = 0.5
    np.testing.assert_allclose(result.tvd, [0.0, 0.5], atol=1e-15)
    assert result.distce == pytest.approx(0.25)
    # Instance 0 ranks identically; instance 1: model 0 > 1 > 2, humans 2 > {0 = 1}.
    np.testing.assert_array_equal(result.rank_match, [True, False])
    assert result.rankcs == 0.5


def test_same_entropy_different_distribution():
    # Pavlovic's fig. 17: a permutation keeps the entropy, so EntCE cannot see it.
    p = np.array([[0.7, 0.2, 0.1]])
    h = np.array([[0.1, 0.2, 0.7]])
    assert entropy_calibration_error(p, h) == pytest.approx(0.0, abs=1e-15)
    assert distribution_calibration_error(p, h) == pytest.approx(0.6)
    assert rank_calibration_score(p, h) == 0.0


def _loop_rank(p_row, h_row):
    """Rankings with ties broken by class index, written with sorted()."""
    k = len(p_row)
    return sorted(range(k), key=lambda j: (p_row[j], j)) == sorted(
        range(k), key=lambda j: (h_row[j], j)
    )


def _loop_weak(p_row, h_row):
    pairs = itertools.permutations(range(len(p_row)), 2)
    return all(p_row[a] > p_row[b] for a, b in pairs if h_row[a] > h_row[b])


def test_against_scipy_and_loop_oracles():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), 300)
    votes = rng.multinomial(5, [0.4, 0.3, 0.2, 0.1], size=300)  # ties are common
    h = votes / 5
    result = human_uncertainty_calibration(Predictions.from_probs(p, votes.argmax(1)), votes)
    diff = entropy(p, axis=1) - entropy(h, axis=1)
    assert result.entce == pytest.approx(np.mean(np.abs(diff)), rel=1e-12)
    assert result.entce_signed == pytest.approx(np.mean(diff), rel=1e-12)
    assert result.distce == pytest.approx(np.mean(np.abs(p - h).sum(1) / 2), rel=1e-12)
    expected = [_loop_rank(a, b) for a, b in zip(p, h, strict=True)]
    np.testing.assert_array_equal(result.rank_match, expected)
    weak = human_uncertainty_calibration(p, votes, ties="weak")
    np.testing.assert_array_equal(
        weak.rank_match, [_loop_weak(a, b) for a, b in zip(p, h, strict=True)]
    )
    assert weak.rankcs >= result.rankcs  # ties only relax the weak rule
    assert entropy_calibration_error(p, votes, absolute=False) == pytest.approx(np.mean(diff))


def test_tie_rules():
    h = np.array([[0.5, 0.5, 0.0]])
    assert rank_calibration_score([[0.4, 0.6, 0.0]], h) == 1.0  # same index order of ties
    assert rank_calibration_score([[0.6, 0.4, 0.0]], h) == 0.0
    assert rank_calibration_score([[0.6, 0.4, 0.0]], h, ties="weak") == 1.0
    assert rank_calibration_score([[0.3, 0.3, 0.4]], h, ties="weak") == 0.0


def test_bad_input():
    p = np.array([[0.5, 0.5], [0.2, 0.8]])
    with pytest.raises(CalibrationInputError, match="shape"):
        human_uncertainty_calibration(p, [[1, 0, 0], [0, 1, 0]])
    with pytest.raises(CalibrationInputError, match=">= 0"):
        human_uncertainty_calibration(p, [[1, -1], [0, 1]])
    with pytest.raises(CalibrationInputError, match="all zero"):
        human_uncertainty_calibration(p, [[0, 0], [0, 1]])
    with pytest.raises(CalibrationInputError, match="ties"):
        rank_calibration_score(p, [[1, 0], [0, 1]], ties="random")
