"""Cost of the verdict (paired bootstrap, 1000 resamples) in the view callback (issue 14).

    python benchmarks/bench_verdict.py [--rows 100000] [--classes 10] [--repeats 5]

Drives :func:`app.callbacks.view.render` on the demo's default view and on N x K
synthetic predictions, with temperature and isotonic fitted (5-fold), and prints
the median server time of: a redraw without the verdict; the first redraw after
the fits (the bootstrap runs); a redraw with the verdict cached; a re-binning
(the ECE alongside is recomputed, the bootstrap is not).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_dashboard import synthetic_logits  # noqa: E402

MAPS = ["temperature", "isotonic"]


def _ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def _context():
    from app.config import AppConfig
    from app.context import AppContext
    from app.session import SessionManager, new_session_id
    from app.store.data_store import DataStore

    tmp = Path(tempfile.mkdtemp(prefix="bench-verdict-"))
    config = AppConfig(cache_dir=tmp, secret_key="bench-secret-key-0123456789")
    store = DataStore(tmp / "store", memory_bytes=4 << 30, size_limit_bytes=16 << 30)
    return AppContext(config, store, SessionManager(config.secret_key, 3600)), new_session_id()


def bench_case(label: str, ctx, sid, handles: list[str], repeats: int) -> None:
    """Print the render times of one view with and without the verdict."""
    from app.callbacks import view
    from app.callbacks.fit import run_fits
    from app.settings import RawSettings

    run_fits(ctx, sid, handles, MAPS, "folds", 5, 0.5, lambda _: None)
    raw = RawSettings(handles, MAPS, "folds", 5)
    real = view.view_verdicts
    view.view_verdicts = lambda *a, **k: []
    view.render(ctx, sid, raw)  # predictions into memory, metrics into the memo
    without = [_ms(lambda: view.render(ctx, sid, raw)) for _ in range(repeats)]
    view.view_verdicts = real
    first = _ms(lambda: view.render(ctx, sid, raw))
    cached = [_ms(lambda: view.render(ctx, sid, raw)) for _ in range(repeats)]
    rebin = [
        _ms(lambda n=n: view.render(ctx, sid, RawSettings(handles, MAPS, "folds", 5, n_bins=n)))
        for n in range(20, 20 + repeats)
    ]
    print(
        f"{label:28s} without {statistics.median(without):7.1f} ms | first with verdict "
        f"{first:7.1f} ms | cached {statistics.median(cached):7.1f} ms | "
        f"re-binned {statistics.median(rebin):7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from app.options import default_selection
    from calibration_core import Predictions

    ctx, sid = _context()
    demo = default_selection(ctx.store.demo_models())
    bench_case(f"demo ({len(demo)} models)", ctx, sid, list(demo), args.repeats)
    z, y = synthetic_logits(args.rows, args.classes)
    (info,) = ctx.store.add_models(sid, [Predictions.from_logits(z, y, name="bench")], "b.csv")
    bench_case(f"{args.rows:,} x {args.classes}", ctx, sid, [info.handle], args.repeats)


if __name__ == "__main__":
    main()
