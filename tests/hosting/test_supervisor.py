"""``python -m app.supervisor`` (the image's command) natively: the image run alone.

Without ``REDIS_URL`` it starts a private redis-server (Unix socket), a Celery job
worker and gunicorn; a background fit runs in the job worker; SIGTERM stops all
three; a configuration error stops the supervisor before it starts any of them,
with one line naming every bad setting and exit status 2.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
import requests

from .conftest import REPO, SECRET, Fit, fit_state, free_port, prewarm_demo, uploaded


def _env(cache_dir, port, **extra) -> dict:
    env = {
        **os.environ,
        "APP_ENV": "production",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECRET_KEY": SECRET,
        "SESSION_COOKIE_SECURE": "0",
        "CACHE_DIR": str(cache_dir),
        "PYTHONPATH": str(REPO),
        "BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "2",
        "JOB_WORKERS": "1",
        **extra,
    }
    env.pop("REDIS_URL", None)
    return env


@pytest.mark.usefixtures("redis_server")  # the supervisor starts redis-server itself
def test_the_image_command_runs_web_jobs_and_redis_and_stops_them(tmp_path, dash_tab, make_csv):
    prewarm_demo(tmp_path)
    port = free_port()
    log = open(tmp_path / "supervisor.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.supervisor"],
        cwd=REPO,
        env=_env(tmp_path, port),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 150
        while True:
            assert proc.poll() is None, (tmp_path / "supervisor.log").read_text()[-3000:]
            try:
                if requests.get(url + "/healthz", timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, (tmp_path / "supervisor.log").read_text()[-3000:]
            time.sleep(0.3)
        names = [" ".join(c.cmdline()) for c in psutil.Process(proc.pid).children()]
        assert any("redis-server" in n for n in names), names
        assert any("celery" in n and "app.worker:celery_app" in n for n in names), names
        assert any("gunicorn" in n for n in names), names
        assert not any(
            c.laddr.port == 6379
            for c in psutil.net_connections("tcp")
            if c.pid in {p.pid for p in psutil.Process(proc.pid).children()}
        )
        tab = dash_tab(url)
        handle = uploaded(tab, make_csv, seed=21)
        status, answer = Fit(tab).start(handle).result()
        assert status == 200
        assert f"{handle}:temperature" in fit_state(answer)["fitted"]
        assert " succeeded in " in (tmp_path / "supervisor.log").read_text()  # a Celery task
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        _, alive = psutil.wait_procs(children, timeout=30)
        assert not alive, alive
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()


def test_a_configuration_error_stops_the_supervisor_before_any_process(tmp_path):
    """One line naming every bad setting, exit 2, within 10 s; Redis, Celery and
    gunicorn never start (a stub redis-server first on PATH would leave a marker)."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    marker = tmp_path / "redis-server-started"
    stub = stubs / "redis-server"
    stub.write_text(f"#!/bin/sh\ntouch {marker}\nexec sleep 60\n")
    stub.chmod(0o755)
    env = _env(tmp_path, free_port(), MAX_UPLOAD_MB="lots", WEB_CONCURRENCY="none")
    env.pop("SECRET_KEY")
    env["PATH"] = f"{stubs}:{env['PATH']}"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "app.supervisor"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    seconds = time.monotonic() - started
    assert done.returncode == 2, done.stdout + done.stderr
    assert seconds < 10, seconds
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("calibration-dashboard: configuration error: 3 problems: ")
    for setting in ("SECRET_KEY is required", "MAX_UPLOAD_MB", "WEB_CONCURRENCY"):
        assert setting in lines[0], lines[0]
    assert not marker.exists(), "redis-server was started"
