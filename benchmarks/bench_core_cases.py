"""Timing, memory and the benchmark cases of ``benchmarks/bench_core.py``.

``metric_rows`` times every one-off metric against its numpy reference
(paired, interleaved calls) and measures peak memory; ``rebin_rows`` times
re-binning from the load-time precomputation of a ``Predictions`` as a
percentage of the one-off pass it replaces. Each row is printed as it is
measured.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc

import numpy as np

from benchmarks.bench_core_data import (
    N_BINS,
    ref_binary_frequency,
    ref_binary_width,
    ref_brier,
    ref_classwise_frequency,
    ref_classwise_width,
    ref_confidence,
    ref_confidence_frequency,
    ref_log_loss,
)
from benchmarks.bench_core_report import format_metric_row, format_rebin_row
from calibration_core import (
    Binning,
    Predictions,
    binary_ece,
    brier_score,
    classwise_ece,
    confidence_ece,
    log_loss,
)

TARGET_RATIO = 1.0
TARGET_REBIN_PERCENT = 1.0


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
def metric_rows(name, n, k, x, y, repeats, with_memory, only_metric=""):
    """Time (and memory) of every metric on one data set.

    Only the metrics whose ``"<metric> <scheme>"`` contains ``only_metric`` are run.
    """
    p = x if x.ndim == 2 else np.column_stack([1.0 - x, x])
    rows = []

    def add(metric, scheme, fn, ref, arg, target):
        if only_metric and only_metric not in f"{metric} {scheme}":
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
