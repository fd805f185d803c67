"""Shared fixtures: where ../shared lives, the real CIFAR prediction files, a wall clock."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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
