"""The small base class every calibration map shares.

A map is a scikit-learn classifier over *model outputs*: ``fit(X, y)``
learns from held-out predictions and labels, ``predict_proba(X)`` returns
calibrated probability rows of shape (N, K).

Inputs
------
``input="probs"`` (default)
    ``X`` is an (N, K) matrix of probability rows, or an (N,) positive-class
    score of a binary problem. A matrix that is not on the simplex is an
    error that suggests ``input="logits"``.
``input="logits"``
    ``X`` is an (N, K) matrix of logits. A matrix whose rows all lie on the
    simplex is an error: passing probabilities where logits belong is the
    classic temperature-scaling mistake.
A :class:`~calibration_core.Predictions`
    Its logits are used when it has them, its probabilities otherwise,
    whatever ``input`` says.

Labels and sample weights
-------------------------
``fit(X, y, sample_weight=None)``: integer labels ``0..K-1`` index the
columns; other labels must take exactly K distinct values, which name the
columns in sorted order (``classes_``). ``sample_weight`` (N,) weighs every
row's loss term; rows of weight 0 are dropped and integer weights act as
repeated rows. The rules are in :mod:`~calibration_core.maps.fit_inputs`.

Subclasses implement ``_fit(probs, logits, labels, sample_weight=None)`` and
``_predict_proba(probs, logits)`` on validated arrays (see
:meth:`CalibrationMap._features`; ``sample_weight`` is passed only when given),
and ``_fitted_state`` / ``_load_fitted_state`` for JSON export.
"""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.special import log_softmax
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted

from ..errors import CalibrationInputError, excerpt
from ..predictions import Predictions, stable_softmax
from ..validation import ROW_SUM_TOLERANCE, check_prob_matrix
from .fit_inputs import check_sample_weight, drop_unweighted_rows, encode_labels

#: Probabilities are clipped to [EPS, 1 - EPS] before logs and in outputs.
EPS = 1e-12
INPUTS = ("probs", "logits")
JSON_FORMAT = "calibration-dashboard/map/v1"


def log_inputs(probs: np.ndarray | None, logits: np.ndarray | None) -> np.ndarray:
    """Logits when known, else log-probabilities clipped at EPS, shape (N, K)."""
    if logits is not None:
        return log_softmax(logits, axis=1)
    return np.log(np.clip(given_probs(probs), EPS, 1.0))


def given_probs(probs: np.ndarray | None) -> np.ndarray:
    """``probs`` of validated inputs that must have them (no logits, or a map that
    ``needs_probs_with_logits``); None there is a bug of the caller."""
    if probs is None:
        raise TypeError("probabilities are required here, got None")
    return probs


def input_shape(probs: np.ndarray | None, logits: np.ndarray | None) -> tuple[int, int]:
    """``(N, K)`` of validated inputs: of the probabilities when given, else of the logits."""
    n, k = (given_probs(probs) if logits is None else logits).shape
    return n, k


def _classes_from_export(classes, n_classes: int) -> np.ndarray:
    """``classes_`` of an export: its ``classes`` list, or ``0..K-1`` when absent."""
    if classes is None:
        return np.arange(n_classes)
    wrong = not isinstance(classes, list) or len(classes) != n_classes
    arr = None if wrong else np.asarray(classes)
    if arr is None or arr.ndim != 1 or arr.dtype == object:
        raise CalibrationInputError(
            f"the map export lists classes {excerpt(classes)}; expected {n_classes} labels "
            "of one type (numbers or strings), as a list."
        )
    return arr


