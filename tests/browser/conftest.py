"""Real-browser fixtures: one gunicorn server and one headless Chromium for the session.

* ``server``: the dashboard served by gunicorn (2 workers, production settings)
  on a free port of 127.0.0.1, with its own ``CACHE_DIR``; its log is attached
  to the report of every failing test and stopped at the end of the session.
* ``browser``: Debian's ``/usr/bin/chromium`` driven by Playwright (never a
  downloaded browser).
* ``page`` / ``watch`` / ``ui``: a fresh browser context per test; ``watch``
  records console messages, page errors, failed requests, HTTP errors and
  dialogs, and every test ends with ``watch.assert_clean()`` (checked again at
  teardown); ``ui`` is a small page object for the dashboard (both classes are
  in ``dashboard_page.py``).

Without ``/usr/bin/chromium`` (probed once, tests/external_tools.py) or Playwright
the tests are skipped, except when the ``CI`` environment variable is set: CI must
run them, so they fail.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.supervisor import web_command

from .dashboard_page import Dashboard, PageWatch

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # reported by the `browser_available` fixture (tests/conftest.py)
    expect = sync_playwright = None

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENS = REPO / "artifacts" / "screens"
VIEWPORT = {"width": 1280, "height": 900}
#: Auto-wait of ``expect`` and of Playwright actions (the machine may be busy).
TIMEOUT_MS = 30_000
SERVER_START_SECONDS = 120
#: Variables of the app and of gunicorn that the server must not inherit.
APP_ENV_VARS = (
    "APP_ENV",
    "ALLOWED_HOSTS",
    "SECRET_KEY",
    "MAX_UPLOAD_MB",
    "CACHE_DIR",
    "CACHE_SIZE_LIMIT_MB",
    "MEMORY_CACHE_MB",
    "SESSION_TTL_SECONDS",
    "MAX_MODELS_PER_SESSION",
    "SESSION_QUOTA_MB",
    "CLIENT_QUOTA_MB",
    "STORE_RESERVE_PERCENT",
    "SESSION_COOKIE_SECURE",
    "DEBUG",
    "PORT",
    "BIND",
    "WEB_CONCURRENCY",
    "THREADS",
    "TIMEOUT",
    "LOG_LEVEL",
    "GUNICORN_CMD_ARGS",
)


# ------------------------------------------------------------------- server
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _control_socket_args(tmp: Path) -> list[str]:
    """Gunicorn >= 24 opens a control socket in ~/.gunicorn; keep ours out of it."""
    try:
        from gunicorn.config import KNOWN_SETTINGS
    except ImportError:
        return []
    names = {s.name for s in KNOWN_SETTINGS}
    if "control_socket_disable" in names:
        return ["--no-control-socket"]
    if "control_socket" in names:
        return ["--control-socket", str(tmp / "gunicorn.ctl")]
    return []


@dataclass
class Server:
    """A running dashboard: its URL, process and log file."""

    url: str
    proc: subprocess.Popen
    log_path: Path

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def log_since(self, offset: int = 0) -> str:
        with open(self.log_path, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", "replace")

    def get(self, path: str, timeout: float = 10.0) -> bytes:
        with urllib.request.urlopen(self.url + path, timeout=timeout) as response:
            return response.read()

    def stop(self) -> None:
        """Quick shutdown of the arbiter (SIGINT), then SIGKILL to what is left of its group."""
        # The server runs in its own process group (start_new_session): the
        # gunicorn arbiter, its workers and background-callback jobs, nothing else.
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)


def start_server(cmd: list[str], url: str, *, cwd: Path, env: dict, log_path: Path) -> Server:
    """Start ``cmd`` (a server answering at ``url``) in its own process group.

    Its output goes to ``log_path``; :meth:`Server.stop` ends the whole group.
    """
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Server(url=url, proc=proc, log_path=log_path)


def wait_until_healthy(server: Server) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {server.proc.returncode}")
        try:
            if b'"ok"' in server.get("/healthz", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"/healthz did not answer within {SERVER_START_SECONDS} s")


@pytest.fixture(scope="session")
def server(browser_available, tmp_path_factory) -> Iterator[Server]:
    """The dashboard under gunicorn (2 workers, APP_ENV=production) on 127.0.0.1."""
    tmp = tmp_path_factory.mktemp("dashboard-server")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in APP_ENV_VARS}
    env.update(
        APP_ENV="production",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECRET_KEY=secrets.token_hex(32),
        # Plain http on 127.0.0.1: a Secure cookie would not be sent back.
        SESSION_COOKIE_SECURE="0",
        CACHE_DIR=str(tmp / "cache"),
        BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="2",
        THREADS="1",
        LOG_LEVEL="info",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    cmd = [*web_command(), *_control_socket_args(tmp)]  # the image's own gunicorn command
    srv = start_server(
        cmd, f"http://127.0.0.1:{port}", cwd=REPO, env=env, log_path=tmp / "server.log"
    )
    try:
        wait_until_healthy(srv)
        # Warm both workers: the first layout builds the demo (a few seconds).
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: srv.get("/_dash-layout", timeout=120), range(4)))
    except Exception as exc:
        srv.stop()
        pytest.fail(
            f"the dashboard server did not start: {exc}\n--- server log ---\n{srv.log_since()}",
            pytrace=False,
        )
    yield srv
    srv.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the server's log lines written during a failing test to its report."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}_failed", report.failed)
    if not report.failed:
        return
    srv = item.funcargs.get("server") if hasattr(item, "funcargs") else None
    offset = item.stash.get(LOG_OFFSET, None)
    if srv is not None and offset is not None:
        report.sections.append(("server log (during this test)", srv.log_since(offset)))


LOG_OFFSET = pytest.StashKey[int]()


# ------------------------------------------------------------------ browser
# Module scope: Playwright's sync API runs an event loop in this thread while it is
# started, so a session-wide instance would break any other module (e.g. the hosting
# CSP check) that starts its own sync_playwright() later in the same run.
@pytest.fixture(scope="module")
def playwright_instance(browser_available):
    pw = sync_playwright().start()
    yield pw
    pw.stop()


@pytest.fixture(scope="module")
def browser(playwright_instance):
    chromium = playwright_instance.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
    )
    expect.set_options(timeout=TIMEOUT_MS)
    yield chromium
    chromium.close()


@pytest.fixture
def context(browser, server, request):
    request.node.stash[LOG_OFFSET] = server.log_size()
    ctx = browser.new_context(viewport=VIEWPORT, accept_downloads=True, base_url=server.url)
    ctx.set_default_timeout(TIMEOUT_MS)
    yield ctx
    ctx.close()


@pytest.fixture
def watch() -> PageWatch:
    return PageWatch()


@pytest.fixture
def page(context, watch, server, request):
    """A new page of a new context; at teardown: clean console, no server traceback."""
    pg = context.new_page()
    watch.attach(pg)
    yield pg
    failed = getattr(request.node, "rep_call_failed", False)
    if not failed:
        watch.assert_clean()
        log = server.log_since(request.node.stash[LOG_OFFSET])
        assert "Traceback" not in log, "the server logged a traceback:\n" + log


@pytest.fixture
def screenshot(page):
    """``screenshot(name, target=page)``: a full-page PNG in ``artifacts/screens/<name>.png``."""
    SCREENS.mkdir(parents=True, exist_ok=True)

    def take(name: str, target=None) -> Path:
        path = SCREENS / f"{name}.png"
        (target or page).screenshot(path=str(path), full_page=True, animations="disabled")
        return path

    return take


@pytest.fixture
def ui(page, watch) -> Dashboard:
    return Dashboard(page, watch)
