"""The disk layer of the store: a diskcache that survives a full or read-only disk, and arrays.

:class:`ResilientCache` is the :mod:`diskcache` cache behind
:class:`app.store.DataStore`. Its reads are plain ``SELECT`` statements, never a
write transaction (no eviction policy: a read updates nothing), so they neither
wait for the writers of other workers nor fail with the disk. When the disk is
full or read-only, its writes raise :class:`StorageUnavailable` (whose message,
:data:`STORAGE_MESSAGE`, is shown as a banner), so everything stored before
stays usable. A read that still finds the database locked past its retries
raises :class:`StorageBusy` (a message, not an HTTP 500).

:func:`save_array` and :func:`load_array` keep one numpy array per key as a
raw ``.npy`` file (no pickle) that readers memory-map, so all workers share
one copy in the page cache. :func:`save_predictions`,
:func:`load_predictions` and :func:`touch_predictions` lay a whole
:class:`~calibration_core.Predictions` out as such arrays plus a small
record naming them (the ``pred:<handle>`` and ``arr:<handle>:...`` keys).

A model takes a bounded number of files whatever its number of classes: its
probabilities, labels and logits, and one file per attribute of the sorted
scores, which stacks that attribute of every notion and class (the record
keeps the row offsets; readers slice the memory map). One file per class and
attribute made a 24,000-class model 48,006 files and exhausted the workers'
file descriptors. The file's other columns likewise take one file per dtype
plus one for the text columns' values (:func:`save_extra`).
"""

from __future__ import annotations

import io
import json
import logging
import os
import sqlite3
import tempfile
import time

import diskcache
import numpy as np

from calibration_core import CalibrationInputError, Predictions, SortedScores
from calibration_core.predictions import with_extra

from .extra_columns import EncodedColumn, decode_extra, encode_extra, parse_categories
from .records import slot_arrays

log = logging.getLogger("calibration_dashboard.store")


class DataUnavailable(CalibrationInputError):
    """A handle the session cannot use (expired, evicted or not its own)."""


class StorageUnavailable(CalibrationInputError):
    """The disk store refused a write (full or read-only); stored data stays readable."""


class StorageBusy(StorageUnavailable):
    """The disk store stayed locked past the retries of a read (:class:`diskcache.Timeout`)."""


STORAGE_MESSAGE = (
    "The server could not save this: its storage (CACHE_DIR) is full or read-only. "
    "Everything loaded before is still there; try again later, or ask the operator to free "
    "space in CACHE_DIR."
)
BUSY_MESSAGE = (
    "The server's storage is busy right now (other users are saving data); reload the page "
    "or repeat the action in a few seconds."
)
#: Pauses (seconds) before each retry of a read that found the disk store locked.
READ_RETRY_PAUSES = (0.05, 0.2, 0.5)
#: Errors of a disk that refuses writes (sqlite: "database or disk is full", "readonly
#: database", "disk I/O error"; files: ENOSPC, EROFS, EDQUOT, ...).
DISK_ERRORS = (OSError, sqlite3.OperationalError, sqlite3.DatabaseError)


