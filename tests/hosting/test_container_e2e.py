"""The real image, built and run with podman (opt-in: ``CONTAINER_E2E=1``).

``scripts/container_e2e.sh`` installs podman, runc and mmdebstrap from Debian
packages when they are missing, bootstraps the Dockerfile's base image
locally (Debian bookworm + python3, no registry needed), tags it with the
name the Dockerfile's ``ARG PYTHON_IMAGE`` default asks for and builds the
Dockerfile unchanged (pip inside the build reaches PyPI). The tests then run
the image as a team would (``-p``, ``-e SECRET_KEY``), wait for
``/healthz``, load the page, call a Dash callback over HTTP, run a background
fit (in the container's own Celery worker and Redis), check that the server's
processes run as a non-root user and that the image refuses to start without
``SECRET_KEY`` (one line, exit status 2). A throwaway image built with the
repository as its context holds exactly the files of the build-context matcher
of tests/hosting/build_context.py. Every failure names the command that failed
and its output.

Takes minutes the first time (bootstrap and pip install); later runs reuse
the base image and podman's build cache.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .build_context import context_files

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "container_e2e.sh"
IMAGE = os.environ.get("IMAGE", "calibration-dashboard:e2e")
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"]

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("CONTAINER_E2E") != "1",
        reason="opt-in: set CONTAINER_E2E=1 to build and run the image with podman "
        "(installs podman, runc and mmdebstrap from Debian packages; takes minutes)",
    ),
    # Builds and runs images: never in the fast loop, even when opted in.
    pytest.mark.hosting,
    pytest.mark.slow,
]


def _dash_client():
    """``benchmarks/dash_client.py`` (a browser-like HTTP client), loaded by path."""
    path = REPO / "benchmarks" / "dash_client.py"
    spec = importlib.util.spec_from_file_location("calibration_dash_client", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def run(cmd: list[str], *, timeout: float = 300, check: bool = True, **kw):
    """Run a command; on failure, fail the test with the command and its output."""
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`{' '.join(cmd)}` did not finish within {timeout} s:\n{exc.output or ''}")
    if check and result.returncode != 0:
        pytest.fail(
            f"`{' '.join(cmd)}` failed with exit status {result.returncode}:\n"
            f"{_tail(result.stdout, 15)}\n{_tail(result.stderr)}"
        )
    return result


def ulimits() -> list[str]:
    """``--ulimit`` options within this machine's own limits.

    For root, podman asks runc for ``nofile=1048576`` (and its own ``nproc``);
    without CAP_SYS_RESOURCE (sandboxes, some CI runners) runc then fails with
    "error setting rlimit type 7: operation not permitted". The host's current
    limits always work.
    """
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[0], 32768)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> str:
    """The image, built by ``scripts/container_e2e.sh`` (install, base, build)."""
    log = tmp_path_factory.mktemp("container-e2e") / "build.log"
    with log.open("w") as fh:
        proc = subprocess.run(
            ["bash", str(SCRIPT), "all"],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**os.environ, "IMAGE": IMAGE},
            timeout=3600,
        )
    text = log.read_text(errors="replace")
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/container_e2e.sh all failed (exit {proc.returncode}); "
            f"full log: {log}\n{_tail(text, 60)}"
        )
    assert shutil.which("podman"), "the script succeeded but podman is not on PATH"
    return IMAGE


def _logs(name: str) -> str:
    result = run([*PODMAN, "logs", name], check=False, timeout=60)
    return _tail(result.stdout + result.stderr, 40)


def _wait_healthy(name: str, port: int, timeout: float = 180.0) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline:
        state = run(
            [*PODMAN, "inspect", "--format", "{{.State.Status}}", name], check=False, timeout=60
        ).stdout.strip()
        if state and state != "running":
            pytest.fail(f"the container stopped ({state}) before /healthz answered:\n{_logs(name)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    pytest.fail(f"/healthz did not answer within {timeout} s on port {port}:\n{_logs(name)}")


@pytest.fixture
def container(image):
    """A running container of the image, published on a free 127.0.0.1 port."""
    port = free_port()
    name = f"calibration-e2e-{secrets.token_hex(4)}"
    try:
        run(
            [
                *PODMAN,
                "run",
                "-d",
                "--name",
                name,
                *ulimits(),
                "-p",
                f"127.0.0.1:{port}:8050",
                "-e",
                f"SECRET_KEY={secrets.token_hex(32)}",
                "-e",
                "WEB_CONCURRENCY=2",
                "-e",
                "ALLOWED_HOSTS=127.0.0.1,localhost",  # required in production (docs/hosting.md)
                image,
            ],
            timeout=120,
        )
        _wait_healthy(name, port)
        yield name, port
    finally:
        run([*PODMAN, "stop", "--time", "20", name], check=False, timeout=90)
        run([*PODMAN, "rm", "--force", name], check=False, timeout=90)


def test_image_serves_the_dashboard_and_a_callback(container):
    _, port = container
    client = _dash_client()
    session = client.DashSession(f"http://127.0.0.1:{port}", timeout=120)
    session.load_page()
    assert session.config.get("end_id"), "the page has no signed end_id in _dash-config"
    cookie = session.cookies.get("calibration_session")
    assert cookie, f"no session cookie issued; cookies: {sorted(session.cookies)}"
    # The demo is selected on the page; change the bin count like the slider does.
    assert session.values.get("model-select.value"), "no model selected on the demo page"
    session.values["n-bins.value"] = 23
    out, _seconds = session.call("metrics-grid.rowData", ["n-bins.value"])
    rows = out.get("metrics-grid.rowData")
    assert rows, f"the view callback returned no metrics rows: {sorted(out)}"
    assert all(isinstance(r.get("ece"), float) for r in rows if r.get("map") == "uncalibrated")
    caption = " ".join(client.text_of(out.get("metrics-caption.children")))
    assert "23 equal-width bins" in caption, caption
    assert not client.text_of(out.get("message.children"))


def test_image_runs_a_background_fit_in_its_job_worker(container):
    """The image run alone: its own Redis and Celery worker run the fit, gunicorn polls it."""
    name, port = container
    client = _dash_client()
    session = client.DashSession(f"http://127.0.0.1:{port}", timeout=120)
    session.load_page()
    session.values["maps.value"] = ["platt", "histogram"]  # not fitted at build time
    out, _seconds, polls = session.fit(["maps.value"], timeout=240)
    state = out.get("fit-state.data") or {}
    assert state.get("error") is None, state
    assert "Fitted" in state.get("summary", ""), state
    assert polls >= 1, out
    logs = run([*PODMAN, "logs", name], check=False, timeout=60)
    assert " succeeded in " in logs.stdout + logs.stderr, _logs(name)  # a Celery task


def test_server_runs_as_a_non_root_user(container):
    name, _ = container
    uid = run([*PODMAN, "exec", name, "id", "-u"], timeout=60).stdout.strip()
    assert uid.isdigit() and int(uid) != 0, f"podman exec id -u gave {uid!r}"
    # The serving processes themselves are not root either: PID 1 (app.supervisor), the
    # gunicorn master and workers, the Celery job worker and the container's redis-server.
    script = (
        "import os\n"
        "for pid in sorted(p for p in os.listdir('/proc') if p.isdigit()):\n"
        "    if pid == str(os.getpid()):\n"
        "        continue\n"
        "    try:\n"
        "        cmd = ' '.join(open(f'/proc/{pid}/cmdline').read().replace(chr(0), ' ').split())\n"
        "        uid = [l.split()[1] for l in open(f'/proc/{pid}/status') if l[:4] == 'Uid:'][0]\n"
        "    except OSError:\n"
        "        continue\n"
        "    print(pid, uid, cmd)\n"
    )
    table = run([*PODMAN, "exec", name, "python", "-c", script], timeout=60).stdout
    processes = [line.split(" ", 2) for line in table.splitlines() if line.strip()]
    by_pid = {pid: (puid, cmd) for pid, puid, cmd in processes}
    assert "app.supervisor" in by_pid["1"][1], table
    for needle in ("gunicorn", "app.worker:celery_app", "redis-server"):
        assert any(needle in cmd for _, cmd in by_pid.values()), (needle, table)
    served_by = {puid for puid, _ in by_pid.values()}
    assert served_by == {uid}, f"processes run as {served_by}, exec as {uid}:\n{table}"
    health = run([*PODMAN, "healthcheck", "run", name], check=False, timeout=60)
    assert health.returncode == 0, f"HEALTHCHECK failed: {health.stdout} {health.stderr}"


def test_image_runs_the_installed_wheel_without_a_source_tree(container):
    """The image installs the project's wheel: the code and the assets come from
    site-packages, and no copy of the repository is left in the runtime stage."""
    name, _ = container
    script = (
        "import os, app, app.factory as f, calibration_core as c\n"
        "print(app.__file__); print(f.ASSETS_DIR); print(c.__version__)\n"
        "print(sorted(os.listdir('.')))"
    )
    out = run([*PODMAN, "exec", name, "python", "-c", script], timeout=120).stdout.splitlines()
    assert "/site-packages/app/" in out[0], out
    assert str(out[1]).endswith("site-packages/app/assets"), out
    assert out[2] != "0+unknown", out
    assert out[3] == "[]", f"the working directory of the image is not empty: {out[3]}"
    for path in ("/src", "/srv/app/app", "/srv/app/pyproject.toml"):
        probe = run([*PODMAN, "exec", name, "test", "-e", path], check=False, timeout=60)
        assert probe.returncode != 0, f"{path} exists in the image"


def test_image_refuses_to_start_without_secret_key(image):
    """Without SECRET_KEY and ALLOWED_HOSTS (and with another bad setting): one line
    naming the three, exit 2, within 10 s, and nothing started. ``--no-healthcheck``:
    without systemd, podman itself prints two lines about the HEALTHCHECK timer it
    cannot set up."""
    name = f"calibration-e2e-nokey-{secrets.token_hex(4)}"
    command = [*PODMAN, "run", "--name", name, "--no-healthcheck", *ulimits()]
    try:
        started = time.monotonic()
        result = run([*command, "-e", "MAX_UPLOAD_MB=lots", image], check=False, timeout=60)
        seconds = time.monotonic() - started
        output = result.stdout + result.stderr
        assert result.returncode == 2, f"exit status {result.returncode}:\n{_tail(output)}"
        assert seconds < 10, f"took {seconds:.1f} s:\n{_tail(output)}"
        assert len(output.splitlines()) == 1, output
        assert output.startswith("calibration-dashboard: configuration error: 3 problems: ")
        assert "SECRET_KEY is required" in output and "MAX_UPLOAD_MB" in output, output
        assert "ALLOWED_HOSTS" in output, output
    finally:
        run([*PODMAN, "rm", "--force", name], check=False, timeout=90)


def test_podman_sends_the_build_context_the_matcher_computes(image, tmp_path):
    """``COPY . /context`` of a throwaway image (its Containerfile outside the
    repository, the repository as the context) holds exactly the files of
    tests/hosting/build_context.py's matcher."""
    base = _arg_default("PYTHON_IMAGE")
    containerfile = tmp_path / "Containerfile"
    containerfile.write_text(f"FROM {base}\nCOPY . /context\n", encoding="utf-8")
    throwaway = f"localhost/calibration-context:{secrets.token_hex(4)}"
    try:
        build = [*PODMAN, "build", "--pull=never", "-f", str(containerfile), "-t", throwaway]
        run([*build, str(REPO)], timeout=600)
        listing = run(
            [*PODMAN, "run", "--rm", *ulimits(), throwaway, "find", "/context", "-type", "f"],
            timeout=120,
        ).stdout
    finally:
        run([*PODMAN, "rmi", "--force", throwaway], check=False, timeout=120)
    sent = {line.removeprefix("/context/") for line in listing.splitlines() if line}
    computed = context_files(REPO)
    assert "docs/statistics.md" in sent and "docs/hosting.md" not in sent
    assert sorted(sent - computed) == [] and sorted(computed - sent) == []


def _arg_default(name: str) -> str:
    """The default of ``ARG name=...`` in the Dockerfile (the base image's name)."""
    for line in (REPO / "Dockerfile").read_text(encoding="utf-8").splitlines():
        if line.startswith(f"ARG {name}="):
            return line.split("=", 1)[1].strip()
    raise AssertionError(f"the Dockerfile has no ARG {name}= default")
