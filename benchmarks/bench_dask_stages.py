"""CPU seconds per row group of the Dask engine's per-piece task, stage by stage.

Usage::

    python benchmarks/bench_dask_stages.py [--rows 1e6] [--classes 10] [--repeat 7]
        [--batch-rows N (default: the engine's, summary_batch_rows)]

Writes one row group of ``--rows`` x K float32 softmax rows (as ``bench_dask.py`` does),
then reads it as ``summarize_piece`` does and times, with ``time.process_time`` (CPU
time of this process: far less sensitive than wall time to a shared machine's load), the
stages of every batch: Parquet decode (``pieces.piece_batches``), the columns (found,
decoded, labels checked, stacked as stored into a reused buffer) and the compiled
summary (``kernel.summarize_block``: row sums and division as the loader, cells of every
column, hits, Brier, log-loss). Prints the minimum over ``--repeat`` runs of each stage,
and the plain pyarrow scan of the row group (read + ``to_numpy``) for the ratio. The
kernel is compiled (or loaded from Numba's cache) before the clock starts; the time that
takes is printed too.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from bench_dask import write_dataset

from calibration_core.distributed.engine import summary_batch_rows
from calibration_core.distributed.kernel import BlockTotals, summarize_block, warm
from calibration_core.distributed.pieces import (
    ReadOptions,
    find_pieces,
    piece_batches,
    read_piece_batches,
)
from calibration_core.distributed.summary import SummaryBuilder
from calibration_core.io.checks import Context, exact_tolerance
from calibration_core.io.tables import index_labels, table_columns, table_labels


def scan_seconds(path: str) -> float:
    """CPU seconds of the plain scan: decode the row group, every column to NumPy."""
    start = time.process_time()
    for column in pq.ParquetFile(path).read_row_group(0).columns:
        column.to_numpy()
    return time.process_time() - start


def stage_seconds(path: str, batch_rows: int) -> dict[str, float]:
    """CPU seconds of decode, columns and the compiled summary over row group 0's batches.

    ``columns`` + ``kernel`` is what ``SummaryBuilder.add_table`` does with a batch
    of valid rows (it then skips the loader's second look at the values).
    """
    spent = {"decode": 0.0, "columns": 0.0, "kernel": 0.0}
    ctx, totals, builder = Context(repr(path), "table", 0), None, SummaryBuilder()
    clock = time.process_time()
    for batch in piece_batches(find_pieces(path)[0], batch_rows):
        table = pa.Table.from_batches([batch])
        decoded = time.process_time()
        cols = table_columns(table, ctx)
        labels = index_labels(table, cols)
        labels = table_labels(table, cols, ctx) if labels is None else labels
        values = builder.stacked(cols.values)
        stacked = time.process_time()
        totals = totals or BlockTotals(len(cols.values))
        summarize_block(values, labels, exact_tolerance(len(cols.values)), totals)
        spent["decode"] += decoded - clock
        spent["columns"] += stacked - decoded
        clock = time.process_time()
        spent["kernel"] += clock - stacked
    return spent


def task_seconds(path: str, batch_rows: int) -> float:
    """CPU seconds of the whole task, as a worker runs it (``summarize_piece``)."""
    piece = find_pieces(path)[0]
    start = time.process_time()
    builder = SummaryBuilder()
    for _ in read_piece_batches(piece, ReadOptions(name="bench"), batch_rows, builder.add_table):
        pass
    builder.summaries()
    return time.process_time() - start


def main() -> None:
    """Write one row group, time the scan and the stages ``--repeat`` times, print minima."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--batch-rows", type=int, default=None, help="default: the engine's")
    args = parser.parse_args()
    rows = int(args.rows)
    start = time.perf_counter()
    warm()
    print(f"kernel compiled or loaded from the cache in {time.perf_counter() - start:.2f} s")
    with tempfile.TemporaryDirectory(prefix="bench_stages_") as folder:
        (path,) = write_dataset(Path(folder), rows, args.classes, rows, rows)
        piece = find_pieces(str(path))[0]
        assert piece.n_rows == rows
        batch_rows = args.batch_rows or summary_batch_rows(piece)
        scans, stages, tasks = [], [], []
        for _ in range(args.repeat):
            scans.append(scan_seconds(str(path)))
            stages.append(stage_seconds(str(path), batch_rows))
            tasks.append(task_seconds(str(path), batch_rows))
    scan, task = min(scans), min(tasks)
    best = {k: min(s[k] for s in stages) for k in stages[0]}
    print(
        f"{rows:,} rows x K={args.classes}, batches of {batch_rows:,} rows, "
        f"CPU seconds (min of {args.repeat}):"
    )
    print(f"  pyarrow scan {scan:.3f}")
    print("  stages: " + ", ".join(f"{k} {v:.3f}" for k, v in best.items()))
    print(f"  task (summarize_piece's work) {task:.3f}")
    print(f"  ratio scan / task {scan / task:.3f}")


if __name__ == "__main__":
    main()
