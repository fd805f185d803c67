"""Server-side, disk-backed store of parsed predictions and fitted results: :class:`DataStore`.

Everything a session uploads is parsed once and kept here, on disk
(:mod:`diskcache`, shared by all gunicorn workers and by background jobs),
keyed by opaque handles; the browser only ever holds those handles. A small
per-process LRU keeps recently used :class:`~calibration_core.Predictions`
in memory together with their load-time sorted scores, so re-binning does
not touch the disk.

The disk layer (the cache, its errors, arrays as ``.npy`` files) lives in
:mod:`app.store.disk`; the records (:class:`ModelInfo`, :class:`FitRecord`)
and the in-memory Predictions helpers in :mod:`app.store.records`.

Keys
----
``session:<sid>``
    The session's uploaded models (a list of :class:`ModelInfo` dicts).
``pred:<handle>`` and ``arr:<handle>:...``
    A Predictions: a small record naming its arrays, and each array (with
    the load-time sorted scores of every notion) as a raw ``.npy`` file that
    readers memory-map, so workers share one copy in the page cache; the
    file's other columns (groups, times) as ``arr:<handle>:extra:...``
    (:mod:`app.store.extra_columns`).
``fit:<data handle>:<map>:<held-out key>``
    One fitted map's result (:class:`FitRecord` as a dict, without its
    parameters); its calibrated predictions live under ``pred:<variant
    handle>``, its fitted parameters under ``params:fit:...`` (read only by
    what needs them: a view reads every selected map's record, and a
    100-class matrix map's parameters are 0.5 MB of pickle, 1.4-2.1 ms to read).
``demo:v1:<seed>``
    The built-in demo, computed by the first process that needs it.
``soft:<handle>`` and ``rows:<variant handle>``
    An upload's soft labels, and which input rows a split-mode variant holds.
``design:<data handle>:<held-out key>``
    How the model's held-out rows were made with that scheme
    (:class:`HeldOutDesign`), stored with its first fitted map.
``result:<name>:...`` and ``claim:result:<name>:...``
    A result derived from stored fits (the verdict of a model's maps,
    :mod:`app.verdict`), computed once for all workers
    (:meth:`DataStore.shared_result`), and the claim of whoever computes it.
``evicted:<sid>``
    Tombstone of a session whose data was removed to make room, and why
    (:mod:`app.store.budget`), until it uploads again.
``client:<sid>``
    The client the session belongs to (``user:<name>`` or ``addr:<address>``,
    under its tag), for the quota per client (:mod:`app.store.budget`).
``used:<sid>``
    When the session was last used (epoch seconds, under its tag): written
    by the sweeper at most once a minute (:mod:`app.store.upkeep`), read by
    idle eviction.
``probe:<pid>``
    A tiny write that checks whether the disk takes writes again.

Access control: a handle is usable by a session only when it is a demo
handle or one of the session's own uploads (:meth:`DataStore.resolve`).
Entries expire after the session TTL of inactivity.

Reads write nothing: the cache has no eviction policy, so a ``get`` is one
``SELECT``. The session's use and the longer expiry of what it read are noted
in memory and written by each process's sweeper thread at most once a minute
(:mod:`app.store.upkeep`), which also removes expired entries and their files
and drops the memory of data that expired or was evicted. Everything a session
stores (its record, uploads, soft labels, fitted maps) carries its id as
diskcache tag; one session may keep at most ``max_models_per_session``
models and ``max_session_bytes`` of data, fitted maps included, and all the
sessions of one client (signed-in user or address) at most
``max_client_bytes`` together. The whole store has a hard size bound
(:mod:`app.store.budget`): large writes are admitted first, only idle
sessions' data, or that of a client over its fair share, is ever evicted to
make room (their page then says so), and otherwise the write is refused as
"server full".

Storage faults: when the disk is full or read-only, writes raise
:class:`StorageUnavailable` (a readable message, shown as a banner until a
probe write succeeds) while reads go on (they write nothing), so everything
stored before stays usable; a read that finds the database locked past its
retries raises :class:`~app.store.disk.StorageBusy` (a message, not a 500).
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import re
import secrets
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import diskcache
import numpy as np

from calibration_core import Predictions
from calibration_core.demo import demo_predictions

from ..settings import HeldOut
from .budget import CLIENT_PREFIX, OVER_SHARE, StoreBudget, StoreFull, mb
from .disk import (
    BUSY_MESSAGE,
    DISK_ERRORS,
    STORAGE_MESSAGE,
    DataUnavailable,
    ResilientCache,
    StorageBusy,
    StorageUnavailable,
    load_predictions,
    save_array,
    save_predictions,
    touch_predictions,
)
from .records import (
    DEMO_SOURCE,
    NOTEBOOK_SOURCE,
    FitRecord,
    HeldOutDesign,
    MemoryLRU,
    ModelInfo,
    info_fields,
    nbytes,
    readonly,
    warm,
)
from .upkeep import SWEEP_SECONDS, PendingUses, Sweeper, release_free_memory

DEMO_PREFIX = "demo-"
UPLOAD_PREFIX = "up-"
VARIANT_PREFIX = "var-"
#: Layout version of the disk store (a new version starts in a new subdirectory).
STORE_FORMAT = 4
#: Room for the ``.npy`` headers and records of one stored model, on top of its arrays.
MODEL_OVERHEAD = 64 * 1024
#: diskcache's own size limit, never reached: its culling would evict data in use.
NO_CULLING = 1 << 62
#: How long a claim to compute a shared result lasts if its holder dies (seconds).
CLAIM_SECONDS = 300
#: A session's last use is written again only when the stored one is this old (seconds).
USE_RECORD_SECONDS = 60
#: The handles of uploads and calibrated variants in a memo key (dropped once they are gone).
STORED_HANDLE = re.compile(rf"(?:{UPLOAD_PREFIX}|{VARIANT_PREFIX})[A-Za-z0-9_-]+")
EXPIRED_MESSAGE = "A selected model is no longer available: your data expired, please upload again."
EVICTED_MESSAGE = (
    "Your uploaded models were removed to make room for other users' uploads: the server's "
    "storage was full and this session had been idle. Upload your files again."
)
SHARE_EVICTED_MESSAGE = (
    "Your uploaded models were removed to make room for other users' uploads: the server's "
    "storage was full and your sessions held more than an equal share of it. Upload your "
    "files again when you need them."
)


log = logging.getLogger("calibration_dashboard.store")


def soft_key(handle: str) -> str:
    """Disk-store key of a model's soft labels (an (N, K) ``.npy`` array)."""
    return f"soft:{handle}"


