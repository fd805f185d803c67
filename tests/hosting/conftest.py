"""Fixtures of the hosting tests: a browser-like Dash HTTP client, prediction files, gunicorn.

The client builds callback requests the way ``dash-renderer`` does, from the
app's own ``/_dash-dependencies`` (so the payloads follow the callbacks as
declared) and the component values of ``/_dash-layout``; each instance has
its own cookie jar (one browser tab). It talks either to a Flask test client
or, through ``requests``, to a live server.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urljoin

import numpy as np
import pandas as pd
import pytest

from ..external_tools import require_tool

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SECRET = "hosting-test-secret-key-0123456789abcdef"
CONFIG_PATTERN = re.compile(
    r'<script id="_dash-config" type="application/json">(.*?)</script>', re.S
)
UPDATE = "/_dash-update-component"
#: An output of the view callback (the one that finds it among the page's callbacks).
VIEW = "metrics-grid.rowData"
#: Not an output: the diagrams the view's slots show, in screen order
#: (:func:`shown_graphs`), added to every view answer of :meth:`DashTab.call`.
GRAPHS = "reliability-grid.children"
GRAPH_SLOT = "graph-slot-"
MODELS = "models-store.data"
DOWNLOAD = "download.data"
CALIBRATED = "download-url.data"
#: Keyword of :meth:`DashTab.view` -> the component property it sets.
SETTINGS = {
    "maps": "maps.value",
    "heldout": "heldout.value",
    "folds": "folds.value",
    "fraction": "test-fraction.value",
    "notion": "notion.value",
    "class_value": "class-select.value",
    "scheme": "scheme.value",
    "n_bins": "n-bins.value",
    "band": "band.value",
    "level": "band-level.value",
}


def shown_graphs(values: dict) -> list:
    """The diagrams of the view's slots (app.view_update) in screen order (CSS ``order``)."""
    shown = []
    for key, children in values.items():
        if key.startswith(GRAPH_SLOT) and key.endswith(".children") and children:
            style = values.get(key.replace(".children", ".style")) or {}
            shown.append((style.get("order", 0), children))
    return [graph for _, children in sorted(shown, key=lambda s: s[0]) for graph in children]


def _collect(node, out: dict) -> None:
    if isinstance(node, list):
        for item in node:
            _collect(item, out)
        return
    if not isinstance(node, dict):
        return
    props = node.get("props")
    if isinstance(props, dict):
        cid = props.get("id")
        if isinstance(cid, str):
            for key, value in props.items():
                slot = cid.startswith(GRAPH_SLOT)  # a diagram slot's children: its diagram
                if key != "children" or slot or not isinstance(value, (dict, list)):
                    out[f"{cid}.{key}"] = value
        for value in props.values():
            _collect(value, out)


