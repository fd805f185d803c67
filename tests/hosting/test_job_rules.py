"""The rules every background job of team hosting follows (app.jobs), on the real stack.

The stack is test_jobs.py's, smaller: ``redis-server``, one Celery job worker
(JOB_WORKERS=2) and one gunicorn server (2 gthread workers), their
``CACHE_DIR`` on a tmpfs of its own so that it can be filled up or made
read-only while a job runs. The job worker is :mod:`slow_jobs` with a gate: a
fit writes ``running-<pid>`` into the gate folder and waits there until the
test writes ``release`` (:mod:`job_gate`: so a test knows the process that runs a job and holds
it as long as it needs, without timing). Every case of issue 13 ends in a
result or a stated error in the fit state, where the page shows it:

* a job over JOB_TIME_LIMIT_SECONDS (here 6 s) stops with the map, the model
  and the setting named;
* SIGKILL of the pool process that runs a fit;
* the cache made read-only, or filled up, while a fit runs;
* another session that holds a job's handles (and its page's ``endId``) reads
  neither its result nor its progress, and cannot cancel it.

Jobs beyond the caps (MAX_JOBS_PER_SESSION, MAX_JOBS) wait: test_job_queue.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from app.supervisor import WORKER_ENV, wait_for_redis

from .conftest import (
    CeleryWorker,
    Fit,
    Gunicorn,
    fit_state,
    prewarm_demo,
    uploaded,
)
from .test_faults import fill, read_only, tmpfs

JOB_WORKERS = 2
TIME_LIMIT = 6


class Stack:
    """The running stack: ``url``, ``cache_dir``, ``gate`` folder, ``worker``, ``redis_url``."""

    def __init__(self, url: str, cache_dir: Path, gate: Path, worker, redis_url: str):
        self.url, self.cache_dir, self.gate = url, cache_dir, gate
        self.worker, self.redis_url = worker, redis_url

    def task_state(self, task_id: str) -> str:
        from celery import Celery

        return Celery(broker=self.redis_url, backend=self.redis_url).AsyncResult(task_id).state

    def running_pids(self, seen: set[int] = frozenset()) -> set[int]:
        """Processes that reached the gate (minus ``seen``)."""
        pids = {int(p.name.removeprefix("running-")) for p in self.gate.glob("running-*")}
        return pids - set(seen)


def wait_for(condition, what: str, timeout: float = 60.0):
    """``condition()``'s first true value (polled; the timeout is only a safety net)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server):
    base = tmp_path_factory.mktemp("job-rules")
    with tmpfs(base / "cache", size_mb=256) as cache_dir:
        gate = base / "gate"
        gate.mkdir()
        prewarm_demo(cache_dir)
        limits = {"JOB_TIME_LIMIT_SECONDS": str(TIME_LIMIT), "MAX_JOBS_PER_SESSION": "2"}
        started = []
        try:
            redis = redis_server(base / "redis")
            started.append(redis)
            wait_for_redis(redis.url)
            worker = CeleryWorker(
                cache_dir,
                redis.url,
                job_workers=JOB_WORKERS,
                env={"SLOW_FIT_GATE": str(gate), **limits, **WORKER_ENV},
                app="slow_jobs:celery_app",
            )
            started.append(worker)
            web = Gunicorn(
                cache_dir,
                workers=2,
                threads=4,
                env={"REDIS_URL": redis.url, **limits},
                log=base / "web.log",
            )
            started.append(web)
            worker.wait_ready()
            web.wait_ready()
            yield Stack(web.url, cache_dir, gate, worker, redis.url)
        finally:
            (gate / "release").touch()
            for service in reversed(started):
                service.stop()


@pytest.fixture
def gate(stack):
    """The gate closed for this test (jobs wait at it); opened afterwards."""
    (stack.gate / "release").unlink(missing_ok=True)
    for marker in stack.gate.glob("running-*"):
        marker.unlink()
    yield stack.gate
    (stack.gate / "release").touch()


