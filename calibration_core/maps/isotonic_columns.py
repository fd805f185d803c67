"""Isotonic regression of 0/1 targets on C one-vs-rest score columns at once.

:func:`fit_isotonic_columns` sorts every column in one ``sort`` call
(scores and targets packed into one int64 key), merges tied scores and
then runs of equal targets with ``reduceat`` (neither changes the
isotonic fit), and runs one compiled PAVA
(``scipy.optimize.isotonic_regression``) over all columns concatenated,
column ``c`` lifted by ``2 c`` so that no block can pool across columns.
PAVA is sequential by nature; run merging leaves it about two points per
positive row, so it costs a few milliseconds.

Sorting and merging run over cache-sized blocks of columns
(:data:`~calibration_core.maps.binary_columns.BLOCK_ELEMENTS` values each).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
from scipy.optimize import isotonic_regression

from .binary_columns import BLOCK_ELEMENTS

__all__ = ["IsotonicColumns", "fit_isotonic_columns"]


@dataclass(frozen=True)
class IsotonicColumns:
    """Piecewise-linear isotonic fits of C columns, stored flat.

    Column ``c`` interpolates linearly through the points
    ``(x[offsets[c]:offsets[c+1]], y[...])`` (x non-decreasing) and is constant
    beyond the first and last point (scikit-learn's ``out_of_bounds="clip"``).

    Attributes
    ----------
    x, y : numpy.ndarray, shape (T,)
        Threshold scores and fitted values of all columns, concatenated.
    offsets : numpy.ndarray, shape (C + 1,)
        Where each column's points start and end.
    """

    x: np.ndarray
    y: np.ndarray
    offsets: np.ndarray

    def predict(self, scores: np.ndarray) -> np.ndarray:
        """Interpolated values, shape (C, N), for score columns of shape (C, N)."""
        out = np.empty_like(scores)
        for c in range(scores.shape[0]):
            part = slice(self.offsets[c], self.offsets[c + 1])
            out[c] = np.interp(scores[c], self.x[part], self.y[part])
        return out


def _isotonic_runs(
    scores: np.ndarray, positive: np.ndarray, first_col: int, weights: np.ndarray | None
):
    """Tie- and run-merged points of a block of columns (steps 1-2 of the fit).

    Returns ``(x_lo, x_hi, weight, mean, col)``, each of shape (R,): the lowest
    and highest score of every run, its row count (summed row weight when
    ``weights`` is given), its (weighted) mean target and its (global) column
    index.
    """
    n_cols, n = scores.shape
    size = n_cols * n
    # Non-negative float64 bit patterns sort like the floats; the freed last
    # mantissa bit carries the target, so one sort orders (score, target) pairs
    # (targets 0 before 1 among tied scores).
    enc = np.add(scores, 0.0, out=np.empty(scores.shape)).view(np.int64)  # -0.0 -> +0.0
    enc &= ~np.int64(1)
    enc |= positive == np.arange(first_col, first_col + n_cols)[:, None]
    if weights is None:
        enc.sort(axis=1)
        row_weight = None
    else:  # the weights follow their rows
        order = np.argsort(enc, axis=1, kind="stable")
        enc = np.take_along_axis(enc, order, axis=1)
        row_weight = weights[order].ravel()
    enc = enc.ravel()
    # The targets are the lowest bit: read the lowest byte of every value.
    low = 0 if sys.byteorder == "little" else 7
    target = (enc.view(np.uint8)[low::8] & 1).view(bool)
    enc &= ~np.int64(1)
    x = enc.view(np.float64)
    col_start = np.zeros(size, bool)
    col_start[::n] = True
    # 1. Ties: one point per distinct score (weight = count, target = mean).
    new = np.empty(size, bool)
    new[0] = True
    np.not_equal(enc[1:], enc[:-1], out=new[1:])
    new |= col_start
    if new.all():  # no ties: every score is its own point
        weight, mean, x_lo, x_hi, starts = row_weight, target, x, x, col_start
    else:
        group = np.flatnonzero(new)
        if row_weight is None:
            weight = np.diff(group, append=size).astype(np.float64)
            mean = np.add.reduceat(target.astype(np.float64), group) / weight
        else:
            weight = np.add.reduceat(row_weight, group)
            mean = np.add.reduceat(np.where(target, row_weight, 0.0), group) / weight
        x_lo = x[group]
        x_hi = x[np.r_[group[1:] - 1, size - 1]]
        starts = col_start[group]
    # 2. Runs of equal mean targets are never split by isotonic regression
    #    (pooling them leaves the fit unchanged), so merge them before PAVA.
    run_new = np.empty(mean.size, bool)
    run_new[0] = True
    np.not_equal(mean[1:], mean[:-1], out=run_new[1:])
    run_new |= starts
    first = np.flatnonzero(run_new)
    last = np.r_[first[1:] - 1, mean.size - 1]
    if weight is None:
        run_weight = np.diff(first, append=mean.size).astype(np.float64)
    else:
        run_weight = np.add.reduceat(weight, first)
    run_col = np.cumsum(starts[first]) - 1 + first_col
    return x_lo[first], x_hi[last], run_weight, mean[first].astype(np.float64), run_col


def fit_isotonic_columns(
    scores: np.ndarray,
    positive: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    block_elements: int = BLOCK_ELEMENTS,
) -> IsotonicColumns:
    """Increasing isotonic regression of 0/1 targets on every score column at once.

    The result equals scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``
    fitted column by column, with one difference in what counts as a tie:
    scores are tied when equal after clearing the last bit of their float64
    mantissa (a relative 2.2e-16; scikit-learn pools scores within 1e-15 of
    each other in absolute terms), and the threshold scores are stored with
    that bit cleared.

    Parameters
    ----------
    scores : numpy.ndarray, shape (C, N)
        Score columns in [0, 1] (any memory layout, e.g. ``probs.T``).
    positive : numpy.ndarray, shape (N,)
        Column each row is a positive of, or -1.
    weights : numpy.ndarray, shape (N,), optional
        Positive row weights of the squared error (weighted PAVA); None weighs
        every row 1.
    block_elements : int
        Sorting and merging run over cache-sized blocks of columns; the PAVA
        runs once over all of them.

    Returns
    -------
    IsotonicColumns
        Only the first and last point of each constant piece are kept (as
        scikit-learn's ``X_thresholds_``), so the fit is small.
    """
    n_cols, n = scores.shape
    width = max(1, block_elements // max(n, 1))
    parts = [
        _isotonic_runs(scores[c0 : c0 + width], positive, c0, weights)
        for c0 in range(0, n_cols, width)
    ]
    x_lo, x_hi, run_weight, run_mean, run_col = (
        np.concatenate(a) for a in zip(*parts, strict=True)
    )
    # 3. One PAVA over all columns, column c lifted by 2c (values in [0, 1]).
    lift = 2.0 * run_col
    fitted = isotonic_regression(run_mean + lift, weights=run_weight, increasing=True).x - lift
    np.clip(fitted, 0.0, 1.0, out=fitted)
    # 4. Points: the first and last score of every constant piece of the fit
    #    (once when they coincide), as scikit-learn's trimmed thresholds.
    piece_new = np.empty(fitted.size, bool)
    piece_new[0] = True
    np.not_equal(fitted[1:], fitted[:-1], out=piece_new[1:])
    piece_new |= run_col != np.r_[-1, run_col[:-1]]
    piece_first = np.flatnonzero(piece_new)
    piece_last = np.r_[piece_first[1:] - 1, fitted.size - 1]
    lo = x_lo[piece_first]
    hi = x_hi[piece_last]
    px = np.column_stack([lo, hi]).ravel()
    py = np.repeat(fitted[piece_first], 2)
    pcol = np.repeat(run_col[piece_first], 2)
    keep = np.ones(px.size, bool)
    keep[1::2] = hi != lo
    px, py, pcol = px[keep], py[keep], pcol[keep]
    offsets = np.searchsorted(pcol, np.arange(n_cols + 1), side="left")
    return IsotonicColumns(px, py, offsets)
