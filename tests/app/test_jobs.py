"""Which manager runs background callbacks, and how the local one forks its jobs."""

from __future__ import annotations

import os
import socket
import stat
import sys
import time

import dash
import diskcache
import pytest

from app.callback_failures import CallbackFailures
from app.config import AppConfig, ConfigError
from app.jobs import (
    JobBook,
    JobQueue,
    LocalJobManager,
    background_manager,
    close_listening_sockets,
)
from app.warmup import WarmUp


def local_manager(tmp_path, warm_up: WarmUp, session=lambda: "s" * 32) -> LocalJobManager:
    """A local job manager in ``tmp_path`` (default limits and caps)."""
    return LocalJobManager(
        diskcache.Cache(str(tmp_path / "jobs")),
        warm_up,
        JobBook(tmp_path / "job-book"),
        AppConfig(cache_dir=tmp_path),
        session,
        CallbackFailures(),
    )


def test_redis_url_switches_to_celery_with_job_workers_processes(tmp_path):
    config = AppConfig(
        cache_dir=tmp_path, secret_key="k" * 32, redis_url="redis://127.0.0.1:1/0", job_workers=3
    )
    manager = background_manager(config, tmp_path, WarmUp(()), lambda: None, CallbackFailures())
    assert isinstance(manager, dash.CeleryManager)
    assert manager.handle.conf.worker_concurrency == 3
    assert manager.handle.conf.worker_prefetch_multiplier == 1  # the queue stays in Redis
    assert manager.handle.conf.task_time_limit == 300 + 30  # JOB_TIME_LIMIT_SECONDS + grace
    local = background_manager(
        AppConfig(cache_dir=tmp_path), tmp_path, WarmUp(()), lambda: None, CallbackFailures()
    )
    assert isinstance(local, LocalJobManager) and isinstance(local, dash.DiskcacheManager)


def test_redis_url_and_job_workers_from_the_environment():
    config = AppConfig.from_env({"REDIS_URL": " redis://redis:6379/0 ", "JOB_WORKERS": "5"})
    assert (config.redis_url, config.job_workers) == ("redis://redis:6379/0", 5)
    assert AppConfig.from_env({}).redis_url is None
    assert AppConfig.from_env({}).job_workers == 2
    with pytest.raises(ConfigError, match="JOB_WORKERS must be at least 1"):
        AppConfig.from_env({"JOB_WORKERS": "0"})


