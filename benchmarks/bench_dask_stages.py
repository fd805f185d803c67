"""CPU seconds per row group of the Dask engine's per-piece task, stage by stage.

Usage::

    python benchmarks/bench_dask_stages.py [--rows 1e6] [--classes 10] [--repeat 7]
        [--batch-rows 65536]

Writes one row group of ``--rows`` x K float32 softmax rows (as ``bench_dask.py`` does),
then reads it as ``summarize_piece`` does and times, with ``time.process_time`` (CPU
time of this process: far less sensitive than wall time to a shared machine's load),
the three stages of every batch: Parquet decode, the loader (checks, the float64
matrix, ``Predictions``) and the summary (cells of every column, hits, Brier,
log-loss). Prints the minimum over ``--repeat`` runs of each stage, and the plain
pyarrow scan of the row group (read + ``to_numpy``) for the ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from bench_dask import write_dataset

from calibration_core.distributed.pieces import (
    BATCH_ROWS,
    ReadOptions,
    find_pieces,
    table_predictions,
)
from calibration_core.distributed.summary import merge_summaries, summarize
from calibration_core.io.checks import Context


def scan_seconds(path: str) -> float:
    """CPU seconds of the plain scan: decode the row group, every column to NumPy."""
    start = time.process_time()
    for column in pq.ParquetFile(path).read_row_group(0).columns:
        column.to_numpy()
    return time.process_time() - start


def stage_seconds(path: str, batch_rows: int) -> dict[str, float]:
    """CPU seconds of decode, loader and summary over the batches of row group 0."""
    spent = {"decode": 0.0, "loader": 0.0, "summary": 0.0}
    options, parts = ReadOptions(name="bench"), []
    clock = time.process_time()
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows, row_groups=[0]):
        table = pa.Table.from_batches([batch])
        decoded = time.process_time()
        predictions = table_predictions(table, Context(repr(path), "table", 0), options)
        loaded = time.process_time()
        parts.append(summarize(predictions))
        spent["decode"] += decoded - clock
        spent["loader"] += loaded - decoded
        clock = time.process_time()
        spent["summary"] += clock - loaded
    merge_summaries(parts)
    return spent


def main() -> None:
    """Write one row group, time the scan and the stages ``--repeat`` times, print minima."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--batch-rows", type=int, default=BATCH_ROWS)
    args = parser.parse_args()
    rows = int(args.rows)
    with tempfile.TemporaryDirectory(prefix="bench_stages_") as folder:
        (path,) = write_dataset(Path(folder), rows, args.classes, rows, rows)
        assert find_pieces(str(path))[0].n_rows == rows
        scans, stages = [], []
        for _ in range(args.repeat):
            scans.append(scan_seconds(str(path)))
            stages.append(stage_seconds(str(path), args.batch_rows))
    scan = min(scans)
    best = {k: min(s[k] for s in stages) for k in stages[0]}
    total = min(sum(s.values()) for s in stages)
    print(f"{rows:,} rows x K={args.classes}, CPU seconds (min of {args.repeat}):")
    print(f"  pyarrow scan {scan:.3f}")
    print("  task: " + ", ".join(f"{k} {v:.3f}" for k, v in best.items()) + f"; total {total:.3f}")
    print(f"  ratio scan / task {scan / total:.3f}")


if __name__ == "__main__":
    main()
