"""Dashboard speed (issues 4, 15): server and page time per interaction, first paint, uploads.

    python benchmarks/bench_dashboard.py                  # everything
    python benchmarks/bench_dashboard.py --only interactions --rows 1000000 --classes 10

Sections
--------
interactions
    Drives the view callback's plain function (:func:`app.callbacks.view.render`)
    plus the JSON encoding Dash does, on N x K predictions stored the way an
    upload stores them, with one fitted map (temperature, 2-fold) next to the
    uncalibrated panel. Prints the median server time of changing the bin
    count, the scheme, the band and the notion. Target: < 300 ms each.
upload
    Writes a CSV of about 200 MB (N x K probabilities and a label), starts
    the dashboard, POSTs the file to ``/api/upload`` as multipart and prints
    the time until the parsed model is stored.
paint
    Starts the dashboard (cold: empty cache directory, the demo is stored
    from the outputs shipped with the package and its maps are fitted in the
    background; warm: the demo is read from the cache) and measures, with
    Chromium driven by Playwright, the time from process start until the first
    reliability diagram is painted (timed in the page). Target: < 3 s.
    With ``--trees A B ...``: warm runs only, interleaved between the source
    trees (each its own cache, primed by one uncounted run), and for each tree
    the median, range and ratio to the first tree (an A/B of a change).
page
    What a user waits for in Chromium, timed in the page (:data:`INTERACTION_PROBE`):
    from the input event (pointer or key) until no callback is in flight and the
    DOM has not changed for :data:`QUIET_MS`, for bins, scheme, band, notion and
    model-selection changes and each export, on the demo and then on three real
    CIFAR-100 models (``../shared/realdata``, skipped when absent). Targets
    (issue 15): a model-selection change <= 0.5 s, any view on three 100-class
    models <= 1 s. ``--steps TEXT``: only the steps whose name contains TEXT
    (e.g. ``model`` for the selection changes), no exports; ``--tree PATH``:
    the server runs from that source tree (run it alternately with the
    default for an A/B of a change).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def synthetic_logits(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident logits and labels drawn from a tempered softmax, shapes (N, K), (N,)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3.0
    z[np.arange(n), rng.integers(0, k, n)] += 2.0
    p = np.exp(z / 2.0 - (z / 2.0).max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    u = rng.random(n)[:, None]
    labels = (p.cumsum(axis=1) < u).sum(axis=1).clip(0, k - 1)
    return z, labels


# ----------------------------------------------------------------- interactions
def bench_interactions(n: int, k: int, repeats: int) -> None:
    import plotly.io as pio

    from app.callbacks.view import render
    from app.config import AppConfig
    from app.context import AppContext
    from app.services.fit import run_fits
    from app.session import SessionManager, new_session_id
    from app.settings import RawSettings
    from app.store.data_store import DataStore
    from calibration_core import Predictions

    print(f"\n== interactions on {n:,} x {k} predictions ==")
    tmp = Path(tempfile.mkdtemp(prefix="bench-dash-"))
    config = AppConfig(cache_dir=tmp, secret_key="bench-secret-key-0123456789")
    store = DataStore(tmp / "store", memory_bytes=4 << 30, size_limit_bytes=16 << 30)
    ctx = AppContext(config, store, SessionManager(config.secret_key, 3600))
    sid = new_session_id()
    z, y = synthetic_logits(n, k)
    t0 = time.perf_counter()
    pred = Predictions.from_logits(z, y, name="bench")
    t1 = time.perf_counter()
    (info,) = store.add_models(sid, [pred], "bench.csv")
    t2 = time.perf_counter()
    print(
        f"validate + softmax: {t1 - t0:.2f} s; store with sorted scores of every notion: "
        f"{t2 - t1:.2f} s (once, at upload)"
    )
    t0 = time.perf_counter()
    state = run_fits(ctx, sid, [info.handle], ["temperature"], "folds", 2, 0.5, lambda p: None)
    print(
        f"fit temperature scaling, 2-fold cross-fitting (background job): "
        f"{time.perf_counter() - t0:.2f} s {state['error'] or ''}"
    )
    # A fresh worker: the fitted predictions come from disk once, then from memory.
    base = {"handles": [info.handle], "maps": ["temperature"], "folds": 2}
    t0 = time.perf_counter()
    render(ctx, sid, RawSettings(**base))
    print(f"first view (reads the fitted predictions): {time.perf_counter() - t0:.3f} s")

    def serve(raw):
        out = render(ctx, sid, raw)
        # What Dash does with the outputs before sending them.
        pio.json.to_json_plotly([c.to_plotly_json() for c in out[0]] + list(out[1:]))
        return out

    cases = {
        "bins 15 -> 37": [{"n_bins": 15}, {"n_bins": 37}],
        "bins -> 100": [{"n_bins": 60}, {"n_bins": 100}],
        "scheme width -> frequency": [{"scheme": "width"}, {"scheme": "frequency"}],
        "band -> Clopper-Pearson": [{"band": "wilson"}, {"band": "clopper-pearson"}],
        "band -> consistency": [{"band": "jeffreys"}, {"band": "consistency"}],
        "level 95% -> 80%": [{"level": 0.95}, {"level": 0.8}],
        "notion -> class 3": [{"notion": "confidence"}, {"notion": "class", "class_value": "3"}],
        "notion -> all classes": [
            {"notion": "confidence"},
            {"notion": "class", "class_value": "__all__"},
        ],
        "notion -> confidence": [{"notion": "class", "class_value": "3"}, {"notion": "confidence"}],
    }
    print(f"{'interaction':32s} {'median ms':>10s} {'max ms':>8s}  target < 300 ms")
    worst = 0.0
    for label, (before, after) in cases.items():
        times = []
        for _ in range(repeats):
            serve(RawSettings(**base, **before))
            start = time.perf_counter()
            out = serve(RawSettings(**base, **after))
            times.append((time.perf_counter() - start) * 1000)
            assert out[5] == [], out[5]
        med = statistics.median(times)
        worst = max(worst, med)
        print(f"{label:32s} {med:10.1f} {max(times):8.1f}  {'ok' if med < 300 else 'SLOW'}")
    print(f"worst median: {worst:.1f} ms")


# ----------------------------------------------------------------------- server
def start_server(cache_dir: Path, port: int, extra_env: dict | None = None, repo: Path = REPO):
    env = dict(os.environ, CACHE_DIR=str(cache_dir), PYTHONPATH=str(repo))
    # As installed: Python caches compiled modules (a sandbox may switch that off).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra_env or {})
    # What the ``calibration-dashboard serve`` console script runs.
    code = f"from app.cli import main; raise SystemExit(main(['serve', '--port', '{port}']))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc


def wait_healthy(port: int, timeout: float = 120.0) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the server did not start")


#: Pause between first-paint runs (the previous run's processes wind down).
SETTLE_SECONDS = 1.5
#: The page size of every first-paint run.
VIEWPORT = {"width": 1280, "height": 900}

#: The first reliability diagram is drawn: Plotly has put a trace in its scatter layer.
FIRST_DIAGRAM = ".reliability-graph .main-svg .scatterlayer .trace"

#: Runs in the page before its own scripts. When FIRST_DIAGRAM appears, it
#: records (epoch ms) the start of the next frame (``drawn``: the frame that
#: shows it) and the first task after that frame (``painted``: the frame is on
#: screen). Playwright's ``wait_for_selector`` polls a busy page at growing
#: intervals (up to 0.5 s late here), so the time is taken in the page.
PAINT_PROBE = """
(() => {
  const selector = "__SELECTOR__";
  const observer = new MutationObserver(() => {
    if (!document.querySelector(selector)) return;
    observer.disconnect();
    requestAnimationFrame(() => {
      window.__firstDiagramDrawn = performance.timeOrigin + performance.now();
      setTimeout(() => {
        window.__firstDiagramPainted = performance.timeOrigin + performance.now();
      }, 0);
    });
  });
  observer.observe(document, {childList: true, subtree: true});
})();
""".replace('"__SELECTOR__"', json.dumps(FIRST_DIAGRAM))


def first_diagram_times(page, start_epoch: float) -> tuple[float, float]:
    """Seconds from ``start_epoch`` until the first diagram is painted, and until Playwright saw it.

    Parameters
    ----------
    page : playwright.sync_api.Page
        A page with :data:`PAINT_PROBE` added as init script, already navigated.
    start_epoch : float
        ``time.time()`` at the moment to measure from (the server's start).
    """
    page.wait_for_selector(FIRST_DIAGRAM, timeout=60_000)
    seen = time.time() - start_epoch
    page.wait_for_function("() => window.__firstDiagramPainted !== undefined", timeout=10_000)
    painted_ms = page.evaluate("() => window.__firstDiagramPainted")
    return painted_ms / 1000.0 - start_epoch, seen


def bench_paint(port: int, repeats: int = 5, cold_repeats: int = 3) -> None:
    from playwright.sync_api import sync_playwright

    print("\n== first paint of the demo ==")
    print("from process start to the first reliability diagram painted in Chromium (page opened")
    print("as soon as /healthz answers; painted: first task after the frame that shows it, timed")
    print("in the page; seen: when Playwright's polling noticed it); cold: empty cache (demo")
    print("stored from the shipped outputs, its maps fitted in the background), warm: demo on")
    print("disk, a fresh browser context each time; returning: warm,")
    print(f"browser with the scripts cached; {SETTLE_SECONDS} s pause between runs")
    cache = Path(tempfile.mkdtemp(prefix="bench-paint-"))
    runs: dict[str, list[tuple[float, float, float]]] = {"cold": [], "warm": [], "returning": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        time.sleep(SETTLE_SECONDS)  # the browser's own start is not the first run's
        # "returning": one browser context kept across runs, as a user's browser that
        # has the page's scripts cached from an earlier visit (its first load primes it).
        returning = browser.new_context(viewport=VIEWPORT)

        def fresh_page():
            return browser.new_page(viewport=VIEWPORT)

        plan = ["cold"] * cold_repeats + ["warm"] * repeats
        plan += ["prime"] + ["returning"] * repeats
        for label in plan:
            # A returning visit opens its page in the kept context; the others each in a
            # fresh context of their own.
            opener = returning.new_page if label in ("prime", "returning") else fresh_page
            if label == "cold" and runs["cold"]:  # each cold run on an empty cache
                cache = Path(tempfile.mkdtemp(prefix="bench-paint-"))
            up, painted, seen = paint_once(opener, cache, port)
            if label == "prime":
                continue
            runs[label].append((up, painted, seen))
            print(
                f"{label}: server up {up:5.2f} s, first diagram painted {painted:5.2f} s "
                f"(seen by Playwright {seen:5.2f} s)",
                flush=True,
            )
        browser.close()
    for label, values in runs.items():
        up = statistics.median(v[0] for v in values)
        painted = statistics.median(v[1] for v in values)
        seen = statistics.median(v[2] for v in values)
        low, high = min(v[1] for v in values), max(v[1] for v in values)
        print(
            f"{label:9s} median of {len(values)}: server up {up:5.2f} s, first diagram painted "
            f"{painted:5.2f} s (target < 3 s: {'met' if painted < 3 else 'MISSED'}; "
            f"runs {low:.2f}-{high:.2f} s; seen by Playwright {seen:5.2f} s)"
        )
    print(f"machine speed now: a fresh Python imports dash in {import_reference():.2f} s (median)")


def paint_once(new_page, cache: Path, port: int, repo: Path = REPO) -> tuple[float, float, float]:
    """One start of the server in ``repo``: (server up, first diagram painted, seen), seconds.

    ``new_page()`` opens the page: in a fresh browser context, or in a kept one for a
    returning visitor whose browser has the scripts cached. The server runs with
    ``cache`` as ``CACHE_DIR``; a pause after it lets its exit and the page's teardown
    finish, so each run starts on a quiet machine.
    """
    page = new_page()
    page.add_init_script(PAINT_PROBE)
    start = time.time()
    proc = start_server(cache, port, repo=repo)
    try:
        wait_healthy(port)
        up = time.time() - start
        page.goto(f"http://127.0.0.1:{port}/")
        painted, seen = first_diagram_times(page, start)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        page.close()
        time.sleep(SETTLE_SECONDS)
    return up, painted, seen


def bench_paint_trees(port: int, trees: list[Path], repeats: int) -> None:
    """Warm first paint of several source trees, runs interleaved (A B A B ...)."""
    from playwright.sync_api import sync_playwright

    print(f"\n== first paint, warm, {repeats} interleaved runs per tree ==")
    caches = {tree: Path(tempfile.mkdtemp(prefix="bench-paint-")) for tree in trees}
    painted: dict[Path, list[float]] = {tree: [] for tree in trees}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        time.sleep(SETTLE_SECONDS)

        def fresh_page():
            return browser.new_page(viewport=VIEWPORT)

        for tree in trees:  # stores the demo in the tree's cache (not counted)
            paint_once(fresh_page, caches[tree], port, tree)
        for i in range(repeats):
            order = trees if i % 2 == 0 else trees[::-1]
            for tree in order:
                up, seconds, _seen = paint_once(fresh_page, caches[tree], port, tree)
                painted[tree].append(seconds)
                print(f"{tree}: server up {up:5.2f} s, painted {seconds:5.2f} s", flush=True)
        browser.close()
    reference = statistics.median(painted[trees[0]])
    print(f"{'tree':40s} {'median':>7s} {'range':>13s} {'ratio':>6s}")
    for tree, values in painted.items():
        median = statistics.median(values)
        print(
            f"{tree!s:40s} {median:6.2f}s {min(values):5.2f}-{max(values):5.2f} s "
            f"{median / reference:6.3f}"
        )
    print(f"machine speed now: a fresh Python imports dash in {import_reference():.2f} s (median)")


def import_reference(repeats: int = 5) -> float:
    """Median seconds of a fresh interpreter importing dash as ``serve`` does (no IPython).

    Printed next to the first-paint times: the shared machine's speed varies by
    tens of percent from hour to hour.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        code = "import sys; sys.modules.setdefault('IPython', None); import dash"
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_upload(port: int, n: int, k: int) -> None:
    import pandas as pd

    print("\n== 200 MB CSV upload ==")
    tmp = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    path = tmp / "big.csv"
    z, y = synthetic_logits(n, k, seed=1)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    frame = pd.DataFrame(p, columns=[f"p_{j}" for j in range(k)])
    frame["label"] = y
    t0 = time.perf_counter()
    frame.to_csv(path, index=False, float_format="%.17g")
    size_mb = path.stat().st_size / 2**20
    print(f"wrote {size_mb:.0f} MB ({n:,} rows x {k} classes) in {time.perf_counter() - t0:.1f} s")
    proc = start_server(tmp / "cache", port, {"MAX_UPLOAD_MB": str(int(size_mb) + 16)})
    try:
        wait_healthy(port)
        t0 = time.perf_counter()
        status, body = post_file(port, path)
        seconds = time.perf_counter() - t0
        models = body.get("models", [])
        print(
            f"HTTP {status}: {len(models)} model(s) "
            f"{[(m['name'], m['n_samples'], m['n_classes']) for m in models]} "
            f"{body.get('error') or ''}"
        )
        print(f"upload + parse + store: {seconds:.1f} s ({size_mb / seconds:.0f} MB/s)")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def post_file(port: int, path: Path) -> tuple[int, dict]:
    """POST one file to /api/upload as multipart/form-data, streamed (standard library only)."""
    import http.client
    import json

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", "/healthz")
    response = conn.getresponse()
    response.read()
    cookie = (response.getheader("Set-Cookie") or "").split(";")[0]
    boundary = "benchboundary7d93b1"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"'
        "\r\nContent-Type: text/csv\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def chunks():
        yield head
        with path.open("rb") as fh:
            while block := fh.read(1 << 20):
                yield block
        yield tail

    length = len(head) + path.stat().st_size + len(tail)
    headers = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Content-Length": str(length),
        "Cookie": cookie,
    }
    conn.request("POST", "/api/upload", body=chunks(), headers=headers)
    response = conn.getresponse()
    return response.status, json.loads(response.read())


