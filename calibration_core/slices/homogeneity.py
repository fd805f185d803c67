"""Test of "the same calibration in every group": :func:`homogeneity_test`.

Statistic: how far each group's reliability diagram lies from the pooled one,
``T = sum_g sum_b |S_gb - E_gb| / N`` where ``S_gb`` is the number of positives
of group g in bin b and ``E_gb = sum_score_gb + n_gb * gap_b`` what the pooled
gap ``gap_b = (sum_target_b - sum_score_b) / n_b`` of bin b predicts for it (so
groups whose scores differ within a bin are compared fairly). ``T`` is the
spread of per-group ECE around the pooled calibration curve: 0 when every
group has the pooled gaps.

Null: every group has the pooled calibration curve. Its distribution is
resampled (parametric bootstrap): in every cell the positives are drawn as
``Binomial(n_gb, E_gb / n_gb)`` (clipped to [0, 1]) and ``T`` is recomputed,
pooled gaps included, on each resample; the p-value is
:func:`~calibration_core.measures.significance.monte_carlo_p_value`. It needs only the
(G, M) cell sums, so R = 1000 resamples cost G x M x R draws, not rows. Its
size under the null is checked by simulation (tests/core/test_slices.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import BinStatistics
from ..measures.significance import monte_carlo_p_value
from ..validation import check_seed, check_whole_number


@dataclass(frozen=True)
class HomogeneityResult:
    """Outcome of :func:`homogeneity_test`.

    Attributes
    ----------
    statistic : float
        T (see the module docstring).
    p_value : float
    n_resamples : int
    deviation : numpy.ndarray, shape (G,)
        Each group's ``sum_b |S_gb - E_gb| / n_g``: its ECE against the pooled curve.
    """

    statistic: float
    p_value: float
    n_resamples: int
    deviation: np.ndarray

    def rejects(self, alpha: float = 0.05) -> bool:
        """Whether the groups differ in calibration at level ``alpha``."""
        return self.p_value <= alpha

    def to_dict(self) -> dict:
        """JSON-ready fields (the deviations are in the per-group table)."""
        return {
            "statistic": self.statistic,
            "p_value": self.p_value,
            "n_resamples": self.n_resamples,
            "null": "every group has the pooled calibration curve (parametric resampling)",
        }


def _expected(count, sum_score, sum_target) -> np.ndarray:
    n_b = count.sum(axis=-2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(
            n_b > 0,
            (sum_target.sum(axis=-2, keepdims=True) - sum_score.sum(axis=-2, keepdims=True))
            / np.maximum(n_b, 1),
            0.0,
        )
    return sum_score + count * gap


def _statistic(count, sum_score, sum_target) -> np.ndarray:
    far = np.abs(sum_target - _expected(count, sum_score, sum_target))
    return far.sum(axis=(-2, -1)) / count.sum()


def homogeneity_test(stats: BinStatistics, *, n_resamples: int = 1000, seed=0) -> HomogeneityResult:
    """Test whether every group shares the pooled calibration curve.

    Parameters
    ----------
    stats : BinStatistics
        Stacked per-group statistics, arrays of shape (G, M), same edges
        per bin index (equal-width bins; equal-frequency per-group edges
        make bins of different groups incomparable and are rebinned by the caller).
    n_resamples : int
    seed : None, int or numpy.random.Generator

    Returns
    -------
    HomogeneityResult
    """
    r = check_whole_number(n_resamples, "n_resamples")
    rng = check_seed(seed)
    count = stats.count.astype(np.int64)
    expected = _expected(count, stats.sum_score, stats.sum_target)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.clip(np.where(count > 0, expected / np.maximum(count, 1), 0.0), 0.0, 1.0)
        deviation = np.abs(stats.sum_target - expected).sum(axis=1) / count.sum(axis=1)
    observed = float(_statistic(count, stats.sum_score, stats.sum_target))
    null = np.empty(r)
    block = max(1, (1 << 20) // max(count.size, 1))
    for start in range(0, r, block):
        size = min(block, r - start)
        drawn = rng.binomial(np.broadcast_to(count, (size, *count.shape)), q).astype(np.float64)
        null[start : start + size] = _statistic(count, stats.sum_score, drawn)
    return HomogeneityResult(observed, monte_carlo_p_value(observed, null, rng=rng), r, deviation)
