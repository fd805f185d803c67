"""Shared fixtures: where ../shared lives, and the real CIFAR prediction files."""

from __future__ import annotations

import os
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
