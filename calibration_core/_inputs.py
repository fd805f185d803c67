"""Shared input handling of the diagnostics: arrays or a :class:`Predictions`."""

from __future__ import annotations

import numpy as np

from .errors import CalibrationInputError
from .predictions import Predictions
from .validation import check_labels, check_prob_matrix


def probs_and_labels(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(probs (N, K), labels (N,))`` from arrays or a :class:`Predictions`.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
        Probability rows, positive-class scores of a binary problem, or a
        ``Predictions`` (whose labels are used when ``labels`` is None).
    labels : array-like, shape (N,), or None
        Class indices; None only together with a ``Predictions``.
    """
    if isinstance(probs, Predictions):
        if labels is None:
            return probs.probs, probs.labels
        return probs.probs, check_labels(labels, probs.n_samples, probs.n_classes)
    if labels is None:
        raise CalibrationInputError(
            "labels are missing: pass the true class of every row, or a Predictions "
            "(which carries its labels) instead of a bare probability array."
        )
    p = check_prob_matrix(probs)
    return p, check_labels(labels, p.shape[0], p.shape[1])


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    """A whole number >= ``minimum``, or a :class:`CalibrationInputError`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise CalibrationInputError(f"{name} must be a whole number >= {minimum}, got {value!r}.")
    return int(value)
