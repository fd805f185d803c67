"""Benchmark how soon ``calibration-dashboard serve`` answers its first request (issue 29).

Usage::

    python benchmarks/bench_serve_start.py [--repeat 10] [--cache-dir DIR]

Each round starts, each in a fresh process, and times with ``time.perf_counter``
from the start of the process to the first answer (HTTP 200) of

* ``serve``: ``calibration-dashboard serve --port P`` (the console script beside
  this interpreter, else ``python -m app.cli``), its demo cached in
  ``--cache-dir`` by an uncounted first start;
* ``minimal Dash app``: a one-``Div`` Dash app, the reference, that imports pandas
  before serving as ``serve`` does (:data:`app.warmup.IMPORTED_BEFORE_SERVING`),
  keeps dash from importing IPython as ``serve`` does (``without_ipython`` in
  :mod:`app.cli.serve`; 0.18 s when IPython is installed) and runs on the same
  Flask development server, one request at a time.

Two requests are timed for each: ``GET /`` (the page's HTML) and, right after it,
``GET /_dash-layout`` (the page's layout, the request before anything is drawn).
The two commands alternate within each round, so that the load of a shared
machine falls on both alike; the script prints medians over ``--repeat`` rounds
and the ratio ``serve`` / reference. The target (issue 29): ``serve`` answers
its first request within 1.3x of the reference.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

#: The reference: the smallest Dash app, importing pandas before it serves.
MINIMAL_APP = textwrap.dedent(
    """
    import sys

    sys.modules.setdefault("IPython", None)  # as serve: dash skips its IPython import
    import pandas  # noqa: F401  (as serve: plotly's encoder meets it in sys.modules)
    from dash import Dash, html

    app = Dash(__name__)
    app.layout = html.Div("hello")
    app.run(host="127.0.0.1", port=int(sys.argv[1]), debug=False, threaded=False)
    """
)
#: Seconds between polls of a starting server.
POLL_INTERVAL = 0.01
#: Seconds a server may take to answer before the run is counted as failed.
START_TIMEOUT = 60.0


def serve_command() -> list[str]:
    """The console script installed beside this interpreter, else ``python -m app.cli``."""
    script = Path(sys.executable).with_name("calibration-dashboard")
    return [str(script)] if script.exists() else [sys.executable, "-m", "app.cli"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answered(url: str) -> bool:
    """Whether ``url`` answers 200 now (a refused connection is ``False``)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            response.read()
            return response.status == 200
    except (urllib.error.URLError, ConnectionError):
        return False


def time_first_answers(argv: list[str], port: int, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from starting ``argv`` to its first ``/`` answer, and to ``/_dash-layout``."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        while not answered(base + "/"):
            if process.poll() is not None or time.perf_counter() - start > START_TIMEOUT:
                raise RuntimeError(f"{' '.join(argv)} did not answer {base}/")
            time.sleep(POLL_INTERVAL)
        page = time.perf_counter() - start
        if not answered(base + "/_dash-layout"):
            raise RuntimeError(f"{' '.join(argv)} did not answer {base}/_dash-layout")
        return page, time.perf_counter() - start
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="rounds (10)")
    parser.add_argument("--cache-dir", type=Path, help="CACHE_DIR of serve (a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        cache_dir = args.cache_dir or Path(scratch, "cache")
        reference = Path(scratch, "minimal_app.py")
        reference.write_text(MINIMAL_APP)
        env = {**os.environ, "CACHE_DIR": str(cache_dir)}
        commands = {
            "serve": lambda port: [*serve_command(), "serve", "--port", str(port)],
            "minimal Dash app": lambda port: [sys.executable, str(reference), str(port)],
        }
        warm = commands["serve"](free_port())
        time_first_answers(warm, int(warm[-1]), env)  # uncounted: caches the demo
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, argv_for in commands.items():
                port = free_port()
                times[name].append(time_first_answers(argv_for(port), port, env))
    report(times, args.repeat)


def report(times: dict[str, list[tuple[float, float]]], repeat: int) -> None:
    """Print the medians of both answers per command and the ratio to the reference."""
    medians = {
        name: tuple(statistics.median(run[i] for run in runs) for i in range(2))
        for name, runs in times.items()
    }
    floor = medians["minimal Dash app"]
    print(f"median of {repeat} starts each; ratio to the minimal Dash app")
    print(f"{'':<18} {'GET /':>14} {'GET /_dash-layout':>22}")
    for name, (page, layout) in medians.items():
        print(
            f"{name:<18} {page:6.3f} s ({page / floor[0]:4.2f}x)"
            f" {layout:10.3f} s ({layout / floor[1]:4.2f}x)"
        )


if __name__ == "__main__":
    main()
