"""The compiled per-block summary of the Dask engine (Numba; the ``dask`` extra).

One compiled function per block of rows does all the per-value work of a
summary: the row sums of the probability columns as stored (float32 or float64,
accumulated in float64 left to right, as the loader's
:func:`~calibration_core.io.checks.row_scale` does), the division of the rows
the loader divides (the same float64 values), the cell of every value (as
``np.searchsorted(CELL_THRESHOLDS, v, side="right")``), the per-cell counts,
score sums and positives of every class column and of the top label
(``argmax``'s rule: the first largest value), the score sums of the positives
and, for K = 2, the sums the log-loss decomposition needs (:class:`BlockTotals`),
hits, and the Brier and clipped log-loss terms. NumPy needed 15-20 passes over
the values for the same work (BENCHMARKS.md, issue 18).

It works :data:`SUB_ROWS` rows at a time. The row sums and the divisions of a
sub-block are passes down its columns, which the compiler vectorises (no
``ZeroDivisionError`` check: ``error_model="numpy"``, and the divisors are
checked first); the cells are taken column by column too, and then the per-cell
sums are added row by row, so every sum adds the same floats in the same order
as a row-by-row loop would (a sub-block with a bad row is run by that loop).
A class column's count and score sum sit next to its positives' count and score
sum (:attr:`BlockTotals.class_cells`), so the true class's update finds its line
in L1. 25-41 % less CPU than one row-by-row loop (BENCHMARKS.md).

The kernel checks nothing itself beyond what keeps it safe: a row with a NaN, an
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


def njit_cached(func, **options):
    """``njit(nogil=True, cache=True, **options)``, or without the cache where none is writable."""
    try:
        return numba.njit(nogil=True, cache=True, **options)(func)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(nogil=True, **options)(func)


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


#: Rows of a sub-block: its row sums and divisions are vectorised passes down columns
#: of ``SUB_ROWS`` values; its buffers of (K, SUB_ROWS) values and cells stay in L1 or
#: L2 (128, 512 or 1,024 rows were no faster).
SUB_ROWS = 256


def _summarize_block(
    values, labels, exact, start, stop, conf, classes, binary, true_p, cells, clipped, table,
    padded, sub_rows, seen, brier,
):  # fmt: skip
    """Accumulate rows ``start..stop`` of a block, ``sub_rows`` at a time; see
    :func:`summarize_block`. ``seen`` (largest value, largest ``|row sum - 1|``) and
    ``brier`` carry on from the previous rows; ``true_p`` is indexed from ``start``.

    A sub-block whose rows are all clean (finite sums, no negative value, no zero
    sum to divide by, labels in range) runs in passes: row sums column by column,
    divisions and cells column by column (both vectorise), then the per-cell sums
    row by row, in row order, so every sum adds the same floats in the same order
    as :func:`_rows_one_by_one`, which takes any other sub-block.
    """
    k = values.shape[0]
    rows = np.empty((_ROW_FIELDS, sub_rows))
    first = np.empty(sub_rows, dtype=np.intp)
    scores = np.empty((k, sub_rows))
    score_cells = np.empty((k, sub_rows), dtype=np.uint32)
    bad, used, hits = 0, 0, 0
    for i0 in range(start, stop, sub_rows):
        nb = min(sub_rows, stop - i0)
        if _sub_block_sums(values, labels, exact, i0, nb, rows, seen):
            _divided_cells(values, i0, nb, rows, first, scores, score_cells, table, padded)
            hits, brier = _add_sub_block(
                labels[i0 : i0 + nb], rows, first, scores, score_cells, conf, classes, binary,
                true_p, cells, clipped, used, hits, brier,
            )  # fmt: skip
            used += nb
        else:
            skipped, used, hits, brier = _rows_one_by_one(
                values, labels, exact, i0, i0 + nb, conf, classes, binary, true_p, cells,
                clipped, table, padded, used, hits, brier,
            )  # fmt: skip
            bad += skipped
    return bad, hits, brier


#: Rows of the per-row buffer of a sub-block: row sum, divisor (the sum, or 1 for rows
#: used as stored: ``v / 1`` is ``v``), largest value, largest value divided, smallest
#: value, sum of squares of the divided values.
_ROW_FIELDS = 6
_SUM, _DIVISOR, _TOP, _TOP_DIVIDED, _LOW, _SQUARES = range(_ROW_FIELDS)


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _sub_block_sums(values, labels, exact, i0, nb, rows, seen):
    """Row sums (float64, left to right), largest and smallest values of ``nb`` rows;
    their divisors. True when every row is clean (see :func:`_summarize_block`)."""
    k = values.shape[0]
    total, top, low = rows[_SUM], rows[_TOP], rows[_LOW]
    total[:nb] = 0.0
    top[:nb] = -np.inf
    low[:nb] = np.inf
    for j in range(k):
        column = values[j, i0 : i0 + nb]
        for i in range(nb):
            v = np.float64(column[i])
            total[i] += v
            top[i] = max(top[i], v)
            low[i] = min(low[i], v)
    clean = True
    for i in range(nb):
        s = total[i]
        dev = abs(s - 1.0)
        seen[1] = max(seen[1], dev)
        seen[0] = max(seen[0], top[i])
        divide = dev > exact
        y = labels[i0 + i]
        clean &= math.isfinite(s) and low[i] >= 0.0 and (s > 0.0 or not divide) and 0 <= y < k
        rows[_DIVISOR, i] = s if divide else 1.0
        rows[_TOP_DIVIDED, i] = top[i] / s if divide else top[i]
    return clean


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _divided_cells(values, i0, nb, rows, first, scores, score_cells, table, padded):
    """The loader's float64 values of ``nb`` clean rows, their cells, the sum of their
    squares and the top label (the first column equal to the largest value)."""
    k = values.shape[0]
    divisor, squares, top = rows[_DIVISOR], rows[_SQUARES], rows[_TOP_DIVIDED]
    squares[:nb] = 0.0
    first[:nb] = k
    for j in range(k):
        column, p = values[j, i0 : i0 + nb], scores[j]
        for i in range(nb):
            p[i] = np.float64(column[i]) / divisor[i]
            squares[i] += p[i] * p[i]
        for i in range(nb):
            first[i] = min(first[i], j if p[i] == top[i] else k)
        c = score_cells[j]
        for i in range(nb):
            c[i] = _cell(p[i], table, padded)


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _add_sub_block(
    labels, rows, first, scores, score_cells, conf, classes, binary, true_p, cells, clipped,
    used, hits, brier,
):  # fmt: skip
    """Add ``len(labels)`` clean rows to the per-cell sums, in row order."""
    k = scores.shape[0]
    for i in range(labels.shape[0]):
        for j in range(k):
            at = np.uintp(4 * (j * N_CELLS + score_cells[j, i]))
            classes[at] += 1.0
            classes[at + 1] += scores[j, i]
        y = labels[i]
        p = scores[y, i]
        at = np.uintp(4 * (y * N_CELLS + score_cells[y, i]) + 2)  # its line is still in L1
        classes[at] += 1.0
        classes[at + 1] += p
        if k == 2:
            _binary_row(scores[0, i], scores[1, i], y, score_cells[1, i],
                        binary, np.uintp(used + i), cells, clipped)  # fmt: skip
        label = first[i]
        at = np.uintp(3 * score_cells[label, i])
        correct = label == y
        conf[at] += 1.0
        conf[at + 1] += rows[_TOP_DIVIDED, i]
        conf[at + 2] += correct
        hits += correct
        brier += rows[_SQUARES, i] - 2.0 * p + 1.0
        true_p[np.uintp(used + i)] = min(max(p, LOG_LOSS_EPS), 1.0)
    return hits, brier


@numba.njit(nogil=True, error_model="numpy")
def _rows_one_by_one(
    values, labels, exact, i0, i1, conf, classes, binary, true_p, cells, clipped, table, padded,
    used, hits, brier,
):  # fmt: skip
    """Rows ``i0..i1`` one at a time, skipping and counting the bad ones (the loader then
    names them); the same sums as the sub-block passes for the others."""
    k = values.shape[0]
    bad = 0
    for i in range(i0, i1):
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
        divide = abs(s - 1.0) > exact
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
            at = np.uintp(4 * (j * N_CELLS + cell))
            classes[at] += 1.0
            classes[at + 1] += p
            squares += p * p
            first = min(first, j if p == top else k)
        v = np.float64(values[y, i])
        p = v / s if divide else v
        at = np.uintp(4 * (y * N_CELLS + _cell(p, table, padded)) + 2)
        classes[at] += 1.0
        classes[at + 1] += p
        if k == 2:  # ``cell`` is the positive column's (the last of the loop)
            p0 = np.float64(values[0, i])
            p1 = np.float64(values[1, i])
            if divide:
                p0, p1 = p0 / s, p1 / s
            _binary_row(p0, p1, y, cell, binary, np.uintp(used), cells, clipped)
        at = np.uintp(3 * _cell(top, table, padded))
        correct = first == y
        conf[at] += 1.0
        conf[at + 1] += top
        conf[at + 2] += correct
        hits += correct
        brier += squares - 2.0 * p + 1.0
        true_p[np.uintp(used)] = min(max(p, LOG_LOSS_EPS), 1.0)
        used += 1
    return bad, used, hits, brier


@numba.njit(inline="always", nogil=True)
def _binary_row(p0, p1, y, cell, binary, row, cells, clipped):
    """K = 2: sums of a row in the cell of its positive-class value ``p1`` (see BlockTotals).

    ``p0``, ``p1`` are the loader's values of the row. The logarithms are left to
    :func:`_binary_logs`: ``cells[row]`` gets the cell and the label
    (``2 * cell + y``), ``clipped[row]`` the values clipped below.
    """
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
_summarize_block_jit = njit_cached(_summarize_block, error_model="numpy")
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
    class_cells : numpy.ndarray of float64, shape (K * (C + 1), 4)
        Per class column and cell (column ``k``'s cells are rows ``k * (C + 1)``
        onwards): count and score sum of the column's values, then count and score
        sum of the rows whose label is the column (the score sum of the positives
        gives the within-bin covariance of score and outcome, the Brier
        decomposition's residual). One row of four is half a cache line.
    classes, positives : numpy.ndarray of float64, shape (K * (C + 1), 2)
        Views of ``class_cells``: its first two and its last two columns.
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
        self.class_cells = np.zeros((n_classes * N_CELLS, 4))
        self.classes = self.class_cells[:, :2]
        self.positives = self.class_cells[:, 2:]
        self.binary = np.zeros((N_CELLS if n_classes == 2 else 0, 4))
        self.rows = 0
        self.hits = 0
        self.brier = 0.0
        self.log_loss = 0.0


#: Rows of the per-row buffers a thread keeps from block to block (a fresh multi-MB
#: array per block costs its page faults, 2 ms per 1e6 rows at K = 2): larger blocks are
#: summarised this many rows at a time. 26 bytes a row at K = 2, at most 6.8 MB per thread.
SCRATCH_ROWS = 1 << 18
_SCRATCH = threading.local()


def _row_buffer(name: str, n: int, shape: tuple[int, ...], dtype) -> np.ndarray:
    """A buffer of ``n <= SCRATCH_ROWS`` rows: this thread's, kept for the next block."""
    kept = getattr(_SCRATCH, name, None)
    if kept is None or kept.shape[0] < n:
        kept = np.empty((n, *shape), dtype)
        setattr(_SCRATCH, name, kept)
    return kept[:n]


