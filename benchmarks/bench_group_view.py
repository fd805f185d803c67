"""The page's "Per group" section on N x K predictions with G groups, over HTTP (issue 19).

    python benchmarks/bench_group_view.py [--rows 1000000] [--classes 10] [--groups 100]
                                          [--repeats 5] [--port 8095] [--job]

Starts ``calibration-dashboard serve`` on a fresh ``CACHE_DIR``, uploads the
synthetic predictions of ``bench_slices.py`` (a text ``group`` column of G
values) as a Parquet file through ``/api/upload`` (as the page does), then,
as one browser tab (:mod:`benchmarks.dash_client`):

* ``picker``: the group picker's options (the first selected model's columns
  worth grouping by), first call (reads the columns) and cached;
* ``section, first``: the section's callback right after the column is picked
  (group index of the column, one grouped pass, table, small multiples);
* ``section, setting change``: the same callback on a setting change (bins
  15 -> 20 and back; everything is computed again);
* ``intervals job`` (``--job``): the background job (200 bootstrap
  resamples within groups and the homogeneity test), start to answer.

Times are the HTTP round trip seen by the client (server time, JSON and
transfer), median of ``repeats``, and the server process's CPU time over the
same calls (Linux ``/proc/<pid>/stat``; steadier than wall time on a shared
machine; the job runs in a forked child, so it has no CPU figure here).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_slices import synthetic
from benchmarks.dash_client import DashSession


def parquet_bytes(pred) -> bytes:
    """The predictions as a Parquet file: ``p_<class>`` columns, ``label``, ``group``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {f"p_{j}": pred.probs[:, j] for j in range(pred.n_classes)}
    columns["label"] = pred.labels.astype(str)
    columns["group"] = pa.array(pred.extra["group"].astype(str)).dictionary_encode()
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def serve(port: int, cache: str) -> subprocess.Popen:
    env = {**os.environ, "CACHE_DIR": cache, "MAX_UPLOAD_MB": "400", "SESSION_QUOTA_MB": "4096",
           "CACHE_SIZE_LIMIT_MB": "8192"}  # fmt: skip
    cmd = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            DashSession(url).get("/healthz")
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("the server did not start")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_gate(tab: DashSession) -> None:
    """Write what the browser-side gate (``calibration.groupGate``) writes for the tab's values:
    the section's settings, and the same as the jobs' request."""
    from app.callbacks.controls import GROUP_FIELDS, SETTING_PROPS

    gate = {"values": [tab.values.get("{}.{}".format(*SETTING_PROPS[f])) for f in GROUP_FIELDS]}
    tab.values["group-gate.data"] = gate
    tab.values["group-request.data"] = gate


def median_call(tab: DashSession, writes: str, changed: list[str], repeats: int, vary=None):
    """Median round trip and median server CPU seconds of ``repeats`` calls, and every trip.

    Calls of the section (``group-section.style``) go through the gate and must
    answer with a table (not a note, nor nothing).
    """
    times, cpu = [], []
    for i in range(repeats):
        if vary is not None:
            vary(i)
        if writes == "group-section.style":
            write_gate(tab)
            changed = ["group-gate.data"]
        before = cpu_seconds(tab.server_pid)
        out, seconds = tab.call(writes, changed)
        cpu.append(cpu_seconds(tab.server_pid) - before)
        times.append(seconds)
        if writes == "group-section.style" and not out.get("group-table.children"):
            raise RuntimeError(f"the section drew no table: {out}")
    return statistics.median(times), statistics.median(cpu), times


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--port", type=int, default=8095)
    parser.add_argument("--job", action="store_true", help="also time the intervals job")
    args = parser.parse_args(argv)
    data = parquet_bytes(synthetic(args.rows, args.classes, args.groups))
    with tempfile.TemporaryDirectory() as cache:
        proc = serve(args.port, cache)
        try:
            run(args, data, cache, proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)


def run(args, data: bytes, cache: str, pid: int) -> None:
    tab = DashSession(f"http://127.0.0.1:{args.port}")
    tab.server_pid = pid
    tab.load_page()
    path = Path(cache) / "groups.parquet"
    path.write_bytes(data)
    t = time.perf_counter()
    resp = tab.upload(path)
    upload_s = time.perf_counter() - t
    handle = resp.json()["models"][0]["handle"]
    tab.values["model-select.value"] = [handle]
    print(f"N = {args.rows:,}, K = {args.classes}, G = {args.groups}; upload {upload_s:.1f} s")
    print("| step | median s | server CPU s | all s |\n|---|---|---|---|")
    rows = [("picker options, first call", *median_call(
        tab, "group-select.options", ["model-select.value"], 1))]  # fmt: skip
    rows.append(("picker options, cached", *median_call(
        tab, "group-select.options", ["model-select.value"], args.repeats)))  # fmt: skip
    tab.values["group-select.value"] = "group"
    rows.append(("section, first (group index + pass + table + diagrams)", *median_call(
        tab, "group-section.style", ["group-select.value"], 1)))  # fmt: skip

    def vary(i):
        tab.values["n-bins.value"] = 20 if i % 2 == 0 else 15

    rows.append(("section, setting change (bins 15 <-> 20)", *median_call(
        tab, "group-section.style", ["n-bins.value"], args.repeats, vary)))  # fmt: skip
    for name, median, cpu, all_s in rows:
        print(f"| {name} | {median:.3f} | {cpu:.3f} | {', '.join(f'{s:.2f}' for s in all_s)} |")
    if args.job:
        tab.values["n-bins.value"] = 15
        write_gate(tab)
        _, job_s, _ = tab.call_background("group-done.data", ["group-request.data"])
        print(f"| intervals job (200 resamples + test), start to answer | {job_s:.1f} | | |")


if __name__ == "__main__":
    main()
