"""What the verdict costs on top of fitting the maps (issue 28: at most 1.5x the fit).

    python benchmarks/bench_verdict_cost.py --reference-tree /path/to/checkout [--repeats 3]
        [--model densenet-bc-100-cifar-100] [--folds 5]

All 8 maps on a real CIFAR model (``../shared/realdata``), cross-fitted as the
page and ``evaluate`` do, then the verdict. The reference is the same
comparison run by another checkout (e.g. ``git worktree add ../ref <commit>``
of the version before the verdict included the fitting noise): its
``compare_maps`` wall time is "today's fit time". Each run is a fresh
subprocess; the two trees alternate, and the medians and their ratio are
printed (the machine is shared: quote ratios).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"

ONE_RUN = """
import json, sys, time
from calibration_core import load_predictions
from calibration_core.compare import compare_maps
pred = load_predictions(sys.argv[1])[0]
start = time.perf_counter()
comparison = compare_maps(pred, "all", folds=int(sys.argv[2]), seed=0)
fitted = time.perf_counter()
verdict = comparison.verdict()
done = time.perf_counter()
print(json.dumps({
    "compare": fitted - start,
    "fit_seconds": float(comparison.table["fit_seconds"].sum()),
    "verdict": done - fitted,
    "recommended": verdict.recommended,
    "summary": verdict.summary,
}))
"""


def run_once(tree: Path, data: Path, folds: int) -> dict:
    """One comparison and verdict by the code of ``tree``, in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", ONE_RUN, str(data), str(folds)],
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    """Alternate the two trees, then print medians and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference-tree", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", default="densenet-bc-100-cifar-100")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args(argv)
    data = REALDATA / f"{args.model}.npz"
    runs: dict[str, list[dict]] = {"reference": [], "this tree": []}
    for i in range(args.repeats):
        for label, tree in (("reference", args.reference_tree), ("this tree", REPO)):
            runs[label].append(run_once(tree, data, args.folds))
            print(f"run {i + 1} {label}: {runs[label][-1]['compare']:.1f} s", file=sys.stderr)
    med = {
        label: {k: statistics.median(r[k] for r in rs) for k in ("compare", "verdict")}
        for label, rs in runs.items()
    }
    fit_today = med["reference"]["compare"]
    ours = med["this tree"]["compare"] + med["this tree"]["verdict"]
    print(f"{args.model}, all 8 maps, {args.folds} folds, {args.repeats} runs each (medians):")
    print(f"  reference compare_maps (today's fit): {fit_today:.1f} s")
    print(f"  reference verdict:                    {med['reference']['verdict']:.2f} s")
    print(f"  this tree compare_maps:               {med['this tree']['compare']:.1f} s")
    print(f"  this tree verdict:                    {med['this tree']['verdict']:.3f} s")
    print(f"  (fit + verdict) / today's fit:        {ours / fit_today:.2f}x (target <= 1.5x)")
    print(f"  recommended: {runs['this tree'][-1]['recommended']}")
    print(f"  {runs['this tree'][-1]['summary']}")


if __name__ == "__main__":
    main()
