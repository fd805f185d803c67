"""Threads for independent column blocks: how many to use, and a map over blocks.

numpy releases the GIL inside its loops on large arrays, so the column blocks
of a one-vs-rest fit (:mod:`calibration_core.maps.onevsrest`) run in parallel
threads with results identical to a sequential run (each block is computed by
the same code on its own arrays; only the order in which blocks finish
changes).

How many threads
----------------
The environment variable ``CALIBRATION_CORE_THREADS`` (a positive integer)
sets the number; by default it is the number of CPUs this process may run on
(``os.sched_getaffinity``), at most :data:`MAX_THREADS`. Set it to 1 where
processes already share the cores (e.g. several gunicorn workers fitting at
once) or to compare single-threaded timings.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from .errors import CalibrationInputError

__all__ = ["ENV_VAR", "MAX_THREADS", "map_blocks", "n_threads"]

ENV_VAR = "CALIBRATION_CORE_THREADS"
#: Upper bound of the default thread count.
MAX_THREADS = 8

T = TypeVar("T")
R = TypeVar("R")


def n_threads() -> int:
    """Threads for block-parallel work (``CALIBRATION_CORE_THREADS`` or the usable CPUs).

    Raises
    ------
    CalibrationInputError
        When ``CALIBRATION_CORE_THREADS`` is set to something other than a
        positive integer.
    """
    value = os.environ.get(ENV_VAR, "").strip()
    if value:
        try:
            count = int(value)
        except ValueError:
            count = 0
        if count < 1:
            raise CalibrationInputError(
                f"{ENV_VAR}={value!r} is not a positive integer; set it to the number of "
                "threads (1 for single-threaded fits) or unset it to use every CPU."
            )
        return count
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_THREADS))


def map_blocks(fn: Callable[[T], R], items: Iterable[T], threads: int | None = None) -> list[R]:
    """``[fn(item) for item in items]``, run on up to ``threads`` threads.

    Parameters
    ----------
    fn : callable
        Work on one block; it must only write to arrays it owns.
    items : iterable
        The blocks.
    threads : int, optional
        Thread count; :func:`n_threads` when omitted. One thread (or one
        block) runs in the calling thread without a pool.

    Returns
    -------
    list
        ``fn(item)`` in the order of ``items``.
    """
    items = list(items)
    count = min(n_threads() if threads is None else threads, len(items))
    if count <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(count, thread_name_prefix="calibration-core") as pool:
        return list(pool.map(fn, items))
