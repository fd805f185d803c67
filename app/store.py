"""Server-side, disk-backed store of parsed predictions and fitted results.

Everything a session uploads is parsed once and kept here, on disk
(:mod:`diskcache`, shared by all gunicorn workers and by background jobs),
keyed by opaque handles; the browser only ever holds those handles. A small
per-process LRU keeps recently used :class:`~calibration_core.Predictions`
in memory together with their load-time sorted scores, so re-binning does
not touch the disk.

Keys
----
``session:<sid>``
    The session's uploaded models (a list of :class:`ModelInfo` dicts).
``pred:<handle>`` and ``arr:<handle>:...``
    A Predictions: a small record naming its arrays, and each array (with
    the load-time sorted scores of every notion) as a raw ``.npy`` file that
    readers memory-map, so workers share one copy in the page cache.
``fit:<data handle>:<map>:<held-out key>``
    One fitted map's result (:class:`FitRecord` as a dict); its calibrated
    predictions live under ``pred:<variant handle>``.
``demo:v1:<seed>``
    The built-in demo, computed by the first process that needs it.

Access control: a handle is usable by a session only when it is a demo
handle or one of the session's own uploads (:meth:`DataStore.resolve`).
Entries expire after the session TTL of inactivity; the whole store is
bounded in size, least recently used entries first; one session may keep at
most ``max_models_per_session`` models and ``max_session_bytes`` of arrays.

Storage faults: when the disk is full or read-only, writes raise
:class:`StorageUnavailable` (a readable message, shown as a banner) while
reads go on without the LRU bookkeeping write (:class:`ResilientCache`), so
everything stored before stays usable.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import secrets
import sqlite3
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import diskcache
import numpy as np

from calibration_core import CalibrationInputError, Predictions, SortedScores
from calibration_core.demo import demo_predictions

from .settings import HeldOut

log = logging.getLogger("calibration_dashboard.store")

DEMO_PREFIX = "demo-"
UPLOAD_PREFIX = "up-"
VARIANT_PREFIX = "var-"
#: Layout version of the disk store (a new version starts in a new subdirectory).
STORE_FORMAT = 2
#: Sorted scores of every notion are precomputed when N * K is at most this.
WARM_LIMIT = 20_000_000


class DataUnavailable(CalibrationInputError):
    """A handle the session cannot use (expired, evicted or not its own)."""


class StorageUnavailable(CalibrationInputError):
    """The disk store refused a write (full or read-only); stored data stays readable."""


STORAGE_MESSAGE = (
    "The server could not save this: its storage (CACHE_DIR) is full or read-only. "
    "Everything loaded before is still there; try again later, or ask the operator to free "
    "space in CACHE_DIR."
)
#: Errors of a disk that refuses writes (sqlite: "database or disk is full", "readonly
#: database", "disk I/O error"; files: ENOSPC, EROFS, EDQUOT, ...).
_DISK_ERRORS = (OSError, sqlite3.OperationalError, sqlite3.DatabaseError)


class ResilientCache(diskcache.Cache):
    """A :class:`diskcache.Cache` that keeps reading when the disk refuses writes.

    With the least-recently-used policy every ``get`` also writes (the access
    time). When that write fails, the value is read without it; ``touch``
    failures are ignored; a failed ``set`` raises :class:`StorageUnavailable`.
    ``write_error`` holds the last write failure (None after a successful write).
    """

    write_error: str | None = None

    def _peek(self, key, default, read):
        db_key, raw = self._disk.put(key)
        rows = self._sql(
            "SELECT mode, filename, value FROM Cache WHERE key = ? AND raw = ?"
            " AND (expire_time IS NULL OR expire_time > ?)",
            (db_key, raw, time.time()),
        ).fetchall()
        if not rows:
            return default
        ((mode, filename, value),) = rows
        try:
            return self._disk.fetch(mode, filename, value, read)
        except OSError:
            return default

    def _failed(self, exc: BaseException) -> None:
        if self.write_error is None:
            log.error("the disk store refused a write: %s", exc)
        self.write_error = f"{type(exc).__name__}: {exc}"

    def get(self, key, default=None, read=False, expire_time=False, tag=False, retry=False):
        try:
            return super().get(key, default, read, expire_time, tag, retry)
        except _DISK_ERRORS as exc:
            if expire_time or tag:
                raise
            self._failed(exc)
            return self._peek(key, default, read)

    def touch(self, key, expire=None, retry=False):
        try:
            return super().touch(key, expire, retry)
        except _DISK_ERRORS as exc:
            self._failed(exc)
            return False

    def set(self, key, value, expire=None, read=False, tag=None, retry=False):
        try:
            done = super().set(key, value, expire, read, tag, retry)
        except _DISK_ERRORS as exc:
            self._failed(exc)
            raise StorageUnavailable(STORAGE_MESSAGE) from None
        self.write_error = None
        return done


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


def warm(pred: Predictions, limit: int = WARM_LIMIT) -> Predictions:
    """Build the sorted scores of every notion now (when N * K <= ``limit``)."""
    if pred.n_samples * pred.n_classes <= limit:
        pred.sorted_scores("confidence")
        for k in range(pred.n_classes):
            pred.sorted_scores("class", k)
    return pred


def _readonly(pred: Predictions) -> Predictions:
    for arr in (pred.probs, pred.labels, pred.logits):
        if arr is not None:
            arr.flags.writeable = False
    return pred


def _slot_arrays(obj) -> dict[str, np.ndarray] | None:
    """The array attributes of a ``__slots__`` object (a SortedScores), or None."""
    slots = getattr(type(obj), "__slots__", ())
    out = {name: getattr(obj, name, None) for name in slots}
    return out if out and all(isinstance(a, np.ndarray) for a in out.values()) else None


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB"


def _info_fields(record: dict) -> dict:
    """The :class:`ModelInfo` fields of a session record (which also holds its size)."""
    return {k: v for k, v in record.items() if k != "nbytes"}


def _nbytes(pred: Predictions) -> int:
    n = pred.probs.nbytes + pred.labels.nbytes
    if pred.logits is not None:
        n += pred.logits.nbytes
    for sorted_scores in pred._sorted.values():
        n += sum(a.nbytes for a in (_slot_arrays(sorted_scores) or {}).values())
    return n


class _MemoryLRU:
    """A thread-safe LRU of Predictions bounded by their size in bytes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[Predictions, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> Predictions | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: str, pred: Predictions) -> None:
        size = _nbytes(pred)
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


