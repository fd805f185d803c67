"""What a notebook passes in, as :class:`~calibration_core.Predictions`.

A model is given as a ``Predictions``, as ``(probs, labels)`` (probability
rows of shape (N, K), or one positive-class column of shape (N,), and class
indices), or as a fitted scikit-learn classifier together with ``(X, y)``,
whose ``predict_proba(X)`` is scored against ``y`` (any labels its
``classes_`` hold). Several models are a dict ``{name: model}`` or a list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from calibration_core import CalibrationInputError, Predictions


def from_estimator(estimator, X, y, name: str | None = None) -> Predictions:
    """The predictions of a fitted classifier on ``(X, y)``.

    Parameters
    ----------
    estimator : fitted classifier
        Needs ``predict_proba`` and ``classes_`` (scikit-learn's API).
    X : array-like, shape (N, d)
    y : array-like, shape (N,)
        True labels, values of ``estimator.classes_``.
    name : str, optional
        Default: the estimator's class name.

    Raises
    ------
    CalibrationInputError
        No ``predict_proba``, or a label the classifier does not know.
    """
    name = name or type(estimator).__name__
    if not hasattr(estimator, "predict_proba") or not hasattr(estimator, "classes_"):
        raise CalibrationInputError(
            f"{name} has no predict_proba/classes_: pass a fitted probabilistic classifier "
            "(e.g. wrap it in sklearn.calibration.CalibratedClassifierCV), or (probs, labels)."
        )
    classes = np.asarray(estimator.classes_).tolist()
    lookup = {c: i for i, c in enumerate(classes)}
    try:
        index = np.array([lookup[v] for v in np.asarray(y).tolist()], dtype=np.int64)
    except KeyError as exc:
        raise CalibrationInputError(
            f"y holds {exc.args[0]!r}, which {name} was not fitted on "
            f"(its classes_: {classes[:10]}); pass the labels it was trained with."
        ) from None
    return Predictions.from_probs(
        estimator.predict_proba(X),
        index,
        class_names=[str(c) for c in classes],
        name=name,
        where=name,
    )


def as_predictions(model, labels=None, *, name: str = "model", data=None) -> Predictions:
    """One model as Predictions (see the module docstring for what ``model`` may be).

    Parameters
    ----------
    model : Predictions, (probs, labels), probability array, or fitted classifier
    labels : array-like, optional
        The labels when ``model`` is a probability array.
    name : str
        Its name (a Predictions keeps its own unless it is "model").
    data : (X, y), optional
        Needed when ``model`` is a classifier.

    Raises
    ------
    CalibrationInputError
        What is missing or malformed, and how to pass it.
    """
    if isinstance(model, Predictions):
        return model
    if hasattr(model, "predict_proba") or hasattr(model, "fit"):
        if data is None:
            raise CalibrationInputError(
                f"{name} is an estimator: pass the data to score it on, e.g. show(models, (X, y))."
            )
        X, y = data
        return from_estimator(model, X, y, name=name)
    if labels is None:
        if not (isinstance(model, tuple) and len(model) == 2):
            raise CalibrationInputError(
                f"{name}: pass (probs, labels), a Predictions or a fitted classifier with (X, y); "
                f"got {type(model).__name__}."
            )
        model, labels = model
    return Predictions.from_probs(model, labels, name=name, where=name)


def default_name(model, i: int) -> str:
    """A model's own name (Predictions), its class name (an estimator), else ``model <i+1>``."""
    if isinstance(model, Predictions):
        return model.name
    if hasattr(model, "predict_proba"):
        return type(model).__name__
    return f"model {i + 1}"


def named(pred: Predictions, name: str) -> Predictions:
    """``pred`` under ``name`` (the key it was given by)."""
    return pred if pred.name == name else replace(pred, name=name)


def as_models(models, data=None) -> list[Predictions]:
    """Several models (a dict ``{name: model}``, a list, or one model) as Predictions.

    Raises
    ------
    CalibrationInputError
        No model, two models of one name, or a model as :func:`as_predictions` refuses it.
    """
    if isinstance(models, Mapping):
        preds = [
            named(as_predictions(m, name=str(n), data=data), str(n)) for n, m in models.items()
        ]
    elif isinstance(models, Sequence) and not isinstance(models, tuple):
        preds = [
            as_predictions(m, name=default_name(m, i), data=data) for i, m in enumerate(models)
        ]
    else:
        preds = [as_predictions(models, data=data)]
    if not preds:
        raise CalibrationInputError("no model given: pass {name: (probs, labels)}, or a list.")
    names = [p.name for p in preds]
    if len(set(names)) != len(names):
        raise CalibrationInputError(f"two models are named alike ({names}): give them names.")
    return preds