def test_job_manager_never_forks_while_a_warm_up_imports(tmp_path, monkeypatch):
    (tmp_path / "slow_warm_probe.py").write_text("import time\ntime.sleep(0.6)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    calls: list[tuple[float, bool]] = []
    warm = WarmUp(("slow_warm_probe",))

    def fake_fork(self, key, job_fn, args, context):
        calls.append((time.perf_counter(), warm.done))
        return 1234

    monkeypatch.setattr(dash.DiskcacheManager, "call_job_fn", fake_fork)
    manager = local_manager(tmp_path, warm)
    thread = warm.start()
    deadline = time.perf_counter() + 5
    while "slow_warm_probe" not in sys.modules and time.perf_counter() < deadline:
        time.sleep(0.01)  # the warm-up thread is inside the slow import now
    started = time.perf_counter()
    manager.func_registry["job"] = job_fn = object()
    job = manager.call_job_fn("key", job_fn, (), None)
    assert manager.book.get("key")["job"] == job  # the page's job id
    assert manager.book.get("key")["process"] == "1234"  # Dash's (the forked pid)
    thread.join(timeout=30)
    assert calls and calls[0][1] is True  # the fork came after the warm-up
    assert calls[0][0] - started > 0.2


def test_serve_answers_one_request_at_a_time(tmp_path, monkeypatch):
    """Jobs are forked from the ``serve`` process: a fork while another request thread
    was inside SQLite hung the job (seen in CI), so ``serve`` runs no request threads."""
    import app.server

    runs: list[dict] = []
    monkeypatch.setenv("CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(app.server, "WARM_UP_DELAY", 600.0)  # not during this test
    monkeypatch.setattr(dash.Dash, "run", lambda self, **kwargs: runs.append(kwargs))
    app.server.serve(port=1)
    assert len(runs) == 1 and runs[0]["threaded"] is False
    assert "pandas" in sys.modules  # imported before the server listens (app.warmup)


def test_forked_job_drops_the_inherited_listening_socket(tmp_path, monkeypatch):
    """A background job (forked) must not keep the server's port once the server stops."""
    assert close_listening_sockets  # what the job runs first
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    other = socket.socket()  # not listening: left alone
    read, write = os.pipe()

    def report(*_args):  # the job: whether each fd is still open
        status = []
        for fd in (server.fileno(), other.fileno()):
            try:  # (the job may have reused the number for a file since)
                status.append("open" if stat.S_ISSOCK(os.fstat(fd).st_mode) else "closed")
            except OSError:
                status.append("closed")
        os.write(write, ",".join(status).encode())

    monkeypatch.setattr(dash.DiskcacheManager, "make_job_fn", lambda self, fn, *a, **k: fn)
    job = local_manager(tmp_path, WarmUp(())).make_job_fn(report, False)
    pid = os.fork()
    if pid == 0:  # the child: what Dash's Process runs
        job("key", "key-progress", (), {})
        os._exit(0)
    os.close(write)
    _, code = os.waitpid(pid, 0)
    reported = os.read(read, 100).decode()
    os.close(read)
    assert code == 0
    assert reported == "closed,open"
    # The parent still listens.
    probe = socket.create_connection(server.getsockname(), timeout=5)
    probe.close()
    server.close()
    other.close()


def test_job_limits_and_caps_from_the_environment():
    config = AppConfig.from_env(
        {
            "JOB_TIME_LIMIT_SECONDS": "60",
            "JOB_MEMORY_LIMIT_MB": "512",
            "MAX_JOBS_PER_SESSION": "1",
            "MAX_JOBS": "4",
            "MAX_MAP_PARAMETERS": "1000",
        }
    )
    assert (config.job_time_limit_seconds, config.job_memory_limit_mb) == (60, 512)
    assert (config.max_jobs_per_session, config.max_jobs, config.max_map_parameters) == (
        1,
        4,
        1000,
    )
    default = AppConfig.from_env({})
    assert (default.job_time_limit_seconds, default.max_jobs_per_session) == (300, 2)
    with pytest.raises(ConfigError, match="JOB_MEMORY_LIMIT_MB must be at least 64"):
        AppConfig.from_env({"JOB_MEMORY_LIMIT_MB": "8"})


def in_child(work) -> str:
    """Run ``work() -> str`` in a forked process (its limits stay there); its answer."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, work().encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    answer = os.read(read, 1000).decode()
    os.close(read)
    return answer


def test_a_job_over_its_memory_limit_gets_memory_error_then_the_limit_is_lifted():
    import numpy as np

    from app.job_limits import JobLimits

    def work() -> str:
        lift = JobLimits(seconds=60, memory_mb=64).apply()
        try:
            np.ones(256 * 1024 * 1024 // 8)  # 256 MB
            return "allocated"
        except MemoryError:
            pass
        finally:
            lift()
        np.ones(256 * 1024 * 1024 // 8)
        return "MemoryError, then allocated"

    assert in_child(work) == "MemoryError, then allocated"


def test_a_job_over_its_time_limit_is_stopped_by_jobstopped():
    from app.job_limits import JobLimits, JobStopped

    def work() -> str:
        lift = JobLimits(seconds=1, memory_mb=4096).apply()
        try:
            while True:  # what the core does with an Exception, it cannot do with JobStopped
                try:
                    time.sleep(0.05)
                except Exception:
                    return "caught as an Exception"
        except JobStopped as exc:
            return str(exc)
        finally:
            lift()

    assert in_child(work) == (
        "it ran longer than this server's limit of 1 s per job (JOB_TIME_LIMIT_SECONDS)"
    )


def test_map_parameters_grow_with_the_classes_as_each_map_does():
    from app.map_policy import map_parameters, refusal

    assert map_parameters("dirichlet", 1000) == map_parameters("matrix", 1000) == 1_001_000
    assert map_parameters("vector", 1000) == 2000 and map_parameters("temperature", 1000) == 1
    assert map_parameters("isotonic", 1000) == 0
    assert map_parameters("platt", 2) == 2 and map_parameters("histogram", 1000) == 10_000
    assert refusal("dirichlet", "m", 100, 50_000) is None  # CIFAR-100: 10,100 parameters
    assert "use temperature or vector scaling for 1,000 classes" in refusal(
        "dirichlet", "m", 1000, 50_000
    )


def booked(sid: str, queued: float, submitted: float | None = None, outcome=None) -> dict:
    """A job book record (as :meth:`JobBook.admit` writes it)."""
    return {
        "sid": sid,
        "job": f"{sid}-{queued}",
        "process": None if submitted is None else f"p-{sid}-{queued}",
        "queued": queued,
        "seen": queued,
        "submitted": submitted,
        "started": submitted,
        "waits": None,
        "outcome": outcome,
    }


def test_waiting_jobs_are_submitted_in_order_within_both_caps():
    queue = JobQueue((2, 3), live=lambda r: r["submitted"] is not None and r["outcome"] is None)
    records = {
        "a1": booked("a", 1, submitted=1),
        "a2": booked("a", 2, submitted=2),
        "a3": booked("a", 3),  # A is at its cap: waits
        "b1": booked("b", 4),  # not held back by A's waiting job
        "c1": booked("c", 5),  # the server's cap (3) is reached by b1
        "d1": booked("d", 6),
    }
    dropped = []
    assert queue.promote(records, now=10, drop=dropped.append) == ["b1"]
    assert records["a3"]["waits"] == (
        "waiting for a free job slot: this session already runs 2 jobs (MAX_JOBS_PER_SESSION=2)"
    )
    assert records["c1"]["waits"] == (
        "waiting for a free job slot: the server already runs 3 jobs (MAX_JOBS=3)"
    )
    records["a1"]["outcome"] = "done"  # a1 ends: A's waiting job came first
    assert queue.promote(records, now=11, drop=dropped.append) == ["a3"]
    records["b1"]["outcome"] = "done"
    assert queue.promote(records, now=12, drop=dropped.append) == ["c1"]
    assert records["c1"]["submitted"] == 12 and dropped == []


def test_the_waiting_list_is_bounded_and_forgets_pages_that_stopped_polling():
    queue = JobQueue((1, 2), live=lambda r: r["submitted"] is not None and r["outcome"] is None)
    records = {"a1": booked("a", 1, submitted=1), "a2": booked("a", 2), "a3": booked("a", 3)}
    queue.promote(records, now=4, drop=lambda _k: None)
    assert queue.refusal(records, "a2") is None  # the first one waiting
    assert queue.refusal(records, "a3") == (
        "this session already has 1 background job(s) running and 1 waiting (this server "
        "runs 1 per session, MAX_JOBS_PER_SESSION, and lets as many more wait): wait for one "
        "to finish, or cancel it, then try again"
    )
    records = {
        "a1": booked("a", 1, submitted=1),
        "b1": booked("b", 2, submitted=2),
        **{f"{s}1": booked(s, 3) for s in "cd"},
        "e1": booked("e", 4),
    }
    queue.promote(records, now=5, drop=lambda _k: None)
    assert queue.refusal(records, "e1") == (
        "the server is busy: 2 background jobs are running and 2 waiting (MAX_JOBS=2); "
        "try again in a minute"
    )
    dropped = []
    later = 4 + JobQueue.PATIENCE_SECONDS + 1  # e1's page polled last at 4
    records["c1"]["seen"] = records["d1"]["seen"] = later
    records["a1"]["outcome"] = "done"
    assert queue.promote(records, now=later, drop=dropped.append) == ["c1"]
    assert dropped == ["e1"] and records["e1"]["outcome"].startswith("its page stopped")


def test_a_cluster_job_stops_at_its_own_time_limit_with_the_reason(tmp_path, monkeypatch):
    """The page's dataset job waits on a Dask cluster: the time limit (not the memory limit)
    stops the wait and the job answers why, before Celery's hard kill (limit + grace)."""
    from concurrent.futures import Future

    from dash import DiskcacheManager

    from app.job_limits import JobLimits, cluster_job
    from app.jobs import JobRules

    # Dash's own job wrapper (fork, cache, progress) is not what is tested here.
    monkeypatch.setattr(DiskcacheManager, "make_job_fn", lambda self, fn, progress, key=None: fn)
    # nor is the page's wording of the reason (it needs the callback's context)
    monkeypatch.setattr(CallbackFailures, "stopped", lambda self, reason: f"stopped: {reason}")
    manager = local_manager(tmp_path, WarmUp())
    manager.limits = JobLimits(seconds=1, memory_mb=64)

    def waits_on_the_cluster():
        started = time.monotonic()
        Future().result(timeout=30)  # what client.compute(...).result() does: a long wait
        return f"waited {time.monotonic() - started:.0f} s"

    def allocates(job):
        def run() -> str:
            import numpy as np

            np.ones(256 * 1024 * 1024 // 8)  # 256 MB: over 64 MB, the cluster's to bound
            return job()

        return run

    cluster = JobRules.make_job_fn(manager, cluster_job(allocates(waits_on_the_cluster)), False)
    assert in_child(cluster) == (
        "stopped: it ran longer than this server's limit of 1 s per job (JOB_TIME_LIMIT_SECONDS)"
    )
    started = {"submitted": 0.0, "started": 0.0}
    assert manager.deadline({**started, "cluster": True}) == manager.limits.seconds + 30