def test_a_fit_over_the_time_limit_stops_with_a_stated_error(stack, gate, dash_tab, make_csv):
    tab = dash_tab(stack.url)
    handle = uploaded(tab, make_csv, seed=40)
    fit = Fit(tab).start(handle, maps=("dirichlet",))
    wait_for(stack.running_pids, "the fit to start")
    status, answer = fit.result(timeout=120)  # held at the gate: only the limit ends it
    assert status == 200
    error = fit_state(answer)["error"]
    assert "The fit of dirichlet on model" in error
    assert f"limit of {TIME_LIMIT} s per job (JOB_TIME_LIMIT_SECONDS)" in error
    assert "temperature or vector scaling" in error
    assert stack.task_state(fit.task_id) == "SUCCESS"  # an answer, not a crash


def test_a_killed_job_is_reported_in_place_of_its_result(stack, gate, dash_tab, make_csv):
    tab = dash_tab(stack.url)
    handle = uploaded(tab, make_csv, seed=41)
    fit = Fit(tab).start(handle)
    (pid,) = wait_for(stack.running_pids, "the fit to start")
    os.kill(pid, signal.SIGKILL)
    status, answer = fit.result(timeout=60)
    assert status == 200
    error = fit_state(answer)["error"]
    assert error.startswith("The fitting job stopped: its process was killed"), error
    assert "signal 9" in error


@pytest.mark.parametrize("fault", ["read-only", "full"])
def test_a_cache_fault_while_a_fit_runs_is_reported(stack, gate, dash_tab, make_csv, fault):
    tab = dash_tab(stack.url)
    handle = uploaded(tab, make_csv, seed=42 if fault == "full" else 43)
    fit = Fit(tab).start(handle)
    wait_for(stack.running_pids, "the fit to start")
    with contextlib.ExitStack() as undo:
        if fault == "read-only":
            undo.enter_context(read_only(stack.cache_dir))
        else:
            fill(stack.cache_dir)
            undo.callback(lambda: [f.unlink() for f in stack.cache_dir.glob("filler-*")])
        (gate / "release").touch()
        status, answer = fit.result(timeout=60)
    assert status == 200
    assert "storage (CACHE_DIR) is full or read-only" in fit_state(answer)["error"]


def test_another_session_cannot_read_or_cancel_a_job(stack, gate, dash_tab, make_csv):
    owner = dash_tab(stack.url)
    handle = uploaded(owner, make_csv, seed=45)
    fit = Fit(owner).start(handle)
    wait_for(stack.running_pids, "the fit to start")
    thief_tab = dash_tab(stack.url).load()
    thief_tab.end_id = owner.end_id  # the other page's signed endId, cacheKey and job
    thief = Fit(thief_tab)
    thief.handles = dict(fit.handles)
    status, answer = thief.poll()
    assert "response" not in answer and "progress" not in answer, answer
    assert thief.cancel() in (200, 204)
    assert stack.task_state(fit.task_id) == "STARTED"  # not cancelled
    (gate / "release").touch()
    wait_for(lambda: stack.task_state(fit.task_id) == "SUCCESS", "the fit to finish")
    status, answer = thief.poll()  # the result is there now: still not the thief's
    assert "response" not in answer, answer
    status, answer = fit.result()
    assert status == 200
    assert f"{handle}:isotonic" in fit_state(answer)["fitted"]


def test_stopping_the_job_worker_stops_its_running_jobs(stack, gate, dash_tab, make_csv):
    """SIGTERM (``docker stop``, the supervisor) is Celery's cold shutdown (WORKER_ENV):
    the running job is stopped, not waited for until its time limit. (Last test of the
    stack: it stops the worker.)"""
    tab = dash_tab(stack.url)
    handle = uploaded(tab, make_csv, seed=46)
    fit = Fit(tab).start(handle)
    (pid,) = wait_for(stack.running_pids, "the fit to start")
    stack.worker.proc.send_signal(signal.SIGTERM)
    stack.worker.proc.wait(timeout=120)  # safety net only
    assert "Cold shutdown" in stack.worker.log()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    # A warm shutdown would have let the job run into its time limit and answer.
    assert stack.task_state(fit.task_id) != "SUCCESS"
    # The page still gets an answer: the job is gone, or at the latest past its
    # deadline (its time limit after its start, plus 30 s), the poll says so.
    status, answer = fit.result(timeout=120)
    assert status == 200
    error = fit_state(answer)["error"]
    assert error.startswith("The fitting job stopped: "), error


