"""Bytes on the wire of a cold-cache first page (issue 30): what a first visit downloads.

Usage::

    python benchmarks/bench_wire_bytes.py [--tree PATH] [--url URL] [--repeat N]

Starts ``python -m app.cli serve`` from ``--tree`` (default: this checkout) on a
free port with an empty ``CACHE_DIR`` (or measures the server at ``--url``),
opens ``/`` in headless Chromium (``/usr/bin/chromium``) in a fresh browser
context (an empty browser cache) and counts, through the DevTools protocol,
the bytes each response took on the wire (``Network.loadingFinished``'s
``encodedDataLength``: headers and the body as sent, compressed or not).

Two cut points are printed:

* ``first diagram``: when the first reliability diagram has a trace (the
  page's HTML, its scripts and style sheets, ``_dash-layout`` and the callbacks
  that ran until then);
* ``settled``: no Dash callback output pending and no request for
  :data:`QUIET_SECONDS` (the second diagram, the metrics grid and its lazily
  loaded chunk, the background fit's polls).

For each: the total, the bytes per resource type, the ten largest responses,
and for every JS/CSS response its ``Content-Encoding`` (``-``: none). The
target (issue 30): the first page moves < 1.5 MB (1.5e6 bytes) until the first
diagrams are drawn.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 900}
#: The first reliability diagram is drawn: Plotly has put a trace in its scatter layer.
FIRST_DIAGRAM = ".reliability-graph .main-svg .scatterlayer .trace"
#: Seconds without a request (and no callback pending) after which the page is settled.
QUIET_SECONDS = 1.5
#: The issue's target for the first diagrams, bytes.
TARGET_BYTES = 1_500_000


@dataclass
class Transfer:
    """One response: its address, resource type, encoding and bytes on the wire."""

    url: str
    kind: str
    mime: str
    encoding: str = "-"
    wire_bytes: int = 0
    done: bool = False


@dataclass
class WireLog:
    """The responses of one page load, fed by the DevTools ``Network`` events."""

    transfers: dict[str, Transfer] = field(default_factory=dict)
    last_event: float = field(default_factory=time.monotonic)

    def attach(self, cdp) -> None:
        cdp.on("Network.responseReceived", self._on_response)
        cdp.on("Network.loadingFinished", self._on_finished)
        cdp.send("Network.enable")
        # A fresh context has an empty cache; this also keeps Chromium from reusing one.
        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})

    def _on_response(self, event: dict) -> None:
        response = event["response"]
        headers = {name.lower(): value for name, value in response["headers"].items()}
        self.transfers[event["requestId"]] = Transfer(
            url=response["url"],
            kind=event.get("type", "Other"),
            mime=response.get("mimeType", ""),
            encoding=headers.get("content-encoding", "-"),
        )
        self.last_event = time.monotonic()

    def _on_finished(self, event: dict) -> None:
        transfer = self.transfers.get(event["requestId"])
        if transfer is not None:
            transfer.wire_bytes = int(event["encodedDataLength"])
            transfer.done = True
        self.last_event = time.monotonic()

    def snapshot(self) -> list[Transfer]:
        """The finished responses so far (a copy)."""
        return [Transfer(**vars(t)) for t in self.transfers.values() if t.done]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(tree: Path, port: int, cache_dir: Path) -> subprocess.Popen:
    """``python -m app.cli serve`` from ``tree`` with an empty ``CACHE_DIR``."""
    path = os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = dict(os.environ, CACHE_DIR=str(cache_dir), PYTHONPATH=path)
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_healthy(url: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url}/healthz did not answer within {timeout:.0f} s")


def wait_settled(page, log: WireLog, timeout: float = 60.0) -> None:
    """Until no callback output is pending and no network event came for QUIET_SECONDS."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = page.locator("[data-dash-is-loading=true]").count()
        if not pending and time.monotonic() - log.last_event >= QUIET_SECONDS:
            return
        page.wait_for_timeout(100)
    raise RuntimeError(f"the page did not settle within {timeout:.0f} s")


def load_page(
    browser, url: str, accept: str | None = None
) -> tuple[list[Transfer], list[Transfer]]:
    """The responses until the first diagram is drawn, and until the page settled.

    ``accept``: the ``Accept-Encoding`` the page's requests send instead of Chromium's.
    """
    headers = {} if accept is None else {"Accept-Encoding": accept}
    context = browser.new_context(viewport=VIEWPORT, extra_http_headers=headers)
    try:
        page = context.new_page()
        log = WireLog()
        log.attach(context.new_cdp_session(page))
        page.goto(f"{url}/")
        page.wait_for_selector(FIRST_DIAGRAM, timeout=60_000)
        first = log.snapshot()
        wait_settled(page, log)
        return first, log.snapshot()
    finally:
        context.close()


def short(url: str, width: int = 78) -> str:
    path = url.split("://", 1)[-1].split("/", 1)[-1]
    return "/" + path if len(path) < width else "/" + path[: width - 4] + "..."


def report(label: str, transfers: list[Transfer]) -> int:
    """Print the total, the bytes per type, the ten largest and the JS/CSS encodings."""
    total = sum(t.wire_bytes for t in transfers)
    verdict = "met" if total < TARGET_BYTES else "MISSED"
    print(f"\n== {label}: {len(transfers)} responses, {total:,} bytes on the wire ==")
    print(f"(target < {TARGET_BYTES:,} bytes until the first diagrams: {verdict})")
    by_kind: dict[str, list[int]] = {}
    for t in transfers:
        by_kind.setdefault(t.kind, []).append(t.wire_bytes)
    for kind, sizes in sorted(by_kind.items(), key=lambda item: -sum(item[1])):
        print(f"  {kind:12s} {len(sizes):4d} responses {sum(sizes):12,} bytes")
    print("  largest:")
    for t in sorted(transfers, key=lambda t: -t.wire_bytes)[:10]:
        print(f"    {t.wire_bytes:10,}  {t.encoding:5s}  {short(t.url)}")
    scripts = [t for t in transfers if t.kind in ("Script", "Stylesheet")]
    plain = [t for t in scripts if t.encoding == "-"]
    print(f"  JS/CSS responses: {len(scripts)}, without Content-Encoding: {len(plain)}")
    for t in plain:
        print(f"    uncompressed: {t.wire_bytes:10,}  {short(t.url)}")
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO, help="source tree to serve")
    parser.add_argument("--url", help="measure this running server instead of starting one")
    parser.add_argument("--repeat", type=int, default=1, help="page loads (fresh contexts)")
    parser.add_argument(
        "--accept-encoding", help="send this Accept-Encoding instead of Chromium's (e.g. gzip)"
    )
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    proc = None
    url = args.url
    if url is None:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_server(args.tree.resolve(), port, Path(tempfile.mkdtemp(prefix="wire-")))
    try:
        wait_healthy(url)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for run in range(1, args.repeat + 1):
                first, settled = load_page(browser, url, args.accept_encoding)
                print(f"\n##### page load {run} of {url}/ (fresh browser context)")
                report("until the first diagram is drawn", first)
                report("until the page settled", settled)
            browser.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
