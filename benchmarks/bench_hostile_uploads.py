"""Hostile uploads (issue 13): time, peak memory and store files of one upload each.

Every case runs in its own subprocess, which builds the app (``MAX_UPLOAD_MB``
200 unless ``--limit-mb``), uploads one good model, then posts the hostile
file through Flask's test client and reports: the answer (models loaded or
the error), the wall time of the hostile request, the process's peak RSS
(``ru_maxrss``) before and after it, and the files the request added to the
store directory. ``--cap-gb`` puts the subprocess under ``RLIMIT_AS`` so that
a bomb that is not refused fails there instead of taking the machine's memory.

Cases:

* ``parquet-48k``: a zstd Parquet of 2,000 rows whose ``model`` strings are
  distinct 1 MB strings (plain encoding), plus ``label`` and ``score``;
* ``parquet-dict``: 20,000 rows all pointing at one 1 MB dictionary entry;
* ``classes-24k``: an npz of 24,000 classes x 60 rows;
* ``classes-1k``: an npz of 1,000 classes x 600 rows, then one view.

``python benchmarks/bench_hostile_uploads.py [--cap-gb 8] [--max-classes N] [cases...]``
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GOOD = b"p_a,p_b,label\n0.2,0.8,b\n0.7,0.3,a\n0.4,0.6,b\n0.9,0.1,a\n"


def parquet_strings(rows: int, distinct: bool) -> bytes:
    """``model`` strings of 1 MB (distinct, or all one dictionary entry), ``label``, ``score``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = "x" * (1 << 20)
    if distinct:
        model = pa.array([f"{i:06d}" + big for i in range(rows)])
    else:
        model = pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(rows, dtype=np.int32)), pa.array([big])
        )
    labels = np.arange(rows) % 2
    table = pa.table({"model": model, "label": labels, "score": np.full(rows, 0.5)})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def npz_classes(classes: int, rows: int) -> bytes:
    """Random probability rows over ``classes`` classes with labels covering them."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(rows, classes)).astype(np.float32)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, classes, rows)
    buf = io.BytesIO()
    np.savez(buf, probs=probs.astype(np.float64), labels=labels)
    return buf.getvalue()


CASES = {
    "parquet-48k": ("bomb48k.parquet", lambda: parquet_strings(2_000, distinct=True)),
    "parquet-dict": ("bomb-dict.parquet", lambda: parquet_strings(20_000, distinct=False)),
    "classes-24k": ("classes24k.npz", lambda: npz_classes(24_000, 60)),
    "classes-1k": ("classes1k.npz", lambda: npz_classes(1_000, 600)),
}


def _files(root: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_case(case: str, path: Path, limit_mb: int, max_classes: int) -> dict:
    """In this process: build the app, upload GOOD, then the file at ``path`` (and view it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from hosting.conftest import DashTab

    from app.config import AppConfig
    from app.factory import create_app

    name = CASES[case][0]
    content = path.read_bytes()
    with tempfile.TemporaryDirectory() as cache:
        config = AppConfig(
            cache_dir=Path(cache), secret_key="hostile-bench-secret-0123456789",
            max_upload_mb=limit_mb, max_classes=max_classes,
        )  # fmt: skip
        app = create_app(config)
        tab = DashTab(flask_client=app.server.test_client()).load()
        tab.upload("good.csv", GOOD)
        files0, rss0 = _files(Path(cache)), _rss_mb()
        t0 = time.perf_counter()
        status, body = tab.upload(name, content)
        seconds = time.perf_counter() - t0
        out = {
            "case": case,
            "bytes": len(content),
            "status": status,
            "seconds": round(seconds, 2),
            "rss_before_mb": round(rss0),
            "rss_peak_mb": round(_rss_mb()),
            "files_added": _files(Path(cache)) - files0,
            "models": [(m["name"][:20], m["n_classes"]) for m in body.get("models", [])],
            "error": (body.get("error") or "")[:300],
        }
        if body.get("models"):
            handle = body["models"][0]["handle"]
            t0 = time.perf_counter()
            view = tab.view([handle], maps=[])
            out["view_seconds"] = round(time.perf_counter() - t0, 2)
            out["view_ok"] = bool(view.get("reliability-grid.children"))
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", default=list(CASES))
    parser.add_argument("--limit-mb", type=int, default=200)
    parser.add_argument("--max-classes", type=int, default=1000, help="MAX_CLASSES")
    parser.add_argument("--cap-gb", type=float, default=0.0, help="RLIMIT_AS of each case")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--write", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        Path(args.path).write_bytes(CASES[args.write][1]())
        return
    if args.child:
        if args.cap_gb:
            cap = int(args.cap_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        try:
            print(
                json.dumps(run_case(args.child, Path(args.path), args.limit_mb, args.max_classes))
            )
        except MemoryError:
            print(
                json.dumps({"case": args.child, "error": "MemoryError", "rss_peak_mb": _rss_mb()})
            )
        return
    for case in args.cases:
        with tempfile.NamedTemporaryFile(suffix=CASES[case][0]) as fh:
            # Built here, in a process of its own, so the child's peak RSS is the upload's.
            subprocess.run(
                [sys.executable, __file__, "--write", case, "--path", fh.name], check=True
            )
            t0 = time.perf_counter()
            cmd = [sys.executable, __file__, "--child", case, "--path", fh.name]
            cmd += ["--limit-mb", str(args.limit_mb), "--cap-gb", str(args.cap_gb)]
            cmd += ["--max-classes", str(args.max_classes)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        lines = proc.stdout.strip().splitlines()
        result = json.loads(lines[-1]) if lines else {"case": case, "stderr": proc.stderr[-800:]}
        result["process_seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
