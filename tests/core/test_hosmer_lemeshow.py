"""Hosmer-Lemeshow: a hand-worked binary example, a pandas qcut re-implementation, null size."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibration_core import CalibrationInputError, Predictions
from calibration_core.errors import SmallSampleWarning
from calibration_core.measures.goodness_of_fit import hosmer_lemeshow


def test_hand_worked_binary_example():
    scores = np.array([0.1, 0.2, 0.2, 0.3, 0.4, 0.5, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9])
    labels = np.array([0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1])
    with pytest.warns(SmallSampleWarning, match="12 rows"):
        result = hosmer_lemeshow(scores, labels, n_groups=3, p_value="chi2", holdout=False)
    # Groups of four: O = 1, 3, 3 positives; E = 0.8, 2.0, 3.3 expected positives.
    c1 = (1 - 0.8) ** 2 / (0.8 * (1 - 0.8 / 4))  # 0.0625
    c2 = (3 - 2.0) ** 2 / (2.0 * (1 - 2.0 / 4))  # 1.0
    c3 = (3 - 3.3) ** 2 / (3.3 * (1 - 3.3 / 4))  # 0.155844...
    assert result.statistic == pytest.approx(c1 + c2 + c3, rel=1e-12)
    assert result.dof == 1  # G - 2
    assert result.p_value == pytest.approx(stats.chi2.sf(c1 + c2 + c3, 1), rel=1e-12)
    np.testing.assert_allclose(result.table.contribution, [c1, c2, c3], rtol=1e-12)
    np.testing.assert_array_equal(result.table.count, [4, 4, 4])
    np.testing.assert_allclose(result.table.observed[:, 1], [1, 3, 3])
    np.testing.assert_allclose(result.table.expected[:, 1], [0.8, 2.0, 3.3])
    np.testing.assert_allclose(result.table.lower, [0.1, 0.4, 0.7])
    np.testing.assert_allclose(result.table.upper, [0.3, 0.6, 0.9])
    with pytest.warns(SmallSampleWarning):
        assert hosmer_lemeshow(scores, labels, n_groups=3, p_value="chi2").dof == 3  # G


def _qcut_statistic(p, y, n_groups, reference=0):
    """Fagerland-Hosmer-Bofin statistic written independently with pandas."""
    k = p.shape[1]
    frame = pd.DataFrame(p, columns=[f"e{j}" for j in range(k)])
    for j in range(k):
        frame[f"o{j}"] = (y == j).astype(float)
    frame["group"] = pd.qcut(1 - p[:, reference], n_groups, labels=False)
    sums = frame.groupby("group").sum()
    obs = sums[[f"o{j}" for j in range(k)]].to_numpy()
    exp = sums[[f"e{j}" for j in range(k)]].to_numpy()
    return float(((obs - exp) ** 2 / exp).sum())


@pytest.mark.parametrize(("k", "reference"), [(2, 0), (3, 0), (5, 2)])
def test_matches_independent_qcut_implementation(k, reference):
    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k), 1000)
    y = rng.integers(0, k, 1000)  # not calibrated: a large statistic
    result = hosmer_lemeshow(p, y, n_groups=10, reference=reference, holdout=False)
    assert result.statistic == pytest.approx(_qcut_statistic(p, y, 10, reference), rel=1e-10)
    assert result.dof == 8 * (k - 1)
    assert result.n_groups == 10 and result.table.count.sum() == 1000
    assert np.all(result.table.lower[1:] >= result.table.upper[:-1])


def test_binary_is_the_textbook_c_hat():
    rng = np.random.default_rng(1)
    s = rng.beta(2, 3, 2000)
    y = (rng.random(2000) < s**0.8).astype(int)
    frame = pd.DataFrame({"s": s, "y": y, "g": pd.qcut(s, 10, labels=False)})
    agg = frame.groupby("g").agg(o=("y", "sum"), e=("s", "sum"), n=("s", "size"))
    pbar = agg.e / agg.n
    c_hat = float((((agg.o - agg.e) ** 2) / (agg.n * pbar * (1 - pbar))).sum())
    result = hosmer_lemeshow(s, y, p_value="chi2", holdout=False)
    assert result.statistic == pytest.approx(c_hat, rel=1e-10)
    assert result.p_value == pytest.approx(stats.chi2.sf(c_hat, 8), rel=1e-9)
    assert result.p_value < 1e-3  # y is drawn from s**0.8, not from s
    two_columns = hosmer_lemeshow(Predictions.from_scores(s, y))
    assert two_columns.statistic == pytest.approx(result.statistic, rel=1e-12)


def _calibrated(rng, n, k):
    p = rng.dirichlet(np.ones(k) * 2, n)
    y = (rng.random(n)[:, None] >= np.cumsum(p, axis=1)).sum(axis=1).clip(max=k - 1)
    return p, y


@pytest.mark.parametrize("k", [2, 3])
def test_default_bootstrap_p_value_is_uniform_under_calibration(k):
    # The default is the parametric bootstrap: uniform p-values for held-out predictions
    # at any K (the chi-squared rules are not: docs/statistics.md).
    rng = np.random.default_rng(10 + k)
    p_values = []
    for seed in range(200):
        p, y = _calibrated(rng, 500, k)
        result = hosmer_lemeshow(p, y, n_resamples=99, seed=seed)
        assert result.method == "bootstrap" and result.n_resamples == 99
        p_values.append(result.p_value)
    p_values = np.array(p_values)
    assert 0.01 <= np.mean(p_values <= 0.05) <= 0.10
    assert stats.kstest(p_values, "uniform").pvalue > 1e-3


def test_default_is_the_bootstrap_and_chi2_is_an_option():
    rng = np.random.default_rng(4)
    p, y = _calibrated(rng, 600, 3)
    a = hosmer_lemeshow(p, y)
    assert (a.method, a.n_resamples, a.seed, a.dof) == ("bootstrap", 1000, 0, 10 * 2)
    assert a.p_value == hosmer_lemeshow(p, y, seed=0).p_value  # seeded
    assert a.p_value >= 1 / 1001
    chi2 = hosmer_lemeshow(p, y, p_value="chi2")
    assert chi2.statistic == a.statistic and chi2.method == "chi2" and chi2.n_resamples is None
    assert chi2.p_value == pytest.approx(stats.chi2.sf(a.statistic, 20))
    with pytest.raises(CalibrationInputError, match="p_value"):
        hosmer_lemeshow(p, y, p_value="exact")
    # Labels far from the predictions: the bootstrap p-value is its smallest value.
    wrong = hosmer_lemeshow(p, np.argmin(p, axis=1), n_resamples=199)
    assert wrong.p_value == pytest.approx(1 / 200)


def test_ties_are_kept_together_and_too_few_groups_fail():
    rng = np.random.default_rng(3)
    s = rng.choice([0.2, 0.4, 0.6, 0.8], size=800)
    y = (rng.random(800) < s).astype(int)
    result = hosmer_lemeshow(s, y, n_groups=10)
    assert result.n_groups == 4 and result.dof == 4  # G (K - 1), the held-out rule
    for lo, hi in zip(result.table.lower, result.table.upper, strict=True):
        assert lo == hi  # one distinct score per group
    with pytest.raises(CalibrationInputError, match="only 2 non-empty groups"):
        hosmer_lemeshow(np.repeat([0.3, 0.7], 300), np.zeros(600, int))


def test_bad_input_and_no_warning_for_large_samples():
    p = np.random.default_rng(0).dirichlet(np.ones(3), 500)
    y = np.zeros(500, int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hosmer_lemeshow(p, y)
    with pytest.raises(CalibrationInputError, match="n_groups"):
        hosmer_lemeshow(p, y, n_groups=2)
    with pytest.raises(CalibrationInputError, match="reference"):
        hosmer_lemeshow(p, y, reference=3)
