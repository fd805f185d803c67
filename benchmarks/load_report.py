"""Results and printed report of ``benchmarks/load_test.py``.

Machine description, latency percentiles per kind of interaction, the
per-session isolation rows of the JSON results, and the text report printed
at the end of a run.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np


def machine_info() -> dict:
    """CPU count and model, load average now, Python, platform and memory of this machine."""
    return {
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def latency_summary(latency: dict[str, list[float]]) -> dict:
    """Count, p50, p95 and max (ms) of each kind of interaction, sorted by kind."""
    return {
        kind: {
            "count": len(v),
            "p50": round(percentile(v, 50) * 1000, 1),
            "p95": round(percentile(v, 95) * 1000, 1),
            "max": round(max(v) * 1000, 1),
        }
        for kind, v in sorted(latency.items())
    }


def isolation_rows(runners) -> list[dict]:
    """Each session's isolation evidence (without the raw observed set) and its step count."""
    rows = []
    for r in runners:
        d = asdict(r.iso)
        d.pop("observed")
        d["foreign_names"] = sorted(set(d["foreign_names"]))
        d["steps"] = r.steps
        rows.append(d)
    return rows


def web_cpu(phases: dict, changes: int) -> dict:
    """The web workers' CPU during the loop: seconds, and milliseconds per setting change.

    Everything the workers did in the loop is counted (the changes' callbacks, and
    the fits' planners and polls), so the figure per change is an upper bound of
    a view change's CPU; a worker that restarted in the loop is not counted.
    """
    start = phases.get("loop start (files uploaded, maps fitted)", {}).get("cpu_s_total")
    end = phases.get("loop end", {}).get("cpu_s_total")
    if start is None or end is None or changes <= 0:
        return {"seconds": None, "ms_per_change": None}
    seconds = end - start
    return {"seconds": round(seconds, 1), "ms_per_change": round(1000 * seconds / changes, 2)}


def print_report(res: dict) -> None:
    cfg = res["config"]
    print(
        f"\n== {cfg['sessions']} sessions, {res['loop_seconds']:.0f} s loop, "
        f"{res['interactions']} changes ({res['interactions_per_second']}/s), "
        f"gunicorn {cfg['workers']}x{cfg['threads']} ==",
    )
    print(f"{'interaction':30s} {'count':>6s} {'p50 ms':>9s} {'p95 ms':>9s} {'max ms':>9s}")
    for kind, row in res["latency_ms"].items():
        print(f"{kind:30s} {row['count']:6d} {row['p50']:9.1f} {row['p95']:9.1f} {row['max']:9.1f}")
    mem = res["memory"]
    print("\nworker memory (MB, all workers)      RSS     anon")
    for phase, m in mem["phases"].items():
        print(f"  {phase:34s} {m['rss_mb_total']:7.1f}  {m['anon_mb_total']:7.1f}")
    print(f"  peak RSS per worker: {mem['peak_rss_mb_per_worker']}")
    cpu = res.get("web_cpu") or {}
    if cpu.get("seconds") is not None:
        print(
            f"web workers' CPU in the loop: {cpu['seconds']:.1f} s, "
            f"{cpu['ms_per_change']:.1f} ms per setting change (all their requests counted)"
        )
    print(f"  worker pids seen: {len(mem['worker_pids_seen'])} (restarts add pids)")
    print("\nsession  model            views  values  max rel diff  mismatches  foreign  probes")
    for d in res["isolation"]:
        ok = d["expected_digest"] == d["observed_digest"]
        print(
            f"  {d['index']:5d}  {d['name']:16s} {d['views_checked']:5d}  "
            f"{d['values_checked']:6d}  "
            f"{d['max_rel_diff']:12.1e}  {d['mismatches']:10d}  {len(d['foreign_names']):7d}  "
            f"{d['probe_foreign_handle']}/{d['probe_forged_result']}  "
            f"checksum {d['observed_digest']} {'==' if ok else '!='} {d['expected_digest']}"
        )
    log = res["server_log"]
    print(
        f"\nerrors: {res['errors']['count']} client-side, {log['http_5xx']} HTTP 5xx, "
        f"{log['tracebacks']} tracebacks, {log['worker_timeouts']} worker timeouts "
        f"(server log: {log['requests_logged']} requests); "
        f"leaks: {res['leaks']}; mismatches: {res['mismatches']}"
    )
    for e in res["errors"]["examples"][:10]:
        print("  ", e)
