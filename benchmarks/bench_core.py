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
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration_core import (
    Binning,
    Predictions,
    binary_ece,
    brier_score,
    classwise_ece,
    confidence_ece,
    log_loss,
)

N_BINS = 15
ONLY_METRIC = ""
TARGET_RATIO = 1.0
TARGET_REBIN_PERCENT = 1.0
TARGET_MEMORY_COPIES = 2.0


# ------------------------------------------------------------- references
def ref_binary_width(s, y, m=N_BINS):
    idx = np.clip((s * m).astype(np.intp), 0, m - 1)
    count = np.bincount(idx, minlength=m)
    sum_score = np.bincount(idx, weights=s, minlength=m)
    sum_target = np.bincount(idx, weights=y, minlength=m)
    return np.abs(sum_target - sum_score).sum() / count.sum()


def ref_binary_frequency(s, y, m=N_BINS):
    n = s.shape[0]
    positions = (np.arange(1, m) * n) // m
    edges = np.sort(s)[positions]
    idx = np.searchsorted(edges, s, side="right")
    count = np.bincount(idx, minlength=m)
    sum_score = np.bincount(idx, weights=s, minlength=m)
    sum_target = np.bincount(idx, weights=y, minlength=m)
    return np.abs(sum_target - sum_score).sum() / count.sum()


def ref_confidence(p, y, m=N_BINS, binary=ref_binary_width):
    conf = p.max(axis=1)
    correct = p.argmax(axis=1) == y
    return binary(conf, correct, m)


def ref_confidence_frequency(p, y, m=N_BINS):
    return ref_confidence(p, y, m, ref_binary_frequency)


def ref_classwise_width(p, y, m=N_BINS):
    n, k = p.shape
    idx = np.clip((p * m).astype(np.intp), 0, m - 1) + np.arange(k) * m
    count = np.bincount(idx.ravel(), minlength=k * m).reshape(k, m)
    sum_score = np.bincount(idx.ravel(), weights=p.ravel(), minlength=k * m).reshape(k, m)
    sum_target = np.bincount(idx[np.arange(n), y], minlength=k * m).reshape(k, m)
    return float(np.mean(np.abs(sum_target - sum_score).sum(axis=1) / count.sum(axis=1)))


def ref_classwise_frequency(p, y, m=N_BINS):
    return float(np.mean([ref_binary_frequency(p[:, j], y == j, m) for j in range(p.shape[1])]))


def ref_brier(p, y):
    onehot = np.zeros_like(p)
    onehot[np.arange(p.shape[0]), y] = 1.0
    return ((p - onehot) ** 2).sum(axis=1).mean()


def ref_log_loss(p, y):
    return -np.log(np.clip(p[np.arange(p.shape[0]), y], 1e-15, 1.0)).mean()


