"""Which calibration maps this server fits: a budget of parameters per map (the app's policy).

A map whose parameters grow with the square of the classes (matrix scaling and
Dirichlet calibration: ``K(K+1)``) cannot be fitted sensibly on a thousand
classes by a shared server: about a million parameters, tens of minutes and
gigabytes per fit. The server refuses such a map up front, before any job
starts, with the reason and a map that suits that many classes. The budget is
``MAX_MAP_PARAMETERS`` (see docs/hosting.md for how its default was chosen);
the core and the command-line tool keep no such limit. The counts are the
core's (the same the verdict shows as each map's parameters).
"""

from __future__ import annotations

from calibration_core.maps.counts import planned_parameters


def map_parameters(name: str, n_classes: int) -> int:
    """Parameters of map ``name`` on ``n_classes`` classes, before fitting it.

    The core's count (:func:`calibration_core.maps.counts.planned_parameters`,
    what ``n_parameters_`` will say after the fit; light, so the first page,
    which plans the demo's fits, loads no scikit-learn); 0 for isotonic
    regression, whose fitted steps the data decide and whose cost grows with
    the rows, not the classes, and for names that are not maps
    ("uncalibrated"). Histogram binning counts its bins per column (10 x K:
    refused only above 5,000 classes at the default budget).
    """
    return planned_parameters(name, n_classes) or 0


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
