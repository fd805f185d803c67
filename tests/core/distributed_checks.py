"""Checks shared by the tests of the Dask engine (calibration_core.distributed).

A summary of a dataset (per block, per piece or per cluster) must give the
in-memory core's numbers on the same rows: this module is the one place that
says what "the same" means.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration_core.compare.results import score_probs
from calibration_core.metrics import classwise_statistics, confidence_statistics

#: Largest absolute difference allowed on a metric (sums of scores: times the rows).
TOL = 1e-12


def assert_summary_equals_core(
    summary, probs: np.ndarray, labels: np.ndarray, bin_counts: Sequence[int]
) -> None:
    """Assert that ``summary`` (a ``ModelSummary``) equals the core on ``probs``, ``labels``.

    For each number of equal-width bins in ``bin_counts``: the same metric
    keys, each within :data:`TOL`; per notion (confidence, classwise) the same
    counts, sums of targets and edges exactly, and sums of scores within
    ``TOL`` per row.
    """
    for m in bin_counts:
        got, want = summary.metrics(m), score_probs(probs, labels, n_bins=m, scheme="width")
        assert set(got) == set(want)
        for key in want:
            assert abs(got[key] - want[key]) <= TOL, (m, key, got[key], want[key])
        for notion, core in (
            ("confidence", confidence_statistics),
            ("classwise", classwise_statistics),
        ):
            a, b = summary.statistics(notion, m), core(probs, labels, n_bins=m)
            np.testing.assert_array_equal(a.count, b.count)
            np.testing.assert_array_equal(a.sum_target, b.sum_target)
            np.testing.assert_allclose(a.sum_score, b.sum_score, rtol=0, atol=TOL * len(labels))
            np.testing.assert_array_equal(a.edges, b.edges)
