"""Histogram binning: hand-worked bin values, smoothing, empty bins, schemes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from calibration_core import Binning, CalibrationInputError
from calibration_core.errors import CalibrationFitWarning
from calibration_core.maps import HistogramBinning, make_map
from calibration_core.maps.histogram import fill_empty_bins

# Six scores in two equal-width bins [0, .5) and [.5, 1]:
# bin 0 holds 0.1, 0.2, 0.3 with targets 0, 0, 1  -> 1 positive of 3
# bin 1 holds 0.6, 0.7, 0.9 with targets 1, 1, 0  -> 2 positives of 3
SCORES = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9])
TARGETS = np.array([0, 0, 1, 1, 1, 0])


def test_registry_name():
    assert isinstance(make_map("histogram"), HistogramBinning)
    assert HistogramBinning.name == "histogram"


def test_hand_worked_bin_values():
    m = HistogramBinning(n_bins=2).fit(SCORES, TARGETS)
    np.testing.assert_allclose(m.values_, [[1 / 3, 2 / 3]])
    np.testing.assert_array_equal(m.counts_, [[3, 3]])
    out = m.predict_proba(np.array([0.0, 0.25, 0.49, 0.5, 0.8, 1.0]))
    np.testing.assert_allclose(out[:, 1], [1 / 3, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(out[:, 0], 1 - out[:, 1])


def test_laplace_smoothing():
    # (positives + alpha) / (count + 2 alpha) with alpha = 1: 2/5 and 3/5.
    m = HistogramBinning(n_bins=2, alpha=1.0).fit(SCORES, TARGETS)
    np.testing.assert_allclose(m.values_, [[2 / 5, 3 / 5]])
    m = HistogramBinning(n_bins=2, alpha=0.5).fit(SCORES, TARGETS)
    np.testing.assert_allclose(m.values_, [[1.5 / 4, 2.5 / 4]])


def test_empty_bins_take_the_nearest_non_empty_bin():
    # Four bins of width 1/4: scores only in bins 0 and 3 (bins 1 and 2 empty).
    s = np.array([0.1, 0.2, 0.8, 0.9])
    t = np.array([0, 1, 1, 1])
    m = HistogramBinning(n_bins=4).fit(s, t)
    np.testing.assert_array_equal(m.counts_, [[2, 0, 0, 2]])
    # bin 1 is nearest to bin 0 (value 1/2), bin 2 nearest to bin 3 (value 1)
    np.testing.assert_allclose(m.values_[0, :4], [0.5, 0.5, 1.0, 1.0])
    # Five bins: the middle empty bin is equally far from both: their mean.
    with pytest.warns(CalibrationFitWarning, match="3 rows fit 5 parameters"):
        m5 = HistogramBinning(n_bins=5).fit(np.array([0.1, 0.15, 0.9]), np.array([0, 0, 1]))
    np.testing.assert_array_equal(m5.counts_, [[2, 0, 0, 0, 1]])
    np.testing.assert_allclose(m5.values_[0], [0.0, 0.0, 0.5, 1.0, 1.0])


def test_empty_bins_with_smoothing_get_one_half():
    s = np.array([0.1, 0.2, 0.8, 0.9])
    t = np.array([0, 1, 1, 1])
    m = HistogramBinning(n_bins=4, alpha=1.0).fit(s, t)
    np.testing.assert_allclose(m.values_[0], [2 / 4, 0.5, 0.5, 3 / 4])


def test_fill_empty_bins_per_row():
    values = np.array([[np.nan, 0.2, np.nan, np.nan, 0.8], [0.3, np.nan, np.nan, np.nan, np.nan]])
    count = (~np.isnan(values)).astype(int)
    out = fill_empty_bins(values, count)
    np.testing.assert_allclose(out, [[0.2, 0.2, 0.2, 0.8, 0.8], [0.3] * 5])


def test_outputs_clipped_to_eps():
    m = HistogramBinning(n_bins=2, eps=1e-4).fit(np.array([0.1, 0.2, 0.8, 0.9]), [0, 0, 1, 1])
    np.testing.assert_allclose(m.values_, [[0.0, 1.0]])  # stored unclipped
    out = m.predict_proba(np.array([0.1, 0.9]))
    np.testing.assert_allclose(out[:, 1], [1e-4, 1 - 1e-4])


def test_frequency_scheme_uses_the_binning_engine_edges():
    rng = np.random.default_rng(0)
    s = rng.beta(2, 5, 1000)
    t = (rng.random(1000) < s).astype(int)
    m = HistogramBinning(n_bins=8, scheme="frequency").fit(s, t)
    stats = Binning("frequency", 8).statistics(s, t)
    np.testing.assert_array_equal(m.edges_[0], stats.edges)
    np.testing.assert_array_equal(m.counts_[0], stats.count)
    np.testing.assert_allclose(m.values_[0], stats.frequency)
    # Prediction on the fit scores gives each score its bin's frequency.
    idx = Binning("frequency", 8).assign(s, stats.edges)
    np.testing.assert_allclose(
        m.predict_proba(s)[:, 1], np.clip(stats.frequency[idx], 1e-7, 1 - 1e-7)
    )


def test_multiclass_values_are_classwise_engine_frequencies():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, 2000)
    probs = softmax(rng.normal(size=(2000, 4)) + 2 * np.eye(4)[labels], axis=1)
    m = HistogramBinning(n_bins=6).fit(probs, labels)
    stats = Binning("width", 6).classwise_statistics(probs, labels)
    np.testing.assert_array_equal(m.counts_, stats.count)
    full = stats.count > 0
    np.testing.assert_allclose(m.values_[full], stats.frequency[full])
    out = m.predict_proba(probs)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)


def test_monotone_data_gives_increasing_bin_values():
    rng = np.random.default_rng(2)
    s = rng.random(20000)
    t = (rng.random(20000) < s).astype(int)
    m = HistogramBinning(n_bins=10).fit(s, t)
    assert np.all(np.diff(m.values_[0]) > 0)
    # Calibrated data: each bin value is near its bin centre.
    np.testing.assert_allclose(m.values_[0], np.arange(10) / 10 + 0.05, atol=0.03)


def test_fewer_rows_than_bins_warns():
    with pytest.warns(CalibrationFitWarning, match="underdetermined"):
        HistogramBinning(n_bins=10).fit(np.array([0.1, 0.5, 0.9]), [0, 1, 1])


@pytest.mark.parametrize(
    "params, match",
    [
        ({"alpha": -1.0}, "alpha"),
        ({"alpha": "one"}, "alpha"),
        ({"eps": 0.7}, "eps"),
        ({"scheme": "quantile"}, "scheme"),
        ({"n_bins": 0}, "n_bins"),
    ],
)
def test_bad_parameters_raise(params, match):
    with pytest.raises(CalibrationInputError, match=match):
        HistogramBinning(**params).fit(SCORES, TARGETS)


def test_one_class_raises():
    with pytest.raises(CalibrationInputError, match="at least two classes"):
        HistogramBinning().fit(SCORES, np.zeros(6, int))
