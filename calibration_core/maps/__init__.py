"""Post-hoc calibration maps of the survey (§5.3-5.4), scikit-learn compatible.

Binary maps (applied one-vs-rest with renormalisation for K > 2):
``histogram``, ``isotonic``, ``platt``, ``beta``. Multiclass maps on logits
(or log-probabilities): ``temperature``, ``vector``, ``matrix``, ``dirichlet``.
"""

import importlib

from .base import EPS, CalibrationMap
from .registry import MAP_NAMES, available_maps, get_map_class, make_map

__all__ = ["EPS", "MAP_NAMES", "CalibrationMap", "available_maps", "get_map_class", "make_map"]

# One module per family; each registers its map(s) on import and lists its
# public classes in __all__.
for _module in (
    "histogram",
    "isotonic",
    "platt",
    "beta",
    "temperature",
    "vector",
    "matrix",
    "dirichlet",
):
    try:
        _mod = importlib.import_module(f"{__name__}.{_module}")
    except ModuleNotFoundError as _exc:  # a family not written yet
        if _exc.name != f"{__name__}.{_module}":
            raise
        continue
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)
        __all__.append(_name)
