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
3. If it still does not fit and the writer's client is within its fair
   share (the uploads' room divided by the clients storing data, the writer
   included), clients over their share lose their least recently used
   sessions, the largest client first, until it fits (their page says
   their data was removed to make room for other users).
4. Otherwise the write is refused with :class:`StoreFull` ("the server is
   full right now").

Fair storage: sessions are anonymous and free (dropping the cookie starts a
new one), so a quota per session cannot stop one client from filling the
store with many sessions. Each session therefore records its *client*
(``client:<sid>``, under the session's tag): the signed-in user with basic
auth, else the client address (the proxy's ``X-Forwarded-For`` when the proxy
is trusted). A client's sessions together may keep at most
:meth:`StoreBudget.client_limit` (``CLIENT_QUOTA_MB``, and never more than
the uploads' room less ``STORE_RESERVE_PERCENT``), so one client always
leaves room for others; past it, the client is told its own quota is
reached (:func:`client_message`), not that the server is full. Sizes are
those of the decoded arrays (with their sorted scores), counted before
anything is written.

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
CLIENT_PREFIX = "client:"
#: Why a session's data was evicted (its tombstone's value): idle, or its client over its share.
IDLE, OVER_SHARE = "idle", "share"


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


def client_label(client: str) -> str:
    """How a client key (``user:<name>`` or ``addr:<address>``) is named to its user."""
    kind, _, name = client.partition(":")
    return f"signed-in user {name!r}" if kind == "user" else f"address {name}"


def client_message(client: str, need: int, used: int, quota: int, what: str, advice: str) -> str:
    """What a write refused by its client's quota says: the sizes and what to do."""
    return (
        f"{what} needs {mb(need)} of server storage and this client ({client_label(client)}) "
        f"already uses {mb(used)} of its {mb(quota)} quota over all its sessions; {advice}, "
        "wait until your older sessions' data expires, or ask the operator to raise "
        "CLIENT_QUOTA_MB."
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
    client_bytes : int, optional
        ``CLIENT_QUOTA_MB``: data one client's sessions may keep together; None: no quota
        but the reserve.
    reserve : float
        ``STORE_RESERVE_PERCENT`` / 100: share of the uploads' room no client may take.
    """

    def __init__(
        self,
        cache: ResilientCache,
        bound_bytes: int,
        idle_seconds: int,
        ttl_seconds: int,
        client_bytes: int | None = None,
        reserve: float = 0.25,
    ) -> None:
        self.cache = cache
        self.bound = int(bound_bytes)
        self.idle_seconds = int(idle_seconds)
        self.ttl = int(ttl_seconds)
        self.client_bytes = None if client_bytes is None else int(client_bytes)
        self.reserve = float(reserve)
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

    def client_limit(self) -> int:
        """Data one client may keep: its quota, at most the uploads' room less the reserve."""
        room = int(self.limit(upload=True) * (1.0 - self.reserve))
        return room if self.client_bytes is None else min(self.client_bytes, room)

    def client_of(self, sid: str | None) -> str | None:
        """The client recorded with session ``sid`` (None: unknown)."""
        if not sid:
            return None
        client = self.cache.get(CLIENT_PREFIX + sid, default=None)
        return client if isinstance(client, str) else None

    def record_client(self, sid: str, client: str) -> None:
        """Record that ``sid`` is ``client``'s (under the session's tag: evicted with it)."""
        self.cache.set(CLIENT_PREFIX + sid, client, expire=self.ttl, tag=sid)

    def clients(self) -> dict[str, list[tuple[float, int, str]]]:
        """Sessions storing data by client: ``(last use, bytes, sid)``, least recently used first.

        A session with no recorded client counts as a client of its own.
        """
        groups: dict[str, list[tuple[float, int, str]]] = {}
        for sid, (size, last) in self.cache.tag_usage().items():
            client = self.client_of(sid) or f"session:{sid}"
            groups.setdefault(client, []).append((last, size, sid))
        for sessions in groups.values():
            sessions.sort()
        return groups

    def check_client(self, client: str | None, need: int, what: str, advice: str) -> None:
        """Refuse ``need`` more bytes past ``client``'s quota (see :meth:`client_limit`).

        Raises
        ------
        StoreFull
            Saying that this client's quota is reached, naming ``what`` and ``advice``.
        """
        if client is None:
            return
        used = sum(size for _, size, _ in self.clients().get(client, []))
        quota = self.client_limit()
        if used + need > quota:
            raise StoreFull(client_message(client, need, used, quota, what, advice))

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

    def make_room(
        self, sid: str | None, need: int, *, upload: bool, client: str | None = None
    ) -> None:
        """Ensure ``need`` more bytes fit under the limit; call while :meth:`locked`.

        Removes expired entries, then the data of idle sessions (never ``sid``'s),
        then, for a ``client`` within its fair share, the least recently used
        sessions of clients over theirs, until it fits.

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
        if client is not None and self._evict_over_share(client, need, limit):
            return
        raise StoreFull(full_message(need, self.usage(), limit))

    def _evict_over_share(self, client: str, need: int, limit: int) -> bool:
        """Evict sessions of clients over their fair share for ``client``; whether it now fits.

        The fair share is ``limit`` divided by the clients storing data files (``client``
        included); nothing is evicted unless ``client`` stays within it. The largest
        client loses its least recently used sessions first, each client only while
        it is over the share.
        """
        groups = self.clients()
        groups.setdefault(client, [])
        used = {c: sum(size for _, size, _ in sessions) for c, sessions in groups.items()}
        storing = sum(1 for c, n in used.items() if n > 0 or c == client)
        share = limit // storing
        if used[client] + need > share:
            return False
        for victim in sorted(groups, key=used.__getitem__, reverse=True):
            if victim == client:
                continue
            for _, size, sid in groups[victim]:
                if used[victim] <= share:
                    break
                self.evict(sid, OVER_SHARE)
                used[victim] -= size
                if self.usage() + need <= limit:
                    return True
        return False

    def evict(self, sid: str, why: str = IDLE) -> None:
        """Remove all of a session's data, leaving a tombstone that says why (``IDLE`` or
        ``OVER_SHARE``)."""
        freed = self.cache.tag_bytes(sid)
        self.cache.evict(sid)
        self.cache.set(TOMBSTONE_PREFIX + sid, why, expire=self.ttl)
        log.warning("evicted a session's data (%s, %s) to make room", mb(freed), why)

    def eviction_reason(self, sid: str | None) -> str | None:
        """Why the session's data was removed to make room (``IDLE``, ``OVER_SHARE``), or None."""
        if not sid:
            return None
        why = self.cache.get(TOMBSTONE_PREFIX + sid, default=None)
        if why is None:
            return None
        return why if why in (IDLE, OVER_SHARE) else IDLE  # older tombstones hold a time

    def was_evicted(self, sid: str | None) -> bool:
        """Whether the session's data was removed to make room (and it has not uploaded since)."""
        return bool(sid) and self.cache.get(TOMBSTONE_PREFIX + sid, default=None) is not None

    def forget_eviction(self, sid: str) -> None:
        """Drop the session's tombstone (it uploaded again)."""
        self.cache.delete(TOMBSTONE_PREFIX + sid)
