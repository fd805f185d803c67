"""The hard size bound of the disk store and who may use its space: :class:`StoreBudget`.

diskcache's own bound culls least-recently-used entries *after* a write has
passed it, so the store overshot its bound, and a newcomer's uploads pushed
out the data of users who were still working with it. Instead, every large
write (an upload's arrays, a fitted map's calibrated copy) is *admitted*
first, under one lock shared by all workers and jobs (a ``flock`` on a file
in the store), and written while that lock is held:

1. The store's size (:meth:`StoreBudget.usage`: the sqlite database, its
   write-ahead log and the value files, as on disk) plus the write must stay
   under a limit: :data:`UPLOAD_SHARE` of ``CACHE_SIZE_LIMIT_MB`` for uploads,
   :data:`DERIVED_SHARE` of it for fitted maps. The space between the two is
   kept for fitting the models already stored, so users who uploaded before
   the store filled up can keep working; the last part is for the small
   records (fit results, settings, exports) that are not admitted one by one.
2. If the write does not fit, expired entries are removed, then the data of
   sessions idle for ``IDLE_EVICTION_SECONDS`` (no use recorded, no write:
   :meth:`ResilientCache.idle_tags`), oldest first; each such session gets a
   tombstone, so its page says its data was "removed to make room", not that
   it expired.
3. If it still does not fit, the write is refused with :class:`StoreFull`
   ("the server is full right now"): data in active use is never evicted.

Why not a per-client limit here: sessions are anonymous and free (dropping
the cookie starts a new one), so a rule per session cannot stop one client
from filling the store with many sessions. What the store guarantees is the
bound, that data in use stays, and a clear refusal; limiting a client is the
proxy's or basic auth's job (docs/hosting.md).

A session's entries carry its id as diskcache tag, so its usage
(:meth:`ResilientCache.tag_bytes`) counts uploads, soft labels and fitted
maps alike, and eviction removes all of it at once.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .disk import STORAGE_MESSAGE, ResilientCache, StorageUnavailable

log = logging.getLogger("calibration_dashboard.store")

#: Share of the bound that uploads may fill.
UPLOAD_SHARE = 0.8
#: Share of the bound that fitted maps (calibrated copies) may fill.
DERIVED_SHARE = 0.97
LOCK_FILE = "budget.lock"
TOMBSTONE_PREFIX = "evicted:"


def mb(n: float) -> str:
    """``n`` bytes as ``"12.3 MB"``."""
    return f"{n / (1 << 20):.1f} MB"


class StoreFull(StorageUnavailable):
    """The store cannot take a write without evicting data in active use."""


def full_message(need: int, used: int, limit: int) -> str:
    """What a refused write says: the sizes, when to retry, and the setting to raise."""
    return (
        f"The server is full right now: this needs {mb(need)} of storage and {mb(used)} of the "
        f"{mb(limit)} available are taken by data other users are working with. Try again "
        "later, or ask the operator to raise CACHE_SIZE_LIMIT_MB."
    )


class StoreBudget:
    """Admission of large writes to a :class:`ResilientCache` (see the module docstring).

    Parameters
    ----------
    cache : ResilientCache
        Created with ``tag_index=True`` and a size limit it never reaches.
    bound_bytes : int
        ``CACHE_SIZE_LIMIT_MB``: the store's size on disk stays below it.
    idle_seconds : int
        Data of a session not used for this long may be evicted to make room.
    ttl_seconds : int
        How long a tombstone is kept (the session's data would have expired by then).
    """

    def __init__(
        self, cache: ResilientCache, bound_bytes: int, idle_seconds: int, ttl_seconds: int
    ) -> None:
        self.cache = cache
        self.bound = int(bound_bytes)
        self.idle_seconds = int(idle_seconds)
        self.ttl = int(ttl_seconds)
        self.directory = Path(cache.directory)

    def usage(self) -> int:
        """Bytes of the store on disk: database pages, write-ahead log and value files."""
        wal = self.directory / "cache.db-wal"
        try:
            wal_bytes = wal.stat().st_size
        except OSError:
            wal_bytes = 0
        return int(self.cache.volume()) + wal_bytes

    def limit(self, upload: bool) -> int:
        """The size the store may reach with an upload (True) or a fitted map (False)."""
        return int(self.bound * (UPLOAD_SHARE if upload else DERIVED_SHARE))

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's admission lock (all threads, workers and jobs) for the block.

        Each holder opens the lock file itself, so threads of one process
        exclude each other too; the kernel releases it if the process dies.
        Opened read-only, so the lock works on a read-only disk (writes then
        fail with their own message).

        Raises
        ------
        StorageUnavailable
            When the lock file cannot even be created (disk full or read-only).
        """
        try:
            fd = os.open(self.directory / LOCK_FILE, os.O_RDONLY | os.O_CREAT, 0o600)
        except OSError as exc:
            self.cache.record_failure(exc)
            raise StorageUnavailable(STORAGE_MESSAGE) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def make_room(self, sid: str | None, need: int, *, upload: bool) -> None:
        """Ensure ``need`` more bytes fit under the limit; call while :meth:`locked`.

        Removes expired entries, then the data of idle sessions (never ``sid``'s),
        until it fits.

        Raises
        ------
        StoreFull
            When it cannot fit without touching data in active use.
        """
        limit = self.limit(upload)
        if self.usage() + need <= limit:
            return
        self.cache.expire()
        if self.usage() + need <= limit:
            return
        for tag in self.cache.idle_tags(before=time.time() - self.idle_seconds):
            if tag == sid:
                continue
            self.evict(tag)
            if self.usage() + need <= limit:
                return
        raise StoreFull(full_message(need, self.usage(), limit))

    def evict(self, sid: str) -> None:
        """Remove all of a session's data, leaving a tombstone that says why."""
        freed = self.cache.tag_bytes(sid)
        self.cache.evict(sid)
        self.cache.set(TOMBSTONE_PREFIX + sid, time.time(), expire=self.ttl)
        log.warning("evicted an idle session's data (%s) to make room", mb(freed))

    def was_evicted(self, sid: str | None) -> bool:
        """Whether the session's data was removed to make room (and it has not uploaded since)."""
        return bool(sid) and self.cache.get(TOMBSTONE_PREFIX + sid, default=None) is not None

    def forget_eviction(self, sid: str) -> None:
        """Drop the session's tombstone (it uploaded again)."""
        self.cache.delete(TOMBSTONE_PREFIX + sid)
