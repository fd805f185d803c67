"""Where background callbacks run: Dash's two supported managers.

* Without ``REDIS_URL`` (``calibration-dashboard serve``, one user, one
  process): Dash's ``DiskcacheManager`` forks each job from the server process
  and keeps results in ``CACHE_DIR/jobs`` (:class:`app.warmup.WarmJobManager`
  guards the fork).
* With ``REDIS_URL`` (team hosting): Dash's ``CeleryManager``. The web workers
  only queue jobs and read their progress and results from Redis; a pool of
  ``JOB_WORKERS`` Celery processes runs them (:mod:`app.worker`), so nothing is
  forked from a web worker, a job outlives the web worker that queued it, and
  more jobs than workers wait in the queue. Cancelling revokes the task in
  whichever worker runs it. Both sides read and write the same disk store in
  ``CACHE_DIR``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import diskcache
from dash import CeleryManager

from .config import MB, AppConfig
from .warmup import WarmJobManager, WarmUp

if TYPE_CHECKING:
    from celery import Celery

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
    return WarmJobManager(diskcache.Cache(str(cache_dir / "jobs"), size_limit=256 * MB), warm_up)
