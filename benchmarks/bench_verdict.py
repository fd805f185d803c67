"""The web worker's CPU for a view change with a verdict on the page (issue 28, item 4).

    python benchmarks/bench_verdict.py [--npz PATH] [--repeats 15] [--profile 30]

One model, DenseNet-BC-100 on CIFAR-100 (10,000 x 100, ``../shared/realdata``;
``--rows``/``--classes`` synthetic logits when the file is absent), all eight
maps fitted by the page's fit job (:func:`app.services.fit.run_fits`, 5-fold
cross-fitting), which ends by computing the verdict and keeping it in the
shared store. Then a "web worker" (a :class:`~app.store.data_store.DataStore`
of its own on the same directory, as each gunicorn worker has) answers view
changes the way the view callback does: :func:`app.callbacks.view.render`,
:func:`app.view_update.view_update` against the keys the page sent back, and
the JSON encoding of the answer (``to_json_plotly``, what Dash sends).

What is timed: CPU of the process (``time.process_time``) per view change, a
change of the bin count (each call a new count, so nothing is read back from
the metrics' memo); median of ``--repeats``, interleaved call by call with
the reference, the same view change without the verdict section
(``view_verdicts`` answering nothing), timed in the same run. Copied into
an older tree (``git archive``), it times that tree the same way (A/B). Also: the fit
job's time and the verdict's share of it, and what a worker paid before the
verdict was stored (computed in the view on a miss, as each worker's memo
did).

``--profile N``: cProfile of N view changes with the verdict, the functions
by cumulative time, and every function whose name says it resamples
(bootstrap, resampled_means, ...) or makes the verdict (choose_map): there
must be none.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_dashboard import REALDATA, synthetic_logits  # noqa: E402

MAPS = ["histogram", "isotonic", "platt", "beta", "temperature", "vector", "matrix", "dirichlet"]
NPZ = REALDATA / "densenet-bc-100-cifar-100.npz"
#: Functions that must not run in a view callback: resampling loops and the verdict itself.
FORBIDDEN = re.compile(r"bootstrap|resampl|paired_interval|choose_map|heldout_intervals")
#: The view callback's target CPU per view change (issue 28).
TARGET_MS = 30.0


def _context(directory: Path | None = None):
    """A context whose store lives in ``directory`` (a new folder when None), and a session."""
    from app.config import AppConfig
    from app.context import AppContext
    from app.session import SessionManager, new_session_id
    from app.store.data_store import DataStore

    directory = directory or Path(tempfile.mkdtemp(prefix="bench-verdict-"))
    config = AppConfig(cache_dir=directory, secret_key="bench-secret-key-0123456789")
    store = DataStore(directory / "store", memory_bytes=4 << 30, size_limit_bytes=16 << 30)
    return AppContext(config, store, SessionManager(config.secret_key, 3600)), new_session_id()


def _model(args):
    """The benchmark's predictions: the DenseNet file, or synthetic logits."""
    from calibration_core import Predictions

    if args.npz.exists():
        data = np.load(args.npz)
        probs = data["predictions"].astype(np.float64)
        probs /= probs.sum(axis=1, keepdims=True)
        return Predictions.from_probs(probs, data["ground_truth"], name=args.npz.stem)
    print(f"{args.npz} not found: synthetic logits {args.rows:,} x {args.classes}")
    z, y = synthetic_logits(args.rows, args.classes)
    return Predictions.from_logits(z, y, name="synthetic")


class Worker:
    """One web worker's answers to view changes, the way the view callback makes them."""

    def __init__(self, ctx, sid, handle: str) -> None:
        self.ctx, self.sid, self.handle = ctx, sid, handle
        self.shown: dict | None = None

    def change(self, n_bins: int, verdict: bool = True) -> float:
        """CPU ms of one view change to ``n_bins`` bins (with or without the verdict)."""
        from plotly.io.json import to_json_plotly

        from app.callbacks import view
        from app.settings import RawSettings
        from app.view_update import view_update

        raw = RawSettings([self.handle], MAPS, "folds", 5, n_bins=n_bins)
        real = view.view_verdicts
        if not verdict:
            view.view_verdicts = lambda *a, **k: []
        start = time.process_time()
        try:
            out = view.render(self.ctx, self.sid, raw)
            children, styles, parts, self.shown = view_update(self.shown, out)
            to_json_plotly([children, styles, *parts, self.shown])
        finally:
            view.view_verdicts = real
        return (time.process_time() - start) * 1000