class DataStore:
    """The disk-backed store of one dashboard instance (see the module docstring).

    Parameters
    ----------
    directory : path
        Shared by every worker of the instance (data goes to ``v<STORE_FORMAT>/`` in it).
    size_limit_bytes : int
        Bound of the disk store (LRU eviction).
    ttl_seconds : int
        Inactivity after which a session's data expires.
    memory_bytes : int
        Bound of the per-process cache of Predictions.
    max_models_per_session : int
    max_session_bytes : int
        Bound of the arrays (with their sorted scores) one session may upload.
    demo_seed : int
    """

    def __init__(
        self,
        directory,
        *,
        size_limit_bytes: int = 4 << 30,
        ttl_seconds: int = 86_400,
        memory_bytes: int = 1 << 30,
        max_models_per_session: int = 20,
        max_session_bytes: int = 1 << 30,
        demo_seed: int = 0,
    ) -> None:
        self.directory = Path(directory) / f"v{STORE_FORMAT}"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cache = ResilientCache(
            str(self.directory),
            size_limit=int(size_limit_bytes),
            eviction_policy="least-recently-used",
        )
        self.ttl = int(ttl_seconds)
        self.max_models = int(max_models_per_session)
        self.max_session_bytes = int(max_session_bytes)
        self.demo_seed = int(demo_seed)
        self._memory = _MemoryLRU(int(memory_bytes))
        self._memo: OrderedDict[tuple, Any] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._demo_lock = threading.Lock()
        self._demo_infos: list[ModelInfo] | None = None
        #: The demo's predictions, always in memory (a few MB; even with memory_bytes=0).
        self._demo_preds: dict[str, Predictions] = {}
        self._touched: dict[str, float] = {}
        # Background jobs are forked from (multi-threaded) workers: a lock held by another
        # thread at fork time would never be released in the child, so renew the locks.
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: (s := ref()) is not None and s._new_locks())

    def _new_locks(self) -> None:
        self._memo_lock = threading.Lock()
        self._demo_lock = threading.Lock()
        self._memory._lock = threading.Lock()

    # ------------------------------------------------------------------ demo
    def demo_models(self) -> list[ModelInfo]:
        """The built-in demo models (fitted once per store, then read from disk)."""
        with self._demo_lock:
            if self._demo_infos is None:
                key = f"demo:v1:{self.demo_seed}"
                preds = self.cache.get(key)
                if preds is None:
                    preds = [warm(p) for p in demo_predictions(self.demo_seed)]
                    try:
                        self.cache.set(key, preds)
                    except StorageUnavailable:
                        pass  # served from memory until the disk takes writes again
                infos = []
                for i, pred in enumerate(preds):
                    handle = f"{DEMO_PREFIX}{i}"
                    self._demo_preds[handle] = _readonly(pred)
                    infos.append(ModelInfo.of(handle, pred, "built-in demo"))
                self._demo_infos = infos
            return list(self._demo_infos)

    # -------------------------------------------------------------- sessions
    def _session_key(self, sid: str) -> str:
        return f"session:{sid}"

    def uploaded_models(self, sid: str | None) -> list[ModelInfo]:
        """The session's uploaded models (empty for an unknown or expired session)."""
        if not sid:
            return []
        records = self.cache.get(self._session_key(sid), default=None)
        if records is None:
            return []
        self.cache.touch(self._session_key(sid), expire=self.ttl)
        return [ModelInfo.from_json(_info_fields(r)) for r in records]

    @property
    def storage_problem(self) -> str | None:
        """:data:`STORAGE_MESSAGE` while the disk store refuses writes, else None."""
        return STORAGE_MESSAGE if self.cache.write_error else None

    def storage_failed(self, exc: BaseException) -> None:
        """Record a write failure seen outside the store (e.g. receiving an upload)."""
        self.cache._failed(exc)

    def session_models(self, sid: str | None) -> list[ModelInfo]:
        """Demo models, then the session's uploads."""
        return self.demo_models() + self.uploaded_models(sid)

    def add_models(self, sid: str, preds: list[Predictions], source: str) -> list[ModelInfo]:
        """Store parsed predictions for a session; returns their infos.

        Names already used in the session get `` (2)``, `` (3)``, ... appended.

        Raises
        ------
        DataUnavailable
            When the session would hold more than ``max_models_per_session`` models
            or ``max_session_bytes`` of arrays.
        StorageUnavailable
            When the disk refuses the write (nothing of this upload is kept).
        """
        if not sid:
            raise DataUnavailable("no session: reload the page and upload again.")
        key = self._session_key(sid)
        sizes = [_nbytes(warm(p)) for p in preds]
        try:
            return self._add_models(key, preds, sizes, source)
        except _DISK_ERRORS as exc:  # e.g. the transaction itself cannot start
            self.cache._failed(exc)
            raise StorageUnavailable(STORAGE_MESSAGE) from None

    def _add_models(self, key: str, preds, sizes, source: str) -> list[ModelInfo]:
        with self.cache.transact():
            records = list(self.cache.get(key, default=[]))
            if len(records) + len(preds) > self.max_models:
                raise DataUnavailable(
                    f"this session already holds {len(records)} uploaded models and at most "
                    f"{self.max_models} are kept; reload the page to start a new session."
                )
            used_bytes = sum(int(r.get("nbytes", 0)) for r in records)
            if used_bytes + sum(sizes) > self.max_session_bytes:
                raise DataUnavailable(
                    f"this upload needs {_mb(sum(sizes))} of server storage and this session "
                    f"already uses {_mb(used_bytes)} of its {_mb(self.max_session_bytes)} quota; "
                    "reload the page to start a new session, or upload a smaller file."
                )
            used = {r["name"] for r in records} | {m.name for m in self.demo_models()}
            infos = []
            for pred, size in zip(preds, sizes, strict=True):
                name, n = pred.name, 2
                while name in used:
                    name, n = f"{pred.name} ({n})", n + 1
                used.add(name)
                if name != pred.name:
                    pred = Predictions(
                        probs=pred.probs,
                        labels=pred.labels,
                        class_names=pred.class_names,
                        logits=pred.logits,
                        name=name,
                        _sorted=pred._sorted,
                    )
                handle = UPLOAD_PREFIX + secrets.token_urlsafe(18)
                self.put_predictions(handle, pred)
                info = ModelInfo.of(handle, pred, source)
                records.append({**info.to_json(), "nbytes": size})
                infos.append(info)
            self.cache.set(key, records, expire=self.ttl)
        return infos

    def resolve(self, sid: str | None, handle: str) -> ModelInfo:
        """The info of ``handle`` if this session may use it.

        Raises
        ------
        DataUnavailable
            With "your data expired, please upload again" when the handle is
            not (or no longer) one of the session's models.
        """
        for info in self.session_models(sid):
            if info.handle == handle:
                return info
        raise DataUnavailable(
            "A selected model is no longer available: your data expired, please upload again."
        )

    # ----------------------------------------------------------- predictions
    def _put_array(self, key: str, arr: np.ndarray) -> None:
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
        buf.seek(0)
        # read=True: diskcache stores the raw .npy bytes as a file (no pickle).
        self.cache.set(key, buf, read=True, expire=self.ttl)

    def _get_array(self, key: str) -> np.ndarray:
        handle = self.cache.get(key, default=None, read=True)
        if handle is None:
            raise DataUnavailable("your data expired, please upload again.")
        with handle:
            path = getattr(handle, "name", None)
            if isinstance(path, str) and os.path.isfile(path):
                # Memory-mapped: no copy, and the page cache is shared by all workers.
                return np.load(path, mmap_mode="r", allow_pickle=False)
            return np.load(io.BytesIO(handle.read()), allow_pickle=False)

    def put_predictions(self, handle: str, pred: Predictions) -> None:
        """Store predictions, with the sorted scores of every notion, under a handle.

        Arrays are kept as ``.npy`` files in the disk store (one key each) and
        memory-mapped when read; the small ``pred:<handle>`` record that lists
        them is written last, so a reader never sees half a model.
        """
        warm(pred)
        arrays = {"probs": pred.probs, "labels": pred.labels}
        if pred.logits is not None:
            arrays["logits"] = pred.logits
        record = {
            "name": pred.name,
            "class_names": list(pred.class_names),
            "arrays": [],
            "sorted": [],
        }
        for field_name, arr in arrays.items():
            self._put_array(f"arr:{handle}:{field_name}", arr)
            record["arrays"].append(field_name)
        for key, sorted_scores in pred._sorted.items():
            slots = _slot_arrays(sorted_scores)
            if slots is None:
                continue
            tag = f"{key[0]}:{key[1]}"
            for slot, arr in slots.items():
                self._put_array(f"arr:{handle}:sorted:{tag}:{slot}", arr)
            record["sorted"].append((list(key), list(slots)))
        self.cache.set(f"pred:{handle}", record, expire=self.ttl)
        self._memory.put(handle, _readonly(pred))

    def _load_predictions(self, handle: str) -> Predictions:
        record = self.cache.get(f"pred:{handle}", default=None)
        if not isinstance(record, dict):
            raise DataUnavailable("your data expired, please upload again.")
        arrays = {name: self._get_array(f"arr:{handle}:{name}") for name in record["arrays"]}
        pred = Predictions(
            probs=arrays["probs"],
            labels=arrays["labels"],
            class_names=tuple(record["class_names"]),
            logits=arrays.get("logits"),
            name=record["name"],
        )
        for key, slots in record["sorted"]:
            tag = f"{key[0]}:{key[1]}"
            sorted_scores = SortedScores.__new__(SortedScores)
            for slot in slots:
                setattr(sorted_scores, slot, self._get_array(f"arr:{handle}:sorted:{tag}:{slot}"))
            pred._sorted[(key[0], key[1])] = sorted_scores
        self._touch(handle, record)
        return pred

    def _touch(self, handle: str, record: dict) -> None:
        """Extend the expiry of a model's record and arrays (at most once a minute)."""
        now = time.monotonic()
        if now - self._touched.get(handle, -1e9) < 60:
            return
        self._touched[handle] = now
        self.cache.touch(f"pred:{handle}", expire=self.ttl)
        for name in record["arrays"]:
            self.cache.touch(f"arr:{handle}:{name}", expire=self.ttl)
        for key, slots in record["sorted"]:
            for slot in slots:
                self.cache.touch(f"arr:{handle}:sorted:{key[0]}:{key[1]}:{slot}", expire=self.ttl)

    def predictions(self, handle: str) -> Predictions:
        """The predictions stored under ``handle`` (memory first, then the disk store)."""
        pred = self._memory.get(handle)
        if pred is not None:
            return pred
        if handle.startswith(DEMO_PREFIX):
            self.demo_models()
            if handle in self._demo_preds:
                return self._demo_preds[handle]
        pred = self._load_predictions(handle)
        self._memory.put(handle, pred)
        return pred

    # ------------------------------------------------------------------ fits
    @staticmethod
    def fit_key(handle: str, map_name: str, heldout: HeldOut) -> str:
        """Cache key of one map fitted on one model with one held-out scheme."""
        return f"fit:{handle}:{map_name}:{heldout.key}"

    @staticmethod
    def variant_handle(handle: str, map_name: str, heldout: HeldOut) -> str:
        """The deterministic handle of calibrated predictions."""
        digest = hashlib.sha256(f"{handle}|{map_name}|{heldout.key}".encode()).hexdigest()
        return VARIANT_PREFIX + digest[:32]

    def get_fit(self, handle: str, map_name: str, heldout: HeldOut) -> FitRecord | None:
        """The cached fit, or None (also when its predictions were evicted)."""
        key = self.fit_key(handle, map_name, heldout)
        data = self.cache.get(key, default=None)
        if data is None:
            return None
        record = FitRecord(**data)
        if record.variant is not None and self._memory.get(record.variant) is None:
            try:
                self.predictions(record.variant)
            except DataUnavailable:
                return None
        self.cache.touch(key, expire=self.ttl)
        return record

    def put_fit(self, handle: str, record: FitRecord, calibrated: Predictions | None) -> None:
        """Store a fit and its calibrated predictions."""
        if calibrated is not None and record.variant is not None:
            self.put_predictions(record.variant, calibrated)
        heldout_key = record.heldout
        key = f"fit:{handle}:{record.map}:{heldout_key}"
        self.cache.set(key, asdict(record), expire=self.ttl)

    def put_rows(self, variant: str, rows) -> None:
        """Store which input rows a split-mode variant holds (indices, shape (n_scored,))."""
        self.cache.set(f"rows:{variant}", np.asarray(rows, dtype=np.int64), expire=self.ttl)

    def scored_rows(self, handle: str, heldout: HeldOut):
        """Input row of each scored row, shape (n_scored,); None when all rows, in order."""
        if heldout.mode == "folds":
            return None
        record = self.get_fit(handle, "uncalibrated", heldout)
        if record is None or record.variant is None:
            return None
        return self.cache.get(f"rows:{record.variant}", default=None)

    # ------------------------------------------------------------------ memo
    def memo(self, key: tuple, compute):
        """A small per-process cache of derived values (metrics), keyed by handles."""
        with self._memo_lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        value = compute()
        with self._memo_lock:
            self._memo[key] = value
            while len(self._memo) > 4096:
                self._memo.popitem(last=False)
        return value

    def close(self) -> None:
        """Close the disk store."""
        self.cache.close()
