"""Latency of legitimate uploads (issue 13: the cost of parsing in a child process).

Builds the app once (``MAX_UPLOAD_MB`` 250 so that a 200 MB CSV passes), warms
it up like a server does, then posts each file ``--repeat`` times through
Flask's test client (each post in a fresh session) and reports the median,
min and max wall time of the request, and this process's peak RSS
(``ru_maxrss``) before and after the posts. The files are written by
``--make DIR`` in another process, so that their construction does not count.

``python benchmarks/bench_upload_latency.py --make /tmp/pbench``
``python benchmarks/bench_upload_latency.py /tmp/pbench/csv1e5.csv /tmp/pbench/csv1e6.csv``
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def make_files(directory: Path) -> None:
    """``csv1e5.csv`` (1e5 x 10, 21 MB) and ``csv1e6.csv`` (1e6 x 10, 206 MB), ``%.17g``."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    directory.mkdir(parents=True, exist_ok=True)
    for n, name in ((100_000, "csv1e5.csv"), (1_000_000, "csv1e6.csv")):
        rng = np.random.default_rng(0)
        p = rng.dirichlet(np.ones(10), size=n)
        cols = {f"p_c{j}": p[:, j] for j in range(10)}
        cols["label"] = np.array([f"c{j}" for j in range(10)])[rng.integers(0, 10, n)]
        pacsv.write_csv(pa.table(cols), directory / name)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--make", type=Path, help="write the benchmark files to this folder")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.make:
        make_files(args.make)
        return
    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root), str(root / "tests")]
    from hosting.conftest import DashTab

    from app.config import AppConfig
    from app.factory import create_app, finish_setup

    with tempfile.TemporaryDirectory() as cache:
        config = AppConfig(
            cache_dir=Path(cache), secret_key="latency-bench-secret-0123456789",
            max_upload_mb=250,
        )  # fmt: skip
        app = create_app(config)
        finish_setup(app)
        app.server.extensions["calibration_dashboard"].warm_up.run()
        for path in args.files:
            content = path.read_bytes()
            rss0, times = _rss_mb(), []
            for _ in range(args.repeat):
                tab = DashTab(flask_client=app.server.test_client())
                tab.get("/healthz")
                t0 = time.perf_counter()
                status, body = tab.upload(path.name, content)
                times.append(time.perf_counter() - t0)
                assert status == 200 and not body["errors"], body
            result = {
                "file": path.name,
                "mb": round(len(content) / 2**20, 1),
                "median_s": round(statistics.median(times), 3),
                "min_s": round(min(times), 3),
                "max_s": round(max(times), 3),
                "rss_before_mb": round(rss0),
                "rss_peak_mb": round(_rss_mb()),
            }
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
