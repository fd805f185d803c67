"""A worker's memory through 50 sessions of CIFAR-100 and their expiry (issue 30).

``python benchmarks/bench_store_memory.py [--sessions 50] [--ttl 90] [--memory-mb 1024]``

One process builds the app as a gunicorn worker does (``create_app``, no
``max_requests`` recycling), then each of ``--sessions`` sessions: asks for the
page (a session cookie), stores a CIFAR-100 model (10,000 x 100: DenseNet's
predictions from ``../shared/realdata`` when present, else random ones) as an
upload does, and loads its page with the model selected (the first view drawn,
as a browser's first visit). RSS is read at boot (after the demo's page), after
the sessions, and then every 10 s until every session has expired and the
store's sweeper has run (``SESSION_TTL_SECONDS=--ttl``). A second part times the
store's read path under ``cProfile`` and counts the SQL statements it runs
(sqlite's trace callback): no ``BEGIN``, ``INSERT``, ``UPDATE`` or ``DELETE``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
import time
from pathlib import Path

import numpy as np

from app.config import AppConfig
from app.factory import create_app, finish_setup
from app.session import COOKIE_NAME
from app.store.data_store import DataStore
from calibration_core import Predictions

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
CIFAR = REALDATA / "densenet-bc-100-cifar-100.npz"
WRITES = ("BEGIN", "INSERT", "UPDATE", "DELETE", "REPLACE", "COMMIT")


def rss_mb() -> float:
    """This process's resident set size (MB), from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def cifar_model(seed: int) -> Predictions:
    """A 10,000 x 100 model: DenseNet's CIFAR-100 predictions if present, else random."""
    if CIFAR.is_file():
        data = np.load(CIFAR)
        probs, labels = data["predictions"].astype(np.float64), data["ground_truth"]
    else:
        rng = np.random.default_rng(seed)
        probs = rng.dirichlet(np.full(100, 0.05), size=10_000)
        labels = rng.integers(0, 100, 10_000)
    return Predictions.from_probs(probs, labels, name=f"cifar-{seed}")


def visit(client, ctx, seed: int) -> str:
    """One session: a cookie, an upload of a CIFAR-100 model, its page drawn."""
    client.get("/_dash-layout")
    sid = ctx.sessions.session_from_cookies({COOKIE_NAME: client.get_cookie(COOKIE_NAME).value})
    (info,) = ctx.store.add_models(sid, [cifar_model(seed)], "cifar100.npz")
    page = f"http://localhost/?models={info.handle}&maps=uncalibrated"
    response = client.get("/_dash-layout", headers={"Referer": page})
    assert response.status_code == 200, response.status_code
    return info.handle


def profile_reads(ctx, handle: str, sid: str) -> tuple[list[str], int, str]:
    """The SQL statements, diskcache's write transactions (``Cache._transact`` calls) and the
    top of the profile of 200 reads of a session's data by another worker (its own store on
    the same directory, no memory cache: disk reads)."""
    store = DataStore(ctx.store.directory.parent, memory_bytes=0, sweep_seconds=0)
    seen: list[str] = []
    store.cache._con.set_trace_callback(seen.append)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(200):
        store.uploaded_models(sid)
        store.resolve(sid, handle)
        store.predictions(handle)
    profiler.disable()
    store.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    transactions = sum(
        calls for (_, _, name), (calls, *_rest) in stats.stats.items() if name == "_transact"
    )
    stats.sort_stats("cumulative").print_stats(12)
    return seen, transactions, out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--ttl", type=int, default=90, help="SESSION_TTL_SECONDS")
    parser.add_argument("--memory-mb", type=int, default=1024, help="MEMORY_CACHE_MB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-store-memory-") as tmp:
        config = AppConfig(
            cache_dir=Path(tmp),
            session_ttl_seconds=args.ttl,
            memory_cache_mb=args.memory_mb,
            cache_size_limit_mb=16_384,
            session_quota_mb=4096,
        )
        dash_app = create_app(config)  # as app.wsgi builds a worker's app
        finish_setup(dash_app)
        ctx = dash_app.server.extensions["calibration_dashboard"]
        ctx.warm_up.run()
        client = dash_app.server.test_client()
        client.get("/_dash-layout")  # the demo's page
        boot = rss_mb()
        print(f"data: {'DenseNet CIFAR-100' if CIFAR.is_file() else 'random 10,000 x 100'}")
        print(f"RSS at boot: {boot:.0f} MB")
        start = time.monotonic()
        handles = []
        for i in range(args.sessions):
            client.delete_cookie(COOKIE_NAME)
            handles.append(visit(client, ctx, i))
        loaded = rss_mb()
        in_memory = len(ctx.store.memory_handles())
        print(
            f"RSS after {args.sessions} sessions: {loaded:.0f} MB "
            f"({time.monotonic() - start:.0f} s; {in_memory} models in memory)"
        )
        sid = ctx.sessions.session_from_cookies({COOKIE_NAME: client.get_cookie(COOKIE_NAME).value})
        statements, transactions, profile = profile_reads(ctx, handles[-1], sid)
        writes = [s for s in statements if s.lstrip().upper().startswith(WRITES)]
        print(
            f"read path (200 x uploaded_models, resolve, predictions from disk): "
            f"{len(statements)} SQL statements, {len(writes)} writes {writes[:3]}, "
            f"{transactions} diskcache write transactions (_transact)"
        )
        print(profile)
        last_use = time.monotonic()
        while True:
            time.sleep(10)
            now = rss_mb()
            waited = time.monotonic() - last_use
            print(f"  {waited:4.0f} s after the last use: RSS {now:.0f} MB", flush=True)
            gone = not ctx.store.memory_handles()
            if (gone and waited > args.ttl + 70) or waited > args.ttl + 300:
                break
        files = sum(1 for _ in ctx.store.directory.rglob("*.val"))
        print(
            f"RSS after expiry: {now:.0f} MB ({now - boot:+.0f} MB from boot); "
            f"{len(ctx.store.memory_handles())} models in memory; {files} value files on disk "
            f"(the demo's: 1)"
        )


if __name__ == "__main__":
    main()
