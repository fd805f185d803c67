"""All the measures of this package for one model, as plain data (for JSON and reports)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..predictions import measure_inputs
from .canonical import skce, vector_binned_ece
from .cumulative import classwise_ks_errors, cumulative_test, spiegelhalter_test
from .ece_variants import adaptive_classwise_ece, thresholded_adaptive_ece
from .hierarchy import calibration_hierarchy
from .smooth import smooth_ece

#: The vector-binned ECE is reported up to this many classes (its cells multiply with K).
MAX_VECTOR_BINNED_CLASSES = 4


def _column_measures(p, y, notion: str) -> dict[str, Any]:
    """KS/Kuiper, Spiegelhalter, smooth ECE and the hierarchy of one notion."""
    return {
        "cumulative": cumulative_test(p, y, notion=notion).to_dict(),
        "spiegelhalter": spiegelhalter_test(p, y, notion=notion).to_dict(),
        "smooth_ece": smooth_ece(p, y, notion=notion).to_dict(),
        "hierarchy": _hierarchy(p, y, notion),
    }


def _hierarchy(p, y, notion: str) -> dict[str, Any] | None:
    from ..errors import CalibrationInputError

    try:
        return calibration_hierarchy(p, y, notion=notion).to_dict()
    except CalibrationInputError:  # one outcome only (e.g. every top label right)
        return None


def measures_summary(probs, labels=None, *, seed: int = 0) -> dict[str, Any]:
    """The binning-free, vector and clinical measures of one model's predictions.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
        An (N,) vector is P(class 1) of a binary problem: its top-label
        measures are those of the rows ``[1 - p, p]``.
    labels : array-like, shape (N,), optional
    seed : int
        Seeds the SKCE's pairing and subsample.

    Returns
    -------
    dict
        ``confidence`` (top label) and, for K = 2, ``binary``: the cumulative
        KS/Kuiper test, Spiegelhalter's Z, the smooth ECE and the calibration
        hierarchy (null when one outcome is missing); ``classwise``: the KS
        error of every class and its mean, ACE and TACE; ``canonical``: the
        SKCE and, for K <= 4, the vector-binned ECE (5 bins per coordinate).
        See docs/evaluate-json-schema.md for every field.
    """
    p, y, _ = measure_inputs(probs, labels, measure="measures_summary")
    k = p.shape[1]
    ks = classwise_ks_errors(p, y)
    out: dict[str, Any] = {"confidence": _column_measures(p, y, "confidence")}
    if k == 2:
        out["binary"] = _column_measures(p, y, "binary")
    out["classwise"] = {
        "ks_errors": [float(v) for v in ks],
        "ks_error_mean": float(np.mean(ks)),
        "ace": adaptive_classwise_ece(p, y),
        "tace": thresholded_adaptive_ece(p, y),
    }
    out["canonical"] = {
        "skce": skce(p, y, seed=seed).to_dict(),
        "vector_binned_ece": vector_binned_ece(p, y).to_dict()
        if k <= MAX_VECTOR_BINNED_CLASSES
        else None,
    }
    return finite_or_none(out)


def finite_or_none(value):
    """``value`` with every NaN or infinite float (in dicts and lists) replaced by None.

    Strict JSON has no NaN; an undefined number (an interval with no events)
    is null instead.
    """
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_or_none(v) for v in value]
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
