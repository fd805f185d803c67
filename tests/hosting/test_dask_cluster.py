"""docs/hosting.md's Dask cluster: the documented commands listen on loopback only, the
compose snippet keeps the cluster on an internal network, and the page says what an open
scheduler means.

The loopback test starts the documented ``dask scheduler`` and ``dask worker`` (ports
moved to free ones) and checks every port their processes listen on.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
HOSTING = REPO / "docs" / "hosting.md"
TITLE = "### The Dask cluster: loopback or an internal network, TLS (issue 31)"


def _section() -> str:
    text = HOSTING.read_text(encoding="utf-8")
    assert TITLE in text, f"docs/hosting.md lost its section {TITLE!r}"
    return re.split(r"\n#{2,3} ", text.split(TITLE, 1)[1])[0]


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _section(), flags=re.S)


def _commands(block: str) -> list[list[str]]:
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line]


def test_section_says_a_reachable_scheduler_runs_any_code():
    assert "can run any code on the workers" in " ".join(_section().split())


def test_every_documented_dashboard_is_on_loopback():
    commands = [c for block in _blocks("sh") for c in _commands(block)]
    assert [c[1] for c in commands] == ["scheduler", "worker", "scheduler", "worker"]
    for command in commands:
        address = command[command.index("--dashboard-address") + 1]
        assert address.startswith("127.0.0.1:"), command
        assert "--no-dashboard" not in command  # it leaves the worker's HTTP on 0.0.0.0
    for command in commands[2:]:
        assert {"--tls-ca-file", "--tls-cert", "--tls-key"} <= set(command), command


def test_compose_snippet_keeps_the_cluster_on_an_internal_network():
    (block,) = _blocks("yaml")
    compose = yaml.safe_load(block)
    assert compose["networks"]["dask"] == {"internal": True}
    for name in ("scheduler", "dask-worker"):
        service = compose["services"][name]
        assert service["networks"] == ["dask"] and "ports" not in service, name
        command = service["command"]
        assert command[command.index("--dashboard-address") + 1].startswith("127.0.0.1:")
    assert "dask" in compose["services"]["worker"]["networks"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(pids: list[int]) -> list[tuple[int, str, int]]:
    import psutil

    out = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            tree = [process, *process.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for p in tree:
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    out.append((p.pid, c.laddr.ip, c.laddr.port))
    return out


def _dask(command: list[str], ports: dict[str, str]) -> subprocess.Popen:
    text = " ".join(command)
    for old, new in ports.items():
        text = text.replace(old, new)
    args = [sys.executable, "-m", "distributed.cli.dask_" + command[1], *text.split()[2:]]
    return subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def _stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)


def test_documented_loopback_commands_listen_on_loopback_only(dask_extra):
    pytest.importorskip("psutil")
    scheduler, worker = _commands(_blocks("sh")[0])
    ports = {"8786": str(_free_port()), "8787": str(_free_port())}
    started = [_dask(scheduler, ports)]
    try:
        deadline = time.monotonic() + 60
        while len(_listening([p.pid for p in started])) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        started.append(_dask(worker, ports))
        # the worker: its server, its HTTP server and the nanny's server
        while len(_listening([p.pid for p in started])) < 5 and time.monotonic() < deadline:
            time.sleep(0.5)
        listening = _listening([p.pid for p in started])
    finally:
        for process in reversed(started):
            _stop(process)
    assert len(listening) >= 5, f"the cluster did not start in 60 s: {listening}"
    assert {ip for _, ip, _ in listening} == {"127.0.0.1"}, listening
