"""Isotonic calibration (survey §5.3, eq. 5-6), one-vs-rest for K > 2.

A non-decreasing map fitted by least squares against the 0/1 targets (the
Brier score on the fit set, weighted by ``sample_weight`` when given, as
scikit-learn's ``IsotonicRegression.fit(X, y, sample_weight)`` does) with the
pool-adjacent-violators algorithm (weighted PAVA), and linearly interpolated
between its steps, exactly as scikit-learn's
``IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)``: the map passes
through the first and last fit score of every constant piece, and is constant
below the smallest and above the largest fit score.

Outputs are clipped to ``[eps, 1 - eps]`` (the survey's advice; the ends of an
isotonic fit are often exactly 0 and 1). The default ``eps = 1e-7`` keeps the
log-loss of a confidently wrong prediction finite (at most 16 nats) and moves
outputs by at most 1e-7 from scikit-learn's.

All columns are fitted together: one sort, one tie and run merge, one compiled
PAVA (see :func:`~calibration_core.maps.isotonic_columns.fit_isotonic_columns`, which
also states the one difference from scikit-learn in what counts as a tie).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from .binary_columns import BinaryColumns
from .isotonic_columns import IsotonicColumns, fit_isotonic_columns
from .onevsrest import OneVsRestMap, check_eps
from .registry import register
from .state import score_columns, state_array

__all__ = ["IsotonicCalibration"]


@register
class IsotonicCalibration(OneVsRestMap):
    """Isotonic regression, one-vs-rest for K > 2 (registry name ``"isotonic"``).

    Parameters
    ----------
    eps : float
        Outputs are clipped to ``[eps, 1 - eps]``.
    input : {"probs", "logits"}
        What ``X`` holds; logits are turned into probabilities by a softmax.

    Attributes
    ----------
    x_thresholds_, y_thresholds_ : numpy.ndarray, shape (T,)
        Interpolation points of all fitted columns, concatenated (C = 1 for
        K = 2, the positive class; else K).
    offsets_ : numpy.ndarray, shape (C + 1,)
        Column ``c`` owns points ``offsets_[c]:offsets_[c + 1]``.
    n_parameters_ : int
        Fitted steps: the number of distinct fitted levels (constant pieces
        of the step function) summed over the columns, the degrees of freedom
        of isotonic regression (Meyer & Woodroofe 2000). Breakpoints are not
        counted apart.
    """

    name = "isotonic"

    def __init__(self, eps: float = 1e-7, input: str = "probs") -> None:
        self.eps = eps
        self.input = input

    def _output_eps(self) -> float:
        return float(self.eps)

    def _fit_columns(self, columns: BinaryColumns) -> None:
        check_eps(self.eps, type(self).__name__)
        columns.warn_one_sided(type(self).__name__)
        fit = fit_isotonic_columns(columns.scores, columns.positive, weights=columns.weights)
        self.x_thresholds_ = fit.x
        self.y_thresholds_ = fit.y
        self.offsets_ = fit.offsets

    def _predict_columns(self, scores: np.ndarray) -> np.ndarray:
        return IsotonicColumns(self.x_thresholds_, self.y_thresholds_, self.offsets_).predict(
            scores
        )

    def _count_parameters(self) -> int:
        levels = [np.unique(self.y_thresholds_[lo:hi]).size for lo, hi in pairwise(self.offsets_)]
        return int(sum(levels))

    def _fitted_state(self) -> dict[str, Any]:
        return {
            "x_thresholds": self.x_thresholds_.tolist(),
            "y_thresholds": self.y_thresholds_.tolist(),
            "offsets": self.offsets_.tolist(),
        }

    def _load_fitted_state(self, state: dict[str, Any]) -> None:
        columns = score_columns(self.n_classes_)
        self.x_thresholds_ = state_array(state, "x_thresholds", (None,))
        self.y_thresholds_ = state_array(state, "y_thresholds", (None,))
        self.offsets_ = state_array(state, "offsets", (columns + 1,), dtype=np.intp)
