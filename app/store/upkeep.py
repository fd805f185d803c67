"""The store's bookkeeping off the read path: uses recorded in memory, written on a schedule.

A read of the disk store writes nothing (:class:`app.store.disk.ResilientCache`).
What a read used to write, the session's last use and the longer expiry of
what it read, is noted in memory (:class:`PendingUses`) and written by each
process's :class:`Sweeper`, a daemon thread that also removes expired entries
(their files leave the disk) and drops the memory of data that is gone, every
:data:`SWEEP_SECONDS`: so a session's use is written at most once a minute,
however many requests it makes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("calibration_dashboard.store")

#: Seconds between two rounds of a process's sweeper (uses written, expired data removed).
SWEEP_SECONDS = 60.0


@dataclass
class Uses:
    """What was read since the last round.

    Attributes
    ----------
    sessions : set of str
        Session ids whose records were read.
    models : dict of str to dict
        Model handles read from the disk store, with their records (the arrays to touch).
    keys : set of str
        Other keys whose expiry to extend (fit records and their parameters).
    """

    sessions: set[str] = field(default_factory=set)
    models: dict[str, dict] = field(default_factory=dict)
    keys: set[str] = field(default_factory=set)


class PendingUses:
    """Uses noted by readers (any thread) until the sweeper takes them."""

    def __init__(self) -> None:
        self._uses = Uses()
        self.lock = threading.Lock()

    def session(self, sid: str) -> None:
        """Note that session ``sid`` was used."""
        with self.lock:
            self._uses.sessions.add(sid)

    def model(self, handle: str, record: dict) -> None:
        """Note that the model ``handle`` (its record ``record``) was read from the disk store."""
        with self.lock:
            self._uses.models[handle] = record

    def key(self, key: str) -> None:
        """Note that the entry ``key`` was read."""
        with self.lock:
            self._uses.keys.add(key)

    def take(self) -> Uses:
        """The uses noted since the last call (and forget them)."""
        with self.lock:
            uses, self._uses = self._uses, Uses()
        return uses


class Sweeper:
    """A daemon thread of one process that calls ``owner.upkeep()`` every ``period`` seconds.

    It holds its owner weakly (it stops once the owner is gone) and starts
    again in a forked child on the child's first :meth:`ensure_running`
    (threads do not survive a fork).

    Parameters
    ----------
    owner : object
        With an ``upkeep()`` method (:meth:`app.store.DataStore.upkeep`).
    period : float
        Seconds between rounds; 0 or less: never started (rounds run only
        when called directly).
    """

    def __init__(self, owner, period: float) -> None:
        self._owner = weakref.ref(owner)
        self.period = float(period)
        self._stop = threading.Event()
        self._pid: int | None = None

    def ensure_running(self) -> None:
        """Start the thread in this process unless it runs already (cheap enough for each read)."""
        if self._pid == os.getpid() or self.period <= 0 or self._stop.is_set():
            return
        self._pid = os.getpid()
        thread = threading.Thread(
            target=_sweep_loop,
            args=(self._owner, self.period, self._stop),
            name="store-sweeper",
            daemon=True,
        )
        thread.start()

    def stop(self) -> None:
        """Stop the thread (after the round it may be running)."""
        self._stop.set()


def _sweep_loop(owner: Callable[[], object], period: float, stop: threading.Event) -> None:
    while not stop.wait(period):
        store = owner()
        if store is None:
            return
        try:
            store.upkeep()  # type: ignore[attr-defined]
        except Exception:  # the thread must live on: the next round tries again
            log.exception("the store's upkeep round failed")
        del store


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (None elsewhere, e.g. musl or macOS)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        return libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None


MALLOC_TRIM = _malloc_trim()


def release_free_memory() -> None:
    """Give the allocator's free pages back to the system (glibc ``malloc_trim(0)``).

    Freed arrays smaller than glibc's (adaptive, up to 32 MB) mmap threshold
    stay in the heap's free lists and in the process's RSS until trimmed.
    """
    if MALLOC_TRIM is not None:
        MALLOC_TRIM(0)
