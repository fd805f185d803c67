"""Shared fixtures and the suite's tiers.

* Where ../shared lives, the real CIFAR prediction files, a wall clock, a Jupyter kernel.
* External tools (R, relplot, Chromium, redis-server, nginx, podman) probed once per
  session within 20 s: the ``requires_tool`` marker and tests/external_tools.py.
* Tiers: ``browser``, ``dask`` and ``hosting`` markers added from the fixtures a test
  uses (:data:`TIER_FIXTURES`), each also ``slow``; ``pytest -m "not slow"`` is the
  fast loop.
* One Dask LocalCluster for the session (:func:`dask_cluster`, :func:`dask_client`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .external_tools import SESSION_PROBES, require_tool

REPO = Path(__file__).resolve().parents[1]


def shared_path() -> Path:
    """``$CALIBRATION_SHARED`` or the ``shared`` folder beside the repository."""
    return Path(os.environ.get("CALIBRATION_SHARED", REPO.parent / "shared")).resolve()


REALDATA = shared_path() / "realdata"
REALDATA_FILES = {
    "densenet-bc-100-cifar-100": REALDATA / "densenet-bc-100-cifar-100.npz",
    "wideresnet-16-4-cifar-100": REALDATA / "wideresnet-16-4-cifar-100.npz",
    "lenet-5-cifar-100": REALDATA / "lenet-5-cifar-100.npz",
    "wideresnet-16-4-cifar-10": REALDATA / "wideresnet-16-4-cifar-10.npz",
    "lenet-5-cifar-10": REALDATA / "lenet-5-cifar-10.npz",
}


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only ``../shared`` folder; skips the test when it is absent."""
    path = shared_path()
    if not path.is_dir():
        pytest.skip(f"../shared is absent ({path}); real-data tests need it beside the repo")
    return path


@pytest.fixture(scope="session")
def realdata(shared_dir) -> dict[str, Path]:
    """Name -> path of each real CIFAR prediction file; skips when they are absent."""
    missing = [p for p in REALDATA_FILES.values() if not p.is_file()]
    if missing:
        pytest.skip(
            f"real-data files missing under {REALDATA}: {', '.join(p.name for p in missing)}"
        )
    return dict(REALDATA_FILES)


class WallClock:
    """``time.time`` that a test moves forward: the real time plus :attr:`offset` seconds.

    Parameters
    ----------
    real_time : callable
        The real ``time.time``.
    """

    def __init__(self, real_time: Callable[[], float]) -> None:
        self._real_time = real_time
        self.offset = 0.0

    def time(self) -> float:
        """The shifted wall-clock time (it keeps running with the real one)."""
        return self._real_time() + self.offset

    def advance(self, seconds: float) -> None:
        """Jump ``seconds`` into the future (the clock never goes back)."""
        if seconds < 0:
            raise ValueError("the wall clock only moves forward")
        self.offset += seconds


@pytest.fixture
def wall_clock(monkeypatch) -> WallClock:
    """Replace ``time.time`` by a :class:`WallClock` for the test.

    Expiry tests jump past a TTL with :meth:`WallClock.advance` instead of
    sleeping through it, so the TTL can be long: nothing expires while the
    test sets up, however slow the machine, and everything expires after the
    jump. Every reader of ``time.time()`` at call time sees the jump:
    diskcache's ``expire`` (the store), itsdangerous' signature age (the
    session cookie) and :mod:`app.session`.
    """
    clock = WallClock(time.time)
    monkeypatch.setattr(time, "time", clock.time)
    return clock


class Kernel:
    """A Jupyter kernel (jupyter_client) of this interpreter, run code by code as a notebook."""

    def __init__(self, manager, client) -> None:
        self.manager, self.client = manager, client
        self.running = True

    def shutdown(self) -> None:
        """Ask the kernel to exit as a notebook's "shut down" does (its atexit handlers run)."""
        if self.running:
            self.running = False
            self.client.stop_channels()
            self.manager.shutdown_kernel(now=False)

    def run(self, code: str, timeout: float = 300) -> list[dict]:
        """Execute ``code``; its outputs (stream, display and result messages' content).

        Raises AssertionError with the kernel's traceback when the cell fails.
        """
        outputs: list[dict] = []

        def keep(msg) -> None:
            if msg["msg_type"] in ("stream", "display_data", "execute_result", "error"):
                outputs.append({"type": msg["msg_type"], **msg["content"]})

        reply = self.client.execute_interactive(code, timeout=timeout, output_hook=keep)
        if reply["content"]["status"] != "ok":
            trace = "\n".join(reply["content"].get("traceback", []))
            raise AssertionError(f"the cell failed:\n{code}\n{trace}")
        return outputs

    def text(self, code: str) -> str:
        """What ``code`` printed."""
        return "".join(o.get("text", "") for o in self.run(code) if o["type"] == "stream")


