"""The multiclass linear maps' shared machinery (vector, matrix, Dirichlet).

Not a map itself. Each of these maps is a softmax of an affine function of
per-class input features ``x`` (logits, or log-probabilities), ``"vector"``
(``softmax(w * x + b)``) or ``"full"`` (``softmax(x @ W.T + b)``) kind.

- :mod:`~calibration_core.maps.linear.objective`: the model, its log-loss and
  its penalties (:class:`SoftmaxLinearObjective`).
- :mod:`~calibration_core.maps.linear.fit`: the L-BFGS-B fit and the choice of
  penalty strengths (:func:`fit_linear_map`).
- :mod:`~calibration_core.maps.linear.base`: the base classes of the maps
  (:class:`LinearCalibrationMap`, :class:`OdirLinearMap`).

Fits report ``converged_`` and ``n_iter_``, warn (:class:`CalibrationFitWarning`)
when there are fewer rows than parameters or the classes are separable, and warn
(``ConvergenceWarning``) when L-BFGS-B stops at ``max_iter``. Fits use one BLAS
thread, as the products are small.
"""

from .base import LinearCalibrationMap, OdirLinearMap
from .fit import (
    DEFAULT_REG_GRID,
    LinearFit,
    check_strength,
    fit_linear_map,
    minimize_objective,
    stratified_holdout,
)
from .objective import SoftmaxLinearObjective, identity_parameters, unpack

__all__ = [
    "DEFAULT_REG_GRID",
    "LinearCalibrationMap",
    "LinearFit",
    "OdirLinearMap",
    "SoftmaxLinearObjective",
    "check_strength",
    "fit_linear_map",
    "identity_parameters",
    "minimize_objective",
    "stratified_holdout",
    "unpack",
]