class ResilientCache(diskcache.Cache):
    """A :class:`diskcache.Cache` whose reads never write and that keeps reading when writes fail.

    Open it with ``eviction_policy="none"`` (and ``statistics`` off, the
    default): ``get`` is then one ``SELECT``, no ``BEGIN IMMEDIATE``. A read
    that raises :class:`diskcache.Timeout` all the same is retried after
    each of :data:`READ_RETRY_PAUSES`, then raises :class:`StorageBusy`.
    ``touch`` failures (a full disk, a lock held too long) are ignored; a
    failed ``set`` raises :class:`StorageUnavailable`. ``write_error`` holds
    the last write failure (None after a successful write).
    """

    write_error: str | None = None

    def record_failure(self, exc: BaseException) -> None:
        """Remember a refused write (logged once) for :attr:`write_error`."""
        if self.write_error is None:
            log.error("the disk store refused a write: %s", exc)
        self.write_error = f"{type(exc).__name__}: {exc}"

    def get(self, key, default=None, read=False, expire_time=False, tag=False, retry=False):
        for pause in READ_RETRY_PAUSES:
            try:
                return super().get(key, default, read, expire_time, tag, retry)
            except diskcache.Timeout:
                time.sleep(pause)
        try:
            return super().get(key, default, read, expire_time, tag, retry)
        except diskcache.Timeout:
            log.warning(
                "a read found the disk store locked after %d retries", len(READ_RETRY_PAUSES)
            )
            raise StorageBusy(BUSY_MESSAGE) from None

    def touch(self, key, expire=None, retry=False):
        try:
            return super().touch(key, expire, retry)
        except diskcache.Timeout:
            return False  # bookkeeping: the next round extends the expiry
        except DISK_ERRORS as exc:
            self.record_failure(exc)
            return False

    def set(self, key, value, expire=None, read=False, tag=None, retry=False):
        try:
            done = super().set(key, value, expire, read, tag, retry)
        except DISK_ERRORS as exc:
            self.record_failure(exc)
            raise StorageUnavailable(STORAGE_MESSAGE) from None
        self.write_error = None
        return done

    def tag_bytes(self, tag: str) -> int:
        """Bytes of the unexpired values kept as files under ``tag`` (one session's arrays)."""
        ((total,),) = self._sql(
            "SELECT COALESCE(SUM(size), 0) FROM Cache WHERE tag = ?"
            " AND (expire_time IS NULL OR expire_time > ?)",
            (tag, time.time()),
        ).fetchall()
        return int(total)

    def tag_usage(self) -> dict[str, tuple[int, float]]:
        """``{tag: (bytes of its unexpired files, last store time)}`` of every tag."""
        rows = self._sql(
            "SELECT tag, COALESCE(SUM(size), 0), MAX(store_time) FROM Cache"
            " WHERE tag IS NOT NULL AND (expire_time IS NULL OR expire_time > ?) GROUP BY tag",
            (time.time(),),
        ).fetchall()
        return {tag: (int(size), float(last)) for tag, size, last in rows}

    def idle_tags(self, before: float) -> list[str]:
        """Tags whose entries were all last written before ``before`` (epoch seconds), oldest first.

        Reads record nothing; a session's use is written as an entry of its
        own, under its tag (:meth:`app.store.DataStore.flush_uses`, at most
        once a minute), so the latest ``store_time`` of a tag's entries is
        when the session last used or stored any of its data.
        """
        rows = self._sql(
            "SELECT tag, MAX(store_time) AS last FROM Cache WHERE tag IS NOT NULL"
            " GROUP BY tag HAVING last < ? ORDER BY last",
            (before,),
        ).fetchall()
        return [tag for tag, _ in rows]


def save_array(
    cache: diskcache.Cache, key: str, arr: np.ndarray, expire: float | None, tag: str | None = None
) -> None:
    """Store one array under ``key`` as the raw bytes of a ``.npy`` file.

    Parameters
    ----------
    cache : diskcache.Cache
    key : str
    arr : numpy.ndarray
        Any shape and (non-object) dtype; saved C-contiguous, without pickle.
    expire : float or None
        Seconds until the entry expires.
    tag : str, optional
        The owning session's id (its data is counted and evicted by tag).

    Raises
    ------
    StorageUnavailable
        When ``cache`` is a :class:`ResilientCache` and the disk refuses the write.
    """
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    buf.seek(0)
    # read=True: diskcache stores the raw .npy bytes as a file (no pickle).
    cache.set(key, buf, read=True, expire=expire, tag=tag)


def load_array(cache: diskcache.Cache, key: str) -> np.ndarray:
    """The array stored under ``key`` by :func:`save_array`.

    Returns
    -------
    numpy.ndarray
        Same shape and dtype as saved; a read-only memory map of the ``.npy``
        file when diskcache keeps it as a file (no copy, and the page cache is
        shared by all workers), else an in-memory copy.

    Raises
    ------
    DataUnavailable
        When nothing is stored under ``key`` (expired or evicted).
    """
    handle = cache.get(key, default=None, read=True)
    if handle is None:
        raise DataUnavailable("your data expired, please upload again.")
    with handle:
        path = getattr(handle, "name", None)
        if isinstance(path, str) and os.path.isfile(path):
            # Memory-mapped: no copy, and the page cache is shared by all workers.
            return np.load(path, mmap_mode="r", allow_pickle=False)
        return np.load(io.BytesIO(handle.read()), allow_pickle=False)


