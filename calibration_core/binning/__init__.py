"""The one binning engine behind every metric and every reliability diagram.

Conventions (the dashboard states them too)
-------------------------------------------
Equal width (``scheme="width"``)
    Bin ``m`` of ``M`` is ``[m/M, (m+1)/M)``; a score of exactly 1.0 falls in
    the last bin. A score ``s`` goes to bin ``min(floor(s * M), M - 1)``,
    computed in float64; the sorted (re-binning) path uses the exact float64
    thresholds of that rule, so both paths assign every score identically.
    The edges ``m/M`` are therefore float64 products, not exact decimals: a
    typed score that lies on an edge lands on either side depending on
    rounding (``0.6 * 10 = 6.0`` goes up to bin 6, but ``0.29 * 100 =
    28.999999999999996``, ``0.57 * 100`` and ``0.58 * 100`` go down to bins
    28, 56 and 57). Only scores within a few ulps of an edge are affected;
    see docs/statistics.md.
Equal frequency (``scheme="frequency"``)
    With ``N`` sorted scores ``s_(0) <= ... <= s_(N-1)``, the interior edges
    are ``e_m = s_(floor(m * N / M))`` for ``m = 1..M-1``, the outer edges are
    0 and 1, and bin ``m`` is ``[e_m, e_{m+1})`` (the last bin includes 1.0).
    Without ties every bin holds ``floor(N/M)`` or ``ceil(N/M)`` scores. Ties
    are never split: all scores equal to an edge go to the bin above it, so
    heavy ties can leave some bins empty. The result does not depend on row
    order.
Empty bins
    Are kept (statistics are fixed-length ``M``): their count and sums are 0
    and their mean score and observed frequency are NaN, never 0. They add
    nothing to ECE and are ignored by MCE.

Statistics are counts and sums, so statistics of chunks with the same edges
merge by addition (``stats_a + stats_b``), without touching rows again.

Modules
-------
- :mod:`~calibration_core.binning.engine`: :class:`Binning` and the argument
  check :func:`check_binning_args`.
- :mod:`~calibration_core.binning.statistics`: :class:`BinStatistics` and
  :func:`stack_statistics`.
- :mod:`~calibration_core.binning.counters`: the one-pass block counters
  :class:`ScoreBinCounter` and :class:`ClasswiseBinCounter`, block sizes
  (:data:`BLOCK_ELEMENTS`, :func:`block_rows`).
- :mod:`~calibration_core.binning.sorted`: :class:`SortedScores`, re-binning
  in O(M log N) from scores sorted once.
- :mod:`~calibration_core.binning.width`: the equal-width rule's exact
  thresholds (:func:`width_thresholds`) and cached edges.
"""

from .counters import (
    BLOCK_ELEMENTS,
    MAX_BLOCK_ELEMENTS,
    MIN_BLOCK_ROWS,
    ClasswiseBinCounter,
    ScoreBinCounter,
    block_rows,
)
from .engine import MAX_BINS, SCHEMES, Binning, Scheme, check_binning_args
from .sorted import SortedScores
from .statistics import BinStatistics, ece_from_sums, mce_from_sums, stack_statistics
from .width import width_thresholds

__all__ = [
    "BLOCK_ELEMENTS",
    "MAX_BINS",
    "MAX_BLOCK_ELEMENTS",
    "MIN_BLOCK_ROWS",
    "SCHEMES",
    "BinStatistics",
    "Binning",
    "ClasswiseBinCounter",
    "Scheme",
    "ScoreBinCounter",
    "SortedScores",
    "block_rows",
    "check_binning_args",
    "ece_from_sums",
    "mce_from_sums",
    "stack_statistics",
    "width_thresholds",
]