def use_key(sid: str) -> str:
    """Disk-store key of when session ``sid`` was last used."""
    return f"used:{sid}"


class DataStore:
    """The disk-backed store of one dashboard instance (see the module docstring).

    Parameters
    ----------
    directory : path
        Shared by every worker of the instance (data goes to ``v<STORE_FORMAT>/`` in it).
    size_limit_bytes : int
        Hard bound of the disk store (:class:`~app.store.budget.StoreBudget`).
    ttl_seconds : int
        Inactivity after which a session's data expires.
    idle_eviction_seconds : int
        Inactivity after which a session's data may be evicted to make room.
    memory_bytes : int
        Bound of this process's cache of Predictions (the instance's bound
        divided by its processes: :meth:`app.config.AppConfig.memory_cache_bytes`).
    max_models_per_session : int
    max_session_bytes : int
        Bound of the data one session may store: uploaded arrays (with their
        sorted scores), soft labels and fitted maps' calibrated copies.
    max_client_bytes : int, optional
        Bound of the data all sessions of one client may store together
        (``CLIENT_QUOTA_MB``); None: only the reserve bounds it.
    store_reserve : float
        Share of the uploads' room no single client may take (``STORE_RESERVE_PERCENT`` / 100).
    demo_seed : int
    shared : sequence of Predictions, optional
        The models every session sees in place of the built-in demo (the
        notebook's :func:`app.notebook.show`); kept in memory, never on disk.
    sweep_seconds : float
        Period of the process's sweeper (:mod:`app.store.upkeep`); 0: none
        (call :meth:`upkeep` yourself).
    """

    def __init__(
        self,
        directory,
        *,
        size_limit_bytes: int = 4 << 30,
        ttl_seconds: int = 86_400,
        idle_eviction_seconds: int = 3600,
        memory_bytes: int = 1 << 30,
        max_models_per_session: int = 20,
        max_session_bytes: int = 1 << 30,
        max_client_bytes: int | None = None,
        store_reserve: float = 0.25,
        demo_seed: int = 0,
        shared: Sequence[Predictions] | None = None,
        sweep_seconds: float = SWEEP_SECONDS,
    ) -> None:
        self.directory = Path(directory) / f"v{STORE_FORMAT}"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cache = ResilientCache(
            str(self.directory),
            size_limit=NO_CULLING,
            eviction_policy="none",  # a read is one SELECT, no write transaction
            tag_index=True,
        )
        self.ttl = int(ttl_seconds)
        self.budget = StoreBudget(
            self.cache,
            int(size_limit_bytes),
            int(idle_eviction_seconds),
            self.ttl,
            client_bytes=max_client_bytes,
            reserve=store_reserve,
        )
        self.max_models = int(max_models_per_session)
        self.max_session_bytes = int(max_session_bytes)
        self.demo_seed = int(demo_seed)
        self.shared = None if shared is None else list(shared)
        self._memory = MemoryLRU(int(memory_bytes))
        self._memo: OrderedDict[tuple, Any] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._demo_lock = threading.Lock()
        self._demo_infos: list[ModelInfo] | None = None
        #: The demo's predictions, always in memory (a few MB; even with memory_bytes=0).
        self._demo_preds: dict[str, Predictions] = {}
        self._uses = PendingUses()
        self.sweeper = Sweeper(self, sweep_seconds)
        # Background jobs are forked from (multi-threaded) workers: a lock held by another
        # thread at fork time would never be released in the child, so renew the locks.
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: (s := ref()) is not None and s._new_locks())

    def _new_locks(self) -> None:
        self._memo_lock = threading.Lock()
        self._demo_lock = threading.Lock()
        self._memory._lock = threading.Lock()
        self._uses.lock = threading.Lock()

    # ------------------------------------------------------------------ demo
    def demo_models(self) -> list[ModelInfo]:
        """The shared models: the built-in demo (fitted once per store, then read from disk),
        or the notebook's models (``shared``)."""
        with self._demo_lock:
            if self._demo_infos is None:
                preds, source = self._shared_predictions()
                infos = []
                for i, pred in enumerate(preds):
                    handle = f"{DEMO_PREFIX}{i}"
                    self._demo_preds[handle] = readonly(pred)
                    infos.append(ModelInfo.of(handle, pred, source))
                self._demo_infos = infos
            return list(self._demo_infos)

    def _shared_predictions(self) -> tuple[list[Predictions], str]:
        """The shared models (the ``shared`` given, else the demo's) and their source."""
        if self.shared is not None:
            return [warm(p) for p in self.shared], NOTEBOOK_SOURCE
        key = f"demo:v1:{self.demo_seed}"
        preds = self.cache.get(key)
        if preds is None:
            preds = [warm(p) for p in demo_predictions(self.demo_seed)]
            try:
                self.cache.set(key, preds)
            except StorageUnavailable:
                pass  # served from memory until the disk takes writes again
        return preds, DEMO_SOURCE

    # -------------------------------------------------------------- sessions
    def _session_key(self, sid: str) -> str:
        return f"session:{sid}"

    def uploaded_models(self, sid: str | None) -> list[ModelInfo]:
        """The session's uploaded models (empty for an unknown or expired session)."""
        if not sid:
            return []
        self.sweeper.ensure_running()
        records = self.cache.get(self._session_key(sid), default=None)
        if records is None:
            return []
        self._uses.session(sid)
        return [ModelInfo.from_json(info_fields(r)) for r in records]

    @property
    def storage_problem(self) -> str | None:
        """:data:`STORAGE_MESSAGE` while the disk store refuses writes, else None.

        After a failure, each call tries one small file write, so the banner
        goes as soon as the disk takes writes again (space freed, remounted),
        even in a worker that has not written anything since.
        """
        if self.cache.write_error is None:
            return None
        try:
            save_array(self.cache, f"probe:{os.getpid()}", np.zeros(1), expire=60)
        except StorageUnavailable:
            return STORAGE_MESSAGE
        return None

    def lost_data_message(self, sid: str | None) -> str:
        """Why a session's models are gone: removed to make room (idle, or its client over
        its share), or expired."""
        why = self.budget.eviction_reason(sid)
        if why is None:
            return EXPIRED_MESSAGE
        return SHARE_EVICTED_MESSAGE if why == OVER_SHARE else EVICTED_MESSAGE

    def was_evicted(self, sid: str | None) -> bool:
        """Whether the session's uploads were removed to make room (it has not uploaded since)."""
        return self.budget.was_evicted(sid)

    def storage_failed(self, exc: BaseException) -> None:
        """Record a write failure seen outside the store (e.g. receiving an upload)."""
        self.cache.record_failure(exc)

    def session_models(self, sid: str | None) -> list[ModelInfo]:
        """Demo models, then the session's uploads."""
        return self.demo_models() + self.uploaded_models(sid)

    def add_models(
        self,
        sid: str,
        preds: list[Predictions],
        source: str,
        soft: dict[str, np.ndarray] | None = None,
        client: str | None = None,
    ) -> list[ModelInfo]:
        """Store parsed predictions (and their soft labels) for a session; returns their infos.

        Names already used in the session get `` (2)``, `` (3)``, ... appended.

        Parameters
        ----------
        sid : str
        preds : list of Predictions
        source : str
            The file name shown with the models.
        soft : dict, optional
            Soft labels by model name, each of shape (N, K).
        client : str, optional
            Who uploads (``user:<name>`` or ``addr:<address>``): the session is
            recorded as this client's, and its quota applies; None: the
            client recorded with the session, if any.

        Raises
        ------
        DataUnavailable
            When the session would hold more than ``max_models_per_session`` models.
        StoreFull
            When the session's data would exceed ``max_session_bytes``, its
            client's ``max_client_bytes``, or the store's bound could only be
            kept by evicting data in active use.
        StorageUnavailable
            When the disk refuses the write (nothing of this upload is kept);
            :class:`~app.store.disk.StorageBusy` when other writers kept the
            database locked past its timeout.
        """
        if not sid:
            raise DataUnavailable("no session: reload the page and upload again.")
        soft = soft or {}
        sizes = [
            nbytes(warm(p)) + MODEL_OVERHEAD + getattr(soft.get(p.name), "nbytes", 0) for p in preds
        ]
        try:
            with self.budget.locked():
                records = list(self.cache.get(self._session_key(sid), default=[]))
                client = client or self.budget.client_of(sid)
                self._admit_upload(sid, records, len(preds), sum(sizes), client)
                with self.cache.transact():
                    infos = self._write_models(sid, records, preds, sizes, source, soft)
                    if client is not None:
                        self.budget.record_client(sid, client)
                self.budget.forget_eviction(sid)
                return infos
        except DISK_ERRORS as exc:  # e.g. the transaction itself cannot start
            self.cache.record_failure(exc)
            raise StorageUnavailable(STORAGE_MESSAGE) from None
        except diskcache.Timeout:  # other writers held the database past its timeout
            raise StorageBusy(BUSY_MESSAGE) from None

    def _admit_upload(
        self, sid: str, records: list, count: int, need: int, client: str | None
    ) -> None:
        """Check the session's model count and quota, its client's quota, then make room.

        ``need`` is the decoded size (arrays, sorted scores, soft labels), not the file's.
        """
        if len(records) + count > self.max_models:
            raise DataUnavailable(
                f"this session already holds {len(records)} uploaded models and at most "
                f"{self.max_models} are kept per session; ask the operator to raise "
                "MAX_MODELS_PER_SESSION if you need more."
            )
        self._check_quota(sid, need, "this upload", "upload a smaller file")
        self.budget.check_client(client, need, "this upload", "upload a smaller file")
        self.budget.make_room(sid, need, upload=True, client=client)

    def _write_models(self, sid, records, preds, sizes, source, soft) -> list[ModelInfo]:
        used = {r["name"] for r in records} | {m.name for m in self.demo_models()}
        infos = []
        for pred, size in zip(preds, sizes, strict=True):
            soft_labels = soft.get(pred.name)
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
                    score_column=pred.score_column,
                    extra=pred.extra,
                    _sorted=pred._sorted,
                )
            handle = UPLOAD_PREFIX + secrets.token_urlsafe(18)
            self.put_predictions(handle, pred, owner=sid)
            if soft_labels is not None:
                arr = np.asarray(soft_labels, dtype=np.float64)
                save_array(self.cache, soft_key(handle), arr, self.ttl, sid)
            info = ModelInfo.of(handle, pred, source)
            records.append({**info.to_json(), "nbytes": size})
            infos.append(info)
        self.cache.set(self._session_key(sid), records, expire=self.ttl, tag=sid)
        return infos

    def resolve(self, sid: str | None, handle: str) -> ModelInfo:
        """The info of ``handle`` if this session may use it.

        Raises
        ------
        DataUnavailable
            When the handle is not (or no longer) one of the session's models:
            "your data expired, please upload again", or that it was removed
            to make room (:data:`EVICTED_MESSAGE`).
        """
        for info in self.session_models(sid):
            if info.handle == handle:
                return info
        raise DataUnavailable(self.lost_data_message(sid))

    # ----------------------------------------------------------- predictions
    def put_predictions(self, handle: str, pred: Predictions, owner: str | None = None) -> None:
        """Store predictions, with the sorted scores of every notion, under a handle.

        Arrays are kept as ``.npy`` files in the disk store (one key each) and
        memory-mapped when read; the small ``pred:<handle>`` record that lists
        them is written last, so a reader never sees half a model
        (:func:`app.store.disk.save_predictions`). ``owner`` is the session
        they count against (tagged with its id); None for shared data. The
        caller has admitted the write (:mod:`app.store.budget`).
        """
        warm(pred)
        save_predictions(self.cache, handle, pred, self.ttl, owner)
        self._memory.put(handle, readonly(pred))

    def _load_predictions(self, handle: str) -> Predictions:
        pred, record = load_predictions(self.cache, handle)
        self._uses.model(handle, record)  # its expiry is extended by the next upkeep round
        return pred

    def predictions(self, handle: str) -> Predictions:
        """The predictions stored under ``handle`` (memory first, then the disk store)."""
        pred = self._memory.get(handle)
        if pred is not None:
            return pred
        self.sweeper.ensure_running()
        if handle.startswith(DEMO_PREFIX):
            self.demo_models()
            if handle in self._demo_preds:
                return self._demo_preds[handle]
        pred = self._load_predictions(handle)
        self._memory.put(handle, pred)
        return pred

    def memory_handles(self) -> list[str]:
        """Handles of the models this process keeps in memory, least recently used first."""
        return self._memory.keys()

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

    def get_fit(
        self, handle: str, map_name: str, heldout: HeldOut, *, params: bool = False
    ) -> FitRecord | None:
        """The cached fit, or None (also when its predictions were evicted).

        Its ``params`` (the fitted maps, ``CalibrationMap.to_dict()`` of each
        fold) are read only with ``params=True``; else they are ``[]``
        (unless an older version stored them in the record).
        """
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
        self._uses.key(key)
        if not record.params:  # kept apart (an older version kept them in the record)
            self._uses.key(f"params:{key}")
            if params:
                record.params = self.cache.get(f"params:{key}", default=[])
        return record

    def owner(self, handle: str) -> str | None:
        """The session whose data ``handle`` is (its predictions' tag); None for shared data."""
        try:
            found = self.cache.get(f"pred:{handle}", default=None, tag=True)
        except DISK_ERRORS:
            return None
        return found[1] if isinstance(found, tuple) else None

    def _check_quota(self, sid: str, need: int, what: str, advice: str) -> None:
        """Refuse ``need`` more bytes past the session's quota (uploads and fitted maps).

        Raises
        ------
        StoreFull
            Naming ``what`` needs the room, with ``advice`` for the user.
        """
        used = self.cache.tag_bytes(sid)
        if used + need > self.max_session_bytes:
            raise StoreFull(
                f"{what} needs {mb(need)} of server storage and this session already uses "
                f"{mb(used)} of its {mb(self.max_session_bytes)} quota (uploads and fitted "
                f"maps); {advice}, or ask the operator to raise SESSION_QUOTA_MB."
            )

    def _admit(self, owner: str | None, need: int) -> None:
        """Check a fitted map's write against the owner's quota, then make room; under the lock.

        Raises
        ------
        StoreFull
        """
        client = self.budget.client_of(owner)
        if owner is not None:
            advice = "fit fewer maps or held-out settings"
            self._check_quota(owner, need, "this fitted map", advice)
            self.budget.check_client(client, need, "this fitted map", advice)
        self.budget.make_room(owner, need, upload=False, client=client)

    def put_fit(self, handle: str, record: FitRecord, calibrated: Predictions | None) -> None:
        """Store a fit and its calibrated predictions (counted against the model's session).

        Raises
        ------
        StoreFull
            When the session's quota or the store's bound cannot take the calibrated copy.
        StorageUnavailable
            When the disk refuses the write.
        """
        owner = self.owner(handle)
        key = f"fit:{handle}:{record.map}:{record.heldout}"
        if calibrated is None or record.variant is None:
            self._set_fit(key, record, owner)
            return
        need = nbytes(warm(calibrated)) + MODEL_OVERHEAD
        with self.budget.locked():
            self._admit(owner, need)
            self.put_predictions(record.variant, calibrated, owner)
            self._set_fit(key, record, owner)

    def _set_fit(self, key: str, record: FitRecord, owner: str | None) -> None:
        """Write a fit's parameters, then its record (without them), under ``key``."""
        self.cache.set(f"params:{key}", record.params, expire=self.ttl, tag=owner)
        self.cache.set(key, {**asdict(record), "params": []}, expire=self.ttl, tag=owner)

    def put_rows(self, variant: str, rows) -> None:
        """Store which input rows a split-mode variant holds (indices, shape (n_scored,))."""
        rows = np.asarray(rows, dtype=np.int64)
        owner = self.owner(variant)
        with self.budget.locked():
            self._admit(owner, rows.nbytes)
            self.cache.set(f"rows:{variant}", rows, expire=self.ttl, tag=owner)

    def scored_rows(self, handle: str, heldout: HeldOut):
        """Input row of each scored row, shape (n_scored,); None when all rows, in order."""
        if heldout.mode == "folds":
            return None
        record = self.get_fit(handle, "uncalibrated", heldout)
        if record is None or record.variant is None:
            return None
        return self.cache.get(f"rows:{record.variant}", default=None)

    @staticmethod
    def design_key(handle: str, heldout: HeldOut) -> str:
        """Cache key of how a model's held-out rows were made with one scheme."""
        return f"design:{handle}:{heldout.key}"

    def get_design(self, handle: str, heldout: HeldOut) -> HeldOutDesign | None:
        """The stored :class:`HeldOutDesign` of a model and scheme, or None."""
        data = self.cache.get(self.design_key(handle, heldout), default=None)
        return None if data is None else HeldOutDesign(**data)

    def put_design(self, handle: str, heldout: HeldOut, design: HeldOutDesign) -> None:
        """Store a model's held-out design once (counted against the model's session).

        Nothing is written when it is stored already: every map fitted with
        the scheme has the same design.

        Raises
        ------
        StoreFull
        StorageUnavailable
        """
        key = self.design_key(handle, heldout)
        owner = self.owner(handle)
        with self.budget.locked():
            if self.cache.get(key, default=None) is not None:
                return
            self._admit(owner, design.nbytes)
            self.cache.set(key, asdict(design), expire=self.ttl, tag=owner)

    def shared_result(self, key: str, compute, handle: str):
        """The value stored under ``key``, or ``compute()``, stored there for every worker.

        Concurrent callers (threads, workers, background jobs) compute it
        once: the first claims ``key`` (a :class:`diskcache.Lock`, released
        when done, or after :data:`CLAIM_SECONDS` if its holder dies), the
        others wait for the claim, then read the stored value. The value is
        counted against the session of the data ``handle`` (its owner). When
        the disk or the quota refuses the write, the value is returned
        without being stored.

        Parameters
        ----------
        key : str
            Starting with ``"result:"``; it must name everything the value depends on.
        compute : callable() -> object
            Its result must be picklable and not None.
        handle : str
            The data the value is derived from (whose session owns the value).
        """
        found = self.cache.get(key, default=None)
        if found is not None:
            return found
        lock = diskcache.Lock(self.cache, f"claim:{key}", expire=CLAIM_SECONDS)
        try:
            lock.acquire()
        except DISK_ERRORS as exc:  # a read-only disk: compute here, keep nothing
            self.cache.record_failure(exc)
            return compute()
        try:
            found = self.cache.get(key, default=None)
            if found is None:
                found = compute()
                self._put_result(key, found, handle)
        finally:
            try:
                lock.release()
            except DISK_ERRORS as exc:
                self.cache.record_failure(exc)
        return found

    def _put_result(self, key: str, value, handle: str) -> None:
        """Store a shared result if the quota and the disk take it (else only log)."""
        owner = self.owner(handle)
        try:
            with self.budget.locked():
                self._admit(owner, len(pickle.dumps(value)))
                self.cache.set(key, value, expire=self.ttl, tag=owner)
        except (StoreFull, StorageUnavailable) as exc:
            log.warning("a derived result was not stored: %s", exc)

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

    # --------------------------------------------------------------- upkeep
    def upkeep(self) -> None:
        """One round of the sweeper (:mod:`app.store.upkeep`), every ``sweep_seconds``.

        Writes the uses noted since the last round (:meth:`flush_uses`),
        removes expired entries and their files, drops from memory the models
        and derived values of data no longer stored (expired or evicted), and
        gives the freed memory back to the system.
        """
        self.flush_uses()
        try:
            self.cache.expire()
        except diskcache.Timeout:
            pass  # the next round goes on
        except DISK_ERRORS as exc:
            self.cache.record_failure(exc)
        self.drop_gone()
        release_free_memory()

    def flush_uses(self) -> None:
        """Write the uses noted since the last call: sessions' last use, longer expiries."""
        uses = self._uses.take()
        now = time.time()
        for sid in uses.sessions:
            self._record_use(sid, now)
        for handle, record in uses.models.items():
            touch_predictions(self.cache, handle, record, self.ttl)
        for key in uses.keys:
            self.cache.touch(key, expire=self.ttl)

    def _record_use(self, sid: str, now: float) -> None:
        """Write that ``sid`` was used at ``now`` and extend its expiry, unless another
        process did within :data:`USE_RECORD_SECONDS`."""
        last = self.cache.get(use_key(sid), default=None)
        if isinstance(last, float) and now - last < USE_RECORD_SECONDS:
            return
        if not self.cache.touch(self._session_key(sid), expire=self.ttl):
            return  # expired or evicted meanwhile, or the disk refused the write
        self.cache.touch(CLIENT_PREFIX + sid, expire=self.ttl)
        try:
            self.cache.set(use_key(sid), now, expire=self.ttl, tag=sid)
        except (StorageUnavailable, diskcache.Timeout):
            pass  # the session's next use is written by a later round

    def drop_gone(self) -> int:
        """Drop from memory the models and memo values of handles no longer stored.

        Returns
        -------
        int
            How many handles were gone.
        """
        with self._memo_lock:
            memo_keys = list(self._memo)
        named = {key: set(STORED_HANDLE.findall(repr(key))) for key in memo_keys}
        handles = set(self._memory.keys()).union(*named.values())
        gone = {h for h in handles if f"pred:{h}" not in self.cache}
        if not gone:
            return 0
        self._memory.drop(gone)
        with self._memo_lock:
            for key, mentioned in named.items():
                if mentioned & gone:
                    self._memo.pop(key, None)
        return len(gone)

    def close(self) -> None:
        """Stop the sweeper and close the disk store."""
        self.sweeper.stop()
        self.cache.close()
