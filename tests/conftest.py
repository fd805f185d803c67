"""Shared fixtures: where ../shared lives, the real CIFAR prediction files, a wall clock."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
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
