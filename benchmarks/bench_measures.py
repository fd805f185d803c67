"""Speed of the measures of issue 17 on N x K predictions (1e6 x 10 by default).

    python benchmarks/bench_measures.py [--rows 1000000] [--classes 10] [--repeats 3]

Over-confident synthetic predictions (softmax of scaled Gaussian logits, labels
drawn from a softer softmax) are validated once into a ``Predictions``, as the
dashboard holds them; every call then starts from that object, so the
top-label or class column is extracted inside the timed call but the input is
not re-validated. Each measure is timed ``repeats`` times and the median wall
time printed with the process CPU time of the same calls (the machine may be
shared: CPU time is the steadier figure). Targets of issue 17 at 1e6 x 10:
KS error, Spiegelhalter, ICI, smooth ECE and the SKCE's linear estimator
each below 1 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def synthetic(n: int, k: int, seed: int = 0):
    """Over-confident predictions: probabilities sharper than the label distribution."""
    from calibration_core import Predictions

    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, k)) * 1.5
    truth = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(max=k - 1)
    sharp = np.exp(2 * z)
    return Predictions.from_probs(sharp / sharp.sum(axis=1, keepdims=True), labels)


def cases(pred):
    """Name -> (call, target seconds or None)."""
    from calibration_core.measures import (
        calibration_hierarchy,
        classwise_ks_errors,
        cumulative_differences,
        integrated_calibration_index,
        ks_calibration_error,
        skce,
        smooth_ece,
        smooth_reliability_curve,
        spiegelhalter_test,
        vector_binned_ece,
    )
    from calibration_core.measures.ece_variants import thresholded_adaptive_ece

    return {
        "KS error, top label": (lambda: ks_calibration_error(pred), 1.0),
        "KS error, every class (K sorts)": (lambda: classwise_ks_errors(pred), None),
        "cumulative curve + thinned to 2000": (
            lambda: cumulative_differences(pred).thinned(2000),
            None,
        ),
        "Spiegelhalter, top label": (lambda: spiegelhalter_test(pred), 1.0),
        "ICI (lowess), top label": (
            lambda: integrated_calibration_index(pred, notion="confidence"),
            1.0,
        ),
        "calibration hierarchy, top label": (
            lambda: calibration_hierarchy(pred, notion="confidence"),
            None,
        ),
        "smooth ECE, top label (automatic)": (lambda: smooth_ece(pred), 1.0),
        "smooth curve + 100 bootstrap": (
            lambda: smooth_reliability_curve(pred, n_resamples=100),
            None,
        ),
        "SKCE linear estimator + its test": (
            lambda: skce(pred, max_rows=2, n_resamples=0),
            1.0,
        ),
        "SKCE unbiased, 2000 rows, 200 resamples": (lambda: skce(pred), None),
        "TACE (15 ranges, threshold 0.01)": (lambda: thresholded_adaptive_ece(pred), None),
        "vector-binned ECE, first 3 classes": (None, None),
    }, vector_binned_ece


def timed(fn, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeats`` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="time the measures whose name has this text")
    args = parser.parse_args()
    warm, _ = cases(synthetic(2000, args.classes, seed=2))
    for fn, _target in warm.values():  # imports and first-call costs, not timed
        if fn is not None:
            fn()
    pred = synthetic(args.rows, args.classes)
    table, vector_binned_ece = cases(pred)
    small = synthetic(args.rows, 3, seed=1)
    table["vector-binned ECE, first 3 classes"] = (lambda: vector_binned_ece(small), None)
    print(
        f"{args.rows} x {args.classes}, median of {args.repeats}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print("| measure | wall (s) | CPU (s) | target |")
    print("|---|---|---|---|")
    for name, (fn, target) in table.items():
        if args.only.lower() not in name.lower():
            continue
        wall, cpu = timed(fn, args.repeats)
        mark = "" if target is None else f"< {target:g} s: {'met' if wall < target else 'MISSED'}"
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {mark} |", flush=True)


if __name__ == "__main__":
    main()
