"""Smoke run of the load test: gunicorn with 2 workers, 3 concurrent sessions, a few seconds.

Runs ``benchmarks/load_test.py --quick`` as a user would and reads its JSON:
no failed request or callback, no 5xx or traceback in the server log, every
metrics row equal to what ``calibration_core`` computes locally from the
session's own file, and no session ever shown another session's model (also
when it sends another session's model handle or a forged upload result).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "load_test.py"


@pytest.mark.slow
def test_quick_load_run_has_no_error_and_no_cross_session_leak(tmp_path):
    out = tmp_path / "load.json"
    cmd = [sys.executable, str(SCRIPT), "--quick", "--rows", "20000", "--seconds", "8"]
    cmd += ["--request-timeout", "60"]  # a hung background fit fails the run within a minute
    proc = subprocess.run(
        [*cmd, "--json", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    report = proc.stdout[-4000:] + proc.stderr[-3000:]
    assert out.is_file(), f"the load test wrote no results (exit {proc.returncode}):\n{report}"
    res = json.loads(out.read_text())

    assert res["config"]["sessions"] == 3 and res["config"]["workers"] == 2
    assert res["errors"]["count"] == 0, res["errors"]["examples"]
    assert res["server_log"]["http_5xx"] == 0, report
    assert res["server_log"]["tracebacks"] == 0, report
    assert res["server_log"]["worker_timeouts"] == 0, report
    assert res["leaks"] == 0, report
    assert res["mismatches"] == 0, report
    assert len(res["isolation"]) == 3
    names = {s["name"] for s in res["isolation"]}
    assert len(names) == 3, names
    for s in res["isolation"]:
        assert s["views_checked"] >= 3, s
        assert s["values_checked"] >= 3 * 6, s
        assert s["foreign_names"] == [], s
        assert s["probe_foreign_handle"] == "refused", s
        assert s["probe_forged_result"] == "refused", s
        assert s["observed_digest"] == s["expected_digest"], s
    lat = res["latency_ms"]
    for kind in ("upload (20,000-row CSV)", "after upload", "fit (planner + background, polled)"):
        assert lat.get(kind, {}).get("count", 0) >= 3, (kind, sorted(lat))
    assert res["interactions"] >= 3
    # No worker died or was replaced during the run.
    assert len(res["memory"]["worker_pids_seen"]) == 2, res["memory"]["worker_pids_seen"]
    assert proc.returncode == 0, report
