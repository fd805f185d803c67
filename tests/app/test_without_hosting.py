"""The dashboard without the ``hosting`` extra (gunicorn, Celery, Redis's client).

``pip install calibration-dashboard`` installs no hosting dependency: ``serve`` must
still start the single-process dashboard, and a hosted setting must be refused with
the install command. The subprocess tests make the extra's modules unimportable with
an import hook (a :data:`sys.meta_path` finder that refuses them, as a missing
package is refused); the in-process ones put ``None`` in :data:`sys.modules`, which
:func:`importlib.util.find_spec` reads as "not installed" even where an earlier test
imported the real module.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from app.config import HOSTING_MODULES, INSTALL_HOSTING, AppConfig, ConfigError
from app.supervisor import check_configuration

REPO = Path(__file__).resolve().parents[2]
#: ``python -c`` program: the CLI with the hosting extra's modules unimportable.
WITHOUT_HOSTING = f"""
import importlib.abc
import sys


class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {HOSTING_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
if sys.argv[1:] == ["--probe"]:
    import {HOSTING_MODULES[0]}
from app.cli import main

sys.exit(main(sys.argv[1:]))
"""


def _env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """A minimal environment: no app setting from the caller's, a fresh ``CACHE_DIR``."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "PYTHONPATH") if k in os.environ}
    return {**env, "CACHE_DIR": str(tmp_path / "cache"), **settings}


def _without_hosting(args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WITHOUT_HOSTING, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


def test_the_import_hook_makes_the_extra_unimportable(tmp_path):
    probe = _without_hosting(["--probe"], _env(tmp_path))
    _, err = probe.communicate(timeout=60)
    assert probe.returncode == 1 and "ModuleNotFoundError" in err, err


def test_serve_starts_the_dashboard_without_the_hosting_extra(tmp_path):
    """``calibration-dashboard serve`` answers the page, its layout and a health check."""
    port = _free_port()
    server = _without_hosting(["serve", "--port", str(port)], _env(tmp_path))
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, server.communicate()[1][-3000:]
            try:
                status, page = _get(f"http://127.0.0.1:{port}/")
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "serve did not answer within 90 s"
                time.sleep(0.2)
        assert status == 200 and "_dash-renderer" in page, page[:500]
        status, layout = _get(f"http://127.0.0.1:{port}/_dash-layout")
        assert status == 200 and layout.startswith("{"), layout[:500]
        assert _get(f"http://127.0.0.1:{port}/healthz")[0] == 200
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert "ModuleNotFoundError" not in err, err[-3000:]


def test_redis_url_without_the_extra_is_one_line_naming_it(tmp_path):
    """``serve`` with ``REDIS_URL`` set: exit 2 before the server starts, the line
    saying which modules are missing and how to install them."""
    proc = _without_hosting(["serve"], _env(tmp_path, REDIS_URL="redis://127.0.0.1:1/0"))
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (2, ""), err
    (line,) = err.splitlines()
    assert line.startswith("calibration-dashboard: configuration error: REDIS_URL"), line
    assert "needs celery and redis" in line and INSTALL_HOSTING in line, line
    assert not (tmp_path / "cache").exists(), "the server started"


@pytest.fixture
def not_installed(monkeypatch):
    """The hosting extra's modules as if they were not installed (in this process)."""
    for name in HOSTING_MODULES:
        monkeypatch.setitem(sys.modules, name, None)


def test_the_config_names_the_extra_for_redis_url(not_installed, tmp_path):
    assert AppConfig(cache_dir=tmp_path).redis_url is None  # single process: nothing needed
    with pytest.raises(ConfigError) as caught:
        AppConfig(cache_dir=tmp_path, redis_url="redis://r:6379/0")
    (problem,) = caught.value.problems
    assert problem.startswith("REDIS_URL") and INSTALL_HOSTING in problem
    assert "unset REDIS_URL" in problem


def test_the_supervisor_names_every_missing_module(not_installed):
    with pytest.raises(ConfigError) as caught:
        check_configuration({"SECRET_KEY": "k" * 32})
    (problem,) = caught.value.problems
    assert "needs gunicorn, celery and redis" in problem and INSTALL_HOSTING in problem