@pytest.fixture
def kernel(tmp_path) -> Iterator[Kernel]:
    """A fresh IPython kernel in ``tmp_path``, shut down (its atexit handlers run) at the end."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(
        kernel_name="python3", startup_timeout=120, cwd=str(tmp_path)
    )
    kernel = Kernel(manager, client)
    try:
        yield kernel
    finally:
        kernel.shutdown()


# ------------------------------------------------------------- external tools
def pytest_configure(config) -> None:
    """Register the ``requires_tool`` marker (the tier markers are in pyproject.toml)."""
    config.addinivalue_line(
        "markers",
        "requires_tool(name): the test needs an external tool (tests/external_tools.py), "
        "probed once per session; skipped without it (failed under CI if .ci/run installs it)",
    )
    config.pluginmanager.register(FixtureWatch(), "calibration-fixture-watch")


def pytest_runtest_setup(item) -> None:
    """Probe (once per session) every tool the test's ``requires_tool`` markers name."""
    FIXTURES_SET_UP.clear()
    for marker in item.iter_markers(name="requires_tool"):
        for name in marker.args:
            require_tool(name)


def pytest_terminal_summary(terminalreporter) -> None:
    """One line per external tool probed this session: works, or why not, and the time."""
    probed = SESSION_PROBES.results
    if probed:
        terminalreporter.write_sep("-", "external tools probed (tests/external_tools.py)")
        for name, result in probed.items():
            state = "works" if result.problem is None else result.problem
            terminalreporter.write_line(f"{name}: {state} ({result.seconds:.1f} s)")


@pytest.fixture(scope="session")
def browser_available() -> None:
    """Skip (or, under CI, fail) when Debian's Chromium or Playwright for Python is missing.

    Every real-browser fixture uses it: it is what puts a test in the ``browser`` tier.
    """
    require_tool("chromium")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        reason = f"browser tests need Playwright for Python ({exc})"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}. CI must run the browser tests: install it.", pytrace=False)
        pytest.skip(reason)


# ---------------------------------------------------------------------- tiers
#: Tier marker -> fixtures that put a test in it (anywhere in the test's fixture closure).
TIER_FIXTURES = {
    "browser": {"browser_available"},
    "dask": {"dask_extra"},
    "hosting": {"gunicorn_server", "nginx_proxy", "redis_server"},
}


#: Fixtures set up for the running test (:class:`FixtureWatch`), for the check below.
FIXTURES_SET_UP: list[str] = []


class FixtureWatch:
    """A plugin noting each fixture set up, including those asked for by name at run time.

    Registered as a plugin (:func:`pytest_configure`), not as a conftest hook: pytest
    calls a session-scoped fixture's setup hook with the hooks of the rootdir's
    conftests only, which this folder's conftest is not.
    """

    def pytest_fixture_setup(self, fixturedef, request) -> None:
        """Note the fixture's name; the setup itself is left to pytest."""
        FIXTURES_SET_UP.append(fixturedef.argname)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Fail a test that reached a tier's fixture without carrying that tier's marker.

    A fixture asked for by name (``request.getfixturevalue``) is not in the test's
    fixture closure at collection, so :func:`pytest_collection_modifyitems` cannot
    see it: such a test must carry the marker itself (``pytest.param(...,
    marks=...)``), or it would run in the fast loop unnoticed. A session-scoped
    fixture is set up once, so the check fires in the run that matters: the fast
    loop, where no earlier test has set it up. Checked after the test body, which may
    ask for a fixture by name too.
    """
    outcome = yield
    set_up = set(FIXTURES_SET_UP)
    FIXTURES_SET_UP.clear()
    for tier, fixtures in TIER_FIXTURES.items():
        reached = sorted(set_up & fixtures)
        if reached and item.get_closest_marker(tier) is None:
            pytest.fail(
                f"{item.nodeid} set up {', '.join(reached)} without the {tier!r} marker: "
                f"it asked for it by name; mark the test (or its parameter) "
                f"pytest.mark.{tier} and pytest.mark.slow",
                pytrace=False,
            )
    return outcome


def pytest_collection_modifyitems(config, items) -> None:
    """Mark each test with the tiers of the fixtures it uses; every tier is also ``slow``.

    A test is tiered by what it needs (a browser page, a Dask cluster or the Numba
    kernel, gunicorn/Redis/nginx/Celery processes), never by hand, so a new test that
    asks for one of those fixtures cannot land in the fast loop (``-m "not slow"``).
    """
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        tiers = [tier for tier, fixtures in TIER_FIXTURES.items() if used & fixtures]
        for tier in tiers:
            item.add_marker(tier)
        if tiers:
            item.add_marker("slow")


# ------------------------------------------------------------------------ Dask
@pytest.fixture(scope="session")
def dask_extra() -> None:
    """Skip unless the ``dask`` extra (dask, distributed, numba) is installed.

    Every test of the Dask engine or its Numba kernel uses it, directly or through
    :func:`dask_cluster`: it is what puts such a test in the ``dask`` tier.
    """
    for module in ("dask.dataframe", "distributed", "numba"):
        pytest.importorskip(module, reason="the 'dask' extra is not installed")


@pytest.fixture(scope="session")
def dask_cluster(dask_extra) -> Iterator:
    """The session's LocalCluster: 2 worker processes of 1 thread each (the engine's setup).

    One cluster for every test module: starting one costs seconds of imports and
    process starts. A test that needs a cluster of another shape (no workers, one it
    scales) starts its own and says why.
    """
    from calibration_core.distributed.engine import local_cluster

    cluster = local_cluster(2, dashboard_address=None, silence_logs=40)
    with cluster:
        yield cluster


@pytest.fixture(scope="session")
def dask_client(dask_cluster) -> Iterator:
    """A ``distributed.Client`` of :func:`dask_cluster`."""
    import distributed

    with distributed.Client(dask_cluster) as client:
        yield client