class DashTab:
    """One browser tab: a cookie jar, the page's component values, callback requests.

    Parameters
    ----------
    base_url : str, optional
        A live server (``requests``); else ``flask_client`` is used.
    flask_client : flask.testing.FlaskClient, optional
    """

    def __init__(self, base_url: str | None = None, flask_client=None, timeout: float = 60):
        import requests

        self.base_url = base_url
        self.flask = flask_client
        self.http = requests.Session() if base_url else None
        if self.http is not None:  # a new connection per request: spread over the workers
            self.http.headers["Connection"] = "close"
        self.timeout = timeout
        self.values: dict[str, object] = {}
        self.deps: list[dict] = []
        self.end_id = None
        #: ``X-Request-ID`` of every answer, in order.
        self.request_ids: list[str] = []

    # ------------------------------------------------------------ transport
    def request(self, method: str, path: str, **kwargs):
        """``(status, headers, body bytes)`` of one request with this tab's cookies.

        A relative ``path`` (the page's export links are relative to it) is
        resolved against the page at ``/``, as a browser does.
        """
        path = urljoin("/", path)
        if self.http is not None:
            if "files" in kwargs:
                kwargs["files"] = [("file", (n, c)) for n, c in kwargs["files"]]
            r = self.http.request(method, self.base_url + path, timeout=self.timeout, **kwargs)
            self.request_ids.append(r.headers.get("X-Request-ID"))
            return r.status_code, r.headers, r.content
        if "files" in kwargs:
            files = kwargs.pop("files")
            kwargs["data"] = {"file": [(io.BytesIO(c), n) for n, c in files]}
            kwargs["content_type"] = "multipart/form-data"
        r = self.flask.open(path, method=method, **kwargs)
        self.request_ids.append(r.headers.get("X-Request-ID"))
        return r.status_code, r.headers, r.get_data()

    def get(self, path: str):
        return self.request("GET", path)

    def cookie(self, name: str = "calibration_session") -> str | None:
        if self.http is not None:
            values = [c.value for c in self.http.cookies if c.name == name]
            return values[-1] if values else None
        c = self.flask.get_cookie(name)
        return None if c is None else c.value

    def set_cookie(self, value: str, name: str = "calibration_session") -> None:
        if self.http is not None:
            self.http.cookies.clear()
            host = self.base_url.split("//", 1)[1].rsplit(":", 1)[0]
            self.http.cookies.set(name, value, domain=host, path="/")
        else:
            self.flask.delete_cookie(name)
            self.flask.set_cookie(name, value)

    # ------------------------------------------------------------------ page
    def load(self) -> DashTab:
        """GET the page, its layout and its callbacks (like a browser opening the page)."""
        status, _, body = self.get("/")
        assert status == 200, body[:300]
        match = CONFIG_PATTERN.search(body.decode("utf-8", "replace"))
        self.end_id = json.loads(match.group(1)).get("end_id") if match else None
        status, _, body = self.get("/_dash-layout")
        assert status == 200
        self.values = {}
        _collect(json.loads(body), self.values)
        status, _, body = self.get("/_dash-dependencies")
        assert status == 200
        self.deps = json.loads(body)
        return self

    def upload(self, name: str, content: bytes):
        """POST one file to ``/api/upload``: ``(status, JSON answer)``."""
        status, _, body = self.request("POST", "/api/upload", files=[(name, content)])
        return status, json.loads(body)

    # ------------------------------------------------------------- callbacks
    def dependency(self, writes: str) -> dict:
        for dep in self.deps:
            parts = dep["output"].strip(".").split("...")
            if writes in parts:
                return dep
        raise KeyError(writes)

    def payload(self, writes: str, changed, overrides: dict) -> dict:
        dep = self.dependency(writes)
        output = dep["output"]
        multi = output.startswith("..")
        outs = []
        for part in output.strip(".").split("..."):
            cid, _, prop = part.rpartition(".")
            outs.append({"id": cid, "property": prop.split("@")[0]})
        values = {**self.values, **overrides}

        def fill(items):
            return [{**d, "value": values.get(f"{d['id']}.{d['property']}")} for d in items or []]

        return {
            "output": output,
            "outputs": outs if multi else outs[0],
            "inputs": fill(dep.get("inputs")),
            "changedPropIds": list(changed),
            "state": fill(dep.get("state")),
        }

    def call_raw(self, writes: str, changed=(), values: dict | None = None):
        """POST the callback that writes ``writes`` (``"id.prop"``): ``(status, headers, body)``.

        Inputs and states are the page's values updated with ``values``
        (``{"id.prop": value}``); ``changed`` defaults to the first key of ``values``.
        """
        values = dict(values or {})
        body = json.dumps(self.payload(writes, changed or list(values)[:1], values))
        path = UPDATE + (f"?endId={self.end_id}" if self.end_id else "")
        return self.request("POST", path, data=body, headers={"Content-Type": "application/json"})

    def call(self, writes: str, changed=(), values: dict | None = None) -> dict:
        """Like :meth:`call_raw`; returns ``{"id.prop": value}`` and keeps the values."""
        status, _, body = self.call_raw(writes, changed, values)
        assert status in (200, 204), (status, body[:500])
        if status == 204:
            return {}
        out = {}
        for cid, props in (json.loads(body).get("response") or {}).items():
            for prop, value in props.items():
                out[f"{cid}.{prop}"] = value
        self.values.update(out)
        if writes == VIEW:  # what the page shows, the diagrams it kept included
            out[GRAPHS] = shown_graphs(self.values)
        return out

    def view(self, handles, **settings) -> dict:
        """The view callback for these model handles and settings (keys of :data:`SETTINGS`)."""
        values = {"model-select.value": list(handles)}
        values.update({SETTINGS[k]: v for k, v in settings.items()})
        return self.call(VIEW, ["model-select.value"], values)


