"""The limits every background job runs under: a time limit and a memory limit.

Both are applied inside the process that runs the job (a Celery pool process,
or the process Dash forks for the local manager, :mod:`app.jobs`), around the
job only:

* time: a wall-clock timer (``SIGALRM``) raises :class:`JobStopped` in the job
  after ``JOB_TIME_LIMIT_SECONDS``. It derives from ``BaseException`` so that
  code which keeps going after an ordinary failure (the core fits the other
  maps when one map raises) lets it through: the job ends at once, and the
  callback that knows what it was doing words the message (the fit names the
  map and the model). Every job has it, a cluster job too (it waits on Dask:
  the wait is interrupted and the job answers why), so that no job meets the
  hard kill Team hosting has Celery deal a little later (``task_time_limit``)
  to a job stuck in C code that never returns to Python;
* memory: the address space the job may add to its process's own
  (``RLIMIT_AS``), so that an allocation beyond ``JOB_MEMORY_LIMIT_MB`` fails
  with ``MemoryError`` in the job instead of the machine swapping or the kernel
  killing a random process. A cluster job has none: its memory is the Dask
  workers', bounded by theirs.
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass

from .config import MB

log = logging.getLogger("calibration_dashboard.jobs")


#: Attribute of a callback function marked by :func:`cluster_job`.
CLUSTER_JOB = "runs_on_cluster"


def cluster_job(fn: Callable) -> Callable:
    """Mark a background callback as a cluster job: the time limit, no memory limit of its own.

    Only for a job that waits on a Dask cluster, whose workers' limits bound its
    memory; a job that computes in its own process (a server dataset streamed
    without ``DASK_SCHEDULER_ADDRESS``, :meth:`app.datasets.Datasets.engine`) is an
    ordinary job, under every limit of :class:`JobLimits`.
    """
    setattr(fn, CLUSTER_JOB, True)
    return fn


def is_cluster_job(fn: Callable) -> bool:
    """Whether ``fn`` was marked by :func:`cluster_job`."""
    return bool(getattr(fn, CLUSTER_JOB, False))


class JobStopped(BaseException):
    """A job stopped at a server limit; the message says which (and the setting)."""


@dataclass(frozen=True)
class JobLimits:
    """The limits of one job.

    Attributes
    ----------
    seconds : int
        Wall-clock run time (``JOB_TIME_LIMIT_SECONDS``).
    memory_mb : int
        Memory the job may allocate beyond its process's own (``JOB_MEMORY_LIMIT_MB``).
    """

    seconds: int
    memory_mb: int

    def time_message(self) -> str:
        """Why a job that ran out of time stopped."""
        return (
            f"it ran longer than this server's limit of {self.seconds} s per job "
            "(JOB_TIME_LIMIT_SECONDS)"
        )

    def memory_message(self) -> str:
        """Why a job that ran out of memory stopped."""
        return (
            f"it needed more memory than this server's limit of {self.memory_mb} MB per job "
            "(JOB_MEMORY_LIMIT_MB)"
        )

    def apply(self, memory: bool = True) -> Callable[[], None]:
        """Start the limits in this process (main thread); returns the function that lifts them.

        Outside the main thread (no signals there) only the memory limit applies.
        ``memory=False``: the time limit only (a cluster job, whose memory is
        the cluster workers').
        """
        lift_memory = limit_address_space(self.memory_mb * MB) if memory else _nothing
        if threading.current_thread() is not threading.main_thread():
            log.warning("job not in the main thread: no time limit inside it")
            return lift_memory
        message = self.time_message()

        def time_is_up(_signum, _frame):
            raise JobStopped(message)

        previous = signal.signal(signal.SIGALRM, time_is_up)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

        def lift() -> None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            lift_memory()

        return lift


def _nothing() -> None:
    """Nothing to lift."""


def address_space() -> int:
    """This process's virtual memory size in bytes (Linux ``/proc/self/statm``; else 0)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def limit_address_space(extra_bytes: int) -> Callable[[], None]:
    """Let this process grow by at most ``extra_bytes`` of address space; returns the undo.

    Only the soft limit is lowered, so the undo can raise it again (a Celery
    pool process runs one job after another).
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = address_space() + extra_bytes
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
    except (ValueError, OSError) as exc:
        log.warning("cannot limit the job's memory: %s", exc)
        return lambda: None

    def lift() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

    return lift
