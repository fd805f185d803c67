"""A package's names loaded from its modules on first use (PEP 562).

``import calibration_core`` and its subpackages stay light (the command line
starts in numpy's time): a name whose module pulls scikit-learn, scipy.stats,
pandas or dask is imported when it is first read, then kept in the package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    package: str, modules: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose names load on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    modules : mapping of str to str
        Each lazy name to the module (relative to ``package``) that defines it.
    namespace : dict
        The package's ``globals()``: a loaded name is kept there, so it is
        looked up only once.

    Returns
    -------
    (__getattr__, __dir__) : the two module functions, to assign in the package.
    """

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(modules))

    return __getattr__, __dir__
