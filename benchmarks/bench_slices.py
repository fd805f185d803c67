"""Speed of per-group calibration (issue 19) on N x K predictions with G groups.

    python benchmarks/bench_slices.py [--rows 1000000] [--classes 10] [--groups 100]
                                      [--repeats 5]

Over-confident synthetic predictions (as ``bench_measures.py``) are validated
once into a ``Predictions`` carrying a ``group`` column of G string values (as
the loader gives a text column), as the dashboard holds them after load. Timed
from that object, each ``repeats`` times (median wall time, and process CPU
time of the same calls: the machine is shared, CPU time is steadier):

* ``point estimates``: ``group_index`` + ``slice_report(n_resamples=0,
  test_resamples=0)``: every group's rows, accuracy, confidence, ECE, MCE,
  Brier, log-loss and its (G, M) reliability bins, in one grouped pass
  (target of issue 19: <= 1 s at 1e6 x 10, G = 100);
* ``+ homogeneity test``: the same with the test's 1000 null resamples;
* ``one bootstrap resample``: the cost per resample of the intervals (they
  follow in the background; the CLI default is 200 resamples);
* ``loop reference``: a Python loop over groups calling the core's
  ``confidence_ece``, ``confidence_mce``, ``brier_score``, ``log_loss`` and
  ``accuracy`` on each group's rows (what one grouped pass replaces).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def synthetic(n: int, k: int, groups: int, seed: int = 0):
    """Over-confident predictions with a text ``group`` column of ``groups`` values."""
    from calibration_core import Predictions
    from calibration_core.predictions import with_extra

    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, k)) * 1.5
    truth = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(max=k - 1)
    sharp = np.exp(2 * z)
    pred = Predictions.from_probs(sharp / sharp.sum(axis=1, keepdims=True), labels)
    names = np.array([f"group-{i:03d}" for i in range(groups)], dtype=object)
    return with_extra(pred, {"group": names[rng.integers(0, groups, n)]})


def timed(fn, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def fresh(pred):
    """The same predictions without the cached per-row values (each call pays for them)."""
    from calibration_core.predictions import with_extra

    return with_extra(pred, pred.extra)


def main(argv=None) -> None:
    from calibration_core import metrics
    from calibration_core.slices import GroupedPass, group_index, row_values, slice_report

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    pred = synthetic(args.rows, args.classes, args.groups)

    def point(test=0):
        p = fresh(pred)
        slice_report(p, group_index(p, ["group"]), n_resamples=0, test_resamples=test)

    index = group_index(pred, ["group"])
    grouped = GroupedPass.build(row_values(pred), index.codes, index.n_groups,
                                __import__("calibration_core").binning.Binning())  # fmt: skip
    rng = np.random.default_rng(0)

    def one_resample():
        grouped.metrics(rng.integers(0, args.rows, args.rows))

    def loop():
        for g in range(index.n_groups):
            rows = index.codes == g
            p, y = pred.probs[rows], pred.labels[rows]
            for f in (metrics.confidence_ece, metrics.confidence_mce, metrics.brier_score,
                      metrics.log_loss, metrics.accuracy):  # fmt: skip
                f(p, y)

    cases = [
        ("point estimates (group_index + one grouped pass)", point),
        ("+ homogeneity test (1000 null resamples)", lambda: point(1000)),
        ("one bootstrap resample (all groups)", one_resample),
        ("loop reference (core metrics per group)", loop),
    ]
    print(f"N = {args.rows:,}, K = {args.classes}, G = {args.groups}, median of "
          f"{args.repeats}")  # fmt: skip
    print("| step | wall s | CPU s |\n|---|---|---|")
    for name, fn in cases:
        wall, cpu = timed(fn, args.repeats if "loop" not in name else max(1, args.repeats // 2))
        print(f"| {name} | {wall:.3f} | {cpu:.3f} |")


if __name__ == "__main__":
    main()