# ------------------------------------------------------- the local manager
# ``calibration-dashboard serve`` (no REDIS_URL): Dash forks each job from the
# server process (here the test process, through Flask's test client); the
# gate is the same, patched into the fit before the fork.


@pytest.fixture
def local_app(tmp_path, hosting_config, monkeypatch):
    """``(make tab, gate)``: an app on the local manager whose fits wait at ``gate``."""
    import app.services.fit as fit_module
    from app.factory import create_app

    from .job_gate import wait_at_gate

    gate = tmp_path / "gate"
    gate.mkdir()
    real = fit_module.compare_maps

    def gated(*args, **kwargs):
        wait_at_gate(gate)
        return real(*args, **kwargs)

    monkeypatch.setattr(fit_module, "compare_maps", gated)
    dash_app = create_app(hosting_config(job_time_limit_seconds=TIME_LIMIT))
    yield dash_app, gate
    (gate / "release").touch()
    dash_app.server.extensions["calibration_dashboard"].store.close()


def local_tab(dash_app, dash_tab):
    return dash_tab(flask_client=dash_app.server.test_client())


def gate_pids(gate: Path) -> set[int]:
    return {int(p.name.removeprefix("running-")) for p in gate.glob("running-*")}


@pytest.mark.slow  # waits out a job time limit
def test_local_jobs_stop_at_the_time_limit_with_a_stated_error(local_app, dash_tab, make_csv):
    dash_app, gate = local_app
    tab = local_tab(dash_app, dash_tab)
    handle = uploaded(tab, make_csv, seed=50)
    fit = Fit(tab).start(handle, maps=("dirichlet",))
    wait_for(lambda: gate_pids(gate), "the fit to start")
    status, answer = fit.result(timeout=120)  # held at the gate: only the limit ends it
    assert status == 200
    error = fit_state(answer)["error"]
    assert "The fit of dirichlet on model" in error
    assert f"limit of {TIME_LIMIT} s per job (JOB_TIME_LIMIT_SECONDS)" in error


def test_a_killed_local_job_is_reported(local_app, dash_tab, make_csv):
    dash_app, gate = local_app
    tab = local_tab(dash_app, dash_tab)
    handle = uploaded(tab, make_csv, seed=51)
    fit = Fit(tab).start(handle)
    (pid,) = wait_for(lambda: gate_pids(gate), "the fit to start")
    book = dash_app.server.extensions["calibration_dashboard"].jobs.book
    assert book.find_job(fit.task_id)[1]["process"] == str(pid)  # the page's id -> the pid
    os.kill(pid, signal.SIGKILL)
    status, answer = fit.result(timeout=60)
    assert status == 200
    error = fit_state(answer)["error"]
    # The exit status is known when this process reaps the child; another job's start
    # (Dash's multiprocess.Process.start reaps finished children) may reap it first.
    assert error in (
        "The fitting job stopped: its process ended without an answer (killed by signal 9).",
        "The fitting job stopped: its process ended without an answer.",
    )


def test_another_session_cannot_read_or_cancel_a_local_job(local_app, dash_tab, make_csv):
    dash_app, gate = local_app
    owner = local_tab(dash_app, dash_tab)
    handle = uploaded(owner, make_csv, seed=52)
    fit = Fit(owner).start(handle)
    (pid,) = wait_for(lambda: gate_pids(gate), "the fit to start")
    thief_tab = local_tab(dash_app, dash_tab).load()
    thief_tab.end_id = owner.end_id
    thief = Fit(thief_tab)
    thief.handles = dict(fit.handles)
    status, answer = thief.poll()
    assert "response" not in answer and "progress" not in answer, answer
    assert thief.cancel() in (200, 204)
    os.kill(pid, 0)  # still running (no error: the process exists)
    (gate / "release").touch()
    status, answer = fit.result()
    assert status == 200
    assert f"{handle}:isotonic" in fit_state(answer)["fitted"]


