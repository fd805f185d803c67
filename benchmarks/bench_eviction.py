"""One client filling the store from fresh sessions, against users already working (issue 13).

``python benchmarks/bench_eviction.py [--tree PATH] [--bound-mb 256] [--quota-mb 64]``

Starts the dashboard under gunicorn (2 workers, production settings) from
``--tree`` (default: this checkout) with a small ``CACHE_SIZE_LIMIT_MB``;
five users upload a model each (20,000 x 3 CSV) and open its view; then an
"attacker" opens 12 fresh sessions (no cookie kept, as when dropping it)
and uploads, 4 at a time, two highly compressed Parquet files per session
(250,000 rows, a few kB, 23 MB once parsed with its sorted scores). Meanwhile
the store's size on disk (every file under ``CACHE_DIR/store``) is sampled
every 0.1 s. Reports: the largest size against the bound, the attacker's
uploads admitted and refused (and the first refusal's message), and how
many users still have their model, with what an evicted user's page says.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dash_client import DashSession  # noqa: E402

REPO = HERE.parent
USERS = 5
ATTACK_SESSIONS = 12
UPLOADS_PER_SESSION = 2
ATTACK_THREADS = 4


def user_csv(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(20_000, 3)) * 2
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    frame = pd.DataFrame({f"p_c{j}": p[:, j] for j in range(3)})
    frame["label"] = np.asarray(["c0", "c1", "c2"], dtype=object)[rng.integers(0, 3, 20_000)]
    frame.to_csv(path, index=False)
    return path


def attack_parquet(path: Path, rows: int) -> Path:
    """A binary-predictions Parquet that compresses to a few kB and parses to ``rows`` rows."""
    frame = pd.DataFrame(
        {
            "p_a": np.full(rows, 0.25),
            "p_b": np.full(rows, 0.75),
            "label": pd.Categorical(np.tile(["a", "b"], rows // 2)),
        }
    )
    frame.to_parquet(path, compression="zstd")
    return path


def store_bytes(cache_dir: Path) -> int:
    total = 0
    for root, _, files in os.walk(cache_dir / "store"):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def start(tree: Path, cache_dir: Path, port: int, bound_mb: int, quota_mb: int):
    env = {
        **os.environ,
        "APP_ENV": "production",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECRET_KEY": secrets.token_hex(32),
        "SESSION_COOKIE_SECURE": "0",
        "CACHE_DIR": str(cache_dir),
        "CACHE_SIZE_LIMIT_MB": str(bound_mb),
        "SESSION_QUOTA_MB": str(quota_mb),
        "PYTHONPATH": str(tree),
    }
    args = [sys.executable, "-m", "gunicorn", "--workers", "2", "--timeout", "300"]
    args += ["--bind", f"127.0.0.1:{port}", "app.wsgi:server"]
    log = open(cache_dir / "server.log", "wb")
    return subprocess.Popen(args, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)


def wait_healthy(url: str) -> None:
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            if DashSession(url).get("/healthz").status == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError("the server did not start")


def has_model(tab: DashSession, handle: str) -> tuple[bool, str]:
    """Whether the reloaded page still lists the model, and its message lines."""
    tab.load_page()
    layout = tab.get("/_dash-layout").body.decode()
    messages = [
        line
        for line in ("removed to make room", "could not be restored", "expired")
        if line in layout
    ]
    return handle in layout, ", ".join(messages) or "(nothing)"


def run(args) -> None:
    tree = Path(args.tree).resolve()
    work = Path(tempfile.mkdtemp(prefix="bench-eviction-"))
    cache_dir = work / "cache"
    cache_dir.mkdir()
    users_files = [user_csv(work / f"user{i}.csv", i) for i in range(USERS)]
    attack = attack_parquet(work / "attack.parquet", args.rows)
    port = 20000 + secrets.randbelow(20000)
    url = f"http://127.0.0.1:{port}"
    proc = start(tree, cache_dir, port, args.bound_mb, args.quota_mb)
    try:
        wait_healthy(url)
        users = []
        for path in users_files:
            tab = DashSession(url)
            tab.load_page()
            body = tab.upload(path).json()
            users.append((tab, body["models"][0]["handle"]))
        sizes, stop = [], threading.Event()

        def sample():
            while not stop.is_set():
                sizes.append(store_bytes(cache_dir))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample)
        sampler.start()

        def attacker(_):
            tab = DashSession(url)  # a fresh cookie jar: a new session
            tab.load_page()
            return [tab.upload(attack).json() for _ in range(UPLOADS_PER_SESSION)]

        t0 = time.perf_counter()
        with ThreadPoolExecutor(ATTACK_THREADS) as pool:
            answers = [a for batch in pool.map(attacker, range(ATTACK_SESSIONS)) for a in batch]
        seconds = time.perf_counter() - t0
        stop.set()
        sampler.join()
        sizes.append(store_bytes(cache_dir))
        admitted = sum(1 for a in answers if a.get("models"))
        refused = [a["errors"][0]["error"] for a in answers if a.get("errors")]
        kept = [has_model(tab, handle) for tab, handle in users]
        print(f"tree {tree}")
        print(
            f"attack parquet {attack.stat().st_size / 1024:.0f} kB, {args.rows:,} rows; "
            f"{ATTACK_SESSIONS} sessions x {UPLOADS_PER_SESSION} uploads in {seconds:.1f} s"
        )
        print(
            f"store on disk: max {max(sizes) / (1 << 20):.1f} MB, end "
            f"{sizes[-1] / (1 << 20):.1f} MB, bound {args.bound_mb} MB"
        )
        print(f"attacker uploads admitted {admitted}, refused {len(refused)}")
        if refused:
            print(f"first refusal: {refused[0]}")
        lost = [msg for ok, msg in kept if not ok]
        print(f"users keeping their model: {USERS - len(lost)} of {USERS}")
        for msg in lost:
            print(f"  an evicted user's reloaded page says: {msg}")
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=str(REPO), help="source tree to serve")
    parser.add_argument("--bound-mb", type=int, default=256)
    parser.add_argument("--quota-mb", type=int, default=64)
    parser.add_argument("--rows", type=int, default=250_000)
    run(parser.parse_args())


if __name__ == "__main__":
    main()
