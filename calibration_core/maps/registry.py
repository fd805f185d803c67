"""Registry of calibration maps by name: histogram, isotonic, platt, beta,
temperature, vector, matrix, dirichlet."""

from __future__ import annotations

import importlib

from ..errors import CalibrationInputError

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

_REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator: register a map under its ``name``."""
    _REGISTRY[cls.name] = cls
    return cls


def _load(name) -> None:
    """Import the family module of registry name ``name`` (it registers its map)."""
    if name in MAP_NAMES and name not in _REGISTRY:
        importlib.import_module(f"{__package__}.{name}")


def get_map_class(name) -> type:
    """The map class registered as ``name`` (its module is imported on first use)."""
    _load(name)
    if name not in _REGISTRY:
        known = ", ".join(n for n in MAP_NAMES if n in _REGISTRY)
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