#: Runs in the page before its own scripts: counts the Dash callback requests in
#: flight and records (``performance.now()``, ms) the user's last input event and
#: the page's last visible change (a DOM change, or the frame after a callback's
#: response), so an interaction is timed in the page from input to the settled view.
INTERACTION_PROBE = """
(() => {
  const probe = {inflight: 0, action: 0, changed: 0};
  window.__interaction = probe;
  const frameAfter = () => requestAnimationFrame(() => requestAnimationFrame(() => {
    probe.changed = performance.now();
  }));
  const fetch = window.fetch;
  window.fetch = function (...args) {
    const url = String((args[0] && args[0].url) || args[0]);
    if (!url.includes("_dash-update-component")) return fetch.apply(this, args);
    probe.inflight += 1;
    return fetch.apply(this, args).then((response) => {
      response.clone().text().finally(() => { probe.inflight -= 1; frameAfter(); });
      return response;
    }, (error) => { probe.inflight -= 1; throw error; });
  };
  for (const kind of ["pointerdown", "keydown"]) {
    document.addEventListener(kind, () => { probe.action = performance.now(); }, true);
  }
  new MutationObserver(() => { probe.changed = performance.now(); })
    .observe(document, {childList: true, subtree: true, characterData: true});
})();
"""

#: A view has settled when no callback is in flight and nothing changed for this long.
QUIET_MS = 600


def settled_seconds(page, timeout_s: float = 180.0) -> float:
    """Seconds from the last input event until the view stopped changing (timed in the page)."""
    page.wait_for_function(
        f"""() => {{
          const p = window.__interaction;
          return p.inflight === 0 && performance.now() - Math.max(p.changed, p.action) > {QUIET_MS};
        }}""",
        timeout=timeout_s * 1000,
        polling=100,
    )
    action, changed = page.evaluate(
        "() => [window.__interaction.action, window.__interaction.changed]"
    )
    return max(changed - action, 0.0) / 1000.0


def wait_fit_idle(page) -> None:
    """No fit running: the Fit button enabled and the progress bar idle."""
    page.wait_for_function(
        """() => {
          const button = document.querySelector('#fit-start');
          const bar = document.querySelector('#fit-progress');
          return button && !button.disabled && bar && bar.classList.contains('idle');
        }""",
        timeout=600_000,
        polling=200,
    )


def timed(page, action) -> float:
    """Run ``action()`` (one user input) on a quiet page; seconds until the view settled."""
    wait_fit_idle(page)
    settled_seconds(page)
    action()
    return settled_seconds(page)


def page_steps(page, k_label: str) -> dict:
    """The interactions timed on the current page: name -> action (each undone by the next)."""

    def click(selector):
        return lambda: page.locator(selector).first.click()

    def bins(n):
        def act():
            box = page.locator("#n-bins input[type=number]")
            box.fill(str(n))
            box.press("Enter")

        return act

    def band(label):
        def act():
            page.locator("#band").click()
            page.get_by_role("option", name=label, exact=True).click()

        return act

    def pick_class(label):
        def act():
            page.locator("#class-select").click()
            search = page.locator(".dash-dropdown-content input[type=search]")
            search.fill(label)
            page.get_by_role("option", name=label, exact=True).click()

        return act

    # The last selected model: deselected, then selected again (the list's last box
    # can be a model that is not selected, whose "uncheck" would do nothing).
    shown = page.eval_on_selector_all(
        "#model-select input[type=checkbox]:checked",
        "boxes => boxes.map(b => b.value).filter(v => !v.startsWith('file:'))",
    )
    box = page.locator(f'#model-select input[type=checkbox][value="{shown[-1]}"]')
    return {
        f"bins 15 -> 10 ({k_label})": bins(10),
        f"bins 10 -> 15 ({k_label})": bins(15),
        f"scheme equal-frequency ({k_label})": click("#scheme input[value=frequency]"),
        f"scheme equal-width ({k_label})": click("#scheme input[value=width]"),
        f"band consistency ({k_label})": band("consistency resampling"),
        f"band wilson ({k_label})": band("Wilson"),
        f"notion one class vs rest ({k_label})": click("#notion input[value=class]"),
        f"all classes, small multiples ({k_label})": pick_class(ALL_CLASSES_LABEL),
        f"class 3 ({k_label})": pick_class("class 3"),
        f"notion confidence ({k_label})": click("#notion input[value=confidence]"),
        f"model deselected ({k_label})": lambda: box.uncheck(),
        f"model selected, maps fitted ({k_label})": lambda: box.check(),
    }


def export_seconds(page, button: str) -> float:
    """Seconds from clicking an export button until the browser has the file.

    NaN, with the page's export message printed, when no file came within 60 s
    (counted as a failure in the table: the run goes on).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    start = time.perf_counter()
    try:
        with page.expect_download(timeout=60_000) as info:
            page.locator(f"#{button}").click()
        info.value.path()
    except PlaywrightTimeout:
        message = page.locator("#export-message").inner_text()
        print(f"{button}: no download within 60 s (export message: {message!r})", flush=True)
        return math.nan
    return time.perf_counter() - start


#: The class picker's "all classes" option (app.options.class_choices).
ALL_CLASSES_LABEL = "all classes (worst first, small multiples)"
EXPORT_BUTTONS = (
    "export-metrics-csv",
    "export-metrics-json",
    "export-params-json",
    "export-report-html",
    "export-calibrated-csv",
)
#: Real 100-class prediction files (../shared/realdata), uploaded for the K = 100 runs.
CIFAR100_FILES = (
    "densenet-bc-100-cifar-100.npz",
    "lenet-5-cifar-100.npz",
    "wideresnet-16-4-cifar-100.npz",
)
REALDATA = REPO.parent / "shared" / "realdata"


def bench_page(port: int, repeats: int, steps: str | None = None, repo: Path = REPO) -> None:
    """Page-side timings (issue 15): interactions and exports, timed in Chromium.

    ``steps``: only the interactions whose name contains it, and no exports;
    ``repo``: the source tree the server runs from.
    """
    from playwright.sync_api import sync_playwright

    print("\n== page-side timings: input event to settled view, in Chromium ==")
    print(f"(settled: no callback in flight and no DOM change for {QUIET_MS} ms; median of")
    print(
        f"{repeats}; targets: model selection <= 0.5 s, any view on three 100-class models <= 1 s)"
    )
    cache = Path(tempfile.mkdtemp(prefix="bench-page-"))
    print(f"server from {repo}")
    proc = start_server(cache, port, {"MAX_UPLOAD_MB": "200"}, repo)
    results: dict[str, list[float]] = {}
    try:
        wait_healthy(port)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.add_init_script(INTERACTION_PROBE)
            page.add_init_script(PAINT_PROBE)
            for _ in range(repeats):
                page.goto(f"http://127.0.0.1:{port}/")
                page.wait_for_function("() => window.__firstDiagramPainted !== undefined")
                opened = page.evaluate(
                    "() => (window.__firstDiagramPainted - performance.timeOrigin) / 1000"
                )
                results.setdefault("open: first diagram painted", []).append(opened)
            run_steps(page, "demo", repeats, results, steps)
            for button in EXPORT_BUTTONS if steps is None else ():
                for _ in range(repeats):
                    wait_fit_idle(page)
                    results.setdefault(f"export {button[7:]} (demo)", []).append(
                        export_seconds(page, button)
                    )
            upload_cifar100(page, results)
            if "upload" in results:
                run_steps(page, "3 x CIFAR-100", repeats, results, steps)
                for _ in range(repeats if steps is None else 0):
                    results.setdefault("export calibrated-csv (3 x CIFAR-100)", []).append(
                        export_seconds(page, "export-calibrated-csv")
                    )
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print_page_results(results)


def run_steps(page, label: str, repeats: int, results: dict, steps: str | None = None) -> None:
    """Time each step of :func:`page_steps` (those whose name contains ``steps``)."""
    for _ in range(repeats):
        for name, action in page_steps(page, label).items():
            if steps is not None and steps not in name:
                continue
            results.setdefault(name, []).append(timed(page, action))


def upload_cifar100(page, results: dict) -> None:
    """Upload the three CIFAR-100 files (one pick); times the upload until the maps are fitted."""
    paths = [REALDATA / name for name in CIFAR100_FILES]
    if not all(p.exists() for p in paths):
        print(f"skipping the 100-class runs: {REALDATA} lacks {CIFAR100_FILES}")
        return
    wait_fit_idle(page)
    settled_seconds(page)
    start = time.perf_counter()
    page.set_input_files("#upload-input", [str(p) for p in paths])
    page.wait_for_function(
        "() => document.querySelectorAll('#upload-message .upload-line').length > 0",
        timeout=600_000,
    )
    settled_seconds(page, 600)
    wait_fit_idle(page)
    results["upload"] = [time.perf_counter() - start]


def print_page_results(results: dict) -> None:
    width = max(len(name) for name in results)
    print(f"{'interaction':{width}s} {'median':>8s} {'range':>15s}")
    for name, values in results.items():
        done = [v for v in values if not math.isnan(v)]
        failed = f"  ({len(values) - len(done)} FAILED)" if len(done) < len(values) else ""
        if not done:
            print(f"{name:{width}s} every run failed")
            continue
        print(
            f"{name:{width}s} {statistics.median(done):7.2f}s "
            f"{min(done):6.2f}-{max(done):5.2f} s{failed}"
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only", choices=("interactions", "upload", "paint", "page"), action="append"
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--port", type=int, default=8157)
    parser.add_argument("--paint-repeats", type=int, default=5, help="warm first-paint runs")
    parser.add_argument(
        "--cold-repeats", type=int, default=3, help="first-paint runs on an empty cache"
    )
    parser.add_argument(
        "--trees",
        type=Path,
        nargs="+",
        help="paint only: warm runs of these source trees, interleaved (the first is the A)",
    )
    parser.add_argument(
        "--steps", help="page only: the steps whose name contains this text, no exports"
    )
    parser.add_argument(
        "--tree", type=Path, default=REPO, help="page only: run the server from this source tree"
    )
    args = parser.parse_args(argv)
    only = set(args.only or ("interactions", "upload", "paint", "page"))
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if "interactions" in only:
        bench_interactions(args.rows, args.classes, args.repeats)
    if "paint" in only and args.trees:
        bench_paint_trees(args.port, [tree.resolve() for tree in args.trees], args.paint_repeats)
    elif "paint" in only:
        bench_paint(args.port, args.paint_repeats, args.cold_repeats)
    if "page" in only:
        bench_page(args.port, args.repeats, args.steps, args.tree.resolve())
    if "upload" in only:
        bench_upload(args.port, args.rows, args.classes)


if __name__ == "__main__":
    main()