def fit_all(ctx, sid, handle: str) -> tuple[float, float]:
    """Seconds of the fit job (all maps, then the verdict), and of its verdict alone."""
    import app.services.fit as fit_module

    spent = []
    real = getattr(fit_module, "store_verdicts", None)  # None: a tree before issue 28
    if real is None:
        start = time.perf_counter()
        fit_module.run_fits(ctx, sid, [handle], MAPS, "folds", 5, 0.5, lambda _: None)
        return time.perf_counter() - start, float("nan")

    def timed(*args, **kwargs):
        start = time.perf_counter()
        real(*args, **kwargs)
        spent.append(time.perf_counter() - start)

    fit_module.store_verdicts = timed
    try:
        start = time.perf_counter()
        state = fit_module.run_fits(ctx, sid, [handle], MAPS, "folds", 5, 0.5, lambda _: None)
        total = time.perf_counter() - start
    finally:
        fit_module.store_verdicts = real
    if state.get("error"):
        raise SystemExit(f"the fit failed: {state['error']}")
    return total, sum(spent)


def cold_verdict_ms(ctx, sid, handle: str, repeats: int) -> list[float]:
    """CPU ms of a view change that computes the verdict (the shared result and memo missed)."""
    out = []
    for i in range(repeats):
        for key in [k for k in ctx.store.cache.iterkeys() if str(k).startswith("result:")]:
            ctx.store.cache.delete(key)
        worker_ctx, _ = _context(ctx.config.cache_dir)
        worker = Worker(worker_ctx, sid, handle)
        worker.change(60 + i, verdict=False)  # predictions into memory
        out.append(worker.change(80 + i))
        worker_ctx.store.close()
    return out


def profile(worker: Worker, changes: int, first_bins: int) -> None:
    """cProfile of ``changes`` view changes: top functions and the forbidden ones."""
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(changes):
        worker.change(first_bins + i)
    profiler.disable()
    stats = pstats.Stats(profiler)
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(14)
    print(f"\n== cProfile of {changes} view changes with the verdict (cumulative) ==")
    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:4000])
    mine = io.StringIO()
    pstats.Stats(profiler, stream=mine).sort_stats("cumulative").print_stats(r"verdict\.py")
    rows = [line for line in mine.getvalue().splitlines() if "app/verdict.py" in line]
    print("the verdict's part (app/verdict.py):\n" + "\n".join(rows[:8]))
    names = {f"{path}:{name}" for (path, _, name) in stats.stats}
    forbidden = sorted(n for n in names if FORBIDDEN.search(n.rsplit(":", 1)[1]))
    print(f"functions matching {FORBIDDEN.pattern!r}: {forbidden or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npz", type=Path, default=NPZ)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--cold", type=int, default=3, help="view changes that compute it")
    parser.add_argument("--profile", type=int, default=30, help="view changes profiled (0: none)")
    args = parser.parse_args()

    ctx, sid = _context()
    pred = _model(args)
    (info,) = ctx.store.add_models(sid, [pred], source=f"{pred.name}.npz")
    total, verdict_s = fit_all(ctx, sid, info.handle)
    print(f"{pred.name}: {pred.n_samples:,} x {pred.n_classes}, maps: {', '.join(MAPS)}")
    print(f"fit job {total:.1f} s, of which the verdict {verdict_s:.2f} s")

    worker_ctx, _ = _context(ctx.config.cache_dir)  # another worker: its own memo
    worker = Worker(worker_ctx, sid, info.handle)
    first = worker.change(2)  # predictions from the disk, the stored verdict read once
    with_verdict, without = [], []
    for i in range(args.repeats):  # interleaved, each call a new bin count
        with_verdict.append(worker.change(3 + 2 * i))
        without.append(worker.change(4 + 2 * i, verdict=False))
    cold = cold_verdict_ms(ctx, sid, info.handle, args.cold)
    median, reference = statistics.median(with_verdict), statistics.median(without)
    print("\n== web worker CPU per view change (bins), process time ==")
    print(f"{'case':58s} {'median ms':>10s} {'ratio':>6s}")
    print(f"{'with the verdict on the page (stored verdict read)':58s} {median:10.1f} "
          f"{median / reference:6.2f}")  # fmt: skip
    print(f"{'reference: the same change without the verdict section':58s} {reference:10.1f} "
          f"{1.0:6.2f}")  # fmt: skip
    print(f"{'first change in a fresh worker (data and verdict from disk)':58s} {first:10.1f} "
          f"{first / reference:6.2f}")  # fmt: skip
    cold_median = statistics.median(cold)
    print(f"{'verdict computed in the view (a miss: before item 4)':58s} {cold_median:10.1f} "
          f"{cold_median / reference:6.2f}")  # fmt: skip
    verdict = "met" if median < TARGET_MS else "NOT met"
    print(f"target < {TARGET_MS:.0f} ms CPU per view change with the verdict: {verdict}")
    if args.profile:
        profile(worker, args.profile, 3 + 2 * args.repeats)
    worker_ctx.store.close()
    ctx.store.close()
    shutil.rmtree(ctx.config.cache_dir, ignore_errors=True)  # 0.25 GB of fitted predictions


if __name__ == "__main__":
    main()
