"""Dirichlet calibration with ODIR (Kull et al. 2019; survey §5.4, eq. 17-18).

Convention: ``softmax(W ln s + b)`` on the log-probabilities ``ln s`` (from
the logits as ``log_softmax(z)`` when they are known; probabilities are
clipped at :data:`~calibration_core.maps.base.EPS` before the log). The survey's
printed minus signs are dropped, so ``W = I, b = 0`` is the identity map and
the starting point of the fit.

ODIR (off-diagonal and intercept regularisation), scaled as in the paper::

    mean log-loss + lambda / (K (K - 1)) * sum_{i != j} W_ij^2 + mu / K * sum_j b_j^2

Strengths left as None are chosen by held-out log-loss: a stratified, seeded
20 % of the rows (of a 25,000-row subsample when N is larger) is held out,
the map is fitted on the rest for the values of ``reg_grid`` from the largest
down (warm started; lambda = mu when both are chosen) until the held-out loss
stops falling, and the best is refitted on all N rows, its strength scaled by
(rows fitted on) / N so that the penalty keeps its weight against the summed
log-likelihood (see :func:`~calibration_core.maps.linear.fit_linear_map`).

On probability input (no logits) it is the same model as
:class:`~calibration_core.maps.matrix.MatrixScaling` with the same parameters
(identical fits and rows): :func:`~calibration_core.maps.same_model_as` says
so, and front ends fit it once.
"""

from __future__ import annotations

from .linear import OdirLinearMap
from .registry import register

__all__ = ["DirichletCalibration"]


@register
class DirichletCalibration(OdirLinearMap):
    """Dirichlet calibration ``softmax(W ln s + b)`` with ODIR regularisation.

    Parameters
    ----------
    reg_lambda : float or None
        Off-diagonal strength lambda; None chooses it by validation log-loss.
    reg_mu : float or None
        Intercept strength mu; None chooses it by validation log-loss.
    reg_grid : sequence of float or None
        Strengths tried when one is None; None means
        :data:`~calibration_core.maps.linear.DEFAULT_REG_GRID`
        (1e-2, 1e-1, ..., 1e5: K = 100 networks need 1e3-1e4, K = 10 ones 1-100).
    input : {"probs", "logits"}
    max_iter : int
        L-BFGS-B iteration limit.
    random_state : int
        Seed of the validation split.

    Attributes
    ----------
    coef_ : numpy.ndarray, shape (K, K)
        ``W``.
    intercept_ : numpy.ndarray, shape (K,)
        ``b``.
    reg_lambda_, reg_mu_ : float
        Strengths of the final fit: as given, or the chosen grid value times
        ``n_fit / N`` (the same weight against the summed log-likelihood).
    reg_path_ : list of dict
        ``reg_lambda``, ``reg_mu``, held-out ``val_loss`` and ``n_fit`` of each
        tried value.
    n_iter_, converged_, train_loss_ : see
        :class:`~calibration_core.maps.linear.LinearCalibrationMap`.
    """

    name = "dirichlet"
    family = "multiclass"
    raw_logits = False
