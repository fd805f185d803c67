"""The package surface: every public name resolves, the core stays light and web-free."""

from __future__ import annotations

import subprocess
import sys

import calibration_core


def test_every_public_name_resolves():
    for name in calibration_core.__all__:
        assert getattr(calibration_core, name) is not None, name
    assert set(calibration_core._LAZY) <= set(calibration_core.__all__)


def test_public_names_are_never_shadowed_by_submodules():
    """A submodule named like a public function would replace it once imported."""
    import importlib

    for module in set(calibration_core._LAZY.values()):
        importlib.import_module(f"calibration_core.{module}")
    for name in calibration_core.__all__:
        value = getattr(calibration_core, name)
        assert not isinstance(value, type(calibration_core)), f"{name} is a module"


def test_unknown_attribute_is_an_attribute_error():
    try:
        calibration_core.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_import_is_light_and_never_pulls_the_web_stack():
    loaded = _modules_after("import calibration_core")
    for heavy in ("sklearn", "pandas", "scipy.stats", "dash", "plotly", "flask"):
        assert heavy not in loaded, f"import calibration_core imported {heavy}"


def test_core_never_imports_the_web_stack_even_when_fully_loaded():
    loaded = _modules_after(
        "import calibration_core as c\nfor n in c.__all__: getattr(c, n)\n"
        "import calibration_core.maps, calibration_core.io, calibration_core.demo"
    )
    for web in ("dash", "plotly", "flask"):
        assert web not in loaded, f"calibration_core imported {web}"
