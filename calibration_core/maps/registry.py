"""Registry of calibration maps by name: histogram, isotonic, platt, beta,
temperature, vector, matrix, dirichlet."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, TypeVar

from ..errors import CalibrationInputError

if TYPE_CHECKING:
    from .base import CalibrationMap

#: Registry names in display order.
MAP_NAMES: tuple[str, ...] = (
    "histogram",
    "isotonic",
    "platt",
    "beta",
    "temperature",
    "vector",
    "matrix",
    "dirichlet",
)

#: Maps that are one and the same model on probability input (no logits): matrix
#: scaling then reads the log-probabilities ``ln s``, as Dirichlet calibration
#: does, with the same parameters, penalty and fit, so their default fits give
#: identical rows. On logits they differ (matrix scaling reads the logits).
SAME_ON_PROBABILITIES: dict[str, str] = {"matrix": "dirichlet", "dirichlet": "matrix"}

#: Why the maps of :data:`SAME_ON_PROBABILITIES` coincide, in words for the UI.
SAME_MODEL_REASON = (
    "matrix scaling on probabilities reads the log-probabilities ln s, which is Dirichlet "
    "calibration: the same model, parameters and fit"
)

_REGISTRY: dict[str, type[CalibrationMap]] = {}
#: A map class, as :func:`register` receives and returns it.
MapClass = TypeVar("MapClass", bound="type[CalibrationMap]")


def same_model_as(name: str, has_logits: bool) -> str | None:
    """The other map that is the same model as map ``name`` on these inputs, or None.

    Parameters
    ----------
    name : str
        A registry name.
    has_logits : bool
        Whether the predictions carry logits. Without them, matrix scaling and
        Dirichlet calibration (both with the same parameters, e.g. the
        defaults) fit the same model on ``ln s``: fit one and reuse its result
        for the other (:data:`SAME_ON_PROBABILITIES`).

    Returns
    -------
    str or None
        The twin's registry name, or None when ``name`` has none on these inputs.
    """
    return None if has_logits else SAME_ON_PROBABILITIES.get(name)


def same_model_reason(first: str, second: str) -> str | None:
    """Why maps ``first`` and ``second`` are one model on probabilities, or None.

    Parameters
    ----------
    first, second : str
        Registry names.

    Returns
    -------
    str or None
        :data:`SAME_MODEL_REASON` for matrix scaling and Dirichlet calibration
        (either order), None for maps that are not the same model.
    """
    return SAME_MODEL_REASON if same_model_as(first, False) == second else None


def register(cls: MapClass) -> MapClass:
    """Class decorator: register a map under its ``name``."""
    _REGISTRY[cls.name] = cls
    return cls


def _load(name) -> None:
    """Import the family module of registry name ``name`` (it registers its map)."""
    if name in MAP_NAMES and name not in _REGISTRY:
        importlib.import_module(f"{__package__}.{name}")


def get_map_class(name) -> type[CalibrationMap]:
    """The map class registered as ``name`` (its module is imported on first use)."""
    _load(name)
    if name not in _REGISTRY:
        known = ", ".join(available_maps())  # every map, not only those loaded so far
        raise CalibrationInputError(f"unknown calibration map {name!r}; choose from {known}.")
    return _REGISTRY[name]


def make_map(name: str, **params):
    """A new, unfitted map by registry name, e.g. ``make_map("temperature")``."""
    return get_map_class(name)(**params)


def available_maps() -> tuple[str, ...]:
    """Registry names of the maps that are implemented, in display order (loads them all)."""
    for name in MAP_NAMES:
        _load(name)
    return tuple(n for n in MAP_NAMES if n in _REGISTRY)
