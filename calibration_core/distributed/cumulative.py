"""The cumulative-differences curve of a whole dataset, from its cell statistics.

The in-memory curve (:func:`~calibration_core.measures.cumulative_differences`)
sorts the rows by score and plots ``D_i = (1/N) sum_{j <= i} (y_j - s_j)``
against the rank ``i/N``, at the end of each group of equal scores. The rows
below a cell threshold ``T_c`` (:data:`~.cells.CELL_THRESHOLDS`) are exactly
cells ``0..c``, and a tie group never straddles a threshold, so at every cell
edge the in-memory curve has a point, and its rank and ``D`` are sums of the
cells' counts, positives and score sums: **exact** (up to the order of float
additions, well below 1e-12). :func:`summary_cumulative` gives the curve at the
edges of every non-empty cell.

What the cells do not hold, bounded:

* **between two edges** the curve is not known. In a cell of scores in
  ``[a, b]`` with ``n`` rows, ``P`` positives and total ``T = P - S``, a
  prefix of the cell adds ``Pi`` with ``-(n - P) b <= Pi <= P (1 - a)`` (a
  positive adds at most ``1 - a``, a negative at least ``-b``) and ``T - P
  (1 - a) <= Pi <= T + (n - P) b`` (the same bounds on the rest of the
  cell); :attr:`CellCumulative.lower` and :attr:`~CellCumulative.upper` are
  ``D``'s range within each cell. A cell with many rows (scores near 1 of an
  overconfident network) can hide a large excursion, and the range says how
  large;
* hence the **KS error** ``max |D|`` and **Kuiper's statistic** ``max D - min
  D`` of the full curve are bracketed: the values at the edges are lower
  bounds, the ranges give upper bounds (:meth:`CellCumulative.test`);
* the **standard deviation under calibration**, ``sqrt(sum s (1 - s)) / N``,
  needs ``sum s^2``, which the cells do not keep. Per cell ``S^2 / n <= sum
  s^2 <= (a + b) S - n a b`` (Jensen; ``(s - a)(b - s) >= 0``), a bracket of
  width at most ``n w^2 / 4`` for a cell of width ``w`` (at most 0.01, at
  both ends of [0, 1]). The curve's ``std`` is the upper end (each cell's
  scores at their mean, the wider band); ``std_lower`` the lower end;
* the **p-values** of KS and Kuiper (decreasing in ``statistic / sigma``)
  are bracketed by those of the two ends.

Spiegelhalter's Z needs ``sum s^2`` too and is not computed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CalibrationInputError
from ..measures.cumulative import (
    CumulativeDifferences,
    CumulativeTestResult,
    brownian_range_sf,
    cumulative_test_from_curve,
    sup_abs_brownian_sf,
)
from .cells import CELL_THRESHOLDS, CellStatistics
from .summary import ModelSummary

__all__ = ["CellCumulative", "CumulativeBounds", "summary_cumulative"]


@dataclass(frozen=True)
class CumulativeBounds:
    """KS error, Kuiper's statistic, sigma and p-values of the full curve, as ``(low, high)``.

    Attributes
    ----------
    at_edges : CumulativeTestResult
        The in-memory test of the curve at the cell edges (its ``ks_error``
        and ``kuiper`` are the lower ends; its sigma the upper end).
    ks_error, kuiper, sigma, ks_p_value, kuiper_p_value : tuple of float
        The full curve's value lies in ``[low, high]``.
    """

    at_edges: CumulativeTestResult
    ks_error: tuple[float, float]
    kuiper: tuple[float, float]
    sigma: tuple[float, float]
    ks_p_value: tuple[float, float]
    kuiper_p_value: tuple[float, float]


@dataclass(frozen=True, eq=False)
class CellCumulative:
    """The cumulative differences at the cell edges, and what the cells bound between them.

    Attributes
    ----------
    curve : CumulativeDifferences
        Points at rank 0 and at the upper edge of every non-empty cell
        (``score``: that edge, 1 at the last point); ``rank`` and
        ``difference`` exact; ``std`` the upper end of its bracket.
    std_lower : numpy.ndarray
        The lower end of ``std``'s bracket at the same points.
    lower, upper : numpy.ndarray
        ``D``'s range inside the cell that ends at each point (0 at the first).
    """

    curve: CumulativeDifferences
    std_lower: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    def test(self) -> CumulativeBounds:
        """The full curve's KS error, Kuiper statistic, sigma and p-values, bracketed."""
        d = self.curve.difference
        at_edges = cumulative_test_from_curve(self.curve)
        ks = (at_edges.ks_error, float(max(np.abs(self.lower).max(), np.abs(self.upper).max())))
        top, bottom = max(d.max(), self.upper.max()), min(d.min(), self.lower.min())
        kuiper = (at_edges.kuiper, float(top - bottom))
        sigma = (float(self.std_lower[-1]), at_edges.sigma)
        return CumulativeBounds(
            at_edges,
            ks,
            kuiper,
            sigma,
            _p_bracket(sup_abs_brownian_sf, ks, sigma),
            _p_bracket(brownian_range_sf, kuiper, sigma),
        )


