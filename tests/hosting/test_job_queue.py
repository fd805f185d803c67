"""Jobs beyond the caps wait in the job book, bounded, then run (app.jobs.JobQueue).

The same scenario runs on team hosting's stack (``redis-server``, one Celery
job worker with JOB_WORKERS=3 held at a gate (:mod:`job_gate`), one gunicorn
server) and on the local manager (jobs forked from the test process): with
MAX_JOBS_PER_SESSION=2 and MAX_JOBS=3,

* a session's third and fourth jobs wait, not submitted (Celery's queue is
  empty), and their pages say why; a fifth is refused with a message;
* another session's job is not held back by them, and a third session's
  waits for the server's cap (MAX_JOBS);
* a waiting job cancelled is never submitted;
* when a job ends, the next waiting one (in order of arrival, of a session
  below its cap) runs and delivers its result.

Nothing is timed: jobs wait at the gate until the test releases them one by one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app.jobs import CANCELLED, JobBook, JobQueue
from app.supervisor import wait_for_redis

from .conftest import CeleryWorker, Fit, Gunicorn, fit_state, prewarm_demo, uploaded
from .test_job_rules import local_tab, wait_for

CAPS = {"MAX_JOBS_PER_SESSION": "2", "MAX_JOBS": "3", "JOB_TIME_LIMIT_SECONDS": "300"}
STATUS = "fit-status.children"


class Backend:
    """A server and its gate: ``tab()`` opens a tab; ``queued()`` counts Celery's queue."""

    def __init__(self, tab, gate: Path, cache_dir: Path, queued=lambda: 0):
        self.tab, self.gate, self.queued = tab, gate, queued
        self.book = JobBook(cache_dir / "job-book")

    def held(self) -> set[int]:
        """Processes holding a job at the gate."""
        return {int(p.name.removeprefix("running-")) for p in self.gate.glob("running-*")}

    def record(self, fit: Fit) -> dict:
        _key, record = self.book.find_job(fit.task_id)
        return record

    def release(self, pid: int) -> None:
        (self.gate / f"release-{pid}").touch()


@pytest.fixture(scope="module")
def celery_backend(tmp_path_factory, dash_tab, redis_server):
    base = tmp_path_factory.mktemp("job-queue")
    cache_dir, gate = base / "cache", base / "gate"
    cache_dir.mkdir()
    gate.mkdir()
    prewarm_demo(cache_dir)
    started = []
    try:
        redis = redis_server(base / "redis")
        started.append(redis)
        wait_for_redis(redis.url)
        worker = CeleryWorker(
            cache_dir,
            redis.url,
            job_workers=3,
            env={"SLOW_FIT_GATE": str(gate), **CAPS},
            app="slow_jobs:celery_app",
        )
        started.append(worker)
        web = Gunicorn(
            cache_dir,
            workers=2,
            threads=4,
            env={"REDIS_URL": redis.url, **CAPS},
            log=base / "web.log",
        )
        started.append(web)
        worker.wait_ready()
        web.wait_ready()

        def queued() -> int:  # tasks waiting in Celery's queue (Redis list "celery")
            port = redis.url.rsplit(":", 1)[1].split("/")[0]
            out = subprocess.run(
                ["redis-cli", "-p", port, "llen", "celery"], capture_output=True, text=True
            )
            return int(out.stdout.strip())

        yield Backend(lambda: dash_tab(web.url), gate, cache_dir, queued)
    finally:
        (gate / "release").touch()
        for service in reversed(started):
            service.stop()


@pytest.fixture
def local_backend(tmp_path, hosting_config, dash_tab, monkeypatch):
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
    config = hosting_config(job_time_limit_seconds=300, max_jobs_per_session=2, max_jobs=3)
    dash_app = create_app(config)
    yield Backend(lambda: local_tab(dash_app, dash_tab), gate, config.cache_dir)
    (gate / "release").touch()
    dash_app.server.extensions["calibration_dashboard"].store.close()


@pytest.fixture(
    params=[pytest.param("celery", marks=[pytest.mark.hosting, pytest.mark.slow]), "local"]
)
def backend(request):
    """Each backend in turn (asked for by name: the ``hosting`` tier is marked here)."""
    return request.getfixturevalue(f"{request.param}_backend")


def session_tabs(backend: Backend, make_csv, seed: int, count: int):
    """``count`` tabs of one new session, and the handle of a model it uploaded."""
    first = backend.tab()
    handle = uploaded(first, make_csv, seed=seed)
    tabs = [first]
    for _ in range(count - 1):
        tab = backend.tab()
        tab.set_cookie(first.cookie())
        tabs.append(tab.load())
    return tabs, handle


