"""Load test of the team server: concurrent browser sessions against gunicorn on 127.0.0.1.

    python benchmarks/load_test.py                  # 20 sessions, 60 s, 4 workers
    python benchmarks/load_test.py --quick          # 3 sessions, 10 s, 2 workers (smoke)
    python benchmarks/load_test.py --json out.json  # also write the results

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
   loads the page once so that the demo's maps are fitted.
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
   VmRSS, RssAnon) once a second and prints p50/p95 latency per kind of
   interaction, errors, memory at boot, loop start and loop end, and the
   per-session checksums. Exit status 1 when there is an error, a mismatch
   or a leak.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.dash_client import DashHTTPError, DashSession, text_of  # noqa: E402

BIN_CHOICES = (5, 10, 15, 20, 30, 50, 100)
SCHEMES = ("width", "frequency")
SCHEME_WORDS = {"width": "equal-width", "frequency": "equal-frequency"}
BANDS = ("none", "wilson", "clopper-pearson", "jeffreys", "consistency")
LEVELS = (0.8, 0.9, 0.95, 0.99)
MAPS = ("temperature", "isotonic")
MAP_CHOICES = ((), ("temperature",), ("isotonic",), ("temperature", "isotonic"))
#: Kind of interaction -> weight in the loop.
INTERACTIONS = {"bins": 4, "scheme": 2, "band": 2, "level": 1, "notion": 2, "class": 2, "maps": 1}
METRIC_FIELDS = ("ece", "mce", "classwise_ece", "brier_score", "log_loss", "accuracy")
RTOL = 1e-7
ALL_CLASSES = "__all__"


# ------------------------------------------------------------------ session data
@dataclass
class SessionPlan:
    """One session's file and what the dashboard must show for it.

    ``expected[(variant, scheme, bins)]`` holds ``conf_ece``, ``conf_mce``
    (floats) and ``class_ece``, ``class_mce`` (lists of K floats);
    ``rules[variant]`` the binning-free metrics.
    """

    index: int
    name: str
    path: str
    n: int
    classes: list[str]
    file_sha256: str
    expected: dict = field(default_factory=dict)
    rules: dict = field(default_factory=dict)
    prepare_seconds: float = 0.0


def synthetic_file(path: Path, n: int, k: int, seed: int, temperature: float) -> None:
    """Logits (float32) and labels drawn from ``softmax(logits / temperature)``."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    z = (rng.normal(size=(n, k)) * 2.5).astype(np.float32)
    z[np.arange(n), rng.integers(0, k, n)] += np.float32(2.0)
    t = z.astype(np.float64) / temperature
    p = np.exp(t - t.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    labels = (p.cumsum(axis=1) < rng.random(n)[:, None]).sum(axis=1).clip(0, k - 1)
    columns = {f"logit_{j}": z[:, j] for j in range(k)}
    columns["label"] = labels.astype(np.int64)
    pacsv.write_csv(pa.table(columns), str(path))


def prepare_session(
    index: int, seed: int, rows: int, classes: int, folder: str, folds: int
) -> SessionPlan:
    """Write session ``index``'s file and compute its expected numbers (in a worker process)."""
    from calibration_core import (
        accuracy,
        brier_score,
        classwise_statistics,
        confidence_statistics,
        log_loss,
    )
    from calibration_core.compare import compare_maps
    from calibration_core.io import load_predictions

    start = time.perf_counter()
    name = f"load-{index:02d}-{secrets.token_hex(3)}"
    path = Path(folder) / f"{name}.csv"
    synthetic_file(path, rows, classes, seed * 1000 + index, temperature=0.6 + 0.15 * index)
    (pred,) = load_predictions(str(path))
    assert pred.name == name, (pred.name, name)
    variants = {"uncalibrated": pred}
    for m in MAPS:  # one map per call, as the server's background fit does
        comparison = compare_maps(pred, [m], folds=folds, seed=0)
        variants[m] = comparison.calibrated[m]
    plan = SessionPlan(
        index=index,
        name=name,
        path=str(path),
        n=pred.n_samples,
        classes=list(pred.class_names),
        file_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )
    for variant, p in variants.items():
        plan.rules[variant] = {
            "brier_score": brier_score(p.probs, p.labels),
            "log_loss": log_loss(p.probs, p.labels),
            "accuracy": accuracy(p.probs, p.labels),
            "n": p.n_samples,
        }
        for scheme in SCHEMES:
            for bins in BIN_CHOICES:
                conf = confidence_statistics(p.probs, p.labels, n_bins=bins, scheme=scheme)
                cw = classwise_statistics(p.probs, p.labels, n_bins=bins, scheme=scheme)
                plan.expected[(variant, scheme, bins)] = {
                    "conf_ece": float(conf.ece()),
                    "conf_mce": float(conf.mce()),
                    "class_ece": [float(v) for v in np.asarray(cw.ece())],
                    "class_mce": [float(v) for v in np.asarray(cw.mce())],
                }
    plan.prepare_seconds = time.perf_counter() - start
    return plan


def expected_row(plan: SessionPlan, variant: str, notion: str, class_value, scheme, bins) -> dict:
    """The metrics row the dashboard must show for one variant and setting."""
    e = plan.expected[(variant, scheme, bins)]
    if notion == "confidence":
        ece, mce = e["conf_ece"], e["conf_mce"]
    elif class_value in (None, "", ALL_CLASSES):
        ece, mce = float(np.mean(e["class_ece"])), float(np.max(e["class_mce"]))
    else:
        j = plan.classes.index(class_value)
        ece, mce = e["class_ece"][j], e["class_mce"][j]
    rules = plan.rules[variant]
    return {
        "model": plan.name,
        "map": variant,
        "n": rules["n"],
        "ece": ece,
        "mce": mce,
        "classwise_ece": float(np.mean(e["class_ece"])),
        "brier_score": rules["brier_score"],
        "log_loss": rules["log_loss"],
        "accuracy": rules["accuracy"],
    }


# ------------------------------------------------------------------------ server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A gunicorn master started by this script (its own process group)."""

    proc: subprocess.Popen
    port: int
    log_path: Path
    started: float = field(default_factory=time.perf_counter)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def worker_pids(self) -> list[int]:
        import psutil

        try:
            return sorted(c.pid for c in psutil.Process(self.proc.pid).children())
        except psutil.NoSuchProcess:
            return []

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        try:  # leftovers of this server only (its own process group)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def start_server(cache_dir: Path, workers: int, threads: int, log_path: Path) -> Server:
    port = free_port()
    env = dict(
        os.environ,
        BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY=str(workers),
        THREADS=str(threads),
        CACHE_DIR=str(cache_dir),
        APP_ENV="production",
        SECRET_KEY=secrets.token_hex(32),
        PYTHONPATH=str(REPO),
    )
    env.pop("DEBUG", None)
    log = log_path.open("wb")
    command = [sys.executable, "-m", "gunicorn", "--config", "python:app.gunicorn_conf"]
    proc = subprocess.Popen(
        [*command, "app.wsgi:server"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    return Server(proc, port, log_path)


def wait_healthy(server: Server, timeout: float = 180.0) -> float:
    """Wait for ``/healthz``; returns the seconds since the server was started."""
    import http.client

    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if server.proc.poll() is not None:
            raise RuntimeError(
                f"gunicorn exited with {server.proc.returncode}:\n"
                + server.log_path.read_text(errors="replace")[-3000:]
            )
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return time.perf_counter() - server.started
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer /healthz within {timeout} s")


# ------------------------------------------------------------------------ memory
def proc_status(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon, RssFile of a process in MB (from /proc/<pid>/status)."""
    out = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for key in ("VmRSS", "RssAnon", "RssFile"):
        m = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
        if m:
            out[key] = int(m.group(1)) / 1024
    return out


class MemoryMonitor(threading.Thread):
    """Samples every worker's memory once a second; marks named phases."""

    def __init__(self, server: Server, period: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.period = period
        self.samples: list[tuple[float, dict[int, dict]]] = []
        self.marks: dict[str, dict[int, dict]] = {}
        self.pids_seen: set[int] = set()
        self._stop_event = threading.Event()

    def sample(self) -> dict[int, dict]:
        snap = {pid: proc_status(pid) for pid in self.server.worker_pids()}
        snap = {pid: s for pid, s in snap.items() if s}
        self.pids_seen.update(snap)
        self.samples.append((time.time(), snap))
        return snap

    def mark(self, phase: str) -> None:
        self.marks[phase] = self.sample()

    def run(self) -> None:
        while not self._stop_event.wait(self.period):
            self.sample()

    def stop(self) -> None:
        self._stop_event.set()

    def summary(self) -> dict:
        def total(snap, key):
            return round(sum(s.get(key, 0.0) for s in snap.values()), 1)

        out = {"phases": {}, "workers": {}, "worker_pids_seen": sorted(self.pids_seen)}
        for phase, snap in self.marks.items():
            out["phases"][phase] = {
                "rss_mb_total": total(snap, "VmRSS"),
                "anon_mb_total": total(snap, "RssAnon"),
                "rss_mb_per_worker": {str(p): round(s["VmRSS"], 1) for p, s in snap.items()},
            }
        peak = defaultdict(float)
        for _, snap in self.samples:
            for pid, s in snap.items():
                peak[pid] = max(peak[pid], s.get("VmRSS", 0.0))
        out["peak_rss_mb_per_worker"] = {str(p): round(v, 1) for p, v in sorted(peak.items())}
        return out


# ---------------------------------------------------------------------- sessions
@dataclass
class Stats:
    """Everything the session threads record (guarded by a lock)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    interactions: int = 0

    def record(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.latency[kind].append(seconds)

    def error(self, text: str) -> None:
        with self.lock:
            self.errors.append(text)


@dataclass
class Isolation:
    """One session's isolation evidence."""

    index: int
    name: str
    file_sha256: str
    views_checked: int = 0
    values_checked: int = 0
    mismatches: int = 0
    max_rel_diff: float = 0.0
    pending_rows: int = 0
    foreign_names: list[str] = field(default_factory=list)
    models_lists_checked: int = 0
    probe_foreign_handle: str = "not run"
    probe_forged_result: str = "not run"
    observed: set = field(default_factory=set)
    expected_digest: str = ""
    observed_digest: str = ""
    mismatch_examples: list[str] = field(default_factory=list)


def digest(items) -> str:
    return hashlib.sha256(json.dumps(sorted(items)).encode()).hexdigest()[:16]


class SessionRunner(threading.Thread):
    """One browser session: page, upload, own model only, then the interaction loop."""

    def __init__(
        self,
        plan: SessionPlan,
        base_url: str,
        stats: Stats,
        demo_names: set[str],
        registry: dict,
        start_barrier: threading.Barrier,
        probe_barrier: threading.Barrier,
        args,
    ) -> None:
        super().__init__(name=f"session-{plan.index}", daemon=True)
        self.plan = plan
        self.stats = stats
        self.demo_names = demo_names
        self.registry = registry
        self.start_barrier = start_barrier
        self.probe_barrier = probe_barrier
        self.args = args
        self.s = DashSession(base_url, timeout=args.request_timeout)
        self.rng = random.Random(args.seed * 7919 + plan.index)
        self.iso = Isolation(plan.index, plan.name, plan.file_sha256)
        self.handle: str | None = None
        self.fitted: set[str] = set()
        self.fit_state_nonce = None
        self.steps = 0
        self.loop_deadline = 0.0

    # ------------------------------------------------------------ checks
    def err(self, text: str) -> None:
        self.stats.error(f"session {self.plan.index}: {text}")

    def check_models(self, models) -> None:
        """The model list holds the demo and this session's model only."""
        self.iso.models_lists_checked += 1
        for m in models or []:
            name = m.get("name") if isinstance(m, dict) else None
            if name not in self.demo_names and name != self.plan.name:
                self.iso.foreign_names.append(str(name))

    def check_view(self, out: dict, kind: str, allow_pending: bool) -> None:
        v = self.s.values
        rows = out.get("metrics-grid.rowData")
        messages = text_of(out.get("message.children"))
        if messages:
            self.err(f"{kind}: messages in the page: {messages[:2]}")
        if not isinstance(rows, list):
            self.err(f"{kind}: no rowData in the answer (keys {sorted(out)[:8]})")
            return
        self.iso.views_checked += 1
        maps = tuple(v.get("maps.value") or ())
        wanted = ["uncalibrated", *maps]
        seen_maps = [r.get("map") for r in rows]
        if sorted(seen_maps) != sorted(wanted):
            self.err(f"{kind}: rows for {seen_maps}, expected {wanted}")
        scheme, bins = v["scheme.value"], v["n-bins.value"]
        notion, class_value = v["notion.value"], v.get("class-select.value")
        caption = " ".join(text_of(out.get("metrics-caption.children")))
        if f"{bins} {SCHEME_WORDS[scheme]} bins" not in caption:
            self.err(f"{kind}: caption {caption[:80]!r} does not state {bins} {scheme} bins")
        for row in rows:
            name = row.get("model")
            if row.get("n") is not None:
                self.iso.observed.add((str(name), int(row["n"])))
            if name != self.plan.name:
                self.iso.foreign_names.append(str(name))
                continue
            if row.get("ece") is None:
                if allow_pending and row.get("map") not in self.fitted:
                    self.iso.pending_rows += 1
                else:
                    self.err(f"{kind}: row {row.get('map')} has no numbers ({row.get('status')})")
                continue
            want = expected_row(self.plan, row["map"], notion, class_value, scheme, bins)
            if row.get("n") != want["n"]:
                self.mismatch(f"{kind} {row['map']}: n={row.get('n')} expected {want['n']}")
            for key in METRIC_FIELDS:
                got, exp = row.get(key), want[key]
                self.iso.values_checked += 1
                if not isinstance(got, (int, float)):
                    self.mismatch(f"{kind} {row['map']} {key}: {got!r}, expected {exp:.6g}")
                    continue
                rel = abs(got - exp) / max(abs(exp), 1e-12)
                self.iso.max_rel_diff = max(self.iso.max_rel_diff, rel)
                if rel > RTOL and abs(got - exp) > 1e-12:
                    self.mismatch(
                        f"{kind} {row['map']} {key} ({notion}/{class_value}, {scheme}, {bins}): "
                        f"{got!r} expected {exp!r}"
                    )

    def mismatch(self, text: str) -> None:
        self.iso.mismatches += 1
        if len(self.iso.mismatch_examples) < 5:
            self.iso.mismatch_examples.append(text)

    # ------------------------------------------------------- interactions
    def view(self, kind: str, changed: str, allow_pending: bool = False) -> None:
        out, seconds = self.s.call("metrics-grid.rowData", [changed])
        self.stats.record(kind, seconds)
        self.check_view(out, kind, allow_pending)

    def class_picker(self, changed: str) -> None:
        _, seconds = self.s.call("class-select.value", [changed])
        self.stats.record("class-picker", seconds)

    def fit(self, changed: str) -> None:
        timeout = self.args.request_timeout
        if self.loop_deadline:  # in the loop: a hung job must not hold the run much longer
            timeout = min(timeout, max(30.0, self.loop_deadline - time.perf_counter() + 30.0))
        out, seconds, _ = self.s.fit([changed], timeout=timeout)
        self.stats.record("fit (planner + background, polled)", seconds)
        state = out.get("fit-state.data")
        if not isinstance(state, dict):
            self.err(f"fit: no fit state in the answer ({sorted(out)[:6]})")
            return
        if state.get("error"):
            self.err(f"fit: {state['error']}")
        self.fitted.update(self.s.values.get("maps.value") or ())
        if state.get("nonce") != self.fit_state_nonce:
            self.fit_state_nonce = state.get("nonce")
            self.view("view after fit", "fit-state.data")

    def setup(self) -> None:
        s = self.s
        self.stats.record("page load (3 GETs)", s.load_page())
        resp = s.upload(Path(self.plan.path))
        self.stats.record(f"upload ({self.plan.n:,}-row CSV)", resp.seconds)
        if resp.status != 200:
            raise DashHTTPError("upload", resp.status, resp.body)
        body = resp.json()
        models = body.get("models", [])
        if body.get("errors") or len(models) != 1:
            raise RuntimeError(f"upload answered {body.get('error')!r} with {len(models)} models")
        (model,) = models
        if model["name"] != self.plan.name or model["n_samples"] != self.plan.n:
            self.mismatch(f"upload: {model['name']} x {model['n_samples']}")
        self.handle = model["handle"]
        self.registry[self.plan.index] = model
        s.values["upload-result.data"] = s.upload_result(Path(self.plan.path).name, resp)
        out, seconds = s.call("models-store.data", ["upload-result.data"])
        self.stats.record("after upload", seconds)
        self.check_models(out.get("models-store.data"))
        if self.handle not in (out.get("model-select.value") or []):
            self.err("after upload: the new model is not selected")
        # The user keeps only their own model (the default maps are fitted for it).
        s.values["model-select.value"] = [self.handle]
        self.class_picker("model-select.value")
        self.view("select model", "model-select.value", allow_pending=True)
        self.fit("model-select.value")

    def step(self, kind: str) -> None:
        v, rng = self.s.values, self.rng
        if kind == "class" and v.get("notion.value") != "class":
            kind = "notion"
        if kind == "bins":
            v["n-bins.value"] = rng.choice([b for b in BIN_CHOICES if b != v["n-bins.value"]])
            self.view("bins", "n-bins.value")
        elif kind == "scheme":
            v["scheme.value"] = "frequency" if v["scheme.value"] == "width" else "width"
            self.view("scheme", "scheme.value")
        elif kind == "band":
            v["band.value"] = rng.choice([b for b in BANDS if b != v["band.value"]])
            self.view(
                "band (consistency)" if v["band.value"] == "consistency" else "band",
                "band.value",
            )
        elif kind == "level":
            v["band-level.value"] = rng.choice([x for x in LEVELS if x != v["band-level.value"]])
            self.view("band level", "band-level.value")
        elif kind == "notion":
            v["notion.value"] = "confidence" if v["notion.value"] == "class" else "class"
            self.class_picker("notion.value")
            self.view("notion", "notion.value")
        elif kind == "class":
            choices = [ALL_CLASSES, *self.plan.classes]
            v["class-select.value"] = rng.choice(
                [c for c in choices if c != v.get("class-select.value")]
            )
            self.view(
                "class (all classes)" if v["class-select.value"] == ALL_CLASSES else "class",
                "class-select.value",
            )
        elif kind == "maps":
            current = tuple(v.get("maps.value") or ())
            v["maps.value"] = list(rng.choice([m for m in MAP_CHOICES if m != current]))
            self.view("maps", "maps.value", allow_pending=True)
            self.fit("maps.value")

    def probe(self) -> None:
        """Another session's handle and a forged upload result must reveal nothing."""
        others = [m for i, m in self.registry.items() if i != self.plan.index]
        if not others:
            self.iso.probe_foreign_handle = self.iso.probe_forged_result = "skipped (1 session)"
            return
        other = self.rng.choice(others)
        v = self.s.values
        mine = v["model-select.value"]
        v["model-select.value"] = [other["handle"]]
        out, seconds = self.s.call("metrics-grid.rowData", ["model-select.value"])
        self.stats.record("probe: foreign handle", seconds)
        rows = out.get("metrics-grid.rowData") or []
        messages = " ".join(text_of(out.get("message.children")))
        for row in rows:
            self.iso.foreign_names.append(str(row.get("model")))
        if rows:
            self.iso.probe_foreign_handle = f"LEAK: {len(rows)} rows of {other['name']}"
        elif "upload again" in messages or "no longer available" in messages:
            self.iso.probe_foreign_handle = "refused"
        else:
            self.iso.probe_foreign_handle = f"no rows; message {messages[:80]!r}"
        v["model-select.value"] = mine
        v["upload-result.data"] = {
            "nonce": int(time.time() * 1000),
            "results": [{"file": "x.csv", "status": 200, "models": [other], "error": None}],
        }
        out, seconds = self.s.call("models-store.data", ["upload-result.data"])
        self.stats.record("probe: forged upload result", seconds)
        self.check_models(out.get("models-store.data"))
        shown = " ".join(text_of(out.get("upload-message.children")))
        names = [m.get("name") for m in out.get("models-store.data") or []]
        leaked = other["name"] in names or other["name"] in shown
        self.iso.probe_forged_result = "LEAK" if leaked else "refused"
        if leaked:
            self.iso.foreign_names.append(other["name"])
        v["model-select.value"] = mine

    def run(self) -> None:
        try:
            self.setup()
        except Exception as exc:
            self.err(f"setup failed: {exc!r}")
        try:
            self.start_barrier.wait(timeout=self.args.request_timeout * 2)
        except threading.BrokenBarrierError:
            pass
        if self.handle is not None:
            self.loop_deadline = time.perf_counter() + self.args.seconds
            kinds, weights = zip(*INTERACTIONS.items(), strict=True)
            while time.perf_counter() < self.loop_deadline and self.steps < self.args.max_steps:
                kind = self.rng.choices(kinds, weights)[0]
                try:
                    self.step(kind)
                except Exception as exc:
                    self.err(f"{kind}: {exc!r}")
                self.steps += 1
                with self.stats.lock:
                    self.stats.interactions += 1
                if self.args.think:
                    time.sleep(self.rng.uniform(0.5, 1.5) * self.args.think)
        try:
            self.probe_barrier.wait(timeout=self.args.seconds + self.args.request_timeout * 2)
        except threading.BrokenBarrierError:
            pass
        if self.handle is not None:
            try:
                self.probe()
            except Exception as exc:
                self.err(f"probe: {exc!r}")
        # Checksum: every (model, row count) any metrics table showed this session,
        # against the one pair its own file gives.
        self.iso.expected_digest = digest([[self.plan.name, self.plan.n]])
        self.iso.observed_digest = digest([list(x) for x in self.iso.observed])


# -------------------------------------------------------------------------- main
def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def server_log_problems(path: Path) -> dict:
    text = path.read_text(errors="replace")
    status = re.findall(r'" (\d{3}) ', text)
    return {
        "requests_logged": len(status),
        "http_5xx": sum(1 for s in status if s.startswith("5")),
        "http_4xx": sum(1 for s in status if s.startswith("4")),
        "tracebacks": text.count("Traceback (most recent call last)"),
        "worker_timeouts": text.count("WORKER TIMEOUT"),
        "worker_boots": len(re.findall(r"Booting worker with pid", text)),
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=None, help="default 20 (quick: 3)")
    parser.add_argument("--seconds", type=float, default=None, help="loop time (60; quick 10)")
    parser.add_argument("--workers", type=int, default=None, help="WEB_CONCURRENCY (4; quick 2)")
    parser.add_argument("--threads", type=int, default=1, help="THREADS per worker")
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
    machine = {
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
    }
    print(
        f"{args.sessions} sessions x {args.rows:,} x {args.classes} files, {args.seconds:.0f} s "
        f"loop, gunicorn {args.workers} workers x {args.threads} threads; "
        f"{machine['cpus']} CPUs, load average {machine['load_average_before'][0]}",
        flush=True,
    )
    # The server boots (imports, workers) while the files are prepared.
    server = start_server(tmp / "cache", args.workers, args.threads, tmp / "gunicorn.log")
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
            "folds": folds,
            "think_seconds": args.think,
            "maps": list(MAPS),
        },
        "setup_seconds": round(setup_seconds, 1),
        "loop_seconds": round(loop_seconds, 1),
        "interactions": stats.interactions,
        "interactions_per_second": round(stats.interactions / max(loop_seconds, 1e-9), 2),
        "latency_ms": {
            kind: {
                "count": len(v),
                "p50": round(percentile(v, 50) * 1000, 1),
                "p95": round(percentile(v, 95) * 1000, 1),
                "max": round(max(v) * 1000, 1),
            }
            for kind, v in sorted(stats.latency.items())
        },
        "errors": {"count": len(stats.errors), "examples": stats.errors[:20]},
        "server_log": log,
        "memory": monitor.summary(),
        "isolation": [],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    for r in runners:
        d = asdict(r.iso)
        d.pop("observed")
        d["foreign_names"] = sorted(set(d["foreign_names"]))
        d["steps"] = r.steps
        results["isolation"].append(d)
    results["leaks"] = sum(len(d["foreign_names"]) for d in results["isolation"]) + sum(
        1
        for d in results["isolation"]
        if "LEAK" in d["probe_foreign_handle"] or "LEAK" in d["probe_forged_result"]
    )
    results["mismatches"] = sum(d["mismatches"] for d in results["isolation"])
    results["total_errors"] = len(stats.errors) + log["http_5xx"] + log["tracebacks"]
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        results["tmp"] = str(tmp)
    return results


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


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
