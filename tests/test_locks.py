"""The dependency locks agree with ``pyproject.toml`` (offline; ``scripts/lock.sh`` rewrites them).

``requirements/test.txt`` is what the README's test command and ``.ci/run`` install,
``requirements/app.txt`` what the Docker image installs (the app with the ``hosting``
extra). A dependency added to or
narrowed in ``pyproject.toml`` without refreshing the locks fails here, not on a
user's machine.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^\s\\;]+)")


def _locked(name: str) -> dict[str, tuple[str, int]]:
    """``{canonical name: (version, number of hashes)}`` of one lock file."""
    pins: dict[str, tuple[str, int]] = {}
    current = None
    for line in (REPO / "requirements" / name).read_text(encoding="utf-8").splitlines():
        match = PIN.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            pins[current] = (match.group(2), 0)
        elif "--hash=sha256:" in line and current is not None:
            version, hashes = pins[current]
            pins[current] = (version, hashes + 1)
    return pins


def _requirements(extra: str | None = None) -> list[Requirement]:
    """The requirements of the project (``extra`` None) or of one extra, with the extras
    of the project an extra names (``calibration-dashboard[hosting]``) read in its place."""
    project = PYPROJECT["project"]
    texts = project["optional-dependencies"][extra] if extra else project["dependencies"]
    requirements = []
    for req in map(Requirement, texts):
        if canonicalize_name(req.name) == canonicalize_name(project["name"]):
            requirements.extend(r for named in sorted(req.extras) for r in _requirements(named))
        else:
            requirements.append(req)
    return requirements


def test_the_test_extra_includes_the_hosting_extra():
    """The hosting tests start gunicorn, Celery workers and Redis clients."""
    test_names = {canonicalize_name(req.name) for req in _requirements("test")}
    assert {canonicalize_name(req.name) for req in _requirements("hosting")} <= test_names


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [
        ("test.txt", _requirements() + _requirements("test")),
        ("app.txt", _requirements() + _requirements("hosting")),
    ],
)
def test_every_dependency_is_locked_within_its_range(lock, requirements):
    pins = _locked(lock)
    for req in requirements:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in requirements/{lock}: run scripts/lock.sh"
        version, hashes = pins[name]
        assert req.specifier.contains(version, prereleases=True), (
            f"requirements/{lock} locks {req.name}=={version}, outside {req}: run scripts/lock.sh"
        )
        assert hashes > 0, f"{req.name} has no hash in requirements/{lock}"


def test_every_locked_file_is_hash_checked_and_the_two_locks_agree():
    test_pins, app_pins = _locked("test.txt"), _locked("app.txt")
    for name, (version, hashes) in {**test_pins, **app_pins}.items():
        assert hashes > 0, f"{name}=={version} has no hash"
    for name, (version, _) in app_pins.items():
        assert test_pins.get(name, (version,))[0] == version, (
            f"{name}: app.txt locks {version}, test.txt {test_pins[name][0]}"
        )
    assert set(app_pins) <= set(test_pins), set(app_pins) - set(test_pins)
