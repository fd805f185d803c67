"""CPU of the streaming engine against a plain pyarrow scan and the Dask engine (issue 30).

Usage::

    python benchmarks/bench_stream.py [--rows 2e7] [--classes 10] [--files 20]
        [--dir /tmp/bench_stream] [--repeat 3] [--dask-runs 1] [--workers 2]

The dataset (``--rows`` rows of ``p_0..p_{K-1}`` float32 softmax probabilities and
an int64 ``label``, seeded, in ``--files`` Parquet files of one row group each) is
written into ``--dir`` once and reused when its files are already there.

Every measured run is a fresh ``python`` process; its CPU is the user + system
time of that process and everything it waited for (``resource.getrusage`` of the
children: the LocalCluster's worker processes included), imports and start-up
included. The three runs compute the same numbers: top-label ECE (15 equal-width
bins), accuracy and Brier score.

- ``stream``: :func:`~calibration_core.distributed.stream.stream_summaries`, then
  ``metrics(15)`` (the engine computes its whole summary: every class's cells,
  log-loss and score parts too).
- ``reference``: the plain scan written for these three numbers only: read each
  file's batches, the K columns as float64 rows divided by their sums (as the
  loader divides float32 rows), argmax/max, one ``bincount`` per bin sum, the
  Brier sum.
- ``dask``: :func:`~calibration_core.distributed.dataset_summaries` on a LocalCluster
  of ``--workers`` processes (the CLI's ``--engine dask`` without ``--scheduler``).

Stream and reference alternate ``--repeat`` times (the machine is shared: both see
the same load); the medians and their ratio are printed. Target: stream <= 1.3x
reference. Dask runs ``--dask-runs`` times after them.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

N_BINS = 15


def write_dataset(folder: Path, rows: int, k: int, n_files: int) -> list[Path]:
    """Seeded float32 softmax rows and labels drawn from them; reused when present."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    per_file = rows // n_files
    paths = [folder / f"part-{i:04d}.parquet" for i in range(n_files)]
    rng = np.random.default_rng(30)
    for path in paths:
        if path.exists() and pq.ParquetFile(path).metadata.num_rows == per_file:
            continue
        logits = rng.normal(size=(per_file, k)).astype(np.float32) * 3
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        u = rng.random(per_file)[:, None]
        labels = np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), k - 1)
        table = pa.table({**{f"p_{j}": p[:, j] for j in range(k)}, "label": labels})
        pq.write_table(table, path, row_group_size=per_file)
    return paths


# ------------------------------------------------------------ the measured runs
def run_stream(folder: str) -> dict[str, float]:
    """The streaming engine: the whole summary, then the three numbers."""
    from calibration_core.distributed.stream import stream_summaries

    (summary,) = stream_summaries(folder).values()
    return _numbers(summary.metrics(N_BINS))


def run_dask(folder: str, workers: int) -> dict[str, float]:
    """The Dask engine on a LocalCluster, as ``evaluate --engine dask`` starts one."""
    import logging

    from distributed import Client

    from calibration_core.distributed import dataset_summaries
    from calibration_core.distributed.engine import local_cluster

    cluster = local_cluster(workers, dashboard_address=None, silence_logs=logging.ERROR)
    with cluster, Client(cluster) as client:
        (summary,) = dataset_summaries(folder, client=client).values()
    return _numbers(summary.metrics(N_BINS))


def _numbers(metrics: dict[str, float]) -> dict[str, float]:
    return {k: metrics[k] for k in ("confidence_ece", "accuracy", "brier_score")}


def run_reference(folder: str) -> dict[str, float]:
    """A plain pyarrow scan + NumPy computing only top-label ECE, accuracy and Brier."""
    import pyarrow.parquet as pq

    count = np.zeros(N_BINS)
    conf_sum = np.zeros(N_BINS)
    hit_sum = np.zeros(N_BINS)
    brier, n = 0.0, 0
    for path in sorted(Path(folder).glob("*.parquet")):
        file = pq.ParquetFile(path)
        k = file.metadata.num_columns - 1
        for batch in file.iter_batches(batch_size=1 << 18, use_threads=False):
            values = np.empty((k, batch.num_rows))
            for j in range(k):
                values[j] = batch.column(j).to_numpy()
            labels = batch.column(k).to_numpy()
            total = values.sum(axis=0)
            top = values.argmax(axis=0)
            cols = np.arange(batch.num_rows)
            conf = values[top, cols] / total
            hits = (top == labels).astype(np.float64)
            bins = np.minimum((conf * N_BINS).astype(np.intp), N_BINS - 1)
            count += np.bincount(bins, minlength=N_BINS)
            conf_sum += np.bincount(bins, weights=conf, minlength=N_BINS)
            hit_sum += np.bincount(bins, weights=hits, minlength=N_BINS)
            squares = np.einsum("kn,kn->n", values, values) / (total * total)
            brier += float((squares - 2 * values[labels, cols] / total).sum()) + batch.num_rows
            n += batch.num_rows
    return {
        "confidence_ece": float(np.abs(conf_sum - hit_sum).sum() / n),
        "accuracy": float(hit_sum.sum() / n),
        "brier_score": brier / n,
    }


# ------------------------------------------------------------ the driver
def measure(kind: str, folder: str, workers: int) -> tuple[float, float, dict[str, float]]:
    """CPU seconds (user + sys of a fresh process and its children), wall seconds, numbers."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    found = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--dir", folder, "--workers", str(workers)],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, json.loads(found.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=2e7)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--dir", default="/tmp/bench_stream")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dask-runs", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--child", choices=("stream", "reference", "dask"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        runs = {"stream": run_stream, "reference": run_reference}
        found = (
            run_dask(args.dir, args.workers) if args.child == "dask" else runs[args.child](args.dir)
        )
        print(json.dumps(found))
        return
    write_dataset(Path(args.dir), int(args.rows), args.classes, args.files)
    cpu: dict[str, list[float]] = {"stream": [], "reference": [], "dask": []}
    numbers = {}
    kinds = ["stream", "reference"] * args.repeat + ["dask"] * args.dask_runs
    for kind in kinds:
        seconds, wall, numbers[kind] = measure(kind, args.dir, args.workers)
        cpu[kind].append(seconds)
        print(f"{kind:9s} cpu {seconds:6.2f} s  wall {wall:6.2f} s  {numbers[kind]}", flush=True)
    medians = {kind: statistics.median(v) for kind, v in cpu.items() if v}
    for kind, value in medians.items():
        print(f"median {kind:9s} {value:6.2f} s CPU ({len(cpu[kind])} runs)")
    print(f"stream / reference: {medians['stream'] / medians['reference']:.2f}")
    if "dask" in medians:
        print(f"dask / reference: {medians['dask'] / medians['reference']:.2f}")
    for kind, found in numbers.items():
        for other in numbers:
            diffs = [abs(found[c] - numbers[other][c]) for c in found]
            worst = max(d / abs(numbers[other][c]) for d, c in zip(diffs, found, strict=True))
            print(f"{kind} vs {other}: largest difference {max(diffs):.1e}, relative {worst:.1e}")


if __name__ == "__main__":
    main()