def save_stacked(
    cache: diskcache.Cache,
    key: str,
    parts: list[np.ndarray],
    expire: float | None,
    tag: str | None = None,
) -> None:
    """Store ``parts`` (one dtype and trailing shape) concatenated along axis 0 as one ``.npy``.

    The file is written part by part to a temporary file next to the cache, so
    no concatenated copy is made in memory.

    Raises
    ------
    StorageUnavailable
        When the disk refuses the temporary file or the cache entry.
    """
    first = parts[0]
    rows = sum(p.shape[0] for p in parts)
    header = {
        "descr": np.lib.format.dtype_to_descr(first.dtype),
        "fortran_order": False,
        "shape": (rows, *first.shape[1:]),
    }
    try:
        with tempfile.TemporaryFile(dir=cache.directory, prefix="stack-") as fh:
            np.lib.format.write_array_header_1_0(fh, header)
            for part in parts:
                part = np.ascontiguousarray(part, dtype=first.dtype)
                fh.write(part.reshape(-1).view(np.uint8).data)  # datetime64: no buffer of its own
            fh.seek(0)
            cache.set(key, fh, read=True, expire=expire, tag=tag)
    except DISK_ERRORS as exc:
        if isinstance(cache, ResilientCache):
            cache.record_failure(exc)
        raise StorageUnavailable(STORAGE_MESSAGE) from None


def save_predictions(
    cache: diskcache.Cache,
    handle: str,
    pred: Predictions,
    expire: float | None,
    tag: str | None = None,
) -> dict:
    """Store ``pred`` under ``handle``: its arrays, then the record that lists them.

    Keys: ``arr:<handle>:<field>`` for probs (N, K), labels (N,) and logits
    (N, K, when present); ``arr:<handle>:sorted:<slot>`` for each attribute
    of the sorted scores already built, stacked over notions and classes
    (:func:`save_stacked`; ``record["sorted"]`` lists the ``(notion, class)``
    keys and ``record["offsets"][slot]`` the first row of each); last
    ``pred:<handle>``, the record, so a reader never sees half a model. At
    most 5 array files whatever the number of classes (plus
    :func:`save_extra`'s for the other columns). Every entry carries
    ``tag`` (the owning session's id, or None for shared data such as the
    demo's fits).

    Returns
    -------
    dict
        The record stored under ``pred:<handle>``.
    """
    arrays = {"probs": pred.probs, "labels": pred.labels}
    if pred.logits is not None:
        arrays["logits"] = pred.logits
    record = {
        "name": pred.name,
        "class_names": list(pred.class_names),
        "score_column": pred.score_column,
        "arrays": [],
        "sorted": [],
        "offsets": {},
    }
    for field_name, arr in arrays.items():
        save_array(cache, f"arr:{handle}:{field_name}", arr, expire, tag)
        record["arrays"].append(field_name)
    stacks: dict[str, list[np.ndarray]] = {}
    for key, sorted_scores in pred._sorted.items():
        slots = slot_arrays(sorted_scores)
        if slots is None:
            continue
        record["sorted"].append(list(key))
        for slot, arr in slots.items():
            stacks.setdefault(slot, []).append(arr)
    for slot, parts in stacks.items():
        save_stacked(cache, f"arr:{handle}:sorted:{slot}", parts, expire, tag)
        record["offsets"][slot] = np.cumsum([0] + [p.shape[0] for p in parts]).tolist()
    if pred.extra:
        record["extra"] = save_extra(cache, handle, pred.extra, expire, tag)
    cache.set(f"pred:{handle}", record, expire=expire, tag=tag)
    return record


