"""Where background callbacks run (Dash's two managers), and the rules every job follows.

* With ``REDIS_URL`` (team hosting): Dash's ``CeleryManager``. The web workers
  only queue jobs and read their progress and results from Redis; a pool of
  ``JOB_WORKERS`` Celery processes runs them (:mod:`app.worker`), so nothing is
  forked from a web worker, a job outlives the web worker that queued it, and
  more jobs than workers wait in the queue. Cancelling revokes the task in
  whichever worker runs it. Both sides read and write the same disk store in
  ``CACHE_DIR``.
* Without it (``calibration-dashboard serve``, one user, one process): Dash's
  ``DiskcacheManager``, which forks each job from the server process and keeps
  results in ``CACHE_DIR/jobs`` (:class:`LocalJobManager`).

Both follow the same rules (:class:`JobRules`, with a :class:`JobBook` of the
jobs in ``CACHE_DIR/job-book`` that every process of the stack shares):

* a job belongs to the session that started it: another session that holds
  its handles (the signed ``cacheKey``/``job`` of another page) reads no
  result and no progress, and cannot cancel it;
* a session may have ``MAX_JOBS_PER_SESSION`` jobs running or queued, the
  server ``MAX_JOBS``; a job beyond either is refused with a message in the
  page (not queued: the user decides what to run again);
* a job runs under :class:`~app.job_limits.JobLimits` (time and memory);
* every job ends in its result or a stated error within a bounded time: a
  poll that finds no result and the job gone (killed, over a limit, refused,
  its process lost) or past its deadline answers the callback's ``stopped``
  reply (:meth:`app.callback_failures.CallbackFailures.stopped`) with the
  reason, where the result would have been.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import socket
import sqlite3
import stat
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import diskcache
from dash import CeleryManager, DiskcacheManager

from .callback_failures import CallbackFailures
from .config import MB, AppConfig
from .job_limits import JobLimits, JobStopped
from .warmup import WarmUp

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger("calibration_dashboard.jobs")

#: Name of the Celery application (the web workers' and the job workers' alike).
CELERY_NAME = "calibration_dashboard"
#: Seconds a job may overrun its time limit before a poll declares it lost (and
#: Celery kills it): room for the job to stop by itself and write its answer.
GRACE_SECONDS = 30
#: The job id Dash gets for a job refused by a cap (there is no process or task).
REFUSED = "refused"
#: A record's outcome once its session cancelled it (the page shows its own message).
CANCELLED = "cancelled"
#: Errors of a disk store that is full, read-only or gone.
STORAGE_ERRORS = (OSError, sqlite3.Error, diskcache.Timeout)


class JobBook:
    """The jobs of the whole stack: who started each one, when, and how it ended.

    One record per job, by its result key, in a diskcache of its own that all
    processes sharing ``CACHE_DIR`` open (web workers, job workers, forked
    jobs); changes are transactions. A record lives until the page reads the
    job's answer (or a day, for pages that never come back).

    Record fields: ``sid`` (owner session), ``job`` (task id or pid, None
    until queued), ``queued`` and ``started`` (epoch seconds) and ``outcome``
    (None, :data:`CANCELLED`, or why the job stopped).
    """

    KEY = "records"
    #: Seconds a record is kept at most.
    KEEP_SECONDS = 86_400

    def __init__(self, directory: Path) -> None:
        self.cache = diskcache.Cache(str(directory), eviction_policy="none")

    def records(self) -> dict[str, dict]:
        """Every record, by result key."""
        return self.cache.get(self.KEY) or {}

    def get(self, key: str) -> dict | None:
        """The record of result key ``key``."""
        return self.records().get(key)

    def find_job(self, job: str) -> tuple[str | None, dict | None]:
        """``(key, record)`` of job id ``job`` (``(None, None)`` if unknown)."""
        for key, record in self.records().items():
            if record.get("job") == str(job):
                return key, record
        return None, None

    def admit(
        self, key: str, sid: str | None, live: Callable[[dict], bool], caps: tuple[int, int]
    ) -> str | None:
        """Book a new job of ``sid``; the refusal if a cap is reached (booked as the outcome).

        ``live(record)``: whether the job of a record still runs or waits;
        ``caps``: ``(per session, whole server)``.
        """
        per_session, total = caps
        now = time.time()
        with self.cache.transact():
            records = {
                k: r for k, r in self.records().items() if now - r["queued"] < self.KEEP_SECONDS
            }
            running = [r for r in records.values() if r.get("outcome") is None and live(r)]
            mine = sum(1 for r in running if r["sid"] == sid)
            refusal = None
            if mine >= per_session:
                refusal = (
                    f"this session already has {mine} background job(s) running or queued "
                    f"(this server allows {per_session} per session, MAX_JOBS_PER_SESSION): "
                    "wait for one to finish, or cancel it, then try again"
                )
            elif len(running) >= total:
                refusal = (
                    f"the server is busy: {len(running)} background jobs are running or queued "
                    f"(MAX_JOBS={total}); try again in a minute"
                )
            records[key] = {
                "sid": sid,
                "job": None if refusal is None else REFUSED,
                "queued": now,
                "started": None,
                "outcome": refusal,
            }
            self.cache.set(self.KEY, records)
        return refusal

    def update(self, key: str, **fields: Any) -> None:
        """Set ``fields`` of the record of ``key`` (nothing if it is gone).

        A store that fails (full, read-only) is logged, not raised: the job's
        answer matters more than its record, and a record whose start is
        missing is still bounded by its queueing time (:meth:`JobRules.deadline`).
        """
        try:
            with self.cache.transact():
                records = self.records()
                if key in records:
                    records[key].update(fields)
                    self.cache.set(self.KEY, records)
        except STORAGE_ERRORS as exc:
            log.warning("cannot update the job book (%s): %s", key, exc)

    def pop(self, key: str) -> None:
        """Forget the record of ``key`` (once its answer is read; a failing store only logs)."""
        try:
            with self.cache.transact():
                records = self.records()
                if records.pop(key, None) is not None:
                    self.cache.set(self.KEY, records)
        except STORAGE_ERRORS as exc:
            log.warning("cannot update the job book (%s): %s", key, exc)


class JobRules:
    """What both managers add to Dash's: session binding, caps, limits, failure reports.

    A mix-in before Dash's manager class; it overrides the manager's public
    methods only. Subclasses implement :meth:`job_gone`.

    Parameters
    ----------
    book : JobBook
    config : AppConfig
        Limits (``JOB_TIME_LIMIT_SECONDS``, ``JOB_MEMORY_LIMIT_MB``) and caps.
    session : callable() -> str or None
        The session of the running request.
    failures : CallbackFailures
        The app's ``on_error`` handler, with the ``stopped`` replies.
    """

    UNDEFINED: Any

    def setup_rules(
        self,
        book: JobBook,
        config: AppConfig,
        session: Callable[[], str | None],
        failures: CallbackFailures,
    ) -> None:
        """Keep the rules' collaborators (called by the subclasses' ``__init__``)."""
        self.book = book
        self.limits = JobLimits(config.job_time_limit_seconds, config.job_memory_limit_mb)
        self.caps = (config.max_jobs_per_session, config.max_jobs)
        self.queue_seconds = config.job_time_limit_seconds * math.ceil(
            config.max_jobs / config.job_workers
        )
        self.session = session
        self.failures = failures

    # ------------------------------------------------------------ jobs
    def build_cache_key(self, fn, args, cache_args_to_ignore, triggered) -> str:
        """A new result key per job (results are not cached, so no two jobs share one)."""
        return uuid.uuid4().hex

    def call_job_fn(self, key, job_fn, args, context):
        """Start the job, unless a cap refuses it (then :data:`REFUSED`, the reason booked)."""
        try:
            refusal = self.book.admit(key, self.session(), self.live, self.caps)
        except STORAGE_ERRORS as exc:
            log.error("cannot book a job: %s", exc)
            return REFUSED
        if refusal is not None:
            log.warning("job refused: %s", refusal)
            return REFUSED
        job = super().call_job_fn(key, job_fn, args, context)
        self.book.update(key, job=str(job))
        return job

    def make_job_fn(self, fn, progress, key=None):
        """Dash's job around ``fn`` run under the limits; a limit reached is a stated answer.

        In the job's process: the limits hold while ``fn`` runs; when one is
        reached, the job answers the callback's ``stopped`` reply (Dash's
        callback context is the request's, so the reply is found there).
        """
        limits, failures = self.limits, self.failures

        @functools.wraps(fn)
        def limited(*args, **kwargs):
            lift = limits.apply()
            try:
                return fn(*args, **kwargs)
            except JobStopped as exc:
                return failures.stopped(str(exc))
            except MemoryError:
                return failures.stopped(limits.memory_message())
            finally:
                lift()

        return super().make_job_fn(limited, progress, key)

    def live(self, record: dict) -> bool:
        """Whether the job of ``record`` still runs or waits (for the caps)."""
        if record.get("job") is None:  # being queued right now
            return time.time() - record["queued"] < GRACE_SECONDS
        if record["job"] == REFUSED or time.time() > self.deadline(record):
            return False
        return bool(self.job_running(record["job"]))

    def deadline(self, record: dict) -> float:
        """When the job of ``record`` is late: its time limit after its start, plus grace."""
        started = record.get("started")
        if started is None:  # still queued (or its start could not be booked)
            started = record["queued"] + self.queue_seconds
        return started + self.limits.seconds + GRACE_SECONDS

    def job_gone(self, record: dict) -> str | None:
        """Why the job of ``record`` is over without a result (None while it runs or waits)."""
        raise NotImplementedError

    def job_running(self, job):
        if job == REFUSED:
            return False
        return super().job_running(job)

    def terminate_job(self, job):
        """Stop ``job`` if it is the current session's (cancel, or a page's old job)."""
        if job is None or job == REFUSED:
            return None
        key, record = self.book.find_job(job)
        if record is None:  # already answered (Dash stops it again after its result)
            return None
        if record["sid"] != self.session():
            log.warning("not stopping job %s: not this session's", job)
            return None
        if record.get("outcome") is None:
            self.book.update(key, outcome=CANCELLED)
        return super().terminate_job(job)

    # ----------------------------------------------------------- polls
    def owned(self, key: str) -> dict | None:
        """The record of ``key`` if the current session started the job, else None."""
        record = self.book.get(key)
        if record is None or record["sid"] != self.session():
            return None
        return record

    def get_progress(self, key):
        if self.owned(key) is None:
            return None
        return super().get_progress(key)

    def get_updated_props(self, key):
        if self.owned(key) is None:
            return {}
        return super().get_updated_props(key)

    def get_result(self, key, job):
        """The job's result; its ``stopped`` answer if it is over without one; else UNDEFINED."""
        record = self.owned(key)
        if record is None:
            return self.UNDEFINED
        result = super().get_result(key, job) if record["job"] != REFUSED else self.UNDEFINED
        if result is not self.UNDEFINED:
            self.book.pop(key)
            return result
        if record.get("outcome") == CANCELLED:
            return self.UNDEFINED
        reason = self.stop_reason(record)
        if reason is None:
            return self.UNDEFINED
        if record["job"] != REFUSED and self.result_ready(key):  # it just answered
            return self.get_result(key, job)
        if record["job"] != REFUSED:
            super().terminate_job(record["job"])
        self.book.pop(key)
        return self.failures.stopped(reason, started=record["job"] != REFUSED)

    def stop_reason(self, record: dict) -> str | None:
        """Why the job of ``record`` ended without a result (None while it may still answer)."""
        if record.get("outcome"):
            return record["outcome"]
        gone = self.job_gone(record)
        if gone is not None:
            return gone
        if time.time() > self.deadline(record):
            started = record.get("started") or record["queued"]
            return (
                f"it gave no answer {time.time() - started:.0f} s after it was queued "
                f"(the limit is {self.limits.seconds} s per job, JOB_TIME_LIMIT_SECONDS): "
                "its worker may have stopped; try again"
            )
        return None


