"""The gunicorn server of ``benchmarks/load_test.py``: start, health, memory, log.

:func:`start_server` starts ``python -m gunicorn --config python:app.gunicorn_conf
app.wsgi:server`` on a free port of 127.0.0.1 in its own process group;
:class:`MemoryMonitor` samples every worker's ``/proc/<pid>/status`` once a
second; :func:`server_log_problems` counts 5xx answers, tracebacks and worker
timeouts in the server's log.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------ server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A gunicorn master started by this script (its own process group).

    With Redis, ``helpers`` are the job worker and ``redis-server`` (stopped after it).
    """

    proc: subprocess.Popen
    port: int
    log_path: Path
    started: float = field(default_factory=time.perf_counter)
    helpers: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def worker_pids(self) -> list[int]:
        import psutil

        try:
            return sorted(c.pid for c in psutil.Process(self.proc.pid).children())
        except psutil.NoSuchProcess:
            return []

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for helper in self.helpers:
            if helper.poll() is None:
                helper.send_signal(signal.SIGTERM)
                try:
                    helper.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    helper.kill()
                    helper.wait(timeout=10)
        for proc in (self.proc, *self.helpers):
            try:  # leftovers of this server only (its own process groups)
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def start_server(
    cache_dir: Path, workers: int, threads: int, log_path: Path, job_workers: int = 0
) -> Server:
    """gunicorn; with ``job_workers``, first ``redis-server`` and a Celery job worker pool.

    Those run as ``compose.yaml`` runs them (``app.supervisor``'s commands, ``REDIS_URL``),
    their output in ``redis.log`` and ``celery.log`` beside ``log_path``.
    """
    from app.supervisor import redis_command, wait_for_redis, worker_command

    port = free_port()
    env = dict(
        os.environ,
        BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY=str(workers),
        THREADS=str(threads),
        CACHE_DIR=str(cache_dir),
        APP_ENV="production",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECRET_KEY=secrets.token_hex(32),
        PYTHONPATH=str(REPO),
    )
    env.pop("DEBUG", None)
    env.pop("REDIS_URL", None)
    helpers = []
    if job_workers:
        redis_dir = Path(cache_dir).parent / "redis"
        redis_dir.mkdir(parents=True, exist_ok=True)
        redis_port = free_port()
        helpers.append(
            _spawn(redis_command(redis_port, redis_dir), env, log_path.parent / "redis.log")
        )
        env["REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        env["JOB_WORKERS"] = str(job_workers)
        wait_for_redis(env["REDIS_URL"])
        helpers.insert(0, _spawn(worker_command(), env, log_path.parent / "celery.log"))
    command = [sys.executable, "-m", "gunicorn", "--config", "python:app.gunicorn_conf"]
    proc = _spawn([*command, "app.wsgi:server"], env, log_path)
    return Server(proc, port, log_path, helpers=helpers)


def _spawn(command: list[str], env: dict, log_path: Path) -> subprocess.Popen:
    with log_path.open("wb") as log:
        return subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_healthy(server: Server, timeout: float = 180.0) -> float:
    """Wait for ``/healthz``; returns the seconds since the server was started."""
    import http.client

    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if server.proc.poll() is not None:
            raise RuntimeError(
                f"gunicorn exited with {server.proc.returncode}:\n"
                + server.log_path.read_text(errors="replace")[-3000:]
            )
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return time.perf_counter() - server.started
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer /healthz within {timeout} s")


# ------------------------------------------------------------------------ memory
def proc_status(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon, RssFile of a process in MB (from /proc/<pid>/status), and its CPU.

    ``cpu_s``: user plus system CPU seconds of the process itself (``/proc/<pid>/stat``
    fields 14 and 15; not its children's).
    """
    out = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return out
    for key in ("VmRSS", "RssAnon", "RssFile"):
        m = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
        if m:
            out[key] = int(m.group(1)) / 1024
    fields = stat.rpartition(")")[2].split()  # after the command name, field 3 is [0]
    out["cpu_s"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


class MemoryMonitor(threading.Thread):
    """Samples every worker's memory once a second; marks named phases."""

    def __init__(self, server: Server, period: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.period = period
        self.samples: list[tuple[float, dict[int, dict]]] = []
        self.marks: dict[str, dict[int, dict]] = {}
        self.pids_seen: set[int] = set()
        self._stop_event = threading.Event()

    def sample(self) -> dict[int, dict]:
        snap = {pid: proc_status(pid) for pid in self.server.worker_pids()}
        snap = {pid: s for pid, s in snap.items() if s}
        self.pids_seen.update(snap)
        self.samples.append((time.time(), snap))
        return snap

    def mark(self, phase: str) -> None:
        self.marks[phase] = self.sample()

    def run(self) -> None:
        while not self._stop_event.wait(self.period):
            self.sample()

    def stop(self) -> None:
        self._stop_event.set()

    def summary(self) -> dict:
        def total(snap, key):
            return round(sum(s.get(key, 0.0) for s in snap.values()), 1)

        out = {"phases": {}, "workers": {}, "worker_pids_seen": sorted(self.pids_seen)}
        for phase, snap in self.marks.items():
            out["phases"][phase] = {
                "rss_mb_total": total(snap, "VmRSS"),
                "anon_mb_total": total(snap, "RssAnon"),
                "cpu_s_total": total(snap, "cpu_s"),
                "rss_mb_per_worker": {str(p): round(s["VmRSS"], 1) for p, s in snap.items()},
            }
        peak = defaultdict(float)
        for _, snap in self.samples:
            for pid, s in snap.items():
                peak[pid] = max(peak[pid], s.get("VmRSS", 0.0))
        out["peak_rss_mb_per_worker"] = {str(p): round(v, 1) for p, v in sorted(peak.items())}
        return out


def server_log_problems(path: Path) -> dict:
    text = path.read_text(errors="replace")
    status = re.findall(r'" (\d{3}) ', text)
    return {
        "requests_logged": len(status),
        "http_5xx": sum(1 for s in status if s.startswith("5")),
        "http_4xx": sum(1 for s in status if s.startswith("4")),
        "tracebacks": text.count("Traceback (most recent call last)"),
        "worker_timeouts": text.count("WORKER TIMEOUT"),
        "worker_boots": len(re.findall(r"Booting worker with pid", text)),
    }
