"""Speed and memory of the core metrics against a plain-numpy ``np.bincount`` reference.

Run ``python benchmarks/bench_core.py`` (about ten minutes on a busy 2-core
machine) or ``python benchmarks/bench_core.py --quick`` (a smoke run with
small N, well under a minute). ``--json PATH`` also writes every figure as JSON.

What is measured
----------------
* **Time.** Each metric is timed ``repeats`` times, interleaved call by call
  with its reference (so that noise from other processes hits both alike),
  and the ratio of the two medians is reported. The references are the
  straightforward numpy implementations:

  - binary (width): ``idx = clip((s * M).astype(int), 0, M - 1)`` and three
    ``np.bincount`` calls (count, sum of scores, sum of targets), then
    ``sum |sum_target - sum_score| / N``;
  - confidence: ``max`` and ``argmax`` of the rows first, ``correct =
    argmax == y``, then the binary reference;
  - classwise: **vectorised** one-vs-rest: ``idx = clip((P * M).astype(int),
    0, M - 1) + M * class`` on the whole (N, K) matrix, one ``bincount`` for
    counts and one weighted by ``P`` for score sums, and one ``bincount`` of
    the true class's bin per row for the positives (the per-class Python loop
    is slower still, so this is the harder reference);
  - frequency schemes: the same with edges ``np.sort(s)[positions]`` at the
    order statistics and ``np.searchsorted`` instead of the floor rule;
  - Brier and log-loss: ``((P - onehot) ** 2).sum(1).mean()`` and
    ``-log(clip(P[i, y_i], 1e-15, 1)).mean()``.

  The references validate nothing; the metrics validate their input (NaN,
  range, row sums, labels) inside the timed call.
* **Re-binning.** A ``Predictions`` is built and each notion's sorted scores
  are precomputed once; then ``Predictions.statistics`` (and
  ``SortedScores.statistics`` directly) with other bin counts and schemes is
  timed as a percentage of the one-off metric on all N rows.
* **Peak memory.** ``tracemalloc`` (numpy reports its buffers to it): the
  peak of new allocations during one call, as a multiple of the size of the
  float64 score or probability array passed in (labels not counted).

Targets (issue 2): one-off binary, confidence and classwise ECE (width) at
or below 1.0x their reference; re-binning below 1 % of a one-off pass; peak
memory at most 2 copies of the input.

The parts live next to this script: ``bench_core_data.py`` (inputs and
references), ``bench_core_cases.py`` (timing, memory, the cases) and
``bench_core_report.py`` (printed lines, target checks, Markdown tables).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_core_cases import metric_rows, rebin_rows
from benchmarks.bench_core_data import N_BINS, binary_data, multiclass_data
from benchmarks.bench_core_report import markdown_tables, summary


# ----------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N smoke run (< 60 s)")
    parser.add_argument("--json", type=Path, help="write all figures to this JSON file")
    parser.add_argument("--no-memory", action="store_true", help="skip tracemalloc runs")
    parser.add_argument("--no-rebin", action="store_true", help="skip the re-binning part")
    parser.add_argument("--no-metrics", action="store_true", help="skip the one-off metrics")
    parser.add_argument("--only", help="run only the cases whose name contains this text")
    parser.add_argument("--metric", default="", help="run only metrics matching this text")
    parser.add_argument(
        "--markdown-from", type=Path, help="print the tables of an earlier --json file and exit"
    )
    args = parser.parse_args(argv)
    if args.markdown_from:
        print(markdown_tables(json.loads(args.markdown_from.read_text())))
        return 0

    if args.quick:
        binary_sizes = [100_000]
        multi = [(50_000, 10), (20_000, 100)]
        repeats = {20_000: 3, 50_000: 3, 100_000: 5}
    else:
        binary_sizes = [100_000, 1_000_000, 10_000_000]
        multi = [(1_000_000, 10), (1_000_000, 100)]
        repeats = {100_000: 21, 1_000_000: 9, 10_000_000: 5}

    print(
        f"calibration_core benchmark: python {platform.python_version()}, numpy {np.__version__}, "
        f"{os.cpu_count()} CPUs, {N_BINS} bins, {'quick' if args.quick else 'full'} run"
    )
    header = (
        f"{'case':<22} {'metric':<15} {'scheme':<9} {'time':>13} {'reference':>13} {'ratio':>7}"
    )
    print(header)
    all_metrics, all_rebins = [], []
    cases = [(f"binary N={n:.0e}", n, 2) for n in binary_sizes]
    cases += [(f"K={k} N={n:.0e}", n, k) for n, k in multi]
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
    for name, n, k in cases:
        x, y = binary_data(n) if k == 2 else multiclass_data(n, k)
        r = repeats[n]
        if not args.no_metrics:
            all_metrics += metric_rows(
                name, n, k, x, y, r, not args.no_memory, only_metric=args.metric
            )
        if not args.no_rebin:
            all_rebins += rebin_rows(name, n, k, x, y, r, 9 if args.quick else 25)
        del x, y
        gc.collect()

    checks = summary(all_metrics, all_rebins)
    failed = [c for c in checks if not c[1]]
    print(f"\n{len(checks) - len(failed)} of {len(checks)} targets met")
    if args.quick:
        print("(quick run: small N, mostly in cache; the verdicts of the full run count)")
    for label, _, value in failed:
        print(f"FAIL {label}: {value:.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "machine": {
                        "python": platform.python_version(),
                        "numpy": np.__version__,
                        "cpus": os.cpu_count(),
                        "platform": platform.platform(),
                    },
                    "quick": args.quick,
                    "n_bins": N_BINS,
                    "metrics": all_metrics,
                    "rebinning": all_rebins,
                    "targets": [
                        {"check": label, "pass": ok, "value": value} for label, ok, value in checks
                    ],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