def describe_exit(error: BaseException | None) -> str:
    """Why a job's process ended, from the error Celery stored for it."""
    name = type(error).__name__
    if name == "TimeLimitExceeded":
        return "it ran past this server's time limit per job and was killed"
    if name == "WorkerLostError":
        return f"its process was killed ({error}): out of memory, or stopped by an administrator"
    return f"it failed ({name}: {str(error)[:200]})"


class CeleryJobManager(JobRules, CeleryManager):
    """Dash's ``CeleryManager`` under :class:`JobRules` (team hosting)."""

    def __init__(self, celery_app, book: JobBook, config: AppConfig, session, failures) -> None:
        self.setup_rules(book, config, session, failures)  # before Dash registers the jobs
        super().__init__(celery_app)

    def job_gone(self, record: dict) -> str | None:
        if record.get("job") is None:
            return None
        task = self.get_task(record["job"])
        if task.state == "FAILURE":
            return describe_exit(task.result)
        if task.state == "REVOKED":
            return "it was stopped (the job workers stopped, or it was cancelled)"
        if task.state == "SUCCESS":
            return "it ended without storing its answer"
        return None


def make_celery(config: AppConfig, book: JobBook | None = None) -> Celery:
    """The Celery application on ``config.redis_url`` (broker and result store).

    ``worker_concurrency`` is ``JOB_WORKERS``: the pool of one ``celery worker``.
    A worker takes one job per free process (no prefetching), so a queued job
    waits in Redis, where any worker can take it. Each job's start is booked
    (:func:`book_celery_starts`); Celery kills a job that overruns its time
    limit (:class:`~app.job_limits.JobLimits`) by :data:`GRACE_SECONDS`, and
    replaces a pool process that kept more than ``JOB_MEMORY_LIMIT_MB``
    resident after a job. (Celery is imported here: a server without
    ``REDIS_URL`` does not load it.)
    """
    from celery import Celery

    celery_app = Celery(CELERY_NAME, broker=config.redis_url, backend=config.redis_url)
    celery_app.conf.update(
        worker_concurrency=config.job_workers,
        worker_prefetch_multiplier=1,
        task_track_started=True,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        task_time_limit=config.job_time_limit_seconds + GRACE_SECONDS,
        worker_max_memory_per_child=config.job_memory_limit_mb * 1024,  # KiB
    )
    if book is not None:
        book_celery_starts(celery_app, book)
    return celery_app


