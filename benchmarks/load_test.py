"""Load test of the team server: concurrent browser sessions against gunicorn on 127.0.0.1.

    python benchmarks/load_test.py                  # 20 sessions, 60 s, 4 workers
    python benchmarks/load_test.py --quick          # 3 sessions, 10 s, 2 workers (smoke)
    python benchmarks/load_test.py --json out.json  # also write the results
    python benchmarks/load_test.py --job-workers 2 --threads 4  # jobs in Celery (Redis)

What it does
------------
1. Writes one CSV per session (``--rows`` x ``--classes`` logits and a label;
   distinct seed and label temperature per session, a unique model name) and
   computes locally, with ``calibration_core`` alone, everything the
   dashboard should show for that file: for the uncalibrated predictions and
   each map fitted the way the server fits it (``compare_maps``, same folds
   and seed), ECE/MCE of every notion, classwise ECE, Brier score, log-loss
   and accuracy for every bin count and scheme the sessions will pick.
2. Starts ``python -m gunicorn --config python:app.gunicorn_conf app.wsgi:server``
   bound to 127.0.0.1 on a free port (``APP_ENV=production``, a generated
   ``SECRET_KEY``, a fresh ``CACHE_DIR``, ``WEB_CONCURRENCY`` workers) and
   loads the page once so that the demo's maps are fitted. With
   ``--job-workers N``, first ``redis-server`` and a Celery job worker pool of
   N processes, and gunicorn gets their ``REDIS_URL`` (jobs in Celery).
3. Runs the sessions concurrently (one thread each, its own cookie jar,
   talking HTTP like the browser: page, ``POST /api/upload``, Dash callbacks
   with the signatures of ``/_dash-dependencies``, the background fit
   polled like ``dash-renderer`` does). Each session uploads its file, keeps
   only its own model, then changes bins, scheme, band, level, notion, class
   and maps in a loop for ``--seconds`` (at most ``--max-steps`` changes),
   with ``--think`` seconds between changes. Finally it probes isolation:
   another session's model handle in the view, and a forged upload result
   naming another session's model.
4. Checks every answer: each metrics row must be the session's own model
   with the row count and metric values computed locally (relative tolerance
   1e-7); the model list must hold only the demo and the session's own model.
   Any other name is a leak. Counts errors (HTTP status, failed callbacks,
   error messages in the page, server 5xx and tracebacks in the log).
5. Samples the memory of every gunicorn worker (``/proc/<pid>/status``:
   VmRSS, RssAnon) once a second, and their CPU time at loop start and end
   (``/proc/<pid>/stat``), and prints p50/p95 latency per kind of
   interaction, errors, memory at boot, loop start and loop end, the web
   workers' CPU per setting change during the loop, and the
   per-session checksums. Exit status 1 when there is an error, a mismatch
   or a leak.

The parts live next to this script: ``load_plan.py`` (files and expected
numbers), ``load_server.py`` (gunicorn, memory, server log),
``load_session.py`` (the session threads and their checks) and
``load_report.py`` (results and the printed report).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.dash_client import DashSession  # noqa: E402
from benchmarks.load_plan import MAPS, prepare_session  # noqa: E402
from benchmarks.load_report import (  # noqa: E402
    isolation_rows,
    latency_summary,
    machine_info,
    print_report,
    web_cpu,
)
from benchmarks.load_server import (  # noqa: E402
    MemoryMonitor,
    server_log_problems,
    start_server,
    wait_healthy,
)
from benchmarks.load_session import SessionRunner, Stats  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=None, help="default 20 (quick: 3)")
    parser.add_argument("--seconds", type=float, default=None, help="loop time (60; quick 10)")
    parser.add_argument("--workers", type=int, default=None, help="WEB_CONCURRENCY (4; quick 2)")
    parser.add_argument("--threads", type=int, default=1, help="THREADS per worker")
    parser.add_argument(
        "--job-workers",
        type=int,
        default=0,
        help="run jobs in a Celery pool of this size with its own redis-server (REDIS_URL); "
        "0: Dash's diskcache manager, jobs forked by the web workers",
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--folds", type=int, default=None, help="default: the page's default")
    parser.add_argument("--think", type=float, default=0.5, help="mean pause between changes (s)")
    parser.add_argument("--max-steps", type=int, default=2000, help="changes per session at most")
    parser.add_argument("--request-timeout", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="3 sessions, 10 s, 2 workers")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    quick = {"sessions": 3, "seconds": 10.0, "workers": 2}
    full = {"sessions": 20, "seconds": 60.0, "workers": 4}
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def default_folds() -> int:
    from app.settings import RawSettings

    return int(RawSettings().folds)


def run(args) -> dict:
    folds = args.folds or default_folds()
    tmp = Path(tempfile.mkdtemp(prefix="load-test-"))
    data_dir = tmp / "data"
    data_dir.mkdir()
    machine = machine_info()
    print(
        f"{args.sessions} sessions x {args.rows:,} x {args.classes} files, {args.seconds:.0f} s "
        f"loop, gunicorn {args.workers} workers x {args.threads} threads, "
        f"{args.job_workers or 'no'} Celery job workers; "
        f"{machine['cpus']} CPUs, load average {machine['load_average_before'][0]}",
        flush=True,
    )
    # The server boots (imports, workers) while the files are prepared.
    server = start_server(
        tmp / "cache", args.workers, args.threads, tmp / "gunicorn.log", args.job_workers
    )
    monitor = MemoryMonitor(server)
    stats = Stats()
    runners: list[SessionRunner] = []
    try:
        t0 = time.perf_counter()
        with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
            futures = [
                pool.submit(
                    prepare_session, i, args.seed, args.rows, args.classes, str(data_dir), folds
                )
                for i in range(args.sessions)
            ]
            plans = [f.result() for f in futures]
        print(
            f"prepared {len(plans)} files and their expected metrics in "
            f"{time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        boot = wait_healthy(server)
        # One tab loads the page and runs its initial fit: the demo's maps get fitted once.
        warm = DashSession(server.url, timeout=args.request_timeout)
        page_seconds = warm.load_page()
        models = warm.values.get("models-store.data") or []
        demo_names = {m["name"] for m in models if isinstance(m, dict)}
        _, warm_fit, _ = warm.fit(["model-select.value"])
        print(
            f"gunicorn answering {boot:.1f} s after its start; first page {page_seconds:.1f} s; "
            f"demo maps fitted in {warm_fit:.1f} s; workers {server.worker_pids()}",
            flush=True,
        )
        monitor.mark("boot (after warm-up)")
        monitor.start()
        registry: dict[int, dict] = {}
        start_barrier = threading.Barrier(args.sessions + 1)
        probe_barrier = threading.Barrier(args.sessions)
        runners = [
            SessionRunner(
                p, server.url, stats, demo_names, registry, start_barrier, probe_barrier, args
            )
            for p in plans
        ]
        t_setup = time.perf_counter()
        for r in runners:
            r.start()
        try:
            start_barrier.wait(timeout=args.request_timeout * 2)
        except threading.BrokenBarrierError:
            stats.error("not every session finished its setup in time")
        setup_seconds = time.perf_counter() - t_setup
        monitor.mark("loop start (files uploaded, maps fitted)")
        print(f"setup of all sessions (upload + first fit): {setup_seconds:.1f} s", flush=True)
        t_loop = time.perf_counter()
        for r in runners:
            r.join(timeout=args.seconds + args.request_timeout * 3)
        loop_seconds = time.perf_counter() - t_loop
        monitor.mark("loop end")
        alive = [r.name for r in runners if r.is_alive()]
        if alive:
            stats.error(f"sessions still running at the end: {alive}")
    finally:
        monitor.stop()
        server.stop()
    log = server_log_problems(server.log_path)
    results = {
        "machine": machine,
        "config": {
            "sessions": args.sessions,
            "rows": args.rows,
            "classes": args.classes,
            "seconds": args.seconds,
            "workers": args.workers,
            "threads": args.threads,
            "job_workers": args.job_workers,
            "folds": folds,
            "think_seconds": args.think,
            "maps": list(MAPS),
        },
        "setup_seconds": round(setup_seconds, 1),
        "loop_seconds": round(loop_seconds, 1),
        "interactions": stats.interactions,
        "interactions_per_second": round(stats.interactions / max(loop_seconds, 1e-9), 2),
        "latency_ms": latency_summary(stats.latency),
        "errors": {"count": len(stats.errors), "examples": stats.errors[:20]},
        "server_log": log,
        "memory": monitor.summary(),
        "isolation": isolation_rows(runners),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    results["leaks"] = sum(len(d["foreign_names"]) for d in results["isolation"]) + sum(
        1
        for d in results["isolation"]
        if "LEAK" in d["probe_foreign_handle"] or "LEAK" in d["probe_forged_result"]
    )
    results["mismatches"] = sum(d["mismatches"] for d in results["isolation"])
    results["web_cpu"] = web_cpu(results["memory"]["phases"], stats.interactions)
    results["total_errors"] = len(stats.errors) + log["http_5xx"] + log["tracebacks"]
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        results["tmp"] = str(tmp)
    return results


def main(argv=None) -> int:
    args = parse_args(argv)
    results = run(args)
    print_report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
        print(f"results written to {args.json}")
    failed = results["total_errors"] or results["leaks"] or results["mismatches"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
