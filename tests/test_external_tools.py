"""External tools are probed once, within a timeout; missing or slow ones skip (fail under CI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .external_tools import PROBE_TIMEOUT_SECONDS, ExternalTool, ToolProbes

REPO = Path(__file__).resolve().parents[1]


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def _probes(folder: Path, body: str, *, installed_by_ci: bool = True, timeout: float = 1.0):
    script = _script(folder, "tool", body)
    tool = ExternalTool("tool", (str(script),), "apt-get install tool", installed_by_ci)
    return ToolProbes({"tool": tool}, timeout=timeout)


def test_a_working_tool_runs_the_test(tmp_path):
    probes = _probes(tmp_path, "exit 0")
    probes.require("tool")
    assert probes.results["tool"].problem is None


def test_a_tool_is_probed_once_per_session(tmp_path):
    calls = tmp_path / "calls"
    probes = _probes(tmp_path, f"echo x >> {calls}")
    for _ in range(3):
        probes.require("tool")
    assert calls.read_text().count("x") == 1


def test_a_hung_tool_is_killed_at_the_timeout_with_its_children(tmp_path, monkeypatch):
    """A wrapper script whose child sleeps (and holds the output pipe) costs the timeout only."""
    monkeypatch.delenv("CI", raising=False)
    probes = _probes(tmp_path, "sleep 300 & sleep 300")
    started = time.monotonic()
    with pytest.raises(pytest.skip.Exception, match=r"did not answer within 1 s"):
        probes.require("tool")
    assert time.monotonic() - started < 10
    with pytest.raises(pytest.skip.Exception):  # remembered: no second wait
        probes.require("tool")
    assert probes.results["tool"].seconds < 10


def test_a_failing_or_missing_tool_skips_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    probes = _probes(tmp_path, "echo 'there is no package called rms' >&2; exit 1")
    with pytest.raises(pytest.skip.Exception, match=r"status 1: there is no package called rms"):
        probes.require("tool")
    missing = ExternalTool("gone", (str(tmp_path / "nowhere"),), "apt-get install gone")
    with pytest.raises(pytest.skip.Exception, match=r"nowhere is not installed.*apt-get install"):
        ToolProbes({"gone": missing}).require("gone")


def test_under_ci_a_tool_ci_installs_fails_and_another_skips(tmp_path, monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"\.ci/run installs it"):
        _probes(tmp_path, "exit 3").require("tool")
    with pytest.raises(pytest.skip.Exception):
        _probes(tmp_path, "exit 3", installed_by_ci=False).require("tool")


def test_an_unknown_tool_is_a_programming_error():
    with pytest.raises(KeyError, match="unknown external tool 'nope'"):
        ToolProbes({}).require("nope")


@pytest.mark.slow
def test_a_hung_rscript_skips_the_r_tests_in_one_probe(tmp_path):
    """The issue's check: an ``Rscript`` that sleeps 300 s, outside CI, costs one probe."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    _script(stubs, "Rscript", "sleep 300")
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CI", None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "tests/core/test_measures_hierarchy.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"did not answer within {PROBE_TIMEOUT_SECONDS:g} s" in done.stdout
    assert " skipped" in done.stdout.splitlines()[-1]
    # The session's summary names the probe and its time: the timeout, not the 300 s.
    (probe_seconds,) = re.findall(r"^R: `Rscript.*\(([0-9.]+) s\)$", done.stdout, flags=re.M)
    assert float(probe_seconds) < 30
    assert elapsed < 300, elapsed


TIERED_TESTS = """
import pytest


@pytest.fixture(scope="session")
def redis_server():
    return "a stand-in"


def test_static(redis_server):
    pass


def test_by_name(request):
    request.getfixturevalue("redis_server")


@pytest.mark.hosting
@pytest.mark.slow
def test_by_name_and_marked(request):
    request.getfixturevalue("redis_server")
"""


def _run_tiered(tmp_path: Path, *args: str) -> str:
    """Run :data:`TIERED_TESTS` under this suite's root conftest; pytest's summary line."""
    tests = tmp_path / "tests"
    tests.mkdir()
    for name in ("conftest.py", "external_tools.py"):
        (tests / name).write_text((REPO / "tests" / name).read_text(encoding="utf-8"))
    (tests / "test_tiered.py").write_text(TIERED_TESTS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "--import-mode=importlib", "-o", "addopts=", *args, "tests/test_tiered.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return done.stdout


def test_tiers_come_from_fixtures_and_a_fixture_asked_by_name_needs_the_marker(tmp_path):
    """In the fast loop a test that asks for a tier's fixture by name, unmarked, fails;
    in a full run an earlier test may have set the session's fixture up already, so
    only the fast loop can tell (the run that matters)."""
    fast, full = tmp_path / "fast", tmp_path / "full"
    fast.mkdir()
    full.mkdir()
    out = _run_tiered(fast, "-m", "not slow")
    assert "test_by_name set up redis_server without the 'hosting' marker" in out, out
    assert out.splitlines()[-1].startswith("1 failed, 2 deselected"), out
    out = _run_tiered(full)
    assert out.splitlines()[-1].startswith("3 passed"), out