def book_celery_starts(celery_app: Celery, book: JobBook) -> None:
    """Book the start of each task of ``celery_app`` (Celery's ``task_prerun`` signal).

    It runs in the pool process, before the task; the first argument of a
    Dash job is its result key. The start sets the job's deadline.
    """
    from celery.signals import task_prerun

    def started(task=None, args=(), **_kwargs) -> None:
        if task is not None and task.app is celery_app and args:
            book.update(args[0], started=time.time())

    task_prerun.connect(started, weak=False)


def background_manager(
    config: AppConfig,
    cache_dir: Path,
    warm_up: WarmUp,
    session: Callable[[], str | None],
    failures: CallbackFailures,
):
    """Dash's background-callback manager for this configuration (see the module docstring)."""
    book = JobBook(cache_dir / "job-book")
    if config.redis_url:
        return CeleryJobManager(make_celery(config, book), book, config, session, failures)
    cache = diskcache.Cache(str(cache_dir / "jobs"), size_limit=256 * MB)
    return LocalJobManager(cache, warm_up, book, config, session, failures)


class LocalJobManager(JobRules, DiskcacheManager):
    """Dash's diskcache manager under :class:`JobRules`, forking only from a process
    with no other busy thread.

    A fork copies the process with whatever locks its other threads hold: a
    request thread inside SQLite (diskcache) at that moment leaves SQLite's
    mutex locked in the job, whose first store access then hangs for ever
    (seen with the threaded development server), and a thread inside an
    import leaves the import lock held. So the servers that use this manager
    answer one request at a time (``serve`` runs Flask's server unthreaded,
    gunicorn without ``REDIS_URL`` runs sync workers), and a job is forked
    once the warm-up's imports are done. In the job, the server's listening
    sockets are closed (:func:`close_listening_sockets`), and the job runs
    under the limits, its start and end booked.
    """

    def __init__(
        self,
        cache,
        warm_up: WarmUp,
        book: JobBook,
        config: AppConfig,
        session: Callable[[], str | None],
        failures: CallbackFailures,
        **kwargs,
    ) -> None:
        self.warm_up = warm_up
        self.setup_rules(book, config, session, failures)  # before Dash registers the jobs
        super().__init__(cache, **kwargs)

    def call_job_fn(self, key, job_fn, args, context):
        if not self.warm_up.wait(timeout=120):
            log.warning("warm-up still running after 120 s; starting the job anyway")
        return super().call_job_fn(key, job_fn, args, context)

    def make_job_fn(self, fn, progress, key=None):
        job_fn = super().make_job_fn(fn, progress, key)
        book = self.book

        def forked_job(result_key, *args):
            close_listening_sockets()
            book.update(result_key, started=time.time())
            return job_fn(result_key, *args)

        return forked_job

    def job_gone(self, record: dict) -> str | None:
        job = record.get("job")
        if job is None or self.job_running(job):
            return None
        status = reap(int(job))
        return f"its process ended without an answer{status}"

    def clear_cache_entry(self, key):
        """Dash's, except that a store that cannot delete (full, read-only) only logs."""
        try:
            super().clear_cache_entry(key)
        except STORAGE_ERRORS as exc:
            log.warning("cannot clear a job entry: %s", exc)

    def get_progress(self, key):
        """Dash's (bound to the session), or None when the store cannot be read or written."""
        try:
            return super().get_progress(key)
        except STORAGE_ERRORS as exc:
            log.warning("cannot read a job's progress: %s", exc)
            return None


def reap(pid: int) -> str:
    """Collect the exit status of child ``pid``: ``" (killed by signal 9)"`` or ``""``."""
    try:
        found, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child, or already collected
        return ""
    if found == 0:
        return ""
    if os.WIFSIGNALED(status):
        return f" (killed by signal {os.WTERMSIG(status)})"
    return f" (exit status {os.WEXITSTATUS(status)})"


def close_listening_sockets() -> int:
    """Close the listening sockets this process inherited (run in a forked job).

    A job still running when the server stopped kept the server's port bound,
    so the next start failed with "Address already in use". The job serves no
    requests: it drops its copy (the server's socket is untouched). Linux
    (``/proc/self/fd``); elsewhere nothing is done.

    Returns
    -------
    int
        How many sockets were closed.
    """
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return 0
    closed = 0
    for fd in fds:
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            sock = socket.socket(fileno=fd)
        except OSError:
            continue
        try:
            listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        except OSError:
            listening = 0
        if listening:
            sock.close()
            closed += 1
        else:
            sock.detach()  # not ours to close
    return closed
