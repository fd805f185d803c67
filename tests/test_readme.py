"""The README's two set-up commands stay real: CI runs the test command verbatim."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_readme_has_the_two_setup_commands():
    blocks = _bash_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    assert any("calibration-dashboard" in b and "pip install" in b for b in blocks)
    assert any("pytest" in b and "pip install" in b for b in blocks)


def test_ci_runs_the_readme_test_command_verbatim():
    blocks = _bash_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    test_command = next(b for b in blocks if "pytest" in b)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci
