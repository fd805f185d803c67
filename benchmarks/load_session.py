"""One simulated browser session of ``benchmarks/load_test.py`` and its checks.

A :class:`SessionRunner` thread loads the page, uploads its file, keeps only
its own model, then changes bins, scheme, band, level, notion, class and maps
in a loop, checking every metrics table against its :class:`SessionPlan`;
finally it probes isolation with another session's model handle and a forged
upload result. Latencies and errors go to the shared :class:`Stats`, the
session's isolation evidence to its :class:`Isolation`.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.dash_client import DashHTTPError, DashSession, text_of
from benchmarks.load_plan import ALL_CLASSES, BIN_CHOICES, SessionPlan, expected_row

SCHEME_WORDS = {"width": "equal-width", "frequency": "equal-frequency"}
BANDS = ("none", "wilson", "clopper-pearson", "jeffreys", "consistency")
LEVELS = (0.8, 0.9, 0.95, 0.99)
MAP_CHOICES = ((), ("temperature",), ("isotonic",), ("temperature", "isotonic"))
#: Kind of interaction -> weight in the loop.
INTERACTIONS = {"bins": 4, "scheme": 2, "band": 2, "level": 1, "notion": 2, "class": 2, "maps": 1}
METRIC_FIELDS = ("ece", "mce", "classwise_ece", "brier_score", "log_loss", "accuracy")
RTOL = 1e-7


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
        """Check the page after the view answered ``out``.

        The view leaves outputs that did not change out of its answer (``no_update``,
        :mod:`app.view_update`), so the table, caption and messages are read from the
        session's current values, which the answer has updated.
        """
        v = self.s.values
        rows = v.get("metrics-grid.rowData")
        messages = text_of(v.get("message.children"))
        if messages:
            self.err(f"{kind}: messages in the page: {messages[:2]}")
        if not isinstance(rows, list):
            self.err(f"{kind}: no table in the page (answer keys {sorted(out)[:8]})")
            return
        self.iso.views_checked += 1
        maps = tuple(v.get("maps.value") or ())
        wanted = ["uncalibrated", *maps]
        seen_maps = [r.get("map") for r in rows]
        if sorted(seen_maps) != sorted(wanted):
            self.err(f"{kind}: rows for {seen_maps}, expected {wanted}")
        scheme, bins = v["scheme.value"], v["n-bins.value"]
        notion, class_value = v["notion.value"], v.get("class-select.value")
        caption = " ".join(text_of(v.get("metrics-caption.children")))
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
