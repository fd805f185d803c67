"""Platt scaling: a sigmoid of an affine function of the score (survey §5.3, eq. 7-8).

``g(s) = sigmoid(w * t(s) + b)`` with the input transform ``t``:

``"logit"`` (default)
    ``t(s) = ln(s / (1 - s))``, the survey's advice for probability inputs;
    ``w = 1, b = 0`` is the identity map and is the starting point of the fit.
``"log"``
    ``t(s) = ln s`` (PyCalib's ``LogisticCalibration`` default).
``"raw"``
    ``t(s) = s``, the score itself, as scikit-learn's sigmoid calibration does
    on ``predict_proba`` outputs.

Scores are clipped to ``[EPS, 1 - EPS]`` (``EPS = 1e-12``) before a log.
The fit minimises the mean log-loss with Newton's method (analytic gradient
and Hessian, batched over the one-vs-rest columns, see
:mod:`~calibration_core.maps.onevsrest`). ``platt_targets=True`` replaces the
0/1 targets by Platt's smoothed targets ``(N+ + 1) / (N+ + 2)`` and
``1 / (N- + 2)`` (with ``sample_weight``, ``N+`` and ``N-`` are the summed
weights of the positive and negative rows, so integer weights act as repeated
rows; scikit-learn counts rows there); with ``input_transform="raw"`` the fit is then scikit-learn's
``_SigmoidCalibration`` (to about 1e-8; scikit-learn writes the map as
``1 / (1 + exp(A f + B))``, so ``A = -w`` and ``B = -b``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from ..errors import CalibrationInputError
from .base import EPS
from .binary_columns import BinaryColumns, warn_few_rows
from .counts import one_vs_rest_parameters
from .logistic_columns import fit_logistic_columns
from .onevsrest import OneVsRestMap
from .registry import register
from .state import score_columns, state_array

__all__ = ["PlattScaling"]

INPUT_TRANSFORMS = ("logit", "log", "raw")


def transform_scores(scores: np.ndarray, kind: str) -> np.ndarray:
    """Platt's input ``t(s)`` of score columns (C, N), a new C-contiguous (C, N) array."""
    if kind == "raw":
        return np.array(scores, dtype=np.float64, order="C")
    s = np.clip(scores, EPS, 1.0 - EPS, out=np.empty(scores.shape))
    if kind == "log":
        return np.log(s, out=s)
    return np.log(np.divide(s, 1.0 - s, out=s), out=s)


@register
class PlattScaling(OneVsRestMap):
    """Platt scaling, one-vs-rest for K > 2 (registry name ``"platt"``).

    Parameters
    ----------
    input_transform : {"logit", "log", "raw"}
        The score transform ``t`` (see the module docstring).
    platt_targets : bool
        Fit Platt's smoothed targets instead of the plain 0/1 log-loss.
    input : {"probs", "logits"}
        What ``X`` holds; logits are turned into probabilities by a softmax.

    Attributes
    ----------
    coef_ : numpy.ndarray, shape (C, 2)
        ``[w, b]`` per fitted column (C = 1 for K = 2, the positive class; else K).
    converged_ : bool
        Newton's method converged for every column.
    n_iter_ : int
        Newton iterations of the slowest column.
    n_parameters_ : int
        ``2 C`` (``w, b`` per fitted column).
    """

    name = "platt"

    def __init__(
        self, input_transform: str = "logit", platt_targets: bool = False, input: str = "probs"
    ) -> None:
        self.input_transform = input_transform
        self.platt_targets = platt_targets
        self.input = input

    def _check_params(self) -> None:
        if self.input_transform not in INPUT_TRANSFORMS:
            raise CalibrationInputError(
                f"PlattScaling input_transform must be one of {', '.join(INPUT_TRANSFORMS)}, "
                f"got {self.input_transform!r}."
            )
        if not isinstance(self.platt_targets, (bool, np.bool_)):
            raise CalibrationInputError(
                f"PlattScaling platt_targets must be True or False, got {self.platt_targets!r}."
            )

    def _fit_columns(self, columns: BinaryColumns) -> None:
        self._check_params()
        warn_few_rows(type(self).__name__, columns.n_rows, 2)
        one_sided = columns.warn_one_sided(type(self).__name__)
        x = transform_scores(columns.scores, self.input_transform)
        n_pos = columns.positive_weight  # row counts when unweighted
        n_neg = columns.total_weight - n_pos
        init = np.empty((columns.n_columns, 2))
        if self.input_transform == "logit":
            init[:] = (1.0, 0.0)  # the identity map
        else:
            init[:, 0] = 0.0  # scikit-learn's start: the smoothed base rate
            init[:, 1] = np.log((n_pos + 1.0) / (n_neg + 1.0))
        t_pos = t_neg = None
        if self.platt_targets:
            t_pos = (n_pos + 1.0) / (n_pos + 2.0)
            t_neg = 1.0 / (n_neg + 2.0)
        fit = fit_logistic_columns(
            [x], columns.positive, init, t_pos=t_pos, t_neg=t_neg, weights=columns.weights
        )
        self.coef_ = fit.params
        self._report_logistic(fit, columns, one_sided, hard_targets=not self.platt_targets)

    def _predict_columns(self, scores: np.ndarray) -> np.ndarray:
        x = transform_scores(scores, self.input_transform)
        return expit(self.coef_[:, 0:1] * x + self.coef_[:, 1:2])

    def _count_parameters(self) -> int:
        return int(self.coef_.size)

    def planned_parameters(self, n_classes: int) -> int | None:
        """2 per score column (:meth:`CalibrationMap.planned_parameters`)."""
        return one_vs_rest_parameters(2, n_classes)

    def _fitted_state(self) -> dict[str, Any]:
        return {"coef": self.coef_.tolist(), "n_iter": int(self.n_iter_)}

    def _load_fitted_state(self, state: dict[str, Any]) -> None:
        self.coef_ = state_array(state, "coef", (score_columns(self.n_classes_), 2))
        self.n_iter_ = int(state.get("n_iter", 0))