def waits(backend: Backend, fit: Fit) -> str:
    """The status a waiting job's poll shows (asserting it is neither answered nor submitted)."""
    status, answer = fit.poll()
    assert status == 200 and "response" not in answer, answer
    assert backend.record(fit)["process"] is None
    return answer["progress"][STATUS]


def test_jobs_beyond_the_caps_wait_then_run(backend, make_csv):
    a_tabs, a_model = session_tabs(backend, make_csv, seed=70, count=5)
    a = [Fit(tab) for tab in a_tabs]
    a[0].start(a_model, maps=("temperature",))
    (a1,) = wait_for(backend.held, "A1 to start")
    a[1].start(a_model, maps=("isotonic",))
    (a2,) = wait_for(lambda: backend.held() - {a1}, "A2 to start")
    a[2].start(a_model, maps=("histogram",))
    a[3].start(a_model, maps=("vector",))
    for fit in a[2:4]:  # the session's cap: they wait, not submitted
        assert waits(backend, fit) == (
            "waiting for a free job slot: this session already runs 2 jobs (MAX_JOBS_PER_SESSION=2)"
        )
    status, answer = a[4].start(a_model, maps=("beta",)).result(timeout=30)
    assert fit_state(answer)["error"] == (
        "The fitting job was not started: this session already has 2 background job(s) "
        "running and 2 waiting (this server runs 2 per session, MAX_JOBS_PER_SESSION, and "
        "lets as many more wait): wait for one to finish, or cancel it, then try again."
    )

    # Another session is not held back by A's waiting jobs; a third waits for MAX_JOBS.
    (b_tab,), b_model = session_tabs(backend, make_csv, seed=71, count=1)
    b = Fit(b_tab).start(b_model, maps=("temperature",))
    (b1,) = wait_for(lambda: backend.held() - {a1, a2}, "B1")
    (c_tab,), c_model = session_tabs(backend, make_csv, seed=72, count=1)
    c = Fit(c_tab).start(c_model, maps=("temperature",))
    assert waits(backend, c) == (
        "waiting for a free job slot: the server already runs 3 jobs (MAX_JOBS=3)"
    )
    assert backend.queued() == 0  # Celery holds only the three running jobs

    # A waiting job cancelled is never submitted.
    assert a[3].cancel() in (200, 204)
    assert backend.record(a[3])["outcome"] == CANCELLED
    status, answer = a[3].poll()
    assert status == 204 or "response" not in answer

    # A1 ends: A's next waiting job runs (it came before C's), C still waits.
    backend.release(a1)
    status, answer = a[0].result()
    assert fit_state(answer)["error"] is None
    (a3,) = wait_for(lambda: backend.held() - {a2, b1}, "A3 to start")
    assert waits(backend, c).endswith("already runs 3 jobs (MAX_JOBS=3)")
    # B1 ends: C's job runs.
    backend.release(b1)
    status, answer = b.result()
    assert fit_state(answer)["error"] is None
    c.poll()  # (C's own poll submits it, if B1's end did not)
    wait_for(lambda: backend.held() - {a2, a3}, "C1 to start")
    assert backend.record(a[3])["process"] is None  # the cancelled job never ran
    (backend.gate / "release").touch()
    for fit, model, fitted in (
        (a[1], a_model, "isotonic"),
        (a[2], a_model, "histogram"),
        (c, c_model, "temperature"),
    ):
        status, answer = fit.result()
        assert status == 200
        assert f"{model}:{fitted}" in fit_state(answer)["fitted"]
    assert backend.queued() == 0


def test_a_waiting_job_whose_page_stops_polling_is_dropped(local_backend, make_csv, wall_clock):
    backend = local_backend
    tabs, model = session_tabs(backend, make_csv, seed=73, count=3)
    fits = [Fit(tab) for tab in tabs]
    fits[0].start(model, maps=("temperature",))
    (first,) = wait_for(backend.held, "the first job to start")
    fits[1].start(model, maps=("isotonic",))
    (second,) = wait_for(lambda: backend.held() - {first}, "the second job to start")
    fits[2].start(model, maps=("histogram",))
    waits(backend, fits[2])
    wall_clock.advance(JobQueue.PATIENCE_SECONDS + 1)  # the tab was closed
    backend.release(first)
    _status, answer = fits[0].result()  # its end frees a slot: the stale job is dropped
    assert fit_state(answer)["error"] is None
    assert backend.record(fits[2])["outcome"].startswith("its page stopped asking")
    assert backend.held() == {second}  # nothing else started
    _status, answer = fits[2].poll()  # a page that comes back is told
    assert fit_state(answer)["error"] == (
        "The fitting job was not started: its page stopped asking for it while it waited "
        "for a free job slot."
    )