def _p_value(sf, statistic: float, sigma: float) -> float:
    """The in-memory rule: the law's tail at ``statistic / sigma``; 0/1 without variance."""
    if sigma > 0:
        return sf(statistic / sigma)
    return 1.0 if statistic == 0 else 0.0


def _p_bracket(sf, statistic: tuple[float, float], sigma: tuple[float, float]):
    """``(low, high)`` of a p-value decreasing in the statistic and increasing in sigma."""
    return (_p_value(sf, statistic[1], sigma[0]), _p_value(sf, statistic[0], sigma[1]))


def cell_edges() -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``: every cell's score range ``[a, b]`` (0 and 1 at the ends), shape (C + 1,)."""
    return np.concatenate([[0.0], CELL_THRESHOLDS]), np.concatenate([CELL_THRESHOLDS, [1.0]])


def _within_cells(start, end, n, positives, a, b, total_rows: int):
    """``D``'s range inside each cell from its value at both edges (module docstring)."""
    up, down = positives * (1.0 - a) / total_rows, (n - positives) * b / total_rows
    upper = np.minimum(start + up, end + down)
    lower = np.maximum(start - down, end - up)
    # the edges themselves are in the range (the bounds hold them but for float rounding)
    return np.minimum(lower, np.minimum(start, end)), np.maximum(upper, np.maximum(start, end))


def cells_cumulative(cells: CellStatistics) -> CellCumulative:
    """The :class:`CellCumulative` of one column's cell statistics, shape (C + 1,).

    Raises
    ------
    CalibrationInputError
        No rows, or statistics of several stacked columns.
    """
    if cells.count.ndim != 1:
        raise CalibrationInputError(
            "the cumulative curve is drawn for one score column: pass one column's cells "
            "(e.g. summary.confidence), not stacked classwise ones."
        )
    n_rows = int(cells.count.sum())
    if n_rows == 0:
        raise CalibrationInputError(
            "the cumulative curve needs at least one row; the cells hold 0."
        )
    a, b = cell_edges()
    keep = np.flatnonzero(cells.count)
    n, s = cells.count[keep].astype(np.float64), cells.sum_score[keep]
    p, a, b = cells.positives[keep].astype(np.float64), a[keep], b[keep]
    mean = s / n
    var_high = np.cumsum(s - s * mean)  # each cell's scores at their mean (Jensen)
    var_low = np.cumsum(s - ((a + b) * s - n * a * b))
    d = np.concatenate([[0.0], np.cumsum(p - s) / n_rows])
    lower, upper = _within_cells(d[:-1], d[1:], n, p, a, b, n_rows)
    curve = CumulativeDifferences(
        rank=np.concatenate([[0.0], np.cumsum(n) / n_rows]),
        score=np.concatenate([[np.nan], np.minimum(b, 1.0)]),
        difference=d,
        std=np.concatenate([[0.0], np.sqrt(np.maximum(var_high, 0.0)) / n_rows]),
        n_samples=n_rows,
    )
    std_lower = np.concatenate([[0.0], np.sqrt(np.maximum(var_low, 0.0)) / n_rows])
    return CellCumulative(
        curve, np.minimum(std_lower, curve.std), np.append(0.0, lower), np.append(0.0, upper)
    )


def summary_cumulative(
    summary: ModelSummary, notion: str = "confidence", class_index: int | None = None
) -> CellCumulative:
    """The whole dataset's cumulative differences of one notion, from a model's cells.

    Parameters
    ----------
    summary : ModelSummary
    notion : {"confidence", "binary", "class"}
        Top label; the positive class of a binary model; class ``class_index``
        against the rest.
    class_index : int, optional
        For ``notion="class"``.

    Returns
    -------
    CellCumulative
        Exact at the cell edges; bounds between them (module docstring).

    Raises
    ------
    CalibrationInputError
        An unknown notion, binary on K != 2, a missing or unknown class.
    """
    if notion == "confidence":
        return cells_cumulative(summary.confidence)
    if notion == "binary":
        summary.statistics("binary", 1)  # raises for K != 2
        class_index = 1
    elif notion != "class":
        raise CalibrationInputError(
            f"unknown notion {notion!r} for a cumulative curve; use 'confidence', 'binary' or "
            "'class' (with a class_index)."
        )
    if class_index is None or not 0 <= class_index < summary.n_classes:
        raise CalibrationInputError(
            f"class_index must be one of 0..{summary.n_classes - 1} for model "
            f"{summary.name!r}, got {class_index!r}."
        )
    cw = summary.classwise
    return cells_cumulative(
        CellStatistics(cw.count[class_index], cw.sum_score[class_index], cw.positives[class_index])
    )
