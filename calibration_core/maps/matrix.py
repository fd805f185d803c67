"""Matrix scaling (Guo et al. 2017; survey §5.4, eq. 15-16).

Convention: ``softmax(W z + b)`` with a full (K, K) matrix and K intercepts
(K^2 + K parameters), on the logits ``z`` as given when known, else on the
log-probabilities ``ln s`` (where it is the same model as Dirichlet
calibration). The survey's printed minus signs are dropped, as for
temperature scaling, so the identity map is ``W = I, b = 0`` (the starting
point of the fit).

With K^2 parameters it overfits small calibration sets: on 5,000 rows of a
K = 100 network (10,100 parameters) plain matrix scaling reaches a held-out
log-loss of 12.7 against 0.88 for temperature scaling. The default is
therefore regularised with ODIR (off-diagonal and intercept penalties, Kull
et al. 2019), its strengths chosen by validation log-loss exactly as
:class:`~calibration_core.maps.dirichlet.DirichletCalibration` does;
``reg_lambda=0, reg_mu=0`` gives the plain matrix scaling of Guo et al. On
probability inputs (no logits) the features are ``ln s`` and the default
matrix scaling is the same model and fit as the default Dirichlet
calibration; the two differ when logits are given.
"""

from __future__ import annotations

from .linear import OdirLinearMap
from .registry import register

__all__ = ["MatrixScaling"]


@register
class MatrixScaling(OdirLinearMap):
    """Matrix scaling: ``softmax(W z + b)`` with ODIR regularisation.

    Parameters
    ----------
    reg_lambda : float or None
        Off-diagonal penalty ``reg_lambda / (K (K - 1)) * sum_{i != j} W_ij^2``.
    reg_mu : float or None
        Intercept penalty ``reg_mu / K * sum_j b_j^2``.
        None (either strength) picks it from ``reg_grid`` by held-out log-loss.
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
    reg_lambda_, reg_mu_, reg_path_, n_iter_, converged_, train_loss_ : see
        :class:`~calibration_core.maps.linear.LinearCalibrationMap`.
    """

    name = "matrix"
    family = "multiclass"
    raw_logits = True