# ----------------------------------------------------------------- data
def binary_data(n, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    y = (rng.random(n) < s**1.3).astype(np.int64)
    return s, y


def multiclass_data(n, k, seed=0):
    rng = np.random.default_rng(seed)
    p = np.empty((n, k))
    y = np.empty(n, dtype=np.int64)
    step = 100_000
    for start in range(0, n, step):
        z = rng.normal(scale=2.5, size=(min(step, n - start), k))
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        block = e / e.sum(axis=1, keepdims=True)
        p[start : start + step] = block
        u = rng.random(block.shape[0])[:, None]
        y[start : start + step] = np.minimum((np.cumsum(block, axis=1) < u).sum(axis=1), k - 1)
    return p, y


# ------------------------------------------------------------ measuring
def paired_times(fn, ref, repeats):
    """Times of ``fn`` and ``ref`` (lists), called alternately ``repeats`` times."""
    for _ in range(3):  # warm-up: page in the inputs and buffers, fill caches
        fn()
        ref()
    t_fn, t_ref = [], []
    for i in range(repeats):
        order = (fn, ref) if i % 2 == 0 else (ref, fn)
        for f in order:
            gc.collect()
            t0 = time.perf_counter()
            f()
            dt = time.perf_counter() - t0
            (t_fn if f is fn else t_ref).append(dt)
    return t_fn, t_ref


def lower_decile(times):
    return float(np.percentile(times, 10))


def median_time(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_memory(fn):
    """Peak bytes newly allocated during one call of ``fn`` (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - base


# ---------------------------------------------------------------- cases
def metric_rows(name, n, k, x, y, repeats, with_memory):
    """Time (and memory) of every metric on one data set."""
    p = x if x.ndim == 2 else np.column_stack([1.0 - x, x])
    rows = []

    def add(metric, scheme, fn, ref, arg, target):
        if ONLY_METRIC and ONLY_METRIC not in f"{metric} {scheme}":
            return
        times_fn, times_ref = paired_times(fn, ref, repeats)
        t_fn, t_ref = statistics.median(times_fn), statistics.median(times_ref)
        row = {
            "case": name,
            "n": n,
            "k": k,
            "metric": metric,
            "scheme": scheme,
            "time_s": t_fn,
            "ref_time_s": t_ref,
            "ratio": t_fn / t_ref,
            # the lower deciles show how much of the spread is noise of a busy machine
            "time_p10_s": lower_decile(times_fn),
            "ref_time_p10_s": lower_decile(times_ref),
            "ratio_p10": lower_decile(times_fn) / lower_decile(times_ref),
            "repeats": repeats,
            "target_ratio": target,
        }
        if with_memory:
            row["input_bytes"] = arg.nbytes
            row["peak_copies"] = peak_memory(fn) / arg.nbytes
            row["ref_peak_copies"] = peak_memory(ref) / arg.nbytes
        rows.append(row)
        print(format_metric_row(row), flush=True)

    if x.ndim == 1:
        s = x
        add(
            "binary_ece",
            "width",
            lambda: binary_ece(s, y, n_bins=N_BINS),
            lambda: ref_binary_width(s, y),
            s,
            TARGET_RATIO,
        )
        add(
            "binary_ece",
            "frequency",
            lambda: binary_ece(s, y, n_bins=N_BINS, scheme="frequency"),
            lambda: ref_binary_frequency(s, y),
            s,
            None,
        )
    add(
        "confidence_ece",
        "width",
        lambda: confidence_ece(p, y, n_bins=N_BINS),
        lambda: ref_confidence(p, y),
        p,
        TARGET_RATIO,
    )
    add(
        "confidence_ece",
        "frequency",
        lambda: confidence_ece(p, y, n_bins=N_BINS, scheme="frequency"),
        lambda: ref_confidence_frequency(p, y),
        p,
        None,
    )
    add(
        "classwise_ece",
        "width",
        lambda: classwise_ece(p, y, n_bins=N_BINS),
        lambda: ref_classwise_width(p, y),
        p,
        TARGET_RATIO,
    )
    add(
        "classwise_ece",
        "frequency",
        lambda: classwise_ece(p, y, n_bins=N_BINS, scheme="frequency"),
        lambda: ref_classwise_frequency(p, y),
        p,
        None,
    )
    add("brier_score", "-", lambda: brier_score(p, y), lambda: ref_brier(p, y), p, None)
    add("log_loss", "-", lambda: log_loss(p, y), lambda: ref_log_loss(p, y), p, None)
    return rows


def rebin_rows(name, n, k, x, y, repeats, rebin_repeats=25):
    """Re-binning from the load-time precomputation, as % of a one-off pass."""
    if x.ndim == 1:
        pred = Predictions.from_scores(x, y)
        notions = [("binary", None)]
    else:
        pred = Predictions.from_probs(x, y)
        notions = [("confidence", None), ("class", 0)]
    rows = []
    bin_counts = [10, 20, 25, 30, 40]
    for notion, j in notions:
        t0 = time.perf_counter()
        sorted_scores = pred.sorted_scores(notion, j)
        t_pre = time.perf_counter() - t0
        for scheme in ("width", "frequency"):
            t_one = median_time(one_off_pass(pred, x, y, notion, j, scheme), repeats)
            for how, fn in rebinners(pred, sorted_scores, notion, j, scheme, bin_counts):
                t = median_time(fn, max(repeats, rebin_repeats))
                row = {
                    "case": name,
                    "n": n,
                    "k": k,
                    "notion": notion if j is None else f"class {j} vs rest",
                    "scheme": scheme,
                    "via": how,
                    "rebin_time_s": t,
                    "one_off_time_s": t_one,
                    "precompute_time_s": t_pre,
                    "percent": 100 * t / t_one,
                    "target_percent": TARGET_REBIN_PERCENT,
                }
                rows.append(row)
                print(format_rebin_row(row), flush=True)
    return rows


def one_off_pass(pred, x, y, notion, j, scheme):
    """The one-off metric that re-binning replaces, on all N rows."""
    if notion == "binary":
        return lambda: binary_ece(x, y, n_bins=N_BINS, scheme=scheme)
    if notion == "confidence":
        return lambda: confidence_ece(x, y, n_bins=N_BINS, scheme=scheme)
    # One class against the rest, from the validated rows of the Predictions.
    return lambda: (
        Binning(scheme, N_BINS)
        .statistics(np.ascontiguousarray(pred.probs[:, j]), pred.labels == j)
        .ece()
    )


def rebinners(pred, sorted_scores, notion, j, scheme, bin_counts):
    """Re-binning calls that cycle through other bin counts (so nothing is cached)."""
    counter = iter(range(10**9))

    def via_predictions():
        m = bin_counts[next(counter) % len(bin_counts)]
        return pred.statistics(Binning(scheme, m), notion, j).ece()

    def via_sorted():
        m = bin_counts[next(counter) % len(bin_counts)]
        return sorted_scores.statistics(Binning(scheme, m)).ece()

    return [("Predictions.statistics", via_predictions), ("SortedScores", via_sorted)]


# ------------------------------------------------------------- printing
def verdict(ok):
    return "PASS" if ok else "FAIL"


def format_metric_row(r):
    line = (
        f"{r['case']:<22} {r['metric']:<15} {r['scheme']:<9} "
        f"{1e3 * r['time_s']:>10.2f} ms {1e3 * r['ref_time_s']:>10.2f} ms {r['ratio']:>6.2f}x"
        f" (p10 {r['ratio_p10']:.2f}x)"
    )
    if r["target_ratio"] is not None:
        line += f"  [<= {r['target_ratio']:.1f}x {verdict(r['ratio'] <= r['target_ratio'])}]"
    if "peak_copies" in r:
        line += (
            f"  mem {r['peak_copies']:.2f} copies (ref {r['ref_peak_copies']:.2f})"
            f" [<= {TARGET_MEMORY_COPIES:.0f} {verdict(r['peak_copies'] <= TARGET_MEMORY_COPIES)}]"
        )
    return line


def format_rebin_row(r):
    return (
        f"{r['case']:<22} rebin {r['notion']:<16} {r['scheme']:<9} {r['via']:<22} "
        f"{1e6 * r['rebin_time_s']:>9.1f} us = {r['percent']:6.3f}% "
        f"of {1e3 * r['one_off_time_s']:.2f} ms"
        f"  [< {r['target_percent']:.0f}% {verdict(r['percent'] < r['target_percent'])}]"
        f"  (precompute {1e3 * r['precompute_time_s']:.1f} ms)"
    )


def summary(metric_rows_, rebin_rows_):
    checks = []
    for r in metric_rows_:
        if r["target_ratio"] is not None:
            checks.append(
                (f"{r['case']} {r['metric']} time", r["ratio"] <= r["target_ratio"], r["ratio"])
            )
        if "peak_copies" in r:
            checks.append(
                (
                    f"{r['case']} {r['metric']} {r['scheme']} memory",
                    r["peak_copies"] <= TARGET_MEMORY_COPIES,
                    r["peak_copies"],
                )
            )
    for r in rebin_rows_:
        checks.append(
            (
                f"{r['case']} rebin {r['notion']} {r['scheme']} {r['via']}",
                r["percent"] < r["target_percent"],
                r["percent"],
            )
        )
    return checks


def markdown_tables(data) -> str:
    """Markdown tables of a JSON result (``--markdown-from``), for BENCHMARKS.md."""
    lines = [
        "| case | metric | scheme | median | reference | ratio | ratio (p10) | peak memory |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in data["metrics"]:
        ratio = f"{r['ratio']:.2f}x"
        if r["target_ratio"] is not None:
            ratio += " PASS" if r["ratio"] <= r["target_ratio"] else " FAIL"
        mem = ""
        if "peak_copies" in r:
            mem = f"{r['peak_copies']:.3f} (ref {r['ref_peak_copies']:.2f})"
        lines.append(
            f"| {r['case']} | {r['metric']} | {r['scheme']} | {1e3 * r['time_s']:.2f} ms | "
            f"{1e3 * r['ref_time_s']:.2f} ms | {ratio} | {r['ratio_p10']:.2f}x | {mem} |"
        )
    lines += [
        "",
        "| case | notion | scheme | via | re-binning | one-off pass | % | precompute |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in data["rebinning"]:
        verdict_ = "PASS" if r["percent"] < r["target_percent"] else "FAIL"
        lines.append(
            f"| {r['case']} | {r['notion']} | {r['scheme']} | {r['via']} | "
            f"{1e6 * r['rebin_time_s']:.1f} us | {1e3 * r['one_off_time_s']:.2f} ms | "
            f"{r['percent']:.3f} % {verdict_} | {1e3 * r['precompute_time_s']:.0f} ms |"
        )
    return "\n".join(lines)


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
    global ONLY_METRIC
    ONLY_METRIC = args.metric
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
    for name, n, k in cases:
        x, y = binary_data(n) if k == 2 else multiclass_data(n, k)
        r = repeats[n]
        if not args.no_metrics:
            all_metrics += metric_rows(name, n, k, x, y, r, not args.no_memory)
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
