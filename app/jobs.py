"""Where background callbacks run (Dash's two managers), and the rules every job follows.

* With ``REDIS_URL`` (team hosting, the ``hosting`` extra): Dash's
  ``CeleryManager``. The web workers only queue jobs and read their progress and
  results from Redis; a pool of ``JOB_WORKERS`` Celery processes runs them
  (:mod:`app.worker`), so nothing is forked from a web worker, a job outlives the
  web worker that queued it, and more jobs than workers wait in the queue.
  Cancelling revokes the task in whichever worker runs it. Both sides read and
  write the same disk store in ``CACHE_DIR``.
* Without it (``calibration-dashboard serve``, one user, one process): Dash's
  ``DiskcacheManager``, which forks each job from the server process and keeps
  results in ``CACHE_DIR/jobs`` (:class:`LocalJobManager`).

Both follow the same rules (:class:`JobRules`, with a :class:`JobBook` of the
jobs in ``CACHE_DIR/job-book`` that every process of the stack shares):

* a job belongs to the session that started it: another session that holds
  its handles (the signed ``cacheKey``/``job`` of another page) reads no
  result and no progress, and cannot cancel it;
* at most ``MAX_JOBS_PER_SESSION`` jobs of a session, and ``MAX_JOBS`` of
  all, are submitted (running, or queued in Celery); a job beyond either
  waits in the book, holding no worker and no Redis entry, its page saying
  why, and is submitted in order of arrival when a slot of its own is free
  (:class:`JobQueue`). The waiting list is bounded (as many again per
  session, ``MAX_JOBS`` in all): beyond it a job is refused with a message;
  a waiting job whose page stopped polling is dropped;
* a job runs under :class:`~app.job_limits.JobLimits` (time and memory); a
  :func:`~app.job_limits.cluster_job` (it waits on a Dask cluster, whose
  workers bound its memory) under the time limit only, so that it too stops
  by itself, saying why, before Celery's hard kill;
* every job ends in its result or a stated error within a bounded time: a
  poll that finds no result and the job gone (killed, over a limit, refused,
  its process lost) or past its deadline (counted from its submission)
  answers the callback's ``stopped`` reply
  (:meth:`app.callback_failures.CallbackFailures.stopped`) with the reason,
  where the result would have been.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import math
import os
import socket
import sqlite3
import stat
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import diskcache
from dash import CeleryManager, DiskcacheManager

from .callback_failures import CallbackFailures
from .config import MB, AppConfig
from .job_limits import JobLimits, JobStopped, is_cluster_job
from .warmup import WarmUp

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger("calibration_dashboard.jobs")

#: Name of the Celery application (the web workers' and the job workers' alike).
CELERY_NAME = "calibration_dashboard"
#: Seconds a job may overrun its time limit before a poll declares it lost (and
#: Celery kills it): room for the job to stop by itself and write its answer.
GRACE_SECONDS = 30
#: The job id Dash gets for a job that could not be booked (the job book failed).
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

    Record fields: ``sid`` (owner session), ``job`` (the job id the page
    holds), ``process`` (the task id or pid of the submitted job; None while
    it waits), ``queued`` (arrival), ``seen`` (the page's last poll while it
    waits), ``submitted`` and ``started`` (epoch seconds; None before),
    ``waits`` (why it waits) and ``outcome`` (None, :data:`CANCELLED`, or
    why the job stopped or was not started). A waiting job's arguments are
    kept beside its record (:meth:`take_call`) until it is submitted.
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
        """``(key, record)`` of job id (or process id) ``job`` (``(None, None)`` if unknown)."""
        for key, record in self.records().items():
            if str(job) in (record.get("job"), record.get("process")):
                return key, record
        return None, None

    def admit(self, key: str, sid: str | None, call: tuple, queue: JobQueue) -> tuple:
        """Book a new job of ``sid``: ``(refusal, keys to submit now)``.

        ``call`` is ``(job id, registry name, args, context)``, kept until the
        job is submitted. The job joins the waiting list and the queue
        promotes what fits (:meth:`JobQueue.promote`); a job that must wait
        beyond the waiting list's bounds is refused (the refusal is its
        outcome).
        """
        now = time.time()
        with self.cache.transact():
            records = self.current(now)
            records[key] = {
                "sid": sid,
                "job": call[0],
                "process": None,
                "queued": now,
                "seen": now,
                "submitted": None,
                "started": None,
                "waits": None,
                "outcome": None,
            }
            ready = queue.promote(records, now, self.drop_call)
            refusal = None if key in ready else queue.refusal(records, key)
            if refusal is not None:
                records[key]["outcome"] = refusal
            else:
                self.cache.set(("call", key), call)
            self.cache.set(self.KEY, records)
        return refusal, ready

    def promote(self, queue: JobQueue, seen: str | None = None) -> list[str]:
        """Mark the waiting jobs that now fit as submitted; their keys (to submit).

        ``seen``: the key of a waiting job whose page is polling (its
        ``seen`` time is renewed first).
        """
        now = time.time()
        with self.cache.transact():
            records = self.current(now)
            if seen in records:
                records[seen]["seen"] = now
            ready = queue.promote(records, now, self.drop_call)
            self.cache.set(self.KEY, records)
        return ready

    def current(self, now: float) -> dict[str, dict]:
        """The records younger than :attr:`KEEP_SECONDS` (the calls of older ones dropped)."""
        records = {}
        for key, record in self.records().items():
            if now - record["queued"] < self.KEEP_SECONDS:
                records[key] = record
            else:
                self.drop_call(key)
        return records

    def take_call(self, key: str) -> tuple | None:
        """The kept ``(job id, registry name, args, context)`` of ``key``, forgotten."""
        return self.cache.pop(("call", key), None)

    def drop_call(self, key: str) -> None:
        """Forget the kept call of ``key`` (it will not be submitted)."""
        self.cache.delete(("call", key))

    def update(self, key: str, **fields: Any) -> None:
        """Set ``fields`` of the record of ``key`` (nothing if it is gone).

        A store that fails (full, read-only) is logged, not raised: the job's
        answer matters more than its record, and a record whose start is
        missing is still bounded by its submission time (:meth:`JobRules.deadline`).
        """
        try:
            with self.cache.transact():
                records = self.records()
                if key in records:
                    records[key].update(fields)
                    self.cache.set(self.KEY, records)
        except STORAGE_ERRORS as exc:
            self.failed(f"cannot update the job book ({key})", exc)

    def failed(self, what: str, exc: BaseException, level: int = logging.WARNING) -> None:
        """Log a store that refused ``what``, and drop this thread's connection to it.

        SQLite keeps a connection that was opened while the file was read-only
        read-only for good ("attempt to write a readonly database" long after
        the disk is writable again: a gunicorn thread could never book a job
        again); diskcache opens a fresh connection on the next access.
        Call it outside any transaction of the book.
        """
        log.log(level, "%s: %s", what, exc)
        self.cache.close()

    def pop(self, key: str) -> None:
        """Forget the record of ``key`` (once its answer is read; a failing store only logs)."""
        try:
            with self.cache.transact():
                records = self.records()
                if records.pop(key, None) is not None:
                    self.cache.set(self.KEY, records)
                self.drop_call(key)
        except STORAGE_ERRORS as exc:
            self.failed(f"cannot update the job book ({key})", exc)


def waiting(record: dict) -> bool:
    """Whether the job of ``record`` waits in the book (neither submitted nor over)."""
    return record.get("outcome") is None and record.get("submitted") is None


class JobQueue:
    """Which booked jobs are submitted, which wait, and which are refused.

    At most ``per_session`` jobs of one session and ``total`` of all are
    submitted (running, or queued in Celery); the others wait in the book,
    in order of arrival, and are submitted when a slot of theirs is free (a
    session at its own cap does not hold back the others). The waiting list
    is bounded: as many more per session, and ``total`` more in all; a job
    beyond that is refused. A waiting job whose page stopped polling for
    :attr:`PATIENCE_SECONDS` is dropped, never submitted.

    Parameters
    ----------
    caps : (int, int)
        ``(MAX_JOBS_PER_SESSION, MAX_JOBS)``.
    live : callable(record) -> bool
        Whether the submitted job of a record still runs or is queued.
    """

    #: Seconds without a poll after which a waiting job is dropped. Browsers
    #: slow down the timers of hidden tabs (Chrome to once a minute after five
    #: minutes): a tab in the background still polls within this.
    PATIENCE_SECONDS = 90

    def __init__(self, caps: tuple[int, int], live: Callable[[dict], bool]) -> None:
        self.per_session, self.total = caps
        self.live = live

    def promote(self, records: dict[str, dict], now: float, drop: Callable[[str], None]) -> list:
        """Mark the waiting jobs of ``records`` that fit as submitted (in place); their keys.

        Waiting jobs not polled for :attr:`PATIENCE_SECONDS` are dropped
        first (``drop(key)`` forgets their call); the others, in order of
        arrival, are submitted while both caps allow, or told why they wait.
        """
        self.drop_stale(records, now, drop)
        running = [r for r in records.values() if self.live(r)]
        per_sid = Counter(r["sid"] for r in running)
        count, ready = len(running), []
        queue = sorted(
            (k for k, r in records.items() if waiting(r)), key=lambda k: records[k]["queued"]
        )
        for key in queue:
            record = records[key]
            record["waits"] = self.reason_to_wait(per_sid[record["sid"]], count)
            if record["waits"] is None:
                record["submitted"] = now
                per_sid[record["sid"]] += 1
                count += 1
                ready.append(key)
        return ready

    def drop_stale(self, records: dict[str, dict], now: float, drop: Callable[[str], None]):
        """Give up the waiting jobs whose page has not polled for :attr:`PATIENCE_SECONDS`."""
        for key, record in records.items():
            if waiting(record) and now - record["seen"] > self.PATIENCE_SECONDS:
                record["outcome"] = (
                    "its page stopped asking for it while it waited for a free job slot"
                )
                drop(key)

    def reason_to_wait(self, session_running: int, running: int) -> str | None:
        """Why a job must wait, given the jobs running of its session and of all (None: go)."""
        if session_running >= self.per_session:
            return (
                f"waiting for a free job slot: this session already runs {session_running} "
                f"jobs (MAX_JOBS_PER_SESSION={self.per_session})"
            )
        if running >= self.total:
            return (
                f"waiting for a free job slot: the server already runs {running} jobs "
                f"(MAX_JOBS={self.total})"
            )
        return None

    def refusal(self, records: dict[str, dict], key: str) -> str | None:
        """Why the new job ``key`` is refused: the waiting list before it is full (else None)."""
        sid = records[key]["sid"]
        live = [r for r in records.values() if self.live(r)]
        arrival = records[key]["queued"]
        queue = [
            k for k, r in records.items() if waiting(r) and k != key and r["queued"] <= arrival
        ]
        mine = sum(1 for k in queue if records[k]["sid"] == sid)
        if mine >= self.per_session:
            running = sum(1 for r in live if r["sid"] == sid)
            return (
                f"this session already has {running} background job(s) running and {mine} "
                f"waiting (this server runs {self.per_session} per session, "
                "MAX_JOBS_PER_SESSION, and lets as many more wait): wait for one to finish, "
                "or cancel it, then try again"
            )
        if len(queue) >= self.total:
            return (
                f"the server is busy: {len(live)} background jobs are running and "
                f"{len(queue)} waiting (MAX_JOBS={self.total}); try again in a minute"
            )
        return None


class JobRules:
    """What both managers add to Dash's: session binding, caps, limits, failure reports.

    A mix-in before Dash's manager class; it overrides the manager's public
    methods only. The page holds a job id of ours (a new uuid per job), which
    the book maps to the submitted task or process, so that a job can wait
    in the book before it has either. Subclasses implement :meth:`job_gone`
    (and may refine :meth:`submit`).

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
    func_registry: dict

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
        self.queue = JobQueue((config.max_jobs_per_session, config.max_jobs), self.live)
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
        """Book the job; submit it, or let it wait; its job id (:data:`REFUSED` if unbooked).

        A job refused by a full waiting list gets its id too: its refusal is
        the answer of its first poll.
        """
        job = uuid.uuid4().hex
        name = next(n for n, fn in self.func_registry.items() if fn is job_fn)
        try:
            refusal, ready = self.book.admit(
                key, self.session(), (job, name, args, context), self.queue
            )
        except STORAGE_ERRORS as exc:
            self.book.failed("cannot book a job", exc, logging.ERROR)
            return REFUSED
        if refusal is not None:
            log.warning("job refused: %s", refusal)
        self.start(ready)
        return job

    def start(self, keys: list[str]) -> None:
        """Submit the booked jobs ``keys`` (promoted from the waiting list)."""
        for key in keys:
            call = self.book.take_call(key)
            if call is None:  # dropped meanwhile
                continue
            job, name, args, context = call
            try:
                process = self.submit(key, job, self.func_registry[name], args, context)
            except Exception as exc:  # the broker, a fork: the page is told, not left waiting
                log.exception("cannot submit job %s", job)
                self.book.update(key, outcome=f"it could not be started ({exc})")
                continue
            self.book.update(key, process=str(process))
            if (self.book.get(key) or {}).get("outcome") == CANCELLED:  # while submitted
                super().terminate_job(process)

    def submit(self, key, job, job_fn, args, context):
        """Submit the job to Dash's manager; the task id or pid it runs as."""
        return super().call_job_fn(key, job_fn, args, context)

    def advance(self, seen: str | None = None) -> None:
        """Submit the waiting jobs whose slot is free (``seen``: a waiting job's poll)."""
        try:
            ready = self.book.promote(self.queue, seen)
        except STORAGE_ERRORS as exc:
            self.book.failed("cannot read the job book", exc)
            return
        self.start(ready)

    def make_job_fn(self, fn, progress, key=None):
        """Dash's job around ``fn`` run under the limits; a limit reached is a stated answer.

        In the job's process: the limits hold while ``fn`` runs; when one is
        reached, the job answers the callback's ``stopped`` reply (Dash's
        callback context is the request's, so the reply is found there).
        """
        cluster = is_cluster_job(fn)
        limits, failures = self.limits, self.failures

        @functools.wraps(fn)
        def limited(*args, **kwargs):
            lift = limits.apply(memory=not cluster)
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
        """Whether the submitted job of ``record`` still runs or is queued (for the caps)."""
        if record.get("outcome") is not None or record.get("submitted") is None:
            return False
        if record.get("process") is None:  # being submitted right now
            return time.time() - record["submitted"] < GRACE_SECONDS
        if time.time() > self.deadline(record):
            return False
        return bool(super().job_running(record["process"]))

    def deadline(self, record: dict) -> float:
        """When the job of ``record`` is late: its time limit after its start, plus grace.

        A job waiting in the book has none: its time counts from its submission.
        """
        started = record.get("started")
        if started is None and record.get("submitted") is None:
            return math.inf
        if started is None:  # queued (or its start could not be booked)
            started = record["submitted"] + self.queue_seconds
        return started + self.limits.seconds + GRACE_SECONDS

    def job_gone(self, record: dict) -> str | None:
        """Why the job of ``record`` is over without a result (None while it runs or waits)."""
        raise NotImplementedError

    def job_running(self, job):
        """Whether ``job`` runs, is queued or waits (Dash stops polling when it does not)."""
        if job == REFUSED:
            return False
        _key, record = self.book.find_job(job)
        if record is None:
            return False
        if record.get("process") is None:
            return record.get("outcome") is None
        return super().job_running(record["process"])

    def terminate_job(self, job):
        """Stop ``job`` if it is the current session's (cancel, or a page's old job).

        A waiting job is dropped from the waiting list, never submitted.
        """
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
        if record.get("process") is None:
            self.book.take_call(key)
            return None
        return super().terminate_job(record["process"])

    # ----------------------------------------------------------- polls
    def owned(self, key: str) -> dict | None:
        """The record of ``key`` if the current session started the job, else None."""
        record = self.book.get(key)
        if record is None or record["sid"] != self.session():
            return None
        return record

    def get_progress(self, key):
        """Dash's progress; for a waiting job, a progress that says why it waits."""
        record = self.owned(key)
        if record is None:
            return None
        if waiting(record):
            return self.waiting_progress(record.get("waits") or "waiting for a free job slot")
        return super().get_progress(key)

    @staticmethod
    def waiting_progress(text: str) -> list[str]:
        """The progress of a waiting job: the app's background callbacks all report
        ``(bar value, bar maximum, status text)``."""
        return ["0", "1", text]

    def get_updated_props(self, key):
        if self.owned(key) is None:
            return {}
        return super().get_updated_props(key)

    def get_result(self, key, job):
        """The job's result; its ``stopped`` answer if it is over without one; else UNDEFINED.

        The poll of a waiting job submits the waiting jobs that fit now
        (:meth:`advance`); a job that ends lets the next one in.
        """
        record = self.owned(key)
        if record is None:
            return self.UNDEFINED
        if waiting(record):
            self.advance(seen=key)
            record = self.owned(key)
            if record is None or waiting(record):
                return self.UNDEFINED
        process = record.get("process")
        result = self.UNDEFINED if process is None else super().get_result(key, process)
        if result is not self.UNDEFINED:
            self.book.pop(key)
            self.advance()
            return result
        if record.get("outcome") == CANCELLED:
            return self.UNDEFINED
        reason = self.stop_reason(record)
        if reason is None:
            return self.UNDEFINED
        if process is not None and self.result_ready(key):  # it just answered
            return self.get_result(key, job)
        if process is not None:
            super().terminate_job(process)
        self.book.pop(key)
        self.advance()
        return self.failures.stopped(reason, started=process is not None)

    def stop_reason(self, record: dict) -> str | None:
        """Why the job of ``record`` ended without a result (None while it may still answer)."""
        if record.get("outcome"):
            return record["outcome"]
        gone = self.job_gone(record)
        if gone is not None:
            return gone
        if record.get("process") is None and not self.live(record):
            return "it could not be submitted (the web worker submitting it stopped); try again"
        if time.time() > self.deadline(record):
            since = record.get("started") or record["submitted"]
            return (
                f"it gave no answer {time.time() - since:.0f} s after it was queued "
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

    def submit(self, key, job, job_fn, args, context):
        """Queue the task as Dash's ``call_job_fn`` does, with the page's job id as task id."""
        job_fn.apply_async(args=(key, self._make_progress_key(key), args, context), task_id=job)
        return job

    def job_gone(self, record: dict) -> str | None:
        if record.get("process") is None:
            return None
        task = self.get_task(record["process"])
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
    ``REDIS_URL`` does not load it, and needs no ``hosting`` extra;
    :class:`~app.config.AppConfig` refuses ``REDIS_URL`` without it.)
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
    under the limits, its start and end booked, in a context of its own (not
    the forking request's: a waiting job is forked by another page's poll).
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

    def submit(self, key, job, job_fn, args, context):
        """Fork the job (Dash's ``call_job_fn``) once the warm-up is done; its pid."""
        if not self.warm_up.wait(timeout=120):
            log.warning("warm-up still running after 120 s; starting the job anyway")
        return super().submit(key, job, job_fn, args, context)

    def make_job_fn(self, fn, progress, key=None):
        job_fn = super().make_job_fn(fn, progress, key)
        book = self.book

        def forked_job(result_key, *args):
            close_listening_sockets()
            book.update(result_key, started=time.time())
            # Outside the request that forked it (a waiting job is forked by
            # another page's poll): the job reads its session from its own
            # callback context, as a Celery job does.
            return contextvars.Context().run(job_fn, result_key, *args)

        return forked_job

    def job_gone(self, record: dict) -> str | None:
        pid = record.get("process")
        if pid is None or DiskcacheManager.job_running(self, pid):
            return None
        status = reap(int(pid))
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
