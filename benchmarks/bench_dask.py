"""Benchmark the Dask engine (``calibration_core.distributed``) against a plain pyarrow scan.

Usage::

    python benchmarks/bench_dask.py [--rows 1e8] [--classes 10] [--workers 2]
        [--memory-limit 1GB] [--rows-per-file 1e7] [--row-group 1e6] [--dir DIR] [--keep]
        [--repeat R]

Steps:

1. Write a Parquet dataset of ``--rows`` rows: ``p_0..p_{K-1}`` float32 softmax
   probabilities and an int64 ``label``, ``--rows-per-file`` rows per file in row
   groups of ``--row-group`` rows (1e8 x K = 10 is about 4 GB).
2. ``pyarrow scan``: read every row group of every file and turn each column into
   NumPy (the decoding any engine has to do): the limit of this machine's disk
   and decoder.
3. ``dask engine``: :func:`~calibration_core.distributed.dataset_summaries` on a
   LocalCluster of ``--workers`` processes (1 thread each, ``--memory-limit``
   each): confidence and classwise statistics of every M in 1..100, Brier,
   log-loss and accuracy in one pass. Peak worker memory is each worker's
   peak RSS (``getrusage``).
4. ``re-bin``: ECE/MCE of every M in 2..100 from the cached summary (no data).

With ``--repeat R`` the scan and the engine (on one cluster) alternate R times
and the medians are printed, with the ratio of the medians: on a shared machine
both then see the same load. A ``--dir`` that already holds the dataset
(``--keep`` from an earlier run with the same sizes) is read again, not rewritten.

Rates are rows per second of wall time. Target (issue 18): the engine at >= 0.5x
the pyarrow scan, peak worker memory flat as N grows. The machine is shared:
rates vary between runs by tens of percent.
"""

from __future__ import annotations

import argparse
import logging
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def write_dataset(folder: Path, rows: int, k: int, per_file: int, row_group: int) -> list[Path]:
    """Random float32 softmax rows and labels drawn from them, in Parquet files."""
    rng = np.random.default_rng(18)
    paths, written, i = [], 0, 0
    while written < rows:
        n_file = min(per_file, rows - written)
        path = folder / f"part-{i:04d}.parquet"
        with pq.ParquetWriter(path, _schema(k)) as writer:
            done = 0
            while done < n_file:
                n = min(row_group, n_file - done)
                writer.write_table(_block(rng, n, k), row_group_size=row_group)
                done += n
        paths.append(path)
        written += n_file
        i += 1
    return paths


def _schema(k: int) -> pa.Schema:
    return pa.schema([*(pa.field(f"p_{j}", pa.float32()) for j in range(k)), ("label", pa.int64())])


def _block(rng, n: int, k: int) -> pa.Table:
    logits = rng.normal(size=(n, k)).astype(np.float32) * 3
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    u = rng.random(n)[:, None]
    labels = np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), k - 1)
    return pa.table([*(p[:, j] for j in range(k)), labels], schema=_schema(k))


def pyarrow_scan(paths: list[Path]) -> tuple[float, int]:
    """Seconds to decode every column of every row group to NumPy, and the rows."""
    start, rows = time.perf_counter(), 0
    for path in paths:
        pf = pq.ParquetFile(path)
        for i in range(pf.num_row_groups):
            table = pf.read_row_group(i)
            for column in table.columns:
                column.to_numpy()
            rows += table.num_rows
    return time.perf_counter() - start, rows


def _existing_rows(paths: list[Path]) -> int:
    """Rows of a dataset left by an earlier run (-1 when a file is damaged)."""
    try:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    except (pa.ArrowException, OSError):
        return -1


def _timed_scan(paths: list[Path], rows: list[int]) -> float:
    seconds, n = pyarrow_scan(paths)
    rows.append(n)
    return seconds


def _runs(seconds: list[float]) -> str:
    return ", ".join(f"{s:.1f}" for s in seconds) + " s"


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dask_engine(folder: Path, workers: int, memory_limit: str, scan, repeat: int = 1):
    """Alternate the scan and dataset_summaries on one LocalCluster, ``repeat`` times.

    Returns the scan's and the engine's seconds (lists), the summary and the peak
    worker RSS.
    """
    from distributed import Client

    from calibration_core.distributed import dataset_summaries
    from calibration_core.distributed.engine import local_cluster

    cluster = local_cluster(
        workers,
        memory_limit=memory_limit,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    scans, engines = [], []
    with cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        for _ in range(repeat):
            scans.append(scan())
            start = time.perf_counter()
            summaries = dataset_summaries(str(folder / "*.parquet"), client=client, name="bench")
            engines.append(time.perf_counter() - start)
        peaks = client.run(_peak_rss_mb)
    return scans, engines, summaries["bench"], max(peaks.values())


def rebin_seconds(summary) -> float:
    """Seconds for the ECE/MCE of every M in 2..100 from the cached summary."""
    start = time.perf_counter()
    for m in range(2, 101):
        summary.metrics(m)
    return time.perf_counter() - start


def main() -> None:
    """Write the dataset, time both, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--rows-per-file", type=float, default=1e7)
    parser.add_argument("--row-group", type=float, default=1e6)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--repeat", type=int, default=1, help="alternate scan and engine R times")
    args = parser.parse_args()
    folder = Path(args.dir or tempfile.mkdtemp(prefix="bench_dask_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        paths = sorted(folder.glob("part-*.parquet"))
        if _existing_rows(paths) != int(args.rows):
            for p in paths:
                p.unlink()
            paths = write_dataset(
                folder, int(args.rows), args.classes, int(args.rows_per_file), int(args.row_group)
            )
        size = sum(p.stat().st_size for p in paths) / 1e9
        print(
            f"dataset: {int(args.rows):,} rows x K={args.classes}, {len(paths)} files, "
            f"{size:.2f} GB on disk, ready in {time.perf_counter() - t:.0f} s"
        )
        rows = []
        scans, engines, summary, peak = dask_engine(
            folder,
            args.workers,
            args.memory_limit,
            lambda: _timed_scan(paths, rows),
            args.repeat,
        )
        assert summary.n_samples == rows[0]
        scan_s, engine_s = float(np.median(scans)), float(np.median(engines))
        n = rows[0]
        print(f"pyarrow scan: {scan_s:.1f} s, {n / scan_s:,.0f} rows/s (runs {_runs(scans)})")
        print(
            f"dask engine ({args.workers} workers x {args.memory_limit}): {engine_s:.1f} s, "
            f"{n / engine_s:,.0f} rows/s (runs {_runs(engines)}), ratio {scan_s / engine_s:.2f}x "
            f"the scan, peak worker RSS {peak:,.0f} MB"
        )
        rebin = rebin_seconds(summary)
        print(
            f"re-bin from the cached summary: 99 bin counts in {rebin * 1e3:.1f} ms "
            f"({rebin / 99 * 1e3:.2f} ms each)"
        )
        m = summary.metrics(15)
        print(
            f"M=15: confidence ECE {m['confidence_ece']:.5f}, classwise ECE "
            f"{m['classwise_ece']:.5f}, accuracy {m['accuracy']:.4f}"
        )
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
