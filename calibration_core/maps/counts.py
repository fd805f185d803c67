"""How many parameters a map fits, known before fitting: light formulas, no scikit-learn.

The one home of these counts. The map classes' ``planned_parameters`` and
``n_parameters_`` use the formulas, and a front end calls
:func:`planned_parameters` by registry name before any map module (and so
scikit-learn) is loaded: the dashboard checks its parameter budget while it
serves the first page (``tests/app/test_warmup.py``).
"""

from __future__ import annotations

__all__ = [
    "linear_parameters",
    "one_vs_rest_parameters",
    "planned_parameters",
    "score_columns",
]


def score_columns(n_classes: int) -> int:
    """Score columns a one-vs-rest map calibrates: 1 (the positive class) when K = 2, else K."""
    return 1 if int(n_classes) == 2 else int(n_classes)


def one_vs_rest_parameters(per_column: int, n_classes: int) -> int:
    """Parameters of a one-vs-rest map with ``per_column`` parameters per score column."""
    return int(per_column) * score_columns(n_classes)


def linear_parameters(kind: str, n_classes: int) -> int:
    """Weights and intercepts of a linear map on K classes: ``2K`` (vector), ``K(K+1)`` (full)."""
    k = int(n_classes)
    return 2 * k if kind == "vector" else k * k + k


def planned_parameters(name: str, n_classes: int) -> int | None:
    """``make_map(name).planned_parameters(n_classes)``, without importing the map's module.

    Registry maps with their default settings (histogram binning: 10 bins;
    beta: the full "abm" parameterisation; a test compares every map with its
    class). None for isotonic regression (the data decide its steps) and for
    names that are not maps.

    Parameters
    ----------
    name : str
        A registry name, e.g. ``"matrix"``.
    n_classes : int

    Returns
    -------
    int or None
    """
    if name == "temperature":
        return 1
    if name in ("vector", "matrix", "dirichlet"):
        return linear_parameters("vector" if name == "vector" else "full", n_classes)
    per_column = {"platt": 2, "beta": 3, "histogram": 10}.get(name)
    return None if per_column is None else one_vs_rest_parameters(per_column, n_classes)
