"""Property tests (hypothesis) of the binning engine and the calibration errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from calibration_core import (
    Binning,
    SortedScores,
    binary_ece,
    binary_mce,
    classwise_ece,
    classwise_mce,
    confidence_ece,
    confidence_mce,
)

SETTINGS = settings(max_examples=40, deadline=None)

schemes = st.sampled_from(["width", "frequency"])
bin_counts = st.integers(min_value=1, max_value=40)
# Scores drawn from a mix of arbitrary floats and "round" values that hit bin edges.
unit_floats = st.one_of(
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    st.integers(0, 20).map(lambda i: i / 20),
    st.integers(0, 12).map(lambda i: i / 12),
)


@st.composite
def binary_data(draw, min_size=1, max_size=80):
    n = draw(st.integers(min_size, max_size))
    s = draw(arrays(np.float64, n, elements=unit_floats))
    y = draw(arrays(np.int64, n, elements=st.integers(0, 1)))
    return s, y


@st.composite
def multiclass_data(draw, max_size=50):
    k = draw(st.integers(2, 6))
    n = draw(st.integers(1, max_size))
    raw = draw(arrays(np.float64, (n, k), elements=st.floats(0.0, 1.0, allow_nan=False)))
    raw[raw.sum(axis=1) == 0, 0] = 1.0
    p = raw / raw.sum(axis=1, keepdims=True)
    y = draw(arrays(np.int64, n, elements=st.integers(0, k - 1)))
    return p, y


# ---------------------------------------------------------- row order
@SETTINGS
@given(binary_data(), bin_counts, schemes, st.randoms(use_true_random=False))
def test_statistics_do_not_depend_on_row_order(data, n_bins, scheme, rnd):
    s, y = data
    order = np.array(rnd.sample(range(s.shape[0]), s.shape[0]))
    b = Binning(scheme, n_bins)
    a, c = b.statistics(s, y), b.statistics(s[order], y[order])
    np.testing.assert_array_equal(a.count, c.count)
    np.testing.assert_array_equal(a.edges, c.edges)
    np.testing.assert_array_equal(a.sum_target, c.sum_target)
    np.testing.assert_allclose(a.sum_score, c.sum_score, rtol=1e-12, atol=1e-12)
    assert binary_ece(s, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
        binary_ece(s[order], y[order], n_bins=n_bins, scheme=scheme), abs=1e-12
    )
    assert binary_mce(s, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
        binary_mce(s[order], y[order], n_bins=n_bins, scheme=scheme), abs=1e-12
    )


@SETTINGS
@given(multiclass_data(), bin_counts, schemes, st.randoms(use_true_random=False))
def test_multiclass_metrics_do_not_depend_on_row_order(data, n_bins, scheme, rnd):
    p, y = data
    order = np.array(rnd.sample(range(p.shape[0]), p.shape[0]))
    for fn in (classwise_ece, classwise_mce, confidence_ece, confidence_mce):
        assert fn(p, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
            fn(p[order], y[order], n_bins=n_bins, scheme=scheme), abs=1e-12
        )


# ------------------------------------------------------------ bounds
@SETTINGS
@given(binary_data(), bin_counts, schemes)
def test_binary_ece_is_between_zero_and_mce_and_one(data, n_bins, scheme):
    s, y = data
    ece = binary_ece(s, y, n_bins=n_bins, scheme=scheme)
    mce = binary_mce(s, y, n_bins=n_bins, scheme=scheme)
    assert 0.0 <= ece <= mce + 1e-15
    assert mce <= 1.0


@SETTINGS
@given(multiclass_data(), bin_counts, schemes)
def test_multiclass_ece_is_between_zero_and_mce_and_one(data, n_bins, scheme):
    p, y = data
    for ece_fn, mce_fn in ((classwise_ece, classwise_mce), (confidence_ece, confidence_mce)):
        ece = ece_fn(p, y, n_bins=n_bins, scheme=scheme)
        mce = mce_fn(p, y, n_bins=n_bins, scheme=scheme)
        assert 0.0 <= ece <= mce + 1e-15
        assert mce <= 1.0


@SETTINGS
@given(binary_data(), bin_counts, schemes)
def test_one_bin_ece_is_the_gap_of_the_means(data, n_bins, scheme):
    s, y = data
    gap = abs(y.mean() - s.mean())
    assert binary_ece(s, y, n_bins=1, scheme=scheme) == pytest.approx(gap, abs=1e-12)
    # Splitting bins can only reveal more miscalibration (triangle inequality).
    assert binary_ece(s, y, n_bins=n_bins, scheme=scheme) >= gap - 1e-12


# -------------------------------------------- sorted and one-off paths
@SETTINGS
@given(binary_data(max_size=120), st.integers(1, 300), schemes)
def test_sorted_path_counts_equal_one_off_counts(data, n_bins, scheme):
    s, y = data
    b = Binning(scheme, n_bins)
    a, c = b.statistics(s, y), SortedScores(s, y).statistics(b)
    np.testing.assert_array_equal(a.count, c.count)
    np.testing.assert_array_equal(a.sum_target, c.sum_target)
    np.testing.assert_allclose(a.sum_score, c.sum_score, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(binary_data(min_size=2), st.integers(1, 30), st.data())
def test_merged_chunks_equal_the_whole(data, n_bins, draw):
    s, y = data
    cut = draw.draw(st.integers(1, s.shape[0] - 1))
    for scheme in ("width", "frequency"):
        b = Binning(scheme, n_bins)
        whole = b.statistics(s, y)
        edges = None if scheme == "width" else whole.edges
        merged = b.statistics(s[:cut], y[:cut], edges) + b.statistics(s[cut:], y[cut:], edges)
        np.testing.assert_array_equal(merged.count, whole.count)
        np.testing.assert_array_equal(merged.sum_target, whole.sum_target)
        np.testing.assert_allclose(merged.sum_score, whole.sum_score, rtol=1e-12, atol=1e-12)


# ---------------------------------------------- permuting the classes
@SETTINGS
@given(multiclass_data(), bin_counts, schemes, st.randoms(use_true_random=False))
def test_classwise_metrics_are_invariant_to_relabelling_classes(data, n_bins, scheme, rnd):
    p, y = data
    k = p.shape[1]
    perm = np.array(rnd.sample(range(k), k))  # new column j holds old class perm[j]
    inverse = np.argsort(perm)
    p2, y2 = p[:, perm], inverse[y]
    for fn in (classwise_ece, classwise_mce):
        assert fn(p, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
            fn(p2, y2, n_bins=n_bins, scheme=scheme), abs=1e-12
        )


@SETTINGS
@given(
    st.integers(2, 6),
    st.integers(1, 300),
    st.integers(0, 2**32 - 1),
    bin_counts,
    schemes,
    st.randoms(use_true_random=False),
)
def test_confidence_metrics_are_invariant_to_relabelling_without_ties(
    k, n, seed, n_bins, scheme, rnd
):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    y = rng.integers(0, k, n)
    top = np.sort(p, axis=1)
    assume((top[:, -1] > top[:, -2]).all())  # with ties the winning index would move
    perm = np.array(rnd.sample(range(k), k))
    p2, y2 = p[:, perm], np.argsort(perm)[y]
    for fn in (confidence_ece, confidence_mce):
        assert fn(p, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
            fn(p2, y2, n_bins=n_bins, scheme=scheme), abs=1e-12
        )


# ---------------------------------------- a calibrated forecaster
def test_ece_of_a_calibrated_forecaster_tends_to_zero():
    # Scores uniform on [0, 1] and labels drawn at exactly those probabilities.
    means = {}
    for n in (1_000, 10_000, 100_000):
        values = []
        for seed in range(5):
            rng = np.random.default_rng(seed)
            s = rng.random(n)
            y = (rng.random(n) < s).astype(np.int64)
            values.append(
                (binary_ece(s, y, n_bins=15), binary_ece(s, y, n_bins=15, scheme="frequency"))
            )
        means[n] = np.mean(values, axis=0)
    assert (means[1_000] > means[10_000]).all()
    assert (means[10_000] > means[100_000]).all()
    assert (means[100_000] < 0.01).all()


def test_ece_of_a_miscalibrated_forecaster_does_not_vanish():
    rng = np.random.default_rng(0)
    s = rng.random(100_000)
    y = (rng.random(100_000) < s**2).astype(np.int64)  # over-confident in the positive
    # The true ECE of s against s**2 is E|s - s**2| = 1/6; binning shaves off a little.
    assert binary_ece(s, y, n_bins=15) == pytest.approx(1 / 6, abs=0.01)