class CalibrationMap(ClassifierMixin, TransformerMixin, BaseEstimator):
    """Base class of all calibration maps.

    Parameters
    ----------
    input : {"probs", "logits"}
        What ``X`` holds (see the module docstring).

    Attributes
    ----------
    classes_ : numpy.ndarray, shape (K,)
        The label of each column: ``0..K-1`` when the fit labels were column
        indices, else the K sorted distinct labels (see
        :mod:`~calibration_core.maps.fit_inputs`). ``predict`` returns these.
    n_classes_ : int
        K.
    n_features_in_ : int
        K, the number of input columns (2 for a binary score vector).
    converged_ : bool
        Whether the optimiser reported convergence (True for closed-form fits).
    fit_seconds_ : float
        Wall time of the last ``fit``.
    n_parameters_ : int
        Number of fitted parameters, the map's complexity (defined for the
        nonparametric maps too; each map's class docstring says how it is
        counted). The verdict recommends the map with the fewest among those
        not clearly worse than the best.
    """

    #: Registry name, e.g. "temperature".
    name: ClassVar[str] = ""
    #: "binary" maps work one-vs-rest on probabilities; "multiclass" on logits.
    family: ClassVar[str] = ""
    #: False for maps that read only the logits when they are known: ``_features``
    #: then returns ``probs=None`` for logit input instead of computing a softmax.
    needs_probs_with_logits: ClassVar[bool] = True

    def __init__(self, input: str = "probs") -> None:
        self.input = input

    # ------------------------------------------------------------ inputs
    def _input_kind(self) -> str:
        if self.input not in INPUTS:
            raise CalibrationInputError(f"input must be 'probs' or 'logits', got {self.input!r}.")
        return self.input

    def _dense_numeric(self, X, kind: str, n_columns: int | None = None) -> np.ndarray:
        """``X`` as a dense numeric array (not copied when it is one), by scikit-learn's rules.

        Sparse input, complex numbers, empty arrays and more than two
        dimensions get scikit-learn's messages (which its estimator checks
        recognise) as a :class:`CalibrationInputError`; object arrays of numbers
        are converted to float64, and an object that is not a number raises
        numpy's ``TypeError``. Values (NaN, simplex) are checked afterwards.
        A fitted map passes ``n_columns`` (K): a matrix of another width then
        gets scikit-learn's "X has ... features" message.
        """
        who = type(self).__name__
        if sp.issparse(X):
            raise CalibrationInputError(
                f"{who} got sparse {type(X).__name__} input; calibration maps need dense "
                "probability or logit rows: convert with X.toarray()."
            )
        try:
            arr = check_array(
                X,
                dtype="numeric",
                ensure_2d=kind == "logits",
                ensure_all_finite=False,
                ensure_min_features=2 if kind == "logits" and n_columns is None else 1,
                input_name="X",
                estimator=who,
            )
        except ValueError as exc:
            raise CalibrationInputError(f"{who}(input={kind!r}): {exc}") from None
        if n_columns is not None and arr.ndim == 2 and arr.shape[1] != n_columns:
            self._raise_column_count(arr.shape[1])
        return arr

    def _raise_column_count(self, k: int) -> None:
        """The error for input of ``k`` columns to a map fitted on another K."""
        # The first sentence is scikit-learn's, which its checks look for.
        raise CalibrationInputError(
            f"X has {k} features, but {type(self).__name__} is expecting "
            f"{self.n_classes_} features as input: it was fitted on {self.n_classes_} "
            f"classes but got {k} columns (one per class)."
        )

    def _features(
        self, X, n_columns: int | None = None
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Validated ``(probs, logits)`` from ``X``; logits is None for probability input.

        ``n_columns`` is the K a fitted map expects (see :meth:`_dense_numeric`).

        Returns
        -------
        probs : numpy.ndarray, shape (N, K), or None for logit input when
            ``needs_probs_with_logits`` is False
        logits : numpy.ndarray, shape (N, K) or None
        """
        if isinstance(X, Predictions):
            return np.asarray(X.probs), (None if X.logits is None else np.asarray(X.logits))
        kind = self._input_kind()
        X = self._dense_numeric(X, kind, n_columns)
        if kind == "probs":
            try:
                return check_prob_matrix(X), None
            except CalibrationInputError:
                # Say which input was expected when finite values are off the simplex.
                arr = np.asarray(X)
                if arr.ndim == 2 and arr.dtype.kind in "biuf" and arr.size:
                    finite = np.isfinite(arr).all()
                    on_simplex = (
                        finite
                        and arr.min() >= 0
                        and arr.max() <= 1
                        and np.all(np.abs(arr.sum(axis=1) - 1) <= ROW_SUM_TOLERANCE)
                    )
                    if finite and not on_simplex:
                        raise CalibrationInputError(
                            f"{type(self).__name__} expected probabilities (rows in [0, 1] "
                            "summing to 1) but got values that are not on the simplex "
                            f"(from {arr.min():.4g} to {arr.max():.4g}); if these are logits, "
                            "build the map with input='logits'."
                        ) from None
                raise
        z = np.asarray(X)
        if z.dtype == object or z.dtype.kind not in "biuf" or z.ndim != 2 or z.shape[1] < 2:
            raise CalibrationInputError(
                f"{type(self).__name__}(input='logits') expected an (N, K) numeric logit "
                f"matrix with K >= 2, got shape {z.shape} and dtype {z.dtype}."
            )
        z = np.ascontiguousarray(z, dtype=np.float64)
        if not np.isfinite(z).all():
            raise CalibrationInputError("logits contain NaN or infinite values; fix those rows.")
        if z.min() >= 0 and z.max() <= 1 and np.all(np.abs(z.sum(axis=1) - 1) <= 1e-6):
            raise CalibrationInputError(
                f"{type(self).__name__}(input='logits') got rows that are all on the "
                "probability simplex: these look like probabilities, not logits. Pass the "
                "logits, or build the map with input='probs'."
            )
        return (stable_softmax(z) if self.needs_probs_with_logits else None), z

    # ------------------------------------------------------------- sklearn
    def fit(self, X, y, sample_weight=None):
        """Fit the map on held-out predictions.

        Parameters
        ----------
        X : array-like, shape (N, K) or (N,), or Predictions
            Probability rows, logit rows or a binary positive-class score
            (see the module docstring).
        y : array-like, shape (N,)
            True classes: integers ``0..K-1`` index the columns; other labels
            (strings, ``{-1, 1}``, ...) must take exactly K distinct values,
            matched to the columns in sorted order (see ``classes_``). Taken
            from ``X`` when it is a Predictions and y is None.
        sample_weight : array-like, shape (N,), optional
            Finite, non-negative weight of every row's loss term (the weighted
            log-loss, squared error or bin counts of the map). Rows of weight 0
            are dropped; integer weights fit as repeated rows.

        Returns
        -------
        self
        """
        who = type(self).__name__
        if y is None and isinstance(X, Predictions):
            y = X.labels
        if y is None:
            raise CalibrationInputError(
                f"{who} requires y to be passed, but the target y is None: give the true "
                "class of every row."
            )
        probs, logits = self._features(X)
        n, k = input_shape(probs, logits)
        labels, classes = encode_labels(y, n, k, who)
        weights = check_sample_weight(sample_weight, n, who)
        probs, logits, labels, weights = drop_unweighted_rows(probs, logits, labels, weights)
        present = np.bincount(labels, minlength=k)
        if np.count_nonzero(present) < 2:
            raise CalibrationInputError(
                f"{who} needs labels of at least two classes to fit, got one class: "
                f"all {labels.shape[0]} labels (of positive weight) are "
                f"{classes[labels[0]].tolist()!r}."
            )
        self.classes_ = classes
        self.n_classes_ = k
        self.n_features_in_ = k
        self.converged_ = True
        start = time.perf_counter()
        if weights is None:
            self._fit(probs, logits, labels)
        else:
            self._fit(probs, logits, labels, sample_weight=weights)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Calibrated probabilities.

        Parameters
        ----------
        X : array-like (N, K) or (N,), or Predictions

        Returns
        -------
        numpy.ndarray, shape (N, K)
            Rows on the simplex, every value finite and in [0, 1].
        """
        check_is_fitted(self, "classes_")
        probs, logits = self._features(X, self.n_classes_)
        k = input_shape(probs, logits)[1]
        if k != self.n_classes_:  # a Predictions, or a binary score vector
            self._raise_column_count(k)
        out = self._predict_proba(probs, logits)
        return out

    def transform(self, X) -> np.ndarray:
        """The calibrated probabilities, shape (N, K): the map as a pipeline step.

        The same array as :meth:`predict_proba` (as netcal's ``transform``),
        so a fitted map can stand where scikit-learn expects a transformer,
        e.g. between a model's scores and a decision rule in a ``Pipeline``.
        """
        return self.predict_proba(X)

    def predict(self, X) -> np.ndarray:
        """Class (an entry of ``classes_``) with the largest calibrated probability, shape (N,)."""
        best = self.predict_proba(X).argmax(axis=1)
        return self.classes_[best]

    @property
    def n_parameters_(self) -> int:
        """Number of fitted parameters (see the class docstring of each map)."""
        check_is_fitted(self, "classes_")
        return int(self._count_parameters())

    def planned_parameters(self, n_classes: int) -> int | None:
        """The :attr:`n_parameters_` a fit on ``n_classes`` classes will have, before fitting.

        For a front end's budget (the dashboard refuses maps above
        ``MAX_MAP_PARAMETERS``). None when the data decide it (isotonic
        regression's fitted steps) or the map does not say.

        Parameters
        ----------
        n_classes : int
            K >= 2.

        Returns
        -------
        int or None
        """
        return None

    # ---------------------------------------------------------- subclass API
    def _count_parameters(self) -> int:
        """Number of fitted parameters of the fitted map (:attr:`n_parameters_`)."""
        raise NotImplementedError

    def _fit(
        self,
        probs: np.ndarray | None,
        logits: np.ndarray | None,
        labels: np.ndarray,
        sample_weight: np.ndarray | None = None,
    ) -> None:
        """Fit on validated inputs.

        ``labels`` are column indices (N,); ``sample_weight`` is None (called
        without it) or positive weights, shape (N,).
        """
        raise NotImplementedError

    def _predict_proba(self, probs: np.ndarray | None, logits: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    def _fitted_state(self) -> dict[str, Any]:
        """Fitted attributes as JSON-able values (lists, floats)."""
        raise NotImplementedError

    def _load_fitted_state(self, state: dict[str, Any]) -> None:
        """Restore fitted attributes from :meth:`_fitted_state`'s output."""
        raise NotImplementedError

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """Parameters and fitted state as a JSON-able dict (no pickle)."""
        check_is_fitted(self, "classes_")
        out = {
            "format": JSON_FORMAT,
            "map": self.name,
            "params": self.get_params(deep=False),
            "n_classes": int(self.n_classes_),
            "converged": bool(self.converged_),
            "state": self._fitted_state(),
        }
        if not np.array_equal(self.classes_, np.arange(self.n_classes_)):
            out["classes"] = self.classes_.tolist()  # labels other than column indices
        if getattr(self, "fit_sample_", None) is not None:  # fitted on a sample of a dataset
            out["fit_sample"] = dict(self.fit_sample_)
        return out

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CalibrationMap:
        """Rebuild a fitted map from :meth:`to_dict`'s output."""
        from .registry import get_map_class

        if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
            raise CalibrationInputError(
                f"not a calibration map export (expected format {JSON_FORMAT!r})."
            )
        klass = get_map_class(data.get("map"))
        if cls is not CalibrationMap and not issubclass(klass, cls):
            raise CalibrationInputError(
                f"the export holds a {klass.__name__}, not a {cls.__name__}."
            )
        obj = klass(**data.get("params", {}))
        obj.n_classes_ = int(data["n_classes"])
        obj.classes_ = _classes_from_export(data.get("classes"), obj.n_classes_)
        obj.n_features_in_ = obj.n_classes_
        obj.converged_ = bool(data.get("converged", True))
        obj.fit_seconds_ = 0.0
        if isinstance(data.get("fit_sample"), dict):
            obj.fit_sample_ = dict(data["fit_sample"])
        obj._load_fitted_state(data["state"])
        return obj

    @classmethod
    def from_json(cls, text: str) -> CalibrationMap:
        """Rebuild a fitted map from :meth:`to_json`'s output."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CalibrationInputError(f"the map export is not valid JSON: {exc}") from None
        return cls.from_dict(data)