@pytest.fixture(scope="session")
def dash_tab():
    """The :class:`DashTab` class."""
    return DashTab


def predictions_csv(
    n: int = 400, k: int = 3, seed: int = 0, class_names=None, model=None, label="label"
) -> bytes:
    """A valid predictions CSV: ``p_<class>`` columns and a label column (and a model column)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1).clip(0, k - 1)
    names = list(class_names or [f"c{j}" for j in range(k)])
    frame = pd.DataFrame({f"p_{c}": p[:, j] for j, c in enumerate(names)})
    frame[label] = np.asarray(names, dtype=object)[y]
    if model is not None:
        frame.insert(0, "model", model)
    return frame.to_csv(index=False).encode()


@pytest.fixture(scope="session")
def make_csv():
    """:func:`predictions_csv`."""
    return predictions_csv


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prewarm_demo(cache_dir: Path) -> None:
    """Put the built-in demo into the disk store, so workers do not each compute it."""
    from app.store.data_store import DataStore

    store = DataStore(Path(cache_dir) / "store")
    store.demo_models()
    store.close()


class Gunicorn:
    """``gunicorn app.wsgi:server`` on 127.0.0.1 in a subprocess (its own process group).

    Started with ``-c gunicorn_ready_conf.py`` (next to this file): each worker
    writes ``ready-<pid>`` into :attr:`ready_dir` once it has loaded the app,
    and :meth:`wait_ready` waits for every worker, not only the first.

    Parameters
    ----------
    cache_dir : Path
        ``CACHE_DIR`` of the server (also holds its access and error logs).
    workers, threads : int
        Gunicorn's worker processes and threads per worker.
    env : dict, optional
        Extra environment variables of the server.
    log : Path, optional
        Where gunicorn's output goes (default ``cache_dir / "gunicorn.log"``).
    wsgi : str
        The WSGI application, ``module:variable``. Test-only entry points next
        to this file (e.g. ``"blocking_wsgi:server"``) are importable: this
        folder is on the server's ``PYTHONPATH`` after the repository.
    """

    def __init__(
        self,
        cache_dir: Path,
        workers: int = 4,
        threads: int = 1,
        env=None,
        log=None,
        wsgi: str = "app.wsgi:server",
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.access_log = Path(cache_dir) / "access.log"
        self.log_path = log or Path(cache_dir) / "gunicorn.log"
        self.ready_dir = Path(cache_dir) / "gunicorn-ready"
        self.ready_dir.mkdir(parents=True, exist_ok=True)
        environ = {
            **os.environ,
            "APP_ENV": "production",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECRET_KEY": SECRET,
            "SESSION_COOKIE_SECURE": "0",
            "CACHE_DIR": str(cache_dir),
            "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE)]),
            "GUNICORN_READY_DIR": str(self.ready_dir),
            **(env or {}),
        }
        args = [
            sys.executable,
            "-m",
            "gunicorn",
            "--config",
            str(HERE / "gunicorn_ready_conf.py"),
            "--no-control-socket",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--worker-class",
            # As app/gunicorn_conf.py: gthread for several threads (with REDIS_URL;
            # without it jobs are forked from the worker: one thread, see docs/hosting.md).
            "gthread" if threads > 1 else "sync",
            "--timeout",
            "120",
            "--graceful-timeout",
            "5",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--access-logfile",
            str(self.access_log),
            # worker pid, request id (response header), request line, status
            "--access-logformat",
            "%(p)s %({x-request-id}o)s %(s)s %(r)s",
            wsgi,
        ]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            args,
            cwd=REPO,
            env=environ,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 150) -> None:
        """Wait until every worker has loaded the app and ``/healthz`` answers.

        One answer only says that one worker serves; the others may still be
        loading the app, and a test would then see all its requests served by
        that one. So the ``ready-<pid>`` markers of all :attr:`workers` live
        workers are awaited too. The timeout is only a safety deadline.
        """
        import requests

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {self.log_path.read_text()[-3000:]}")
            if len(self.ready_workers()) == self.workers:
                try:
                    if requests.get(self.url + "/healthz", timeout=5).status_code == 200:
                        return
                except requests.RequestException:
                    pass
            time.sleep(0.3)
        raise RuntimeError(
            f"gunicorn's {self.workers} workers were not all ready in {timeout} s "
            f"(ready: {sorted(self.ready_workers())}): {self.log_path.read_text()[-3000:]}"
        )

    def worker_pids(self) -> list[int]:
        import psutil

        return [c.pid for c in psutil.Process(self.proc.pid).children()]

    def ready_workers(self) -> set[int]:
        """The live workers that have loaded the app (their ``ready-<pid>`` marker)."""
        ready = {int(p.name.removeprefix("ready-")) for p in self.ready_dir.glob("ready-*")}
        return ready & set(self.worker_pids())

    def pid_of_request(self, request_id: str) -> int | None:
        """The worker pid that answered the request with this ``X-Request-ID``."""
        for line in self.access_log.read_text().splitlines():
            pid, rid, *_ = line.split(" ")
            if rid == request_id:
                return int(pid.strip("<>"))
        return None

    def stop(self) -> None:
        # Quick shutdown: the master stops its workers.
        stop_process_group(self.proc, signal.SIGINT, 20)
        self._log.close()


def stop_process_group(proc: subprocess.Popen, signum: int, grace: float) -> None:
    """Send ``signum`` to ``proc``; SIGKILL its process group if still alive after ``grace`` s."""
    if proc.poll() is not None:
        return
    proc.send_signal(signum)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


@pytest.fixture(scope="session")
def gunicorn_server():
    """A function ``(cache_dir, **kwargs) -> Gunicorn`` (started and ready; stop it yourself).

    The keyword arguments are those of :class:`Gunicorn` (``workers``, ``env``, ``wsgi``, ...).
    """

    def start(cache_dir: Path, **kwargs) -> Gunicorn:
        prewarm_demo(cache_dir)
        server = Gunicorn(cache_dir, **kwargs)
        try:
            server.wait_ready()
        except Exception:
            server.stop()
            raise
        return server

    return start


@pytest.fixture
def hosting_config(tmp_path):
    """``(**overrides) -> AppConfig`` in a fresh cache directory, production-like."""
    from app.config import AppConfig

    def make(**overrides):
        base = {
            "cache_dir": tmp_path / "cache",
            "secret_key": SECRET,
            "session_ttl_seconds": 3600,
        }
        base.update(overrides)
        return AppConfig(**base)

    return make


#: The reverse proxy's configuration, shared with compose.yaml (its "proxy" service).
NGINX_TEMPLATE = REPO / "deploy" / "nginx.conf.template"
#: The settings compose.yaml gives the template, but for the addresses.
NGINX_DEFAULTS = {
    "CLIENT_MAX_BODY_SIZE": "201m",
    "CLIENT_HEADER_TIMEOUT": "10s",
    "CLIENT_BODY_TIMEOUT": "30s",
}


def render_nginx_template(settings: dict[str, str]) -> str:
    """``deploy/nginx.conf.template`` with its ``${NAME}`` settings filled in.

    As the nginx image's entrypoint (envsubst) does, nginx's own ``$name``
    variables stay as they are; every ``${NAME}`` of the template must be given.
    """
    from string import Template

    text = NGINX_TEMPLATE.read_text(encoding="utf-8")
    wanted = set(re.findall(r"\$\{([A-Z_]+)\}", text))
    missing = wanted - set(settings)
    if missing:
        raise KeyError(f"the nginx template needs {sorted(missing)}")
    return Template(text).safe_substitute(settings)


class Nginx:
    """Debian's ``/usr/sbin/nginx`` in front of ``upstream``, from the deploy template.

    Runs in the foreground in its own prefix (``directory``: configuration, pid,
    logs and temporary files), no system paths written; the settings are
    :data:`NGINX_DEFAULTS` updated with ``overrides``.
    """

    BINARY = "/usr/sbin/nginx"

    def __init__(self, directory: Path, upstream: str, **overrides: str):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        settings = {
            **NGINX_DEFAULTS,
            "DASHBOARD_UPSTREAM": upstream,
            "PROXY_LISTEN": f"127.0.0.1:{self.port}",
            "SERVER_NAME": "127.0.0.1 localhost",
            **overrides,
        }
        (self.dir / "dashboard.conf").write_text(render_nginx_template(settings))
        self.error_log = self.dir / "error.log"
        self.access_log = self.dir / "access.log"
        conf = self.dir / "nginx.conf"
        conf.write_text(self._main_conf())
        self._log = open(self.dir / "nginx.out", "wb")
        self.proc = subprocess.Popen(
            [self.BINARY, "-p", f"{self.dir}/", "-c", str(conf), "-e", str(self.error_log)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def _main_conf(self) -> str:
        """The main file around the template (what the nginx image's nginx.conf is)."""
        temp = {n: self.dir / n for n in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
        for path in temp.values():
            path.mkdir(exist_ok=True)
        # As root (CI containers), nginx would run its worker as "nobody", which cannot
        # write into this test's private directory: keep the current user.
        user = "user root;\n" if os.geteuid() == 0 else ""
        return (
            f"{user}daemon off;\nworker_processes 1;\npid {self.dir / 'nginx.pid'};\n"
            f"error_log {self.error_log} info;\n"
            "events { worker_connections 1024; }\n"
            "http {\n"
            f"  access_log {self.access_log};\n"
            f"  client_body_temp_path {temp['body']};\n"
            f"  proxy_temp_path {temp['proxy']};\n"
            f"  fastcgi_temp_path {temp['fastcgi']};\n"
            f"  uwsgi_temp_path {temp['uwsgi']};\n"
            f"  scgi_temp_path {temp['scgi']};\n"
            f"  include {self.dir / 'dashboard.conf'};\n"
            "}\n"
        )

    def wait_ready(self, timeout: float = 30) -> None:
        """Wait until nginx accepts connections (the timeout is a safety deadline)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"nginx did not listen in {timeout} s: {self.log()}")

    def log(self) -> str:
        out = (self.dir / "nginx.out").read_text(errors="replace")
        errors = self.error_log.read_text(errors="replace") if self.error_log.exists() else ""
        return (out + errors)[-3000:]

    def stop(self) -> None:
        stop_process_group(self.proc, signal.SIGQUIT, 20)  # graceful: finish what is running
        self._log.close()


@pytest.fixture(scope="session")
def nginx_proxy():
    """A function ``(directory, upstream_url, **settings) -> Nginx`` (started; stop it yourself).

    Skipped without Debian's nginx, except under CI, whose ``.ci/run`` installs it.
    """
    require_tool("nginx")

    def start(directory: Path, upstream_url: str, **settings: str) -> Nginx:
        proxy = Nginx(directory, upstream_url.split("//", 1)[-1], **settings)
        try:
            proxy.wait_ready()
        except Exception:
            proxy.stop()
            raise
        return proxy

    return start


class RedisServer:
    """``redis-server`` (Debian's) on a free loopback port, memory only, in its own directory."""

    def __init__(self, directory: Path):
        from app.supervisor import redis_command

        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._log = open(directory / "redis.log", "wb")
        self.proc = subprocess.Popen(
            redis_command(self.port, directory), stdout=self._log, stderr=subprocess.STDOUT
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self._log.close()


@pytest.fixture(scope="session")
def redis_server() -> Callable[[Path], RedisServer]:
    """A function ``directory -> RedisServer`` (started; stop it yourself).

    Skipped without Debian's redis-server (probed once, tests/external_tools.py),
    except under CI, whose ``.ci/run`` installs it. Puts a test in the ``hosting`` tier.
    """
    require_tool("redis-server")
    return RedisServer


class CeleryWorker:
    """The job worker (:func:`app.supervisor.worker_command`) on ``REDIS_URL`` and ``CACHE_DIR``."""

    def __init__(self, cache_dir: Path, redis_url: str, job_workers: int = 2, env=None, app=None):
        from app.supervisor import worker_command

        command = worker_command()
        if app is not None:  # a module of this folder wrapping app.worker (slow_jobs)
            command[command.index("app.worker:celery_app")] = app
        self.log_path = Path(cache_dir) / "celery.log"
        environ = {
            **os.environ,
            "APP_ENV": "production",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECRET_KEY": SECRET,
            "CACHE_DIR": str(cache_dir),
            "PYTHONPATH": os.pathsep.join([str(REPO), str(Path(__file__).parent)]),
            "REDIS_URL": redis_url,
            "JOB_WORKERS": str(job_workers),
            **(env or {}),
        }
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            command,
            cwd=REPO,
            env=environ,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"celery worker exited: {self.log()[-3000:]}")
            if " ready." in self.log():
                return
            time.sleep(0.3)
        raise RuntimeError(f"celery worker not ready in {timeout} s: {self.log()[-3000:]}")

    def pool_pids(self) -> list[int]:
        import psutil

        return [c.pid for c in psutil.Process(self.proc.pid).children()]

    def stop(self) -> None:
        stop_process_group(self.proc, signal.SIGTERM, 30)
        self._log.close()


# ----------------------------------------------------- background callbacks
def background_dep(tab, output: str) -> dict:
    """The background callback writing ``output`` (its output carries an ``@`` hash)."""
    return next(d for d in tab.deps if d["output"].startswith(output + "@"))


def payload(tab, dep: dict, changed: str) -> str:
    def fill(items):
        return [{**d, "value": tab.values.get(f"{d['id']}.{d['property']}")} for d in items or []]

    cid, _, prop = dep["output"].split("@")[0].rpartition(".")
    return json.dumps(
        {
            "output": dep["output"],
            "outputs": {"id": cid, "property": prop},
            "inputs": fill(dep["inputs"]),
            "changedPropIds": [changed],
            "state": fill(dep.get("state")),
        }
    )


def post(tab, query: dict, body: str):
    args = {"endId": tab.end_id, **query}
    path = UPDATE + "?" + "&".join(f"{k}={quote(str(v), safe='~')}" for k, v in args.items())
    return tab.request("POST", path, data=body, headers={"Content-Type": "application/json"})


class Fit:
    """One tab's background fit: started with :meth:`start`, then polled or cancelled."""

    def __init__(self, tab):
        self.tab = tab
        self.dep = background_dep(tab, "fit-state.data")
        self.handles: dict = {}

    def start(self, handle: str, maps=("temperature", "isotonic")) -> Fit:
        out = self.tab.call(
            "fit-request.data",
            ["maps.value"],
            {"model-select.value": [handle], "maps.value": list(maps)},
        )
        assert "fit-request.data" in out, out
        status, _, body = post(self.tab, {}, payload(self.tab, self.dep, "fit-request.data"))
        assert status == 200, body[:500]
        self.handles = json.loads(body)
        assert self.handles.get("cacheKey") and self.handles.get("job"), self.handles
        return self

    @property
    def task_id(self) -> str:
        """The Celery task id inside the signed job handle (``<id>~<signature>``)."""
        return self.handles["job"].split("~")[0]

    def poll(self) -> tuple[int, dict]:
        query = {"cacheKey": self.handles["cacheKey"], "job": self.handles["job"]}
        status, _, body = post(self.tab, query, payload(self.tab, self.dep, "fit-request.data"))
        assert status in (200, 204), body[:500]
        return status, (json.loads(body) if status == 200 else {})

    def result(self, timeout: float = 120) -> tuple[int, dict]:
        """Poll every 0.5 s until the job answers (200 with a response, or 204)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, answer = self.poll()
            if status == 204 or "response" in answer:
                return status, answer
            time.sleep(0.5)
        raise TimeoutError("the fit did not finish")

    def cancel(self) -> int:
        dep = next(d for d in self.tab.deps if d["output"] == "fit-cancel.id")
        body = json.dumps(
            {
                "output": dep["output"],
                "outputs": {"id": "fit-cancel", "property": "id"},
                "inputs": [{"id": "fit-cancel", "property": "n_clicks", "value": 1}],
                "changedPropIds": ["fit-cancel.n_clicks"],
                "state": [],
            }
        )
        status, _, _ = post(self.tab, {"cancelJob": self.handles["job"]}, body)
        return status


def uploaded(tab, make_csv, seed: int) -> str:
    """A new model uploaded by ``tab`` (nothing of it fitted yet): its handle."""
    tab.load()
    name = f"jobs-{seed}.csv"
    status, body = tab.upload(name, make_csv(n=300, k=3, seed=seed))
    assert status == 200 and not body["errors"], body
    result = {"nonce": time.time(), "results": [{"file": name, "models": body["models"]}]}
    tab.call("models-store.data", ["upload-result.data"], {"upload-result.data": result})
    return body["models"][0]["handle"]


def fit_state(answer: dict) -> dict:
    return answer["response"]["fit-state"]["data"]
