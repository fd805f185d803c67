"""Fitted-state arrays read back from JSON, their shape checked before anything is allocated.

A map's ``_load_fitted_state`` reads each array with :func:`state_array`, giving
the shape its fitted state must have (``None`` for a length the state itself
decides, e.g. isotonic steps). The nested lists are measured first: a list
longer than the shape, a ragged row or a leaf that is not a number is refused
with a :class:`~calibration_core.CalibrationInputError` naming the field,
before ``numpy.asarray`` builds anything.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np

from ..errors import CalibrationInputError, excerpt

__all__ = ["score_columns", "state_array"]


def score_columns(n_classes: int) -> int:
    """Score columns of a one-vs-rest map: 1 for K = 2 (the positive class), else K."""
    return 1 if n_classes == 2 else n_classes


def _refuse(key: str, problem: str) -> CalibrationInputError:
    return CalibrationInputError(
        f"the fitted state's {key!r} {problem}; the document was edited or damaged."
    )


def _check_level(items: list, size: int | None, key: str, depth: int) -> list:
    """Check one nesting level of lists; return the next level's items."""
    nxt: list = []
    width = size
    for item in items:
        if not isinstance(item, list):
            raise _refuse(key, f"must be nested lists {depth + 1} deep, found {excerpt(item)}")
        if width is not None and len(item) != width:
            which = "the fitted shape" if size is not None else "its first row"
            raise _refuse(key, f"has a list of {len(item)} items where {which} needs {width}")
        width = len(item) if depth > 0 else width  # rows of one level share a length
        nxt.extend(item)
    return nxt


def state_array(state: Any, key: str, shape: tuple[int | None, ...], dtype=np.float64):
    """``state[key]`` as an array of ``shape``, checked before it is built.

    Parameters
    ----------
    state : dict
        A map's fitted state (``to_dict()["state"]``).
    key : str
        The array's field.
    shape : tuple of int or None
        The expected shape; ``None`` allows any length at that level (rows of
        one level must still share a length).
    dtype : numpy dtype
        ``bool`` accepts only true/false leaves; other dtypes accept numbers.

    Returns
    -------
    numpy.ndarray
        Of ``shape`` (with the free lengths filled in).
    """
    if not isinstance(state, dict) or key not in state:
        raise _refuse(key, "is missing")
    leaves = [state[key]]
    for depth, size in enumerate(shape):
        leaves = _check_level(leaves, size, key, depth)
    wanted = bool if dtype is bool else Real
    for leaf in leaves:
        if not isinstance(leaf, wanted) or (wanted is Real and isinstance(leaf, bool)):
            kind = "true or false" if dtype is bool else "a number"
            raise _refuse(key, f"must hold {kind} in every cell, found {excerpt(leaf)}")
    try:
        return np.asarray(state[key], dtype=dtype)
    except (OverflowError, ValueError):  # e.g. a whole number too large for int64 or float64
        raise _refuse(key, "holds a number out of range") from None