@pytest.mark.slow  # waits out a job time limit
def test_a_diagnostics_job_over_the_time_limit_answers_its_stopped_reply(
    local_app, dash_tab, monkeypatch
):
    """The limit stops a job whose callback does not catch it: the job itself answers
    the callback's ``stopped`` reply (CallbackFailures.stopped, found from the
    request's callback context that Dash hands to the job)."""
    import app.callbacks.diagnostics.jobs as diagnostics_jobs

    from .conftest import payload, post
    from .job_gate import wait_at_gate

    dash_app, gate = local_app
    monkeypatch.setattr(diagnostics_jobs, "run_job", lambda *_args: wait_at_gate(gate))
    tab = local_tab(dash_app, dash_tab).load()
    dep = next(d for d in tab.deps if d["output"] == "diag-test-done.data")
    body = payload(tab, dep, "diag-test-run.n_clicks")
    status, _, answer = post(tab, {}, body)
    assert status == 200
    handles = json.loads(answer)
    wait_for(lambda: gate_pids(gate), "the test job to start")
    deadline = time.monotonic() + 120  # a safety net: the limit ends the job
    while time.monotonic() < deadline:
        query = {"cacheKey": handles["cacheKey"], "job": handles["job"]}
        status, _, answer = post(tab, query, body)
        if status == 200 and "response" in json.loads(answer):
            break
        time.sleep(0.5)
    done = json.loads(answer)["response"]["diag-test-done"]["data"]
    assert done["error"] == (
        "The resampling test job stopped: it ran longer than this server's limit of "
        f"{TIME_LIMIT} s per job (JOB_TIME_LIMIT_SECONDS)."
    )


# ------------------------------------------------------------ the policy
def test_a_map_over_the_parameter_budget_is_refused_up_front(hosting_config, dash_tab, make_csv):
    from app.factory import create_app
    from app.services.fit import run_fits

    dash_app = create_app(hosting_config(max_map_parameters=50))  # Dirichlet: K <= 6
    tab = local_tab(dash_app, dash_tab).load()
    status, body = tab.upload("eight.csv", make_csv(n=400, k=8, seed=60, model="eight"))
    assert status == 200 and not body["errors"], body
    handle = body["models"][0]["handle"]
    values = {"model-select.value": [handle], "maps.value": ["dirichlet"]}
    out = tab.call("fit-request.data", ["maps.value"], values)
    assert "fit-request.data" not in out  # no job at all
    refusal = out["fit-state.data"]["error"]
    assert refusal == (
        "Dirichlet on model 'eight' is not fitted: with 8 classes it has 72 parameters, above "
        "this server's budget of 50 per map (MAX_MAP_PARAMETERS); use temperature or vector "
        "scaling for 8 classes."
    )
    # With a map within the budget, that one is fitted and the refusal kept.
    values["maps.value"] = ["vector", "dirichlet"]
    request = tab.call("fit-request.data", ["maps.value"], values)["fit-request.data"]
    assert request["maps"] == ["vector"] and request["refused"] == refusal
    ctx = dash_app.server.extensions["calibration_dashboard"]
    sid = ctx.sessions.verify(tab.cookie())[0]
    state = run_fits(
        ctx, sid, [handle], ["vector"], "folds", 3, 0.5, lambda *_: None, refused=refusal
    )
    assert state["fitted"] == [f"{handle}:vector"] and state["error"] == refusal
    ctx.store.close()


def test_a_thread_that_met_a_read_only_job_book_books_again_once_it_is_writable(tmp_path):
    """SQLite keeps a connection opened on a read-only file read-only: a gunicorn thread
    whose first booking met a read-only cache could never book a job again (seen in CI:
    "cannot book a job: attempt to write a readonly database" after the fault test)."""
    from concurrent.futures import ThreadPoolExecutor

    from app.jobs import JobBook, JobQueue

    queue = JobQueue((2, 16), live=lambda record: True)
    with tmpfs(tmp_path / "cache", size_mb=16) as cache_dir:
        JobBook(cache_dir / "job-book").records()  # the book exists (another process made it)
        book = JobBook(cache_dir / "job-book")
        with ThreadPoolExecutor(1) as thread:  # one thread, as one gunicorn thread
            with read_only(cache_dir):
                with pytest.raises(Exception, match="readonly"):
                    thread.submit(book.admit, "k1", "s1", ("j1", "fit", (), {}), queue).result()
                thread.submit(book.failed, "cannot book a job", RuntimeError("test")).result()
            refusal, ready = thread.submit(
                book.admit, "k2", "s1", ("j2", "fit", (), {}), queue
            ).result()
    assert refusal is None and ready == ["k2"]
