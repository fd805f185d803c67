"""Where background callbacks run: Dash's two supported managers.

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
"""

from __future__ import annotations

import logging
import os
import socket
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import diskcache
from dash import CeleryManager, DiskcacheManager

from .config import MB, AppConfig
from .warmup import WarmUp

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger("calibration_dashboard.jobs")

#: Name of the Celery application (the web workers' and the job workers' alike).
CELERY_NAME = "calibration_dashboard"


def make_celery(config: AppConfig) -> Celery:
    """The Celery application on ``config.redis_url`` (broker and result store).

    ``worker_concurrency`` is ``JOB_WORKERS``: the pool of one ``celery worker``.
    A worker takes one job per free process (no prefetching), so a queued job
    waits in Redis, where any worker can take it. (Celery is imported here: a
    server without ``REDIS_URL`` does not load it.)
    """
    from celery import Celery

    celery_app = Celery(CELERY_NAME, broker=config.redis_url, backend=config.redis_url)
    celery_app.conf.update(
        worker_concurrency=config.job_workers,
        worker_prefetch_multiplier=1,
        task_track_started=True,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    return celery_app


def background_manager(config: AppConfig, cache_dir: Path, warm_up: WarmUp):
    """Dash's background-callback manager for this configuration (see the module docstring)."""
    if config.redis_url:
        return CeleryManager(make_celery(config))
    return LocalJobManager(diskcache.Cache(str(cache_dir / "jobs"), size_limit=256 * MB), warm_up)


class LocalJobManager(DiskcacheManager):
    """Dash's diskcache manager, forking only from a process with no other busy thread.

    A fork copies the process with whatever locks its other threads hold: a
    request thread inside SQLite (diskcache) at that moment leaves SQLite's
    mutex locked in the job, whose first store access then hangs for ever
    (seen with the threaded development server), and a thread inside an
    import leaves the import lock held. So the servers that use this manager
    answer one request at a time (``serve`` runs Flask's server unthreaded,
    gunicorn without ``REDIS_URL`` runs sync workers), and a job is forked
    once the warm-up's imports are done. In the job, the server's listening
    sockets are closed (:func:`close_listening_sockets`).
    """

    def __init__(self, cache, warm_up: WarmUp, **kwargs) -> None:
        super().__init__(cache, **kwargs)
        self.warm_up = warm_up

    def call_job_fn(self, key, job_fn, args, context):
        if not self.warm_up.wait(timeout=120):
            log.warning("warm-up still running after 120 s; starting the job anyway")
        return super().call_job_fn(key, job_fn, args, context)

    def make_job_fn(self, fn, progress, key=None):
        job_fn = super().make_job_fn(fn, progress, key)

        def forked_job(*args):
            close_listening_sockets()
            return job_fn(*args)

        return forked_job


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
