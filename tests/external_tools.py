"""External reference tools the tests call: probed lazily, once per session, with a timeout.

A test that needs a tool outside the Python environment (R with ``rms``, relplot,
Debian's Chromium, redis-server, nginx, podman) asks for it with the marker
``@pytest.mark.requires_tool("R")`` or, from a fixture or helper, with
:func:`require_tool`. The first request of a session runs the tool's probe command
(at most :data:`PROBE_TIMEOUT_SECONDS`); every later request reuses the answer.

* The tool works: the test runs.
* It is missing, fails or does not answer in time: the test is skipped with the
  reason, never an error at collection, so one slow ``Rscript`` start on a busy
  machine costs one probe and skips the R tests instead of stopping the session.
* Under CI (``CI`` set, as ``.ci/run`` runs), a tool that ``.ci/run`` installs
  fails the test instead: CI must not silently drop a comparison with a reference.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

#: Longest wait for one tool's probe (a cold R start with rms takes 1-3 s when quiet).
PROBE_TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True)
class ExternalTool:
    """A tool outside the Python environment and how to tell that it works.

    Parameters
    ----------
    name : str
        The name tests ask for (``requires_tool("R")``).
    probe : tuple of str
        A command that exits 0 when the tool works (run without a shell).
    remedy : str
        How to install it, for the skip or failure message.
    installed_by_ci : bool
        Whether ``.ci/run`` installs it: then under CI its absence fails the tests.
    """

    name: str
    probe: tuple[str, ...]
    remedy: str
    installed_by_ci: bool = True


TOOLS = {
    tool.name: tool
    for tool in (
        ExternalTool(
            "R",
            ("Rscript", "-e", "suppressMessages(library(rms))"),
            "R with rms: apt-get install r-cran-rms",
        ),
        ExternalTool(
            "relplot",
            (sys.executable, "-c", "import relplot"),
            "relplot (the test extra): pip install 'relplot>=1.0.3'",
        ),
        ExternalTool(
            "chromium",
            ("/usr/bin/chromium", "--version"),
            "Debian's Chromium at /usr/bin/chromium: apt-get install chromium",
        ),
        ExternalTool(
            "redis-server",
            ("redis-server", "--version"),
            "Debian's redis-server: apt-get install redis-server",
        ),
        ExternalTool("nginx", ("/usr/sbin/nginx", "-v"), "Debian's nginx: apt-get install nginx"),
        ExternalTool("podman", ("podman", "--version"), "Debian's podman: apt-get install podman"),
    )
}


@dataclass(frozen=True)
class ProbeResult:
    """What one probe found: ``problem`` is None when the tool works."""

    problem: str | None
    seconds: float


def probe(tool: ExternalTool, timeout: float = PROBE_TIMEOUT_SECONDS) -> ProbeResult:
    """Run ``tool.probe`` once; the problem found (None when it works) and the time taken.

    The probe runs in a session of its own, killed whole at the timeout: a wrapper
    script's child (``Rscript`` is one) would otherwise hold the output pipes open
    until it ends by itself.
    """
    started = time.monotonic()
    command = " ".join(tool.probe)
    try:
        proc = subprocess.Popen(
            tool.probe,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except FileNotFoundError:
        return ProbeResult(f"{tool.probe[0]} is not installed", time.monotonic() - started)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        problem = f"`{command}` did not answer within {timeout:g} s"
    else:
        last_line = ((stderr or stdout).strip().splitlines() or [""])[-1]
        problem = (
            None
            if proc.returncode == 0
            else (f"`{command}` exited with status {proc.returncode}: {last_line[:200]}")
        )
    return ProbeResult(problem, time.monotonic() - started)


class ToolProbes:
    """The probes of one test session: each tool probed at its first request, then remembered.

    Parameters
    ----------
    tools : dict of str to ExternalTool
        The tools that may be asked for, by name.
    timeout : float
        Longest wait for one probe, in seconds.
    """

    def __init__(self, tools: dict[str, ExternalTool], timeout: float = PROBE_TIMEOUT_SECONDS):
        self.tools = tools
        self.timeout = timeout
        self.results: dict[str, ProbeResult] = {}

    def result(self, name: str) -> ProbeResult:
        """What the probe of the tool ``name`` found (run at the first call only)."""
        if name not in self.tools:
            known = ", ".join(sorted(self.tools))
            raise KeyError(f"unknown external tool {name!r}; known: {known}")
        if name not in self.results:
            self.results[name] = probe(self.tools[name], self.timeout)
        return self.results[name]

    def require(self, name: str) -> None:
        """Skip the running test unless the tool ``name`` works; under CI, fail if CI installs it.

        Raises
        ------
        pytest.skip.Exception
            The tool is missing, broken or slow, outside CI (or CI does not install it).
        pytest.fail.Exception
            The same under CI (``CI`` set), for a tool that ``.ci/run`` installs.
        """
        problem = self.result(name).problem
        if problem is None:
            return
        tool = self.tools[name]
        reason = f"needs {name}: {problem} (install: {tool.remedy})"
        if os.environ.get("CI") and tool.installed_by_ci:
            pytest.fail(
                f"{reason}. .ci/run installs it, so CI must run these tests.", pytrace=False
            )
        pytest.skip(reason)


#: The session's probes (this module is imported once per test session).
SESSION_PROBES = ToolProbes(TOOLS)


def require_tool(name: str) -> None:
    """:meth:`ToolProbes.require` of the session's probes."""
    SESSION_PROBES.require(name)
