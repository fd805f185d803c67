"""Benchmark how fast the ``calibration-dashboard`` command starts (issue 29).

Usage::

    python benchmarks/bench_cli_start.py [--repeat 10]

Each round runs, each in a fresh process timed with ``time.perf_counter``:

* ``--help``: ``calibration-dashboard --help`` (the console script beside this
  interpreter, else ``python -m app.cli``);
* ``check, bad bound``: ``calibration-dashboard check FILE --max nope=1``, refused
  before FILE is read (exit 2);
* ``import numpy``: ``python -c "import numpy"``, the floor of any command of the
  project (the core is numpy).

The commands alternate within each round, so that the load of a shared machine
falls on all of them alike; the script prints the median of each over
``--repeat`` rounds and its ratio to ``import numpy``. The target (issue 29):
``--help`` under 0.5 s on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def command() -> list[str]:
    """The console script installed beside this interpreter, else ``python -m app.cli``."""
    script = Path(sys.executable).with_name("calibration-dashboard")
    return [str(script)] if script.exists() else [sys.executable, "-m", "app.cli"]


def seconds(argv: list[str]) -> float:
    """Wall time of one run of ``argv``, its output discarded."""
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="rounds (10)")
    args = parser.parse_args()
    cli = command()
    runs = {
        "--help": [*cli, "--help"],
        "check, bad bound": [*cli, "check", "predictions.csv", "--max", "nope=1"],
        "import numpy": [sys.executable, "-c", "import numpy"],
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeat):
        for name, argv in runs.items():
            times[name].append(seconds(argv))
    floor = statistics.median(times["import numpy"])
    print(f"{' '.join(cli)}; median of {args.repeat} runs each")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<18} {median:6.3f} s  ({median / floor:4.1f}x import numpy)")


if __name__ == "__main__":
    main()
