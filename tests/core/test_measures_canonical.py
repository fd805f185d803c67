"""SKCE and the vector-binned ECE against plain loops over their definitions."""

from __future__ import annotations

import numpy as np
import pytest

from calibration_core import CalibrationInputError, binary_ece
from calibration_core.measures import skce, vector_binned_ece
from calibration_core.measures.canonical import pair_terms


def _draw(p, rng):
    """One label per row drawn from its own probability vector (calibrated)."""
    return (rng.random(len(p))[:, None] > np.cumsum(p, axis=1)).sum(1).clip(max=p.shape[1] - 1)


def _h(p, y, q, z, nu):
    """Widmann et al.'s h for one pair, written out with one-hot vectors."""
    k = len(p)
    return np.exp(-np.linalg.norm(p - q) / nu) * np.dot(np.eye(k)[y] - p, np.eye(k)[z] - q)


def test_unbiased_estimator_is_the_u_statistic():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), 50)
    y = rng.integers(0, 3, 50)
    total = sum(_h(p[i], y[i], p[j], y[j], 0.7) for i in range(50) for j in range(i + 1, 50))
    # The rows are permuted before use, which does not change a U-statistic.
    result = skce(p, y, bandwidth=0.7, seed=5)
    assert result.unbiased == pytest.approx(total / (50 * 49 / 2), abs=1e-9)
    assert result.n_quadratic == 50 and result.bandwidth == 0.7


def test_linear_estimator_averages_disjoint_pairs_of_the_permuted_rows():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(4), 41)
    y = rng.integers(0, 4, 41)
    order = np.random.default_rng(9).permutation(41)
    q, z = p[order], y[order]
    terms = [_h(q[i], z[i], q[20 + i], z[20 + i], 0.5) for i in range(20)]
    result = skce(p, y, bandwidth=0.5, seed=9)
    assert result.linear == pytest.approx(np.mean(terms), abs=1e-12)
    zscore = np.mean(terms) / (np.std(terms, ddof=1) / np.sqrt(20))
    assert result.linear_z == pytest.approx(zscore, rel=1e-9)
    np.testing.assert_allclose(
        pair_terms(q[:20], z[:20], q[20:40], z[20:40], 0.5), terms, atol=1e-12
    )


def test_both_tests_hold_their_size_under_calibration():
    linear, resampled = [], []
    for seed in range(300):
        rng = np.random.default_rng(seed)
        p = rng.dirichlet(np.ones(3), 300)
        y = _draw(p, rng)
        linear.append(skce(p, y, seed=seed, max_rows=4, n_resamples=0).linear_p_value <= 0.05)
        if seed < 150:
            r = skce(p[:80], y[:80], seed=seed, n_resamples=39)
            resampled.append(r.p_value <= 0.05)
    assert 0.015 <= np.mean(linear) <= 0.09
    assert 0.01 <= np.mean(resampled) <= 0.1


def test_both_tests_detect_over_confidence():
    rng = np.random.default_rng(1)
    truth = rng.dirichlet(np.ones(3), 20_000)
    sharp = truth**3 / (truth**3).sum(1, keepdims=True)  # over-confident predictions
    result = skce(sharp, _draw(truth, rng), seed=0, max_rows=500, n_resamples=99)
    assert result.p_value == 0.01 and result.unbiased > 0
    assert result.linear_p_value < 1e-3 and result.linear > 0


def test_subsample_is_documented_and_seeded():
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(5), 3000)
    y = _draw(p, rng)
    a, b = skce(p, y, max_rows=500, seed=3), skce(p, y, max_rows=500, seed=3)
    assert a == b and a.n_quadratic == 500 and a.n_samples == 3000
    with pytest.raises(CalibrationInputError, match="at least 4 rows"):
        skce(p[:3], y[:3])
    with pytest.raises(CalibrationInputError, match="bandwidth"):
        skce(p, y, bandwidth=-1)


def _vector_ece_loop(p, y, m):
    cells = {}
    for row, label in zip(p, y, strict=True):
        key = tuple(min(int(v * m), m - 1) for v in row)
        cells.setdefault(key, []).append((row, np.eye(len(row))[label]))
    total = 0.0
    for members in cells.values():
        rows = np.array([r for r, _ in members])
        onehot = np.array([o for _, o in members])
        total += len(members) * 0.5 * np.abs(onehot.mean(0) - rows.mean(0)).sum()
    return total / len(p), len(cells)


def test_vector_binned_ece_equals_the_cell_loop():
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(3) * 0.7, 2000)
    y = _draw(p**1.5 / (p**1.5).sum(1, keepdims=True), rng)
    value, occupied = _vector_ece_loop(p, y, 4)
    result = vector_binned_ece(p, y, n_bins=4)
    assert result.value == pytest.approx(value, abs=1e-12)
    assert result.n_occupied == occupied and result.n_cells == 64
    assert result.rows_per_cell == pytest.approx(2000 / occupied)


def test_vector_binned_ece_of_two_classes_is_the_binary_ece():
    rng = np.random.default_rng(5)
    s = rng.random(4000)
    y = (rng.random(4000) < s**1.4).astype(int)
    result = vector_binned_ece(np.column_stack([1 - s, s]), y, n_bins=10)
    assert result.value == pytest.approx(binary_ece(s, y, n_bins=10), abs=1e-12)


def test_vector_binned_ece_refuses_too_many_cells():
    p = np.full((4, 40), 1 / 40)
    with pytest.raises(CalibrationInputError, match="too many"):
        vector_binned_ece(p, [0, 1, 2, 3], n_bins=5)


@pytest.mark.realdata
def test_cifar_skce_sees_the_over_confident_densenet(realdata):
    with np.load(realdata["densenet-bc-100-cifar-100"]) as d:
        p, g = d["predictions"].astype(np.float64), d["ground_truth"]
    result = skce(p, g, max_rows=1000, n_resamples=49, seed=0)
    assert result.p_value == 0.02 and result.unbiased > 0
    # The quadratic estimate on the subsample against the plain loop on the same rows.
    order = np.random.default_rng(0).permutation(len(p))[:60]
    q, z = p[order], g[order]
    loop = np.mean(
        [_h(q[i], z[i], q[j], z[j], 0.4) for i in range(60) for j in range(60) if i != j]
    )
    assert skce(q, z, bandwidth=0.4, seed=1).unbiased == pytest.approx(loop, abs=1e-9)


@pytest.mark.realdata
def test_cifar10_vector_binned_ece_equals_the_cell_loop(realdata):
    with np.load(realdata["lenet-5-cifar-10"]) as d:
        p, g = d["predictions"].astype(np.float64), d["ground_truth"]
    value, occupied = _vector_ece_loop(p, g, 3)
    result = vector_binned_ece(p, g, n_bins=3)
    assert result.value == pytest.approx(value, abs=1e-12)
    assert result.n_occupied == occupied and result.n_cells == 3**10
