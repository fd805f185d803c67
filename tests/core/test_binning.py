"""The binning engine: bin rules, ties on edges, empty bins, exact thresholds, merging."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from calibration_core import Binning, BinStatistics, CalibrationInputError, SortedScores
from calibration_core.binning import BLOCK_ELEMENTS, block_rows, width_thresholds


def floor_rule(scores, n_bins):
    """Independent oracle of the width rule: Python floats, ``min(floor(s * M), M - 1)``."""
    return np.array([min(math.floor(float(s) * n_bins), n_bins - 1) for s in scores])


def counts_of(bins, n_bins):
    return np.bincount(bins, minlength=n_bins)


def random_data(n, seed):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    y = (rng.random(n) < s).astype(np.intp)
    return s, y


# ------------------------------------------------------------ width bins
def test_width_edges_are_evenly_spaced():
    b = Binning("width", 4)
    np.testing.assert_array_equal(b.edges(np.array([0.3])), [0.0, 0.25, 0.5, 0.75, 1.0])


@pytest.mark.parametrize(
    ("score", "n_bins", "expected"),
    [
        (0.0, 5, 0),  # 0 opens the first bin
        (0.2, 5, 1),  # a score on an interior edge goes to the bin above it
        (0.4, 5, 2),
        (0.6, 5, 3),
        (0.8, 5, 4),
        (1.0, 5, 4),  # 1.0 closes the last bin
        (0.3, 10, 3),
        (0.7, 10, 7),
        (0.5, 2, 1),
        (0.25, 4, 1),
        (0.75, 4, 3),
        (0.999999, 5, 4),
        (0.19999999, 5, 0),
        (1.0, 1, 0),
        (0.0, 1, 0),
    ],
)
def test_width_bin_of_scores_on_and_near_edges(score, n_bins, expected):
    b = Binning("width", n_bins)
    s = np.array([score])
    y = np.array([1])
    assert b.assign(s)[0] == expected
    one_off = b.statistics(s, y)
    sorted_path = SortedScores(s, y).statistics(b)
    for stats in (one_off, sorted_path):
        assert stats.count[expected] == 1
        assert stats.total == 1


def test_width_statistics_worked_example():
    # Bins [0, .25), [.25, .5), [.5, .75), [.75, 1]; 0.5 and 0.75 sit on edges.
    s = np.array([0.1, 0.5, 0.55, 0.75, 1.0, 0.3])
    y = np.array([0, 1, 0, 1, 1, 1])
    stats = Binning("width", 4).statistics(s, y)
    np.testing.assert_array_equal(stats.count, [1, 1, 2, 2])
    np.testing.assert_allclose(stats.sum_score, [0.1, 0.3, 1.05, 1.75])
    np.testing.assert_array_equal(stats.sum_target, [0, 1, 1, 2])
    np.testing.assert_allclose(stats.mean_score, [0.1, 0.3, 0.525, 0.875])
    np.testing.assert_allclose(stats.frequency, [0.0, 1.0, 0.5, 1.0])
    np.testing.assert_allclose(stats.gap, [0.1, 0.7, 0.025, 0.125])
    # ECE = (0.1 + 0.7 + 2 * 0.025 + 2 * 0.125) / 6 = 1.1 / 6
    assert stats.ece() == pytest.approx(1.1 / 6, abs=1e-15)
    assert stats.mce() == pytest.approx(0.7, abs=1e-15)


def test_empty_bins_are_nan_not_zero_and_kept():
    s = np.array([0.21, 0.22, 0.28])
    y = np.array([1, 0, 0])
    for stats in (
        Binning("width", 10).statistics(s, y),
        SortedScores(s, y).statistics(Binning("width", 10)),
    ):
        assert stats.count.shape == (10,)
        assert stats.mean_score.shape == stats.frequency.shape == stats.gap.shape == (10,)
        empty = np.ones(10, bool)
        empty[2] = False
        np.testing.assert_array_equal(stats.count[empty], 0)
        assert np.isnan(stats.mean_score[empty]).all()
        assert np.isnan(stats.frequency[empty]).all()
        assert np.isnan(stats.gap[empty]).all()
        assert stats.mean_score[2] == pytest.approx(0.71 / 3)
        assert stats.frequency[2] == pytest.approx(1 / 3)
        # ECE counts only the filled bin; MCE ignores the NaN gaps (not NaN, not 0).
        assert stats.ece() == pytest.approx(abs(1 / 3 - 0.71 / 3))
        assert stats.mce() == pytest.approx(abs(1 / 3 - 0.71 / 3))
        assert np.isfinite(stats.mce())


def test_mce_is_max_over_filled_bins_only():
    # Gaps 0.05 (bin 0) and 0.3 (bin 4); bins 1-3 are empty.
    s = np.array([0.05, 0.1, 0.9, 0.9])
    y = np.array([0, 0, 1, 0])
    stats = Binning("width", 5).statistics(s, y)
    assert np.isnan(stats.gap[1:4]).all()
    assert stats.mce() == pytest.approx(0.4)  # |0.5 - 0.9|
    assert stats.ece() == pytest.approx((0.15 + 0.8) / 4)


# -------------------------------------------------------- frequency bins
def test_frequency_bins_without_ties_hold_equal_counts():
    s = np.array([0.9, 0.1, 0.4, 0.3, 0.6, 0.2])
    y = np.array([1, 0, 0, 1, 1, 0])
    b = Binning("frequency", 3)
    stats = b.statistics(s, y)
    # sorted: .1 .2 .3 .4 .6 .9; interior edges s_(2) = .3 and s_(4) = .6
    np.testing.assert_array_equal(stats.edges, [0.0, 0.3, 0.6, 1.0])
    np.testing.assert_array_equal(stats.count, [2, 2, 2])
    np.testing.assert_allclose(stats.sum_score, [0.3, 0.7, 1.5])
    np.testing.assert_array_equal(stats.sum_target, [0, 1, 2])


def test_frequency_bins_uneven_n_use_floor_positions():
    s = np.linspace(0.05, 0.95, 7)
    y = np.zeros(7, np.intp)
    stats = Binning("frequency", 3).statistics(s, y)
    # positions floor(7/3) = 2 and floor(14/3) = 4
    np.testing.assert_array_equal(stats.edges[1:-1], s[[2, 4]])
    np.testing.assert_array_equal(stats.count, [2, 2, 3])


def test_frequency_ties_go_to_the_upper_bin_and_are_never_split():
    s = np.array([0.1, 0.2, 0.2, 0.2, 0.5, 0.9])
    y = np.array([0, 1, 0, 1, 1, 1])
    b = Binning("frequency", 3)
    for stats in (b.statistics(s, y), SortedScores(s, y).statistics(b)):
        np.testing.assert_array_equal(stats.edges, [0.0, 0.2, 0.5, 1.0])
        np.testing.assert_array_equal(stats.count, [1, 3, 2])
        np.testing.assert_array_equal(stats.sum_target, [0, 2, 2])


def test_frequency_heavy_ties_leave_empty_bins():
    s = np.full(8, 0.5)
    y = np.array([1, 0, 1, 0, 1, 1, 0, 0])
    b = Binning("frequency", 4)
    for stats in (b.statistics(s, y), SortedScores(s, y).statistics(b)):
        np.testing.assert_array_equal(stats.count, [0, 0, 0, 8])
        assert np.isnan(stats.frequency[:3]).all()
        assert stats.frequency[3] == 0.5
        assert stats.ece() == 0.0


def test_frequency_more_bins_than_scores():
    s = np.array([0.7, 0.2])
    y = np.array([1, 0])
    b = Binning("frequency", 5)
    for stats in (b.statistics(s, y), SortedScores(s, y).statistics(b)):
        # positions floor(m * 2 / 5) = 0, 0, 1, 1 -> edges .2 .2 .7 .7
        np.testing.assert_array_equal(stats.edges, [0.0, 0.2, 0.2, 0.7, 0.7, 1.0])
        np.testing.assert_array_equal(stats.count, [0, 0, 1, 0, 1])


def test_frequency_explicit_edges_put_ties_above():
    b = Binning("frequency", 3)
    edges = np.array([0.0, 0.25, 0.5, 1.0])
    s = np.array([0.0, 0.25, 0.2499, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(b.assign(s, edges), [0, 1, 0, 2, 2, 2])


# ------------------------------------------- the exact-threshold claim
def adversarial_scores(n_bins):
    """Scores on and one or two ulps around every m / M, plus the ends."""
    m = np.arange(0, n_bins + 1, dtype=np.float64) / n_bins
    down = np.nextafter(m, -np.inf)
    up = np.nextafter(m, np.inf)
    near = np.concatenate([m, down, up, np.nextafter(down, -np.inf), np.nextafter(up, np.inf)])
    # Also the float64 neighbours of the products the two paths compare against.
    t = width_thresholds(n_bins) if n_bins > 1 else np.empty(0)
    near = np.concatenate([near, t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf)])
    return np.clip(near, 0.0, 1.0)


def test_one_off_and_sorted_paths_agree_on_adversarial_scores_for_many_m():
    rng = np.random.default_rng(0)
    for n_bins in [*range(1, 201), 999, 1000, 4096, 9999, 10000]:
        b = Binning("width", n_bins)
        s = adversarial_scores(n_bins)
        y = rng.integers(0, 2, s.shape[0])
        expected = floor_rule(s, n_bins)
        np.testing.assert_array_equal(b.assign(s), expected, err_msg=f"M={n_bins}")
        expected_counts = counts_of(expected, n_bins)
        one_off = b.statistics(s, y)
        sorted_path = SortedScores(s, y).statistics(b)
        np.testing.assert_array_equal(one_off.count, expected_counts, err_msg=f"M={n_bins}")
        np.testing.assert_array_equal(sorted_path.count, expected_counts, err_msg=f"M={n_bins}")
        np.testing.assert_array_equal(one_off.sum_target, sorted_path.sum_target)


def test_width_thresholds_are_the_smallest_floats_reaching_each_bin():
    for n_bins in [2, 3, 7, 10, 15, 49, 98, 100, 255, 10000]:
        t = width_thresholds(n_bins)
        m = np.arange(1, n_bins)
        assert (t * n_bins >= m).all()
        assert (np.nextafter(t, -np.inf) * n_bins < m).all()


@pytest.mark.parametrize("scheme", ["width", "frequency"])
@pytest.mark.parametrize("n_bins", [1, 2, 7, 15, 100])
def test_one_off_and_sorted_statistics_agree_on_random_data(scheme, n_bins):
    s, y = random_data(5000, seed=n_bins)
    # Rounded scores create many ties, some on edges.
    s = np.concatenate([s, np.round(s[:2000], 2)])
    y = np.concatenate([y, y[:2000]])
    b = Binning(scheme, n_bins)
    one_off = b.statistics(s, y)
    sorted_path = SortedScores(s, y).statistics(b)
    np.testing.assert_array_equal(one_off.count, sorted_path.count)
    np.testing.assert_array_equal(one_off.edges, sorted_path.edges)
    # Differences of a running sum carry its rounding: equal to 1e-12 relative.
    np.testing.assert_allclose(one_off.sum_score, sorted_path.sum_score, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(one_off.sum_target, sorted_path.sum_target)
    assert one_off.ece() == pytest.approx(sorted_path.ece(), abs=1e-12)
    assert one_off.mce() == pytest.approx(sorted_path.mce(), abs=1e-12)


def test_sorted_scores_leave_no_negative_zero_in_empty_bins():
    s = np.array([0.95, 0.91, 0.05])
    stats = SortedScores(s, np.array([1, 1, 0])).statistics(Binning("width", 10))
    assert (stats.sum_score[stats.count == 0] == 0).all()
    assert not np.signbit(stats.sum_score[stats.count == 0]).any()


# ----------------------------------------------------------- merging
def split_in_chunks(s, y, cuts):
    bounds = [0, *cuts, s.shape[0]]
    return [(s[a:b], y[a:b]) for a, b in itertools.pairwise(bounds)]


def assert_stats_equal(a: BinStatistics, b: BinStatistics):
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.count, b.count)
    np.testing.assert_allclose(a.sum_score, b.sum_score, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(a.sum_target, b.sum_target)


def test_width_statistics_of_chunks_merge_to_the_whole():
    s, y = random_data(10_000, seed=1)
    b = Binning("width", 15)
    parts = [b.statistics(cs, cy) for cs, cy in split_in_chunks(s, y, [1, 3000, 7777])]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged + p
    whole = b.statistics(s, y)
    assert_stats_equal(merged, whole)
    assert merged.ece() == pytest.approx(whole.ece(), abs=1e-12)
    assert sum(parts[1:], parts[0]).total == 10_000


def test_frequency_statistics_of_chunks_merge_with_shared_edges():
    s, y = random_data(9_001, seed=2)
    b = Binning("frequency", 12)
    edges = b.edges(s)
    parts = [b.statistics(cs, cy, edges=edges) for cs, cy in split_in_chunks(s, y, [10, 4500])]
    merged = parts[0] + parts[1] + parts[2]
    assert_stats_equal(merged, b.statistics(s, y))
    assert_stats_equal(merged, SortedScores(s, y).statistics(b))


def test_classwise_statistics_of_chunks_merge():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(4), size=3000)
    y = rng.integers(0, 4, 3000)
    b = Binning("width", 10)
    merged = b.classwise_statistics(p[:1000], y[:1000]) + b.classwise_statistics(p[1000:], y[1000:])
    whole = b.classwise_statistics(p, y)
    assert_stats_equal(merged, whole)


def test_merging_statistics_with_different_edges_raises():
    s, y = random_data(500, seed=4)
    width = Binning("width", 10).statistics(s, y)
    freq = Binning("frequency", 10).statistics(s, y)
    other_m = Binning("width", 5).statistics(s, y)
    with pytest.raises(CalibrationInputError, match="edges are identical"):
        width + freq
    with pytest.raises(CalibrationInputError, match="edges are identical"):
        width + other_m
    # Frequency edges of two different chunks differ too.
    with pytest.raises(CalibrationInputError, match="same explicit edges"):
        Binning("frequency", 10).statistics(s[:250], y[:250]) + Binning("frequency", 10).statistics(
            s[250:], y[250:]
        )


def test_adding_something_else_is_a_type_error():
    stats = Binning().statistics(np.array([0.5]), np.array([1]))
    with pytest.raises(TypeError):
        stats + 1


# --------------------------------------------------------- classwise
def test_classwise_statistics_match_one_binning_per_column():
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(3) * 0.5, size=2000)
    p[:5] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.2, 0.3, 0.5], [0.6, 0.4, 0.0], [0.1, 0.1, 0.8]]
    y = rng.integers(0, 3, 2000)
    for scheme in ("width", "frequency"):
        b = Binning(scheme, 7)
        stacked = b.classwise_statistics(p, y)
        assert stacked.count.shape == (3, 7)
        for j in range(3):
            single = b.statistics(np.ascontiguousarray(p[:, j]), (y == j).astype(np.intp))
            np.testing.assert_array_equal(stacked[j].count, single.count)
            np.testing.assert_array_equal(stacked[j].edges, single.edges)
            np.testing.assert_allclose(stacked[j].sum_score, single.sum_score, atol=1e-12)
            np.testing.assert_array_equal(stacked[j].sum_target, single.sum_target)
        np.testing.assert_allclose(stacked.ece(), [stacked[j].ece() for j in range(3)])


def test_indexing_single_statistics_is_a_type_error():
    stats = Binning().statistics(np.array([0.5]), np.array([1]))
    with pytest.raises(TypeError, match="classwise"):
        stats[0]


# --------------------------------------------------------- arguments
@pytest.mark.parametrize(
    ("n_bins", "message"),
    [
        (0, "between 1 and 10000, got 0"),
        (-1, "between 1 and 10000, got -1"),
        (10**9, "between 1 and 10000, got 1000000000"),
        (2.5, "whole number between 1 and 10000, got 2.5"),
        (True, "whole number between 1 and 10000, got True"),
        ("15", "whole number"),
        (None, "whole number"),
    ],
)
def test_bad_bin_counts_are_rejected(n_bins, message):
    with pytest.raises(CalibrationInputError, match=message):
        Binning("width", n_bins)


def test_numpy_integer_bin_count_is_accepted():
    assert Binning("width", np.int64(7)).edges(np.array([0.5])).shape == (8,)


def test_unknown_scheme_is_rejected():
    with pytest.raises(CalibrationInputError, match=r"scheme must be 'width'.*got 'quantile'"):
        Binning("quantile", 10)


def test_str_names_the_scheme():
    assert str(Binning("frequency", 10)) == "10 equal-frequency bins"
    assert str(Binning("width", 15)) == "15 equal-width bins"


# ----------------------------------------------------- block counters
def test_counter_over_many_blocks_folds_ones_into_the_last_bin():
    rng = np.random.default_rng(6)
    n = 3 * BLOCK_ELEMENTS + 17
    s = rng.random(n)
    s[::1000] = 1.0
    s[5::1000] = 0.0
    y = rng.integers(0, 2, n)
    b = Binning("width", 15)
    stats = b.statistics(s, y)
    expected = counts_of(floor_rule(s, 15), 15)
    np.testing.assert_array_equal(stats.count, expected)
    np.testing.assert_array_equal(stats.sum_target, np.bincount(floor_rule(s, 15), y, 15))
    np.testing.assert_allclose(stats.sum_score, np.bincount(floor_rule(s, 15), s, 15), rtol=1e-12)
    # Streaming blocks of any size through one counter gives the same statistics.
    counter = b.counter()
    for start in range(0, n, 10_007):
        counter.add(s[start : start + 10_007], y[start : start + 10_007])
    assert_stats_equal(counter.statistics(b.edges(s)), stats)


def test_float_targets_are_used_as_weights():
    s = np.array([0.1, 0.15, 0.7, 1.0])
    b = Binning("width", 2)
    stats = b.statistics(s, np.array([0.0, 1.0, 1.0, 0.0]))
    np.testing.assert_array_equal(stats.count, [2, 2])
    np.testing.assert_array_equal(stats.sum_target, [1.0, 1.0])
    soft = b.statistics(s, np.array([0.25, 0.5, 0.75, 1.0]))
    np.testing.assert_allclose(soft.sum_target, [0.75, 1.75])
    np.testing.assert_allclose(soft.sum_score, [0.25, 1.7])
    np.testing.assert_array_equal(soft.count, [2, 2])


def test_bool_targets_equal_integer_targets():
    s, y = random_data(2000, seed=7)
    for scheme in ("width", "frequency"):
        b = Binning(scheme, 9)
        assert_stats_equal(b.statistics(s, y.astype(bool)), b.statistics(s, y))


def test_frequency_counters_need_edges():
    with pytest.raises(CalibrationInputError, match="need their edges"):
        Binning("frequency", 5).counter()
    with pytest.raises(CalibrationInputError, match="needs equal-width bins"):
        Binning("frequency", 5).classwise_counter(3)
    s, y = random_data(1000, seed=8)
    b = Binning("frequency", 5)
    edges = b.edges(s)
    counter = b.counter(edges).add(s[:400], y[:400]).add(s[400:], y[400:])
    assert_stats_equal(counter.statistics(edges), b.statistics(s, y))


def test_block_rows_keep_blocks_cache_sized_but_not_tiny():
    assert block_rows(1) == BLOCK_ELEMENTS
    assert block_rows(2) == BLOCK_ELEMENTS // 2
    for k in (10, 100, 1000, 10**6):
        rows = block_rows(k)
        assert rows >= 1
        assert rows * k <= max(BLOCK_ELEMENTS, 1 << 19, k)
    assert block_rows(100) >= 1000  # wide rows: enough rows per Python call


def test_classwise_counter_folds_probability_one_per_class():
    p = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.25, 0.25], [0.0, 0.0, 1.0]])
    y = np.array([0, 1, 2, 2])
    stats = Binning("width", 4).classwise_statistics(p, y)
    np.testing.assert_array_equal(stats.count, [[2, 0, 1, 1], [2, 1, 0, 1], [2, 1, 0, 1]])
    np.testing.assert_array_equal(stats.sum_target, [[0, 0, 0, 1], [0, 0, 0, 1], [0, 1, 0, 1]])
    np.testing.assert_allclose(stats.sum_score, [[0, 0, 0.5, 1], [0, 0.25, 0, 1], [0, 0.25, 0, 1]])


def test_a_counter_refuses_to_mix_integer_and_float_targets():
    counter = Binning("width", 4).counter().add(np.array([0.1, 0.9]), np.array([0, 1]))
    with pytest.raises(TypeError, match="mix of 0/1 integer and float targets"):
        counter.add(np.array([0.5]), np.array([0.5]))


@pytest.mark.parametrize("scheme", ["width", "frequency"])
def test_assign_with_edges_is_assign_and_edges(scheme):
    s = np.random.default_rng(9).random(500)
    s[:50] = 0.5  # ties at an equal-frequency edge
    binning = Binning(scheme, 7)
    idx, edges = binning.assign_with_edges(s)
    np.testing.assert_array_equal(idx, binning.assign(s))
    np.testing.assert_array_equal(edges, binning.edges(s))
