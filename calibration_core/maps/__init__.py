"""Post-hoc calibration maps of the survey (§5.3-5.4), scikit-learn compatible.

Binary maps (applied one-vs-rest with renormalisation for K > 2):
``histogram``, ``isotonic``, ``platt``, ``beta``. Multiclass maps on logits
(or log-probabilities): ``temperature``, ``vector``, ``matrix``, ``dirichlet``.

The map classes load on first use (each family module imports scikit-learn),
so ``from calibration_core.maps import MAP_NAMES`` stays cheap; the registry
functions load the family a name needs.
"""

from __future__ import annotations

from ..lazy import lazy_attributes
from .registry import (
    MAP_NAMES,
    available_maps,
    get_map_class,
    make_map,
    same_model_as,
    same_model_reason,
)

#: Public class -> the family module (named as its registry name) defining it.
_CLASSES = {
    "HistogramBinning": "histogram",
    "IsotonicCalibration": "isotonic",
    "PlattScaling": "platt",
    "BetaCalibration": "beta",
    "TemperatureScaling": "temperature",
    "VectorScaling": "vector",
    "MatrixScaling": "matrix",
    "DirichletCalibration": "dirichlet",
}
_BASE = ("EPS", "CalibrationMap")

__all__ = [
    *_BASE,
    "MAP_NAMES",
    "available_maps",
    "get_map_class",
    "make_map",
    "same_model_as",
    "same_model_reason",
    *_CLASSES,
]


__getattr__, __dir__ = lazy_attributes(
    __name__, {**dict.fromkeys(_BASE, "base"), **_CLASSES}, globals()
)
