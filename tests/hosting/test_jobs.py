"""Team hosting's background jobs: gunicorn queues them, a Celery worker pool runs them.

The services run natively, as ``compose.yaml`` runs them: ``redis-server`` on a
free port, one job worker (:func:`app.supervisor.worker_command`, JOB_WORKERS=2,
fits slowed down explicitly by :mod:`slow_jobs`), and two gunicorn servers
(``A``: 2 workers, ``B``: 1 worker, gthread with 4 threads each) on the same
``REDIS_URL`` and ``CACHE_DIR``.
The tabs talk HTTP as ``dash-renderer`` does: the first POST of a background
callback answers signed ``cacheKey``/``job`` handles, then polls carry them.
Proves that nothing of a job lives in the web worker that queued it:

* a fit queued through one server is polled to its end through the other;
* its progress is read, and it is cancelled, through another process than the
  one that queued it;
* SIGKILL of the web worker that queued a running fit loses nothing: the fit
  finishes in the job worker and the next poll shows its result;
* more jobs than JOB_WORKERS wait in the queue (never more than JOB_WORKERS
  run at once) and all of them finish.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from app.supervisor import wait_for_redis

from .conftest import CeleryWorker, Fit, Gunicorn, fit_state, prewarm_demo, uploaded

JOB_WORKERS = 2
#: gunicorn threads per worker: app/gunicorn_conf.py's default with REDIS_URL (gthread).
THREADS = 4
#: Seconds slept at each fit step by the job worker (slow_jobs): a fit of two maps
#: on one model takes 12 steps.
STEP_SECONDS = 0.5


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server):
    """``(A, B, worker, redis_url)``: two gunicorn servers and one job worker on one Redis."""
    cache_dir = tmp_path_factory.mktemp("jobs")
    prewarm_demo(cache_dir)
    started = []
    try:
        redis = redis_server(cache_dir / "redis")
        started.append(redis)
        wait_for_redis(redis.url)
        worker = CeleryWorker(
            cache_dir,
            redis.url,
            job_workers=JOB_WORKERS,
            env={"SLOW_FIT_SECONDS": str(STEP_SECONDS)},
            app="slow_jobs:celery_app",
        )
        started.append(worker)
        env = {"REDIS_URL": redis.url}
        a = Gunicorn(cache_dir, workers=2, threads=THREADS, env=env, log=cache_dir / "a.log")
        started.append(a)
        b = Gunicorn(cache_dir, workers=1, threads=THREADS, env=env, log=cache_dir / "b.log")
        started.append(b)
        worker.wait_ready()
        a.wait_ready()
        b.wait_ready()
        yield a, b, worker, redis.url
    finally:
        for service in reversed(started):
            service.stop()


def test_a_fit_queued_by_one_server_is_read_by_another(stack, dash_tab, make_csv):
    a, b, worker, _ = stack
    tab = dash_tab(a.url)
    handle = uploaded(tab, make_csv, seed=1)
    fit = Fit(tab).start(handle)
    tab.base_url = b.url  # the same tab (cookie, page) polls the other server
    status, answer = fit.result()
    assert status == 200
    state = fit_state(answer)
    assert state["error"] is None
    assert {f"{handle}:temperature", f"{handle}:isotonic"} <= set(state["fitted"])
    assert "Fitted 2 map(s)" in state["summary"]
    assert f"[{fit.task_id}] succeeded" in worker.log()


def test_progress_and_cancel_work_across_processes(stack, dash_tab, make_csv):
    a, b, worker, _ = stack
    tab = dash_tab(a.url)
    handle = uploaded(tab, make_csv, seed=2)
    fit = Fit(tab).start(handle, maps=("temperature", "isotonic", "histogram"))
    tab.base_url = b.url
    progress = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, answer = fit.poll()
        assert status == 200 and "response" not in answer, answer  # 18 steps of 0.5 s
        value = (answer.get("progress") or {}).get("fit-progress.value")
        if value is not None and int(value) >= 1:
            progress = answer["progress"]
            break
        time.sleep(0.3)
    assert progress is not None, "no progress reached the other server"
    assert progress["fit-progress.max"] == "15"  # 3 maps x 5 folds
    assert "fitting" in progress["fit-status.children"]
    tab.base_url = a.url  # cancelled through the first server again
    assert fit.cancel() in (200, 204)
    status, answer = fit.result(timeout=30)
    assert status == 204 or "fit-state" not in answer.get("response", {}), answer
    deadline = time.monotonic() + 20
    while f"{fit.task_id}" not in worker.log().split("Terminating")[-1]:
        assert time.monotonic() < deadline, worker.log()[-3000:]
        time.sleep(0.3)
    assert f"[{fit.task_id}] succeeded" not in worker.log()


def test_a_web_worker_killed_while_its_fit_runs_loses_nothing(stack, dash_tab, make_csv):
    a, _b, worker, _ = stack
    tab = dash_tab(a.url)
    handle = uploaded(tab, make_csv, seed=3)
    fit = Fit(tab).start(handle)
    queued_by = a.pid_of_request(tab.request_ids[-1])
    deadline = time.monotonic() + 10
    while queued_by is None and time.monotonic() < deadline:  # the access log is buffered
        time.sleep(0.2)
        queued_by = a.pid_of_request(tab.request_ids[-1])
    assert queued_by in a.worker_pids()
    os.kill(queued_by, signal.SIGKILL)
    assert f"[{fit.task_id}] succeeded" not in worker.log()  # still running
    status, answer = fit.result()
    assert status == 200
    state = fit_state(answer)
    assert {f"{handle}:temperature", f"{handle}:isotonic"} <= set(state["fitted"])
    assert queued_by not in a.worker_pids()
    assert f"[{fit.task_id}] succeeded" in worker.log()


def test_jobs_beyond_job_workers_wait_in_the_queue_and_all_finish(stack, dash_tab, make_csv):
    from celery import Celery

    a, b, worker, redis_url = stack
    assert len(worker.pool_pids()) == JOB_WORKERS
    tabs = [dash_tab(a.url if i % 2 else b.url) for i in range(2 * JOB_WORKERS)]
    handles = [uploaded(tab, make_csv, seed=10 + i) for i, tab in enumerate(tabs)]
    fits = [Fit(tab) for tab in tabs]
    threads = [
        threading.Thread(target=fit.start, args=(handle,))
        for fit, handle in zip(fits, handles, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(fit.handles for fit in fits)
    client = Celery(broker=redis_url, backend=redis_url)
    samples = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        states = [client.AsyncResult(fit.task_id).state for fit in fits]
        samples.append(states)
        if all(s == "SUCCESS" for s in states):
            break
        time.sleep(0.2)
    assert max(s.count("STARTED") for s in samples) == JOB_WORKERS, samples
    assert any(s.count("STARTED") == JOB_WORKERS and "PENDING" in s for s in samples), samples
    for fit, handle in zip(fits, handles, strict=True):
        status, answer = fit.result()
        assert status == 200
        assert f"{handle}:isotonic" in fit_state(answer)["fitted"]
    assert len(worker.pool_pids()) == JOB_WORKERS
