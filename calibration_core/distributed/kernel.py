"""The compiled per-block summary of the Dask engine (Numba; the ``dask`` extra).

One loop per block of rows does all the per-value work of a summary: the row
sums of the probability columns as stored (float32 or float64, accumulated in
float64 left to right, as the loader's
:func:`~calibration_core.io.checks.row_scale` does), the division of the rows
the loader divides (the same float64 values), the cell of every value (as
``np.searchsorted(CELL_THRESHOLDS, v, side="right")``), the per-cell counts,
score sums and positives of every class column and of the top label
(``argmax``'s rule: the first largest value), the score sums of the positives
and, for K = 2, the sums the log-loss decomposition needs (:class:`BlockTotals`),
hits, and the Brier and clipped log-loss terms. NumPy needed 15-20 passes over
the values for the same work (BENCHMARKS.md, issue 18).

The loop checks nothing itself beyond what keeps it safe: a row with a NaN, an
infinity, a negative value, a zero sum it would divide by or a label out of
range is skipped and counted, and the caller then runs the loader's own checks
(:func:`~calibration_core.io.tables.probability_scale`), which reject it with
the loader's message. No ``fastmath``: every float operation is the IEEE one
NumPy does, so bins and sums equal the in-memory core's.

Compilation
-----------
Functions are compiled on first use for each dtype and memory layout of the
block (3.2 s of CPU for the variants :func:`warm` compiles, 0.4 s to load them
from the cache; BENCHMARKS.md) and cached on disk (``cache=True``):
in the package's ``__pycache__``, or, when that is read-only (an installed
package owned by another user), in Numba's user-wide cache
(``~/.cache/numba``, or ``$XDG_CACHE_HOME/numba``); ``NUMBA_CACHE_DIR``
overrides both. When no location is writable the functions are compiled
without a cache, once per process. :func:`warm` compiles (or loads) the
variants the engine uses; :func:`~calibration_core.distributed.dataset_summaries`
calls it in the client before the tasks start, so local workers load the
cache instead of compiling.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numba
import numpy as np

from ..metrics import LOG_LOSS_EPS
from .cells import CELL_THRESHOLDS, N_CELLS

__all__ = [
    "GRID",
    "BlockCheck",
    "BlockTotals",
    "cell_index",
    "njit_cached",
    "score_cells",
    "summarize_block",
    "warm",
]


def njit_cached(func):
    """``njit(nogil=True, cache=True)``, or without the cache where none is writable."""
    try:
        return numba.njit(nogil=True, cache=True)(func)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(nogil=True)(func)


#: Grid of the cell lookup: ``floor(v * 2**12)`` is exact (a power of two). 2**12 is the
#: coarsest grid whose steps hold at most two thresholds: its table (8 KB of uint16) stays in
#: L1 next to the thresholds, 6 % less CPU for the kernel than 2**16 (BENCHMARKS.md).
GRID = 1 << 12


def _lookup_tables() -> tuple[np.ndarray, np.ndarray]:
    """The cell of every grid point (uint16), and the thresholds padded with +inf.

    A grid step ``[g / GRID, (g + 1) / GRID)`` holds at most two thresholds (checked
    below), so the cell of ``v`` is the cell of its grid point plus two comparisons
    with the next thresholds; where the step holds none, both are false (the next
    threshold is above the step). No branch: the values next to a threshold (about
    5 %) would otherwise be mispredicted.
    """
    points = np.arange(GRID + 1, dtype=np.float64) / GRID
    cells = np.searchsorted(CELL_THRESHOLDS, points, side="right")
    if int(np.max(np.diff(cells))) > _STEPS or cells[-1] >= 1 << 16:
        raise AssertionError("the cell grid needs more comparisons per step")
    padded = np.append(CELL_THRESHOLDS, [np.inf, np.inf])
    return cells.astype(np.uint16), padded


#: Threshold comparisons per grid step (the most thresholds a step holds).
_STEPS = 2
_TABLE, _PADDED = _lookup_tables()


@numba.njit(inline="always", nogil=True)
def _cell(v, table, padded):
    """The cell of a float64 value ``v >= 0`` (``searchsorted(T, v, side="right")``)."""
    c = np.uintp(table[np.uintp(min(v, 1.0) * GRID)])
    c += v >= padded[c]
    c += v >= padded[c]
    return c


def _cell_index(values, out, table, padded):
    for i in range(values.shape[0]):
        out[i] = _cell(np.float64(values[i]), table, padded)


def _score_cells(scores, targets, count, sum_score, positives, table, padded):
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        c = _cell(s, table, padded)
        count[c] += 1
        sum_score[c] += s
        if targets[i] != 0:
            positives[c] += 1


def _summarize_block(
    values, labels, exact, conf, classes, positives, binary, true_p, cells, clipped, table, padded
):
    """Accumulate one block; see :func:`summarize_block`."""
    k, n = values.shape
    bad, used, hits = 0, 0, 0
    brier, hi, max_dev = 0.0, -np.inf, 0.0
    for i in range(n):
        # Pass 1 over the row: its sum (float64, left to right, as the loader), its
        # largest value, whether one is negative.
        s = 0.0
        top = -np.inf
        negative = False
        for j in range(k):
            v = np.float64(values[j, i])
            s += v
            top = max(top, v)
            negative |= v < 0.0
        dev = abs(s - 1.0)
        max_dev = max(max_dev, dev)
        hi = max(hi, top)
        divide = dev > exact
        y = labels[i]
        if (
            negative
            or (divide and not s > 0.0)
            or (not math.isfinite(s) and _has_non_finite(values, i))
            or y < 0
            or y >= k
        ):
            bad += 1
            continue
        # Pass 2: the loader's float64 values, their cells. Division keeps the order,
        # so the top label's confidence is the largest value divided; its class is
        # the first column equal to it (argmax's rule), found without a branch.
        if divide:
            top = top / s
        first = k
        squares = 0.0
        cell = np.uintp(0)
        for j in range(k):
            v = np.float64(values[j, i])
            p = v / s if divide else v
            cell = _cell(p, table, padded)
            at = np.uintp(2 * (j * N_CELLS + cell))
            classes[at] += 1.0
            classes[at + 1] += p
            squares += p * p
            first = min(first, j if p == top else k)
        v = np.float64(values[y, i])
        p = v / s if divide else v
        at = np.uintp(2 * (y * N_CELLS + _cell(p, table, padded)))
        positives[at] += 1.0
        positives[at + 1] += p
        if k == 2:  # ``cell`` is the positive column's (the last of the loop)
            _binary_row(values, i, s, divide, y, cell, binary, np.uintp(used), cells, clipped)
        at = np.uintp(3 * _cell(top, table, padded))
        correct = first == y
        conf[at] += 1.0
        conf[at + 1] += top
        conf[at + 2] += correct
        hits += correct
        brier += squares - 2.0 * p + 1.0
        true_p[np.uintp(used)] = min(max(p, LOG_LOSS_EPS), 1.0)
        used += 1
    return bad, hits, brier, hi, max_dev


@numba.njit(inline="always", nogil=True)
def _binary_row(values, i, s, divide, y, cell, binary, row, cells, clipped):
    """K = 2: sums of a row in the cell of its positive-class value ``p1`` (see BlockTotals).

    The logarithms are left to :func:`_binary_logs`: ``cells[row]`` gets the cell
    and the label (``2 * cell + y``), ``clipped[row]`` the values clipped below.
    """
    p0 = np.float64(values[0, i])
    p1 = np.float64(values[1, i])
    if divide:
        p0, p1 = p0 / s, p1 / s
    at = np.uintp(4 * cell)
    binary[at] += p0
    binary[at + 1] += p0 if y == 0 else 0.0
    cells[row] = np.uintp(2) * cell + np.uintp(y)
    clipped[row, 0] = max(p0, LOG_LOSS_EPS)
    clipped[row, 1] = max(p1, LOG_LOSS_EPS)


def _binary_logs(cells, logs, binary, true_log):
    """K = 2: add the rows' logarithms to their cells (in row order, as the loop would).

    ``logs[i]`` is ``ln max(p0, eps), ln max(p1, eps)`` of row ``i``, ``cells[i]``
    its cell and label (:func:`_binary_row`). The true class's is also the row's
    log-loss term: ``ln min(max(p, eps), 1) = min(ln max(p, eps), 0)`` (the
    logarithm is monotone and ``ln 1 = 0``), the same float; it replaces the
    clipped probability in ``true_log[i]``, one logarithm fewer per row.
    """
    for i in range(cells.shape[0]):
        code = np.uintp(cells[i])
        at = np.uintp(4 * (code >> 1))
        binary[at + 2] += logs[i, 0]
        binary[at + 3] += logs[i, 1]
        true_log[i] = min(logs[i, code & 1], 0.0)


@numba.njit(inline="always", nogil=True)
def _has_non_finite(values, i):
    for j in range(values.shape[0]):
        if not math.isfinite(values[j, i]):
            return True
    return False


_cell_index_jit = njit_cached(_cell_index)
_score_cells_jit = njit_cached(_score_cells)
_summarize_block_jit = njit_cached(_summarize_block)
_binary_logs_jit = njit_cached(_binary_logs)


def cell_index(values: np.ndarray) -> np.ndarray:
    """The cell of every value: the number of :data:`~.cells.CELL_THRESHOLDS` at or below it.

    Equal to ``np.searchsorted(CELL_THRESHOLDS, values, side="right")`` for values
    ``>= 0``: the cell of the grid point ``floor(v * 2**12) / 2**12`` below each
    value, plus two exact comparisons with the next thresholds (a grid step holds
    at most two). The same lookup as every cell of :func:`summarize_block`.

    Parameters
    ----------
    values : numpy.ndarray
        Validated scores (float32 or float64, ``>= 0``), any shape.

    Returns
    -------
    numpy.ndarray of intp, same shape, values in ``0..C``
    """
    flat = np.ravel(values)
    out = np.empty(flat.shape, dtype=np.intp)
    _cell_index_jit(flat, out, _TABLE, _PADDED)
    return out.reshape(np.shape(values))


def score_cells(
    scores: np.ndarray,
    targets: np.ndarray,
    count: np.ndarray,
    sum_score: np.ndarray,
    positives: np.ndarray,
) -> None:
    """Add one score column (n,) against 0/1 targets (n,) to per-cell arrays (C + 1,)."""
    _score_cells_jit(scores, targets, count, sum_score, positives, _TABLE, _PADDED)


@dataclass(frozen=True)
class BlockCheck:
    """What :func:`summarize_block` saw of a block's values, for the loader's checks.

    Attributes
    ----------
    bad : int
        Rows skipped: a NaN or infinite value, a negative value, a zero sum to
        divide by, or a label outside ``0..K-1``.
    largest : float
        The largest value (as stored, before division).
    deviation : float
        The largest ``|row sum - 1|``.
    """

    bad: int
    largest: float
    deviation: float


class BlockTotals:
    """Per-cell and per-row sums of one model's blocks, added to in place.

    Counts are kept as float64 next to the sums of the same cell (one cache line
    per update); they are exact integers up to 2**53 rows.

    Attributes
    ----------
    confidence : numpy.ndarray of float64, shape (C + 1, 3)
        Top-label count, confidence sum and hits per cell.
    classes : numpy.ndarray of float64, shape (K * (C + 1), 2)
        Count and score sum per class column and cell (column ``k``'s cells are
        rows ``k * (C + 1)`` onwards).
    positives : numpy.ndarray of float64, shape (K * (C + 1), 2)
        Count and score sum of the rows whose label is the column, per column and
        cell (the score sum gives the within-bin covariance of score and outcome,
        the Brier decomposition's residual).
    binary : numpy.ndarray of float64, shape (C + 1, 4), or (0, 4) unless K = 2
        K = 2, per cell of the positive column ``p1`` (the core bins that column
        for both of a binary model's decompositions): sums of ``p0``, of ``p0``
        over the rows labelled 0, of ``ln max(p0, eps)`` and of ``ln max(p1, eps)``.
    rows, hits : int
        Rows added (bad rows excluded) and rows whose top class (the first
        largest value) is the label.
    brier, log_loss : float
        Sums of the Brier score and of the log-loss (true-class probability
        clipped to ``[LOG_LOSS_EPS, 1]``) over the rows.
    """

    def __init__(self, n_classes: int) -> None:
        self.n_classes = n_classes
        self.confidence = np.zeros((N_CELLS, 3))
        self.classes = np.zeros((n_classes * N_CELLS, 2))
        self.positives = np.zeros((n_classes * N_CELLS, 2))
        self.binary = np.zeros((N_CELLS if n_classes == 2 else 0, 4))
        self.rows = 0
        self.hits = 0
        self.brier = 0.0
        self.log_loss = 0.0


#: Rows up to which a thread keeps its per-row buffers from block to block (a fresh
#: multi-MB array per block costs its page faults, 2 ms per 1e6 rows at K = 2): the
#: engine's batches (``SUMMARY_BATCH_ROWS``); 26 bytes a row at K = 2, at most 6.8 MB
#: per thread.
SCRATCH_ROWS = 1 << 18
_SCRATCH = threading.local()


def _row_buffer(name: str, n: int, shape: tuple[int, ...], dtype) -> np.ndarray:
    """A buffer of ``n`` rows: this thread's, kept for the next block up to :data:`SCRATCH_ROWS`."""
    if n > SCRATCH_ROWS:
        return np.empty((n, *shape), dtype)
    kept = getattr(_SCRATCH, name, None)
    if kept is None or kept.shape[0] < n:
        kept = np.empty((n, *shape), dtype)
        setattr(_SCRATCH, name, kept)
    return kept[:n]


def summarize_block(
    values: np.ndarray, labels: np.ndarray, exact: float, totals: BlockTotals
) -> BlockCheck:
    """Add the statistics of one block of probability rows to ``totals``, in one loop.

    Parameters
    ----------
    values : numpy.ndarray, shape (K, n), float32 or float64
        The class columns as stored (``np.stack(columns)``), or a transposed
        ``(n, K)`` matrix.
    labels : numpy.ndarray, shape (n,), integer
        Class indices.
    exact : float
        Rows with ``|sum - 1| > exact`` are divided by their sum (in float64), the
        others used as they are: the loader's rule
        (:func:`~calibration_core.io.checks.exact_tolerance`); ``inf`` never divides.
    totals : BlockTotals
        Added to.

    Returns
    -------
    BlockCheck
        Rows skipped as bad, and what the loader's checks need to know whether to
        look at the block again (largest value and row-sum deviation).
    """
    n = values.shape[1]
    # The logarithms are vectorised NumPy passes after the loop, 3x faster than math.log.
    binary = totals.n_classes == 2
    true_p = _row_buffer("true_p", n, (), np.float64)
    cells = _row_buffer("cells", n if binary else 0, (), np.uint16)
    clipped = _row_buffer("clipped", n if binary else 0, (2,), np.float64)
    bad, hits, brier, largest, deviation = _summarize_block_jit(
        values,
        np.asarray(labels, dtype=np.intp),
        float(exact),
        totals.confidence.reshape(-1),
        totals.classes.reshape(-1),
        totals.positives.reshape(-1),
        totals.binary.reshape(-1),
        true_p,
        cells,
        clipped,
        _TABLE,
        _PADDED,
    )
    used = n - bad
    totals.rows += used
    totals.hits += hits
    totals.brier += brier
    true_log = true_p[:used]
    if binary:
        logs = np.log(clipped[:used], out=clipped[:used])
        _binary_logs_jit(cells[:used], logs, totals.binary.reshape(-1), true_log)
    else:
        np.log(true_log, out=true_log)
    totals.log_loss -= float(true_log.sum())
    return BlockCheck(bad, largest, deviation)


def warm() -> None:
    """Compile (or load from the cache) the variants the engine calls: float32 and
    float64 blocks with writeable or read-only labels (Arrow's own, from
    :func:`~calibration_core.io.tables.index_labels`), a transposed matrix, and the
    cell index."""
    labels = np.zeros(1, dtype=np.intp)
    stored = labels.copy()
    stored.flags.writeable = False  # Numba compiles read-only arrays apart
    totals = BlockTotals(2)
    for dtype in (np.float32, np.float64):
        block = np.array([[0.25], [0.75]], dtype=dtype)
        for y in (labels, stored):
            summarize_block(block, y, 1e-12, totals)
    matrix = np.array([[0.25, 0.75], [0.5, 0.5]])  # (n, K) rows of a Predictions
    summarize_block(matrix.T, np.zeros(2, dtype=np.intp), np.inf, totals)
    cell_index(np.zeros(1))
