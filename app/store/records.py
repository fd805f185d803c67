"""What the store keeps about a model: its records, and its Predictions in memory.

* :class:`ModelInfo`: what the browser may know about a usable model (kept,
  as a dict, in the session's record of the disk store);
* :class:`FitRecord`: the result of fitting one map (kept as a dict);
* :class:`HeldOutDesign`: how one model's held-out rows were made, shared by
  the maps fitted with one held-out scheme (the verdict's fitting design);
* :func:`warm`, :func:`readonly`, :func:`nbytes`, :func:`slot_arrays`: a
  :class:`~calibration_core.Predictions` prepared for sharing (sorted scores
  built once, arrays read-only) and its size in bytes;
* :class:`MemoryLRU`: the per-process cache of Predictions, bounded in bytes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from calibration_core import Predictions

from .extra_columns import extra_nbytes

#: Sorted scores of every notion are precomputed when N * K is at most this.
WARM_LIMIT = 20_000_000
#: ``ModelInfo.source`` of the built-in demo's models (one group in the model list).
DEMO_SOURCE = "built-in demo"
#: Source of the models a notebook passed to :func:`app.notebook.show`.
NOTEBOOK_SOURCE = "notebook"


@dataclass(frozen=True)
class ModelInfo:
    """What the browser may know about a usable model."""

    handle: str
    name: str
    n_samples: int
    n_classes: int
    class_names: tuple[str, ...]
    source: str
    has_logits: bool

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict."""
        out = asdict(self)
        out["class_names"] = list(self.class_names)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelInfo:
        """Inverse of :meth:`to_json`."""
        return cls(**{**data, "class_names": tuple(data["class_names"])})

    @classmethod
    def of(cls, handle: str, pred: Predictions, source: str) -> ModelInfo:
        """The info of a Predictions stored under ``handle``."""
        return cls(
            handle=handle,
            name=pred.name,
            n_samples=pred.n_samples,
            n_classes=pred.n_classes,
            class_names=tuple(pred.class_names),
            source=source,
            has_logits=pred.logits is not None,
        )


@dataclass
class FitRecord:
    """The result of fitting one map on one model with one held-out scheme."""

    map: str
    heldout: str
    variant: str | None
    fit_seconds: float = 0.0
    converged: bool | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    params: list[dict] = field(default_factory=list)
    n_scored: int = 0
    #: The map whose fit this record reuses (the same model on these inputs:
    #: :func:`calibration_core.maps.same_model_as`), or None for a fit of its own.
    same_as: str | None = None
    #: Mean log-loss of each fit (fold) on its own training rows, shape (F,)
    #: (``Comparison.train_log_loss[map]``); None when unknown (a record of an
    #: older version, or a failed fit).
    train_log_loss: list[float] | None = None


@dataclass(frozen=True)
class HeldOutDesign:
    """How a model's held-out rows were made with one held-out scheme: the verdict's design.

    The same for every map fitted with that scheme (the folds or the split
    depend on the labels and the seed only), so it is stored once per model
    and scheme; with each map's :attr:`FitRecord.train_log_loss` it makes
    the core's :class:`~calibration_core.compare.verdict.FitDesign`.

    Attributes
    ----------
    fit_of_row : numpy.ndarray of int, shape (n_scored,)
        Which fit (0 .. F-1) scored each held-out row, in the stored rows' order.
    n_train : numpy.ndarray of int, shape (F,)
        Training rows of each fit.
    uncalibrated_train_log_loss : numpy.ndarray of float, shape (F,)
        The input's mean log-loss on each fit's training rows.
    """

    fit_of_row: np.ndarray
    n_train: np.ndarray
    uncalibrated_train_log_loss: np.ndarray

    @classmethod
    def of(cls, design) -> HeldOutDesign:
        """The rows of a core ``FitDesign`` (``Comparison.design()``), fit ids kept small."""
        fits = np.asarray(design.fit_of_row)
        return cls(
            fit_of_row=fits.astype(np.min_scalar_type(max(int(fits.max(initial=0)), 0))),
            n_train=np.asarray(design.n_train, dtype=np.int64),
            uncalibrated_train_log_loss=np.asarray(
                design.train_log_loss["uncalibrated"], dtype=np.float64
            ),
        )

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays."""
        return (
            self.fit_of_row.nbytes + self.n_train.nbytes + self.uncalibrated_train_log_loss.nbytes
        )


def info_fields(record: dict) -> dict:
    """The :class:`ModelInfo` fields of a session record (which also holds its size)."""
    return {k: v for k, v in record.items() if k != "nbytes"}


def warm(pred: Predictions, limit: int = WARM_LIMIT) -> Predictions:
    """Build the sorted scores of every notion now (when N * K <= ``limit``)."""
    if pred.n_samples * pred.n_classes <= limit:
        pred.sorted_scores("confidence")
        for k in range(pred.n_classes):
            pred.sorted_scores("class", k)
    return pred


def readonly(pred: Predictions) -> Predictions:
    """``pred`` itself, its probs (N, K), labels (N,) and logits (N, K) made read-only."""
    for arr in (pred.probs, pred.labels, pred.logits):
        if arr is not None:
            arr.flags.writeable = False
    return pred


def slot_arrays(obj) -> dict[str, np.ndarray] | None:
    """The array attributes of a ``__slots__`` object (a SortedScores), or None."""
    slots = getattr(type(obj), "__slots__", ())
    out = {name: getattr(obj, name, None) for name in slots}
    return out if out and all(isinstance(a, np.ndarray) for a in out.values()) else None


def nbytes(pred: Predictions) -> int:
    """Bytes of the arrays of ``pred``: probs, labels, logits, sorted scores, other columns."""
    n = pred.probs.nbytes + pred.labels.nbytes
    if pred.logits is not None:
        n += pred.logits.nbytes
    for sorted_scores in pred._sorted.values():
        n += sum(a.nbytes for a in (slot_arrays(sorted_scores) or {}).values())
    return n + extra_nbytes(pred.extra)


class MemoryLRU:
    """A thread-safe LRU of Predictions bounded by their size in bytes (:func:`nbytes`)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[Predictions, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> Predictions | None:
        """The Predictions under ``key`` (now the most recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: str, pred: Predictions) -> None:
        """Keep ``pred`` (unless larger than the bound), dropping the least recently used."""
        size = nbytes(pred)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self.max_bytes:
                return
            self._items[key] = (pred, size)
            self._bytes += size
            while self._bytes > self.max_bytes and self._items:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    def keys(self) -> list[str]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._items)

    def drop(self, keys) -> None:
        """Forget the Predictions under each of ``keys`` (absent ones are ignored)."""
        with self._lock:
            for key in keys:
                item = self._items.pop(key, None)
                if item is not None:
                    self._bytes -= item[1]