def summarize_block(
    values: np.ndarray,
    labels: np.ndarray,
    exact: float,
    totals: BlockTotals,
    sub_rows: int = SUB_ROWS,
) -> BlockCheck:
    """Add the statistics of one block of probability rows to ``totals``, in one pass.

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
    sub_rows : int
        Rows per sub-block (:data:`SUB_ROWS`). Any value gives the same sums, bit for
        bit; it only changes the speed.

    Returns
    -------
    BlockCheck
        Rows skipped as bad, and what the loader's checks need to know whether to
        look at the block again (largest value and row-sum deviation).
    """
    n = values.shape[1]
    labels = np.asarray(labels, dtype=np.intp)
    seen = np.array([-np.inf, 0.0])  # largest value, largest |row sum - 1|
    bad = 0
    for start in range(0, n, SCRATCH_ROWS):  # the per-row buffers stay this thread's
        bad += _summarize_rows(values, labels, exact, totals, start, min(n, start + SCRATCH_ROWS),
                               sub_rows, seen)  # fmt: skip
    return BlockCheck(bad, float(seen[0]), float(seen[1]))


def _summarize_rows(values, labels, exact, totals, start, stop, sub_rows, seen) -> int:
    """Rows ``start..stop`` (at most :data:`SCRATCH_ROWS`) into ``totals``; the bad rows."""
    # The logarithms are vectorised NumPy passes after the loop, 3x faster than math.log.
    binary = totals.n_classes == 2
    n = stop - start
    true_p = _row_buffer("true_p", n, (), np.float64)
    cells = _row_buffer("cells", n if binary else 0, (), np.uint16)
    clipped = _row_buffer("clipped", n if binary else 0, (2,), np.float64)
    bad, hits, brier = _summarize_block_jit(
        values, labels, float(exact), start, stop, totals.confidence.reshape(-1),
        totals.class_cells.reshape(-1), totals.binary.reshape(-1), true_p, cells, clipped,
        _TABLE, _PADDED, int(sub_rows), seen, totals.brier,
    )  # fmt: skip
    used = n - bad
    totals.rows += used
    totals.hits += hits
    totals.brier = brier
    true_log = true_p[:used]
    if binary:
        logs = np.log(clipped[:used], out=clipped[:used])
        _binary_logs_jit(cells[:used], logs, totals.binary.reshape(-1), true_log)
    else:
        np.log(true_log, out=true_log)
    totals.log_loss -= float(true_log.sum())
    return bad


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
