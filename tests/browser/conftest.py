"""Real-browser fixtures: one gunicorn server and one headless Chromium for the session.

* ``server``: the dashboard served by gunicorn (2 workers, production settings)
  on a free port of 127.0.0.1, with its own ``CACHE_DIR``; its log is attached
  to the report of every failing test and stopped at the end of the session.
* ``browser``: Debian's ``/usr/bin/chromium`` driven by Playwright (never a
  downloaded browser).
* ``page`` / ``watch`` / ``ui``: a fresh browser context per test; ``watch``
  records console messages, page errors, failed requests, HTTP errors and
  dialogs, and every test ends with ``watch.assert_clean()`` (checked again at
  teardown); ``ui`` is a small page object for the dashboard.

Without ``/usr/bin/chromium`` (or Playwright) the tests are skipped, except
when the ``CI`` environment variable is set: CI must run them, so they fail.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

try:
    from playwright.sync_api import expect, sync_playwright

    PLAYWRIGHT_IMPORT_ERROR = None
except ImportError as exc:  # reported by the `browser_available` fixture
    expect = sync_playwright = None
    PLAYWRIGHT_IMPORT_ERROR = str(exc)

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
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
#: Fitting maps in the background can take longer than one UI step.
FIT_TIMEOUT_MS = 120_000
#: Chromium's error for requests aborted by a change of the host's network.
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"
SERVER_START_SECONDS = 120
#: Variables of the app and of gunicorn that the server must not inherit.
APP_ENV_VARS = (
    "APP_ENV",
    "SECRET_KEY",
    "MAX_UPLOAD_MB",
    "CACHE_DIR",
    "CACHE_SIZE_LIMIT_MB",
    "MEMORY_CACHE_MB",
    "SESSION_TTL_SECONDS",
    "MAX_MODELS_PER_SESSION",
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


def pytest_collection_modifyitems(config, items):
    """Every test of this folder carries the ``browser`` marker."""
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_available() -> None:
    """Skip (or, under CI, fail) when Chromium or Playwright is missing."""
    problems = []
    if not CHROMIUM.is_file():
        problems.append(f"{CHROMIUM} is absent (Debian package `chromium`)")
    if PLAYWRIGHT_IMPORT_ERROR is not None:
        problems.append(f"Playwright for Python is not importable ({PLAYWRIGHT_IMPORT_ERROR})")
    if problems:
        reason = "browser tests need Chromium and Playwright: " + "; ".join(problems)
        if os.environ.get("CI"):
            pytest.fail(f"{reason}. CI must run the browser tests: install them.")
        pytest.skip(reason)


# ------------------------------------------------------------------- server
def _free_port() -> int:
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


def _wait_until_healthy(server: Server) -> None:
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
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in APP_ENV_VARS}
    env.update(
        APP_ENV="production",
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
    cmd = [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        "python:app.gunicorn_conf",
        *_control_socket_args(tmp),
        "app.wsgi:server",
    ]
    log_path = tmp / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    srv = Server(url=f"http://127.0.0.1:{port}", proc=proc, log_path=log_path)
    try:
        _wait_until_healthy(srv)
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


@dataclass
class PageWatch:
    """Everything a page reported that a clean dashboard never produces."""

    console: list[tuple[str, str, str]] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    http_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def attach(self, page) -> None:
        page.on("console", self._on_console)
        page.on("pageerror", lambda err: self.page_errors.append(str(err)))
        page.on("requestfailed", self._on_request_failed)
        page.on("response", self._on_response)
        page.on("dialog", self._on_dialog)

    def _on_console(self, msg) -> None:
        loc = msg.location or {}
        where = f"{loc.get('url', '')}:{loc.get('lineNumber', '')}"
        self.console.append((msg.type, msg.text, where))

    def _on_request_failed(self, request) -> None:
        self.failed_requests.append(f"{request.method} {request.url}: {request.failure}")

    def _on_response(self, response) -> None:
        if response.status >= 400:
            self.http_errors.append(f"{response.status} {response.request.method} {response.url}")

    def _on_dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def errors(self) -> list[str]:
        """Console errors and warnings, page errors, failed requests, HTTP errors, dialogs.

        Nothing is filtered: a dashboard page in production mode logs nothing
        at warning level or above.
        """
        out = [
            f"console {kind}: {text} ({where})"
            for kind, text, where in self.console
            if kind in ("error", "warning")
        ]
        out += [f"page error: {e}" for e in self.page_errors]
        out += [f"request failed: {r}" for r in self.failed_requests]
        out += [f"HTTP error: {r}" for r in self.http_errors]
        out += [f"dialog opened: {d}" for d in self.dialogs]
        return out

    def drop_network_changes(self) -> int:
        """Forget what Chromium aborted because the host's network changed; returns how many.

        Chromium aborts requests in flight with ``net::ERR_NETWORK_CHANGED`` when
        the host's network configuration changes (other jobs on a shared CI
        machine can cause that); it says nothing about the dashboard. Only
        :meth:`Dashboard.open` calls this, and then reloads the page.
        """
        before = len(self.console) + len(self.failed_requests)
        self.console = [m for m in self.console if NETWORK_CHANGED not in m[1]]
        self.failed_requests = [r for r in self.failed_requests if NETWORK_CHANGED not in r]
        return before - len(self.console) - len(self.failed_requests)

    def assert_clean(self) -> None:
        problems = self.errors()
        assert not problems, "the page reported problems:\n" + "\n".join(problems)


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


# --------------------------------------------------------------- page object
class Dashboard:
    """The dashboard page: navigation, uploads, controls and the metrics table."""

    def __init__(self, page, watch: PageWatch) -> None:
        self.page = page
        self.watch = watch

    # -- navigation
    def open(self, attempts: int = 3) -> None:
        """Load the page; wait for the first diagrams and the end of the initial fit.

        A load during which the host's network changed is not the dashboard's
        fault: it is reloaded (at most ``attempts`` loads), with a notice.
        """
        for attempt in range(1, attempts + 1):
            try:
                self.page.goto("/")
                self._wait_loaded()
            except AssertionError:
                if attempt == attempts or not self.watch.drop_network_changes():
                    raise
            else:
                if attempt == attempts or not self.watch.drop_network_changes():
                    return
            print(f"page load {attempt}: the network changed ({NETWORK_CHANGED}); reloading")

    def _wait_loaded(self) -> None:
        expect(self.graphs().first.locator(".main-svg").first).to_be_visible()
        # upload.js creates the file input once the page is loaded
        expect(self.page.locator("#upload-input")).to_be_attached()
        # On a fresh store the planner starts a background fit of the default maps
        # (none once they are stored); interacting only after it keeps every test
        # on the same footing.
        self.wait_fit_idle()
        self.wait_callbacks()

    def wait_callbacks(self) -> None:
        """No Dash callback output pending (the renderer marks them data-dash-is-loading)."""
        expect(self.page.locator("[data-dash-is-loading=true]")).to_have_count(0)

    def graphs(self):
        return self.page.locator("#reliability-grid .reliability-graph")

    def graph_of(self, model_name: str):
        """The diagram of a model (its figure title starts with the model name)."""
        return self.graphs().filter(has=self.page.locator(".gtitle", has_text=model_name))

    # -- fitting
    def wait_fit_idle(self) -> None:
        """No fit running: the Fit button is enabled, the progress bar hidden and the
        outcome shown (a fresh page has none until its planner or fit has answered)."""
        expect(self.page.locator("#fit-start")).to_be_enabled(timeout=FIT_TIMEOUT_MS)
        expect(self.page.locator("#fit-progress")).to_have_class(
            re.compile(r"\bidle\b"), timeout=FIT_TIMEOUT_MS
        )
        summary = self.page.locator("#fit-summary")
        expect(summary).to_have_text(re.compile(r"\S"), timeout=FIT_TIMEOUT_MS)
        expect(summary).not_to_have_class(re.compile(r"\bhidden\b"), timeout=FIT_TIMEOUT_MS)

    # -- upload
    def upload(self, *paths: Path) -> None:
        """Pick files through the hidden file input of ``assets/upload.js``."""
        self.page.set_input_files("#upload-input", [str(p) for p in paths])

    def upload_lines(self, kind: str):
        return self.page.locator(f"#upload-message .upload-line.{kind}")

    # -- controls
    def model_checkbox(self, label: str):
        return self.page.locator("#model-select").get_by_label(label, exact=True)

    def map_checkbox(self, label: str):
        return self.page.locator("#maps").get_by_label(label, exact=True)

    def set_bins(self, n: int) -> None:
        """Type the bin count in the slider's number box and press Enter."""
        box = self.page.locator("#n-bins input[type=number]")
        box.fill(str(n))
        box.press("Enter")

    def set_scheme(self, scheme: str) -> None:
        self.page.locator(f"#scheme input[value={scheme}]").check()

    def set_notion(self, notion: str) -> None:
        self.page.locator(f"#notion input[value={notion}]").check()

    # -- table
    def row(self, model: str, calibrator: str):
        """The ag-grid row whose model and calibrator cells read exactly so."""
        rows = self.page.locator("#metrics-grid .ag-center-cols-container [role=row]")
        for column, text in (("model", model), ("map", calibrator)):
            exact = re.compile(f"^{re.escape(text)}$")
            rows = rows.filter(has=self.page.locator(f'[col-id="{column}"]', has_text=exact))
        return rows

    def cell(self, model: str, calibrator: str, column: str):
        return self.row(model, calibrator).locator(f'[col-id="{column}"]')

    def table_rows(self) -> list[dict[str, str]]:
        """The rendered table as text: one dict (col-id -> cell text) per row, in order."""
        return self.page.locator("#metrics-grid .ag-center-cols-container").evaluate(
            """(container) => Array.from(container.querySelectorAll('[role=row]'))
                 .sort((a, b) => +a.getAttribute('row-index') - +b.getAttribute('row-index'))
                 .map(row => Object.fromEntries(Array.from(row.querySelectorAll('[col-id]'))
                   .map(cell => [cell.getAttribute('col-id'), cell.textContent.trim()])))"""
        )


@pytest.fixture
def ui(page, watch) -> Dashboard:
    return Dashboard(page, watch)
