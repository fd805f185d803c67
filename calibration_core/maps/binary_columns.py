"""One-vs-rest score columns of (N, K) probability rows, and rows from calibrated columns.

A binary map ``g: [0, 1] -> [0, 1]`` calibrates one score column against 0/1
targets (:mod:`calibration_core.maps.onevsrest`). This module turns (N, K)
probability rows into such columns (:func:`column_scores`,
:class:`BinaryColumns`) and assembles calibrated rows again
(:func:`assemble_rows`).

Columns and renormalisation
---------------------------
K = 2
    Only the positive-class column ``s = p[:, 1]`` is fitted, against
    ``label == 1``; the output row is ``[1 - g(s), g(s)]`` with ``g(s)``
    clipped to ``[eps, 1 - eps]``.
K > 2
    Column ``k`` is fitted against ``label == k`` for every class, and each
    calibrated row is renormalised by dividing by its sum::

        q_k = c_k / sum_j c_j,   c_k = clip(g_k(s_k), eps, 1 - eps)

    The clip makes every row sum positive, so a row that sums to 0 (or to a
    non-finite value) cannot occur for finite fits; should one occur anyway it
    becomes the uniform row ``1/K``, as in scikit-learn's
    ``CalibratedClassifierCV``. Every entry is then finite and strictly inside
    (0, 1) (at least about ``eps / K``), and rows sum to 1.

Columns are fitted in cache-sized blocks of :data:`BLOCK_ELEMENTS` values
(all columns in one block up to N * K = 262144, two columns per block at
N = 1e5), so that a block's working arrays stay in cache.
"""

from __future__ import annotations

import warnings
from functools import cached_property

import numpy as np

from ..errors import CalibrationFitWarning
from .base import EPS

__all__ = ["BLOCK_ELEMENTS", "BinaryColumns", "assemble_rows", "column_scores", "warn_few_rows"]

#: Columns are fitted in blocks of at most this many values per array (2 MB),
#: so that the working arrays of a block stay in cache: all columns at once for
#: N * K up to 262144 (e.g. K = 100 at N = 2,600), two columns at N = 1e5.
BLOCK_ELEMENTS = 1 << 18


def column_scores(probs: np.ndarray) -> np.ndarray:
    """The score columns a binary map calibrates: a (C, N) view of ``probs`` (no copy).

    ``C = 1`` (the positive class ``p[:, 1]``) when K = 2, ``C = K`` otherwise.
    Consumers transform it into new C-contiguous (C, N) arrays (``out=``), so
    the transposition costs no extra pass over the data.
    """
    if probs.shape[1] == 2:
        return probs[:, 1:].T
    return probs.T


class BinaryColumns:
    """The one-vs-rest view of validated ``(probs, labels)``.

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K)
    labels : numpy.ndarray, shape (N,)
    weights : numpy.ndarray, shape (N,), optional
        Positive sample weights; None weighs every row 1.

    Attributes
    ----------
    n_classes : int
        K.
    classes : numpy.ndarray, shape (C,)
        The class each column stands for: ``[1]`` when K = 2, ``0..K-1`` otherwise.
    """

    def __init__(
        self, probs: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
    ) -> None:
        self.probs = probs
        self.labels = labels
        self.weights = weights
        self.n_rows, self.n_classes = probs.shape
        self.classes = np.array([1]) if self.n_classes == 2 else np.arange(self.n_classes)

    @property
    def n_columns(self) -> int:
        """C, the number of fitted columns."""
        return int(self.classes.shape[0])

    @property
    def scores(self) -> np.ndarray:
        """Score columns, shape (C, N), a view of ``probs``."""
        return column_scores(self.probs)

    @cached_property
    def positive(self) -> np.ndarray:
        """Column each row is a positive of, or -1, shape (N,) intp."""
        if self.n_classes == 2:
            return np.where(self.labels == 1, 0, -1).astype(np.intp)
        return self.labels.astype(np.intp, copy=False)

    @cached_property
    def n_positive(self) -> np.ndarray:
        """Positive rows per column, shape (C,)."""
        if self.n_classes == 2:
            return np.array([np.count_nonzero(self.labels == 1)])
        return np.bincount(self.labels, minlength=self.n_classes)

    @cached_property
    def positive_weight(self) -> np.ndarray:
        """Summed weight of the positive rows per column, shape (C,) float64.

        The counts of :attr:`n_positive` when the rows are unweighted.
        """
        if self.weights is None:
            return self.n_positive.astype(np.float64)
        if self.n_classes == 2:
            return np.array([self.weights[self.labels == 1].sum()])
        return np.bincount(self.labels, weights=self.weights, minlength=self.n_classes)

    @property
    def total_weight(self) -> float:
        """Summed weight of all rows (N when unweighted)."""
        return float(self.n_rows) if self.weights is None else float(self.weights.sum())

    def targets(self, column: int) -> np.ndarray:
        """0/1 targets of one column, shape (N,) intp."""
        return (self.positive == column).astype(np.intp)

    def warn_one_sided(self, map_name: str) -> np.ndarray:
        """Warn about columns whose targets are all 0 or all 1; their mask, shape (C,)."""
        one_sided = (self.n_positive == 0) | (self.n_positive == self.n_rows)
        if one_sided.any():
            bad = self.classes[one_sided]
            shown = ", ".join(str(int(c)) for c in bad[:10])
            more = f" (and {bad.size - 10} more)" if bad.size > 10 else ""
            warnings.warn(
                f"{map_name}: class{'es' if bad.size > 1 else ''} {shown}{more} "
                "never (or always) occur in the fit labels, so their one-vs-rest map only "
                "learns that the class is absent (or certain); fit on more rows.",
                CalibrationFitWarning,
                stacklevel=5,
            )
        return one_sided


def assemble_rows(g: np.ndarray, n_classes: int, eps: float = EPS) -> np.ndarray:
    """Calibrated probability rows from calibrated columns (see the module docstring).

    Parameters
    ----------
    g : numpy.ndarray, shape (C, N)
        Calibrated one-vs-rest probabilities (C = 1 when K = 2, else K).
    n_classes : int
        K.
    eps : float
        Column values are clipped to ``[eps, 1 - eps]`` first.

    Returns
    -------
    numpy.ndarray, shape (N, K)
        Finite rows on the simplex, every entry strictly inside (0, 1).
    """
    g = np.clip(np.nan_to_num(g, nan=0.5), eps, 1.0 - eps)
    if n_classes == 2:
        return np.column_stack([1.0 - g[0], g[0]])
    total = g.sum(axis=0)
    bad = ~np.isfinite(total) | (total <= 0)
    out = g / np.where(bad, 1.0, total)
    if bad.any():
        out[:, bad] = 1.0 / n_classes
    return np.ascontiguousarray(out.T)


def warn_few_rows(map_name: str, n_rows: int, n_params: int) -> None:
    """Warn (:class:`CalibrationFitWarning`) when a map has more parameters per column than rows."""
    if n_rows < n_params:
        warnings.warn(
            f"{map_name}: {n_rows} rows fit {n_params} parameters per column; the map is "
            "underdetermined and will overfit. Use more calibration rows or a simpler map.",
            CalibrationFitWarning,
            stacklevel=5,
        )
