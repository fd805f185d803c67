"""The equal-width rule's exact float64 thresholds and its cached edges.

A score ``s`` goes to bin ``min(floor(s * M), M - 1)`` of ``M`` equal-width
bins, computed in float64. The one-off passes apply that rule directly; the
sorted (re-binning) path searches the exact thresholds of the same rule
(:func:`width_thresholds`), so both paths assign every score identically.
Every array here is cached per ``M`` and read-only.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=256)
def width_thresholds(n_bins: int) -> np.ndarray:
    """Exact float64 thresholds of the rule ``bin = min(floor(s * M), M - 1)``.

    Returns
    -------
    numpy.ndarray, shape (M - 1,), read-only
        ``t[m-1]`` is the smallest float64 ``x`` with ``x * M >= m`` (in
        float64 arithmetic), so ``s >= t[m-1]`` exactly when the rule puts
        ``s`` in bin ``m`` or above. It equals ``m / M`` or differs by an ulp.
        Cached per M (re-binning calls it on every change of bin count).
    """
    m = np.arange(1, n_bins, dtype=np.float64)
    t = m / n_bins
    # Walk down while the float product still reaches m, then up until it does.
    for _ in range(4):
        lower = np.nextafter(t, -np.inf)
        t = np.where(lower * n_bins >= m, lower, t)
    for _ in range(4):
        t = np.where(t * n_bins >= m, t, np.nextafter(t, np.inf))
    t.flags.writeable = False
    return t


@lru_cache(maxsize=256)
def width_edges(n_bins: int) -> np.ndarray:
    """The reported equal-width edges ``linspace(0, 1, M + 1)``, shape (M + 1,), read-only.

    Shared and cached per M: copy before handing them to a caller that may write.
    """
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    edges.flags.writeable = False
    return edges


@lru_cache(maxsize=256)
def padded_width_thresholds(n_bins: int) -> np.ndarray:
    """``[-inf, t_1, ..., t_{M-1}, inf]``: one search gives all M + 1 bin bounds.

    Returns
    -------
    numpy.ndarray, shape (M + 1,), read-only
        :func:`width_thresholds` padded with infinities, cached per M.
    """
    padded = np.concatenate(([-np.inf], width_thresholds(n_bins), [np.inf]))
    padded.flags.writeable = False
    return padded
