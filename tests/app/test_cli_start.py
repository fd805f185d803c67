"""The command line starts at once: ``--help`` and refused arguments load no heavy library.

Each case runs ``python -X importtime -m app.cli ...`` in a fresh interpreter and
reads the modules it imported from the import-time report on stderr
(issue 29; the wall time is in benchmarks/bench_cli_start.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Modules (and their submodules) the parser and argument checks never need.
HEAVY = (
    "sklearn",
    "scipy.stats",
    "pandas",
    "pyarrow",
    "dash",
    "plotly",
    "flask",
    "dask",
    "distributed",
)


def imported_modules(importtime: str) -> set[str]:
    """Module names of ``-X importtime`` lines (``import time: self | cumulative | name``)."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_the_report_is_read_as_modules():
    report = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       355 |       1023 |   sklearn.base\n"
        "import time:        12 |         12 | scipy.stats._stats_py\n"
        "import time:        10 |         10 |     dashboard_helpers\n"
        "usage: calibration-dashboard ...\n"
    )
    modules = imported_modules(report)
    assert heavy(modules) == ["scipy.stats._stats_py", "sklearn.base"]
    assert "dashboard_helpers" in modules


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--help"], 0),
        (["--version"], 0),
        (["check", "predictions.csv", "--max", "nope=0.05"], 2),  # unknown metric
        (["check", "missing.csv", "--max", "confidence_ece=0.05"], 2),  # no such file
        (["evaluate", "predictions.csv", "--bins", "0"], 2),  # refused by the parser
    ],
    ids=["help", "version", "check-unknown-metric", "check-missing-file", "evaluate-bad-bins"],
)
def test_no_heavy_import_before_the_command_runs(argv, code):
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "app.cli", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == code, proc.stderr[-2000:]
    modules = imported_modules(proc.stderr)
    assert "app.cli" in modules and "numpy" in modules
    assert heavy(modules) == [], f"{' '.join(argv)} imported {heavy(modules)}"
