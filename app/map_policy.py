"""Which calibration maps this server fits: a budget of parameters per map (the app's policy).

A map whose parameters grow with the square of the classes (matrix scaling and
Dirichlet calibration: ``K(K+1)``) cannot be fitted sensibly on a thousand
classes by a shared server: about a million parameters, tens of minutes and
gigabytes per fit. The server refuses such a map up front, before any job
starts, with the reason and a map that suits that many classes. The budget is
``MAX_MAP_PARAMETERS`` (see docs/hosting.md for how its default was chosen);
the core and the command-line tool keep no such limit.
"""

from __future__ import annotations

from collections.abc import Callable

#: Parameters of a map on K classes (maps whose cost grows with the rows, not
#: the classes, count none: histogram binning, isotonic regression).
PARAMETERS: dict[str, Callable[[int], int]] = {
    "histogram": lambda k: 0,
    "isotonic": lambda k: 0,
    "platt": lambda k: 2 * k,
    "beta": lambda k: 3 * k,
    "temperature": lambda k: 1,
    "vector": lambda k: 2 * k,
    "matrix": lambda k: k * (k + 1),
    "dirichlet": lambda k: k * (k + 1),
}


def map_parameters(name: str, n_classes: int) -> int:
    """Number of parameters of map ``name`` on ``n_classes`` classes (0 if not counted)."""
    count = PARAMETERS.get(name)
    return 0 if count is None else count(n_classes)


def refusal(name: str, model: str, n_classes: int, budget: int) -> str | None:
    """Why map ``name`` is not fitted on ``model``, or None when it is within ``budget``."""
    n = map_parameters(name, n_classes)
    if n <= budget:
        return None
    return (
        f"{name} on model {model!r} is not fitted: with {n_classes:,} classes it has "
        f"{n:,} parameters, above this server's budget of {budget:,} per map "
        f"(MAX_MAP_PARAMETERS); use temperature or vector scaling for {n_classes:,} classes"
    )