def save_extra(cache: diskcache.Cache, handle: str, extra, expire, tag) -> dict:
    """Store a model's other columns (:mod:`app.store.extra_columns`) in a bounded number of files.

    Columns of one dtype are stacked into one file ``arr:<handle>:extra:<dtype>``
    (column ``i`` of that dtype is rows ``i*N .. (i+1)*N``), and the categories
    of every text column go to one UTF-8 JSON file ``arr:<handle>:extra:categories``:
    at most 9 files whatever the number of columns.

    Returns
    -------
    dict
        ``{"columns": [header + "index"], "files": [dtype...]}`` for the record.
    """
    columns = encode_extra(extra)
    stacks: dict[str, list[np.ndarray]] = {}
    headers = []
    for col in columns:
        parts = stacks.setdefault(col.values.dtype.str, [])
        headers.append({**col.header(), "index": len(parts)})
        parts.append(col.values)
    for dtype, parts in stacks.items():
        save_stacked(cache, f"arr:{handle}:extra:{dtype}", parts, expire, tag)
    names = [list(c.categories) for c in columns if c.kind == "text"]
    files = list(stacks)
    if names:
        blob = np.frombuffer(json.dumps(names).encode(), dtype=np.uint8)
        save_array(cache, f"arr:{handle}:extra:categories", blob, expire, tag)
        files.append("categories")
    return {"columns": headers, "files": files}


def load_extra(cache: diskcache.Cache, handle: str, stored: dict, n: int) -> dict:
    """The other columns saved by :func:`save_extra`, for ``Predictions.extra``.

    Raises
    ------
    DataUnavailable
        When one of the files is gone (expired or evicted).
    """
    stacks = {
        name: load_array(cache, f"arr:{handle}:extra:{name}")
        for name in stored["files"]
        if name != "categories"
    }
    names = iter(())
    if "categories" in stored["files"]:
        raw = load_array(cache, f"arr:{handle}:extra:categories").tobytes()
        names = iter(json.loads(raw))
    columns = []
    for h in stored["columns"]:
        i = h["index"]
        values = stacks[h["dtype"]][i * n : (i + 1) * n]
        categories = ()
        if h["kind"] == "text":
            categories = parse_categories(json.dumps(next(names)), h["n_categories"], h["name"])
        columns.append(EncodedColumn(h["name"], h["kind"], values, categories))
    return decode_extra(columns)


def load_predictions(cache: diskcache.Cache, handle: str) -> tuple[Predictions, dict]:
    """The Predictions stored by :func:`save_predictions` (arrays memory-mapped), and its record.

    Raises
    ------
    DataUnavailable
        When the record or one of its arrays is gone (expired or evicted).
    """
    record = cache.get(f"pred:{handle}", default=None)
    if not isinstance(record, dict):
        raise DataUnavailable("your data expired, please upload again.")
    arrays = {name: load_array(cache, f"arr:{handle}:{name}") for name in record["arrays"]}
    pred = Predictions(
        probs=arrays["probs"],
        labels=arrays["labels"],
        class_names=tuple(record["class_names"]),
        logits=arrays.get("logits"),
        name=record["name"],
        score_column=bool(record.get("score_column", False)),
    )
    if "extra" in record:
        extra = load_extra(cache, handle, record["extra"], pred.n_samples)
        pred = with_extra(pred, extra)
    stacked = {slot: load_array(cache, f"arr:{handle}:sorted:{slot}") for slot in record["offsets"]}
    for i, key in enumerate(record["sorted"]):
        sorted_scores = SortedScores.__new__(SortedScores)
        for slot, offsets in record["offsets"].items():
            setattr(sorted_scores, slot, stacked[slot][offsets[i] : offsets[i + 1]])
        pred._sorted[(key[0], key[1])] = sorted_scores
    return pred, record


def touch_predictions(
    cache: diskcache.Cache, handle: str, record: dict, expire: float | None
) -> None:
    """Extend the expiry of the record of ``handle`` and of every array it lists."""
    cache.touch(f"pred:{handle}", expire=expire)
    for name in record["arrays"]:
        cache.touch(f"arr:{handle}:{name}", expire=expire)
    for slot in record["offsets"]:
        cache.touch(f"arr:{handle}:sorted:{slot}", expire=expire)
    for name in record.get("extra", {}).get("files", ()):
        cache.touch(f"arr:{handle}:extra:{name}", expire=expire)
