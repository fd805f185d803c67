"""Benchmark ``calibration-dashboard apply`` on a large CSV: peak memory and rate.

Usage::

    python benchmarks/bench_apply.py [--size-gb 2.0] [--classes 10] [--dir DIR] [--keep]

Steps:

1. Write a CSV of about ``--size-gb`` GB (``id``, ``label``, ``logit_<k>`` for K classes
   written with 17 significant digits, and a text ``note`` column), in chunks.
2. Fit a temperature map on its first 20,000 rows (``calibration-dashboard fit``).
3. Run, each in its own process, timed with ``time.perf_counter`` and measured with the
   child's own peak RSS (``os.wait4``):

   * ``apply``: ``calibration-dashboard apply map.json big.csv -o out.csv``;
   * ``pyarrow whole``: the plain read+write, ``pyarrow.csv.read_csv`` then
     ``pyarrow.csv.write_csv`` of the same file;
   * ``pyarrow stream``: ``pyarrow.csv.open_csv`` batches written by a ``CSVWriter``
     (the bounded-memory copy, the fairest floor for a streaming command).

The rate is the input size divided by the wall time. Targets (issue 14): apply's peak RSS
< 1 GB, its rate >= 50 % of the plain read+write. The machine is shared: rates vary between
runs by tens of percent; the script runs apply and the baselines alternately
(``--repeat`` rounds) and reports the median of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

ROWS_PER_CHUNK = 200_000

PLAIN = """
import sys, pyarrow.csv as c
c.write_csv(c.read_csv(sys.argv[1]), sys.argv[2])
"""
STREAM = """
import sys, pyarrow.csv as c
with c.open_csv(sys.argv[1]) as r, c.CSVWriter(sys.argv[2], r.schema) as w:
    for b in r:
        w.write_batch(b)
"""


def write_csv(path: Path, size_bytes: int, classes: int) -> int:
    """Write the benchmark CSV in chunks until it reaches ``size_bytes``; returns its rows."""
    rng = np.random.default_rng(0)
    rows, schema = 0, None
    with open(path, "wb") as fh:
        writer = None
        while fh.tell() < size_bytes:
            z = 2.0 * rng.normal(size=(ROWS_PER_CHUNK, classes))
            labels = (z / 2 + rng.gumbel(size=z.shape)).argmax(axis=1)
            cols = {
                "id": pa.array(np.arange(rows, rows + ROWS_PER_CHUNK)),
                "label": pa.array(labels.astype(str)),
                **{f"logit_{k}": pa.array(z[:, k]) for k in range(classes)},
                "note": pa.array(np.where(labels == 0, "first", "other")),
            }
            batch = pa.RecordBatch.from_pydict(cols)
            if writer is None:
                schema = batch.schema
                writer = pacsv.CSVWriter(fh, schema)
            writer.write_batch(batch)
            rows += ROWS_PER_CHUNK
            fh.flush()
        writer.close()
    return rows


def timed(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv} failed with exit status {status}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    """Run the benchmark and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=2.0)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    parser.add_argument("--reuse", action="store_true", help="reuse DIR/big.csv if present")
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench-apply-"))
    root.mkdir(parents=True, exist_ok=True)
    big, out = root / "big.csv", root / "out.csv"
    start = time.perf_counter()
    if args.reuse and big.exists():
        rows = sum(1 for _ in big.open("rb")) - 1
    else:
        rows = write_csv(big, int(args.size_gb * 1e9), args.classes)
    size = big.stat().st_size
    print(f"wrote {big}: {size / 1e9:.2f} GB, {rows:,} rows in {time.perf_counter() - start:.0f} s")
    sample = root / "sample.csv"
    with open(big, "rb") as src, open(sample, "wb") as dst:
        for _, line in zip(range(20_001), src, strict=False):
            dst.write(line)
    cli = [sys.executable, "-m", "app.cli"]
    subprocess.run(
        [
            *cli,
            "fit",
            str(sample),
            "--map",
            "temperature",
            "--folds",
            "2",
            "-o",
            str(root / "map.json"),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    runs: dict[str, list[tuple[float, float]]] = {"apply": [], "whole": [], "stream": []}
    commands = {
        "apply": [*cli, "apply", str(root / "map.json"), str(big), "-o", str(out)],
        "whole": [sys.executable, "-c", PLAIN, str(big), str(out)],
        "stream": [sys.executable, "-c", STREAM, str(big), str(out)],
    }
    for _ in range(args.repeat):
        for name, argv in commands.items():
            runs[name].append(timed(argv))
            out.unlink()
    print(
        f"\n{size / 1e9:.2f} GB CSV, {rows:,} rows x {args.classes} logits; median of "
        f"{args.repeat} runs\n"
    )
    print("| run | seconds | MB/s | peak RSS (MB) | apply's rate vs this |")
    print("|---|---|---|---|---|")
    apply_s = statistics.median(s for s, _ in runs["apply"])
    for name, label in (
        ("apply", "`apply`"),
        ("whole", "pyarrow read_csv + write_csv"),
        ("stream", "pyarrow open_csv + CSVWriter"),
    ):
        secs = statistics.median(s for s, _ in runs[name])
        rss = max(r for _, r in runs[name])
        print(
            f"| {label} | {secs:.1f} | {size / 1e6 / secs:.0f} | {rss:.0f} | {secs / apply_s:.0%} |"
        )
    if not args.keep:
        for path in (big, sample, root / "map.json"):
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
