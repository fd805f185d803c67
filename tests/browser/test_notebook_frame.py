"""show() from a kernel, seen in Chromium as a notebook shows it: framed by the notebook's page.

The "notebook" is a page on another port of 127.0.0.1 whose body is the HTML
the kernel displayed (the IFrame); the dashboard inside it must open on the
kernel's in-memory models, and fit their maps in jobs forked from the kernel.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from app.notebook import reliability_diagram

from .conftest import SCREENS, VIEWPORT
from .dashboard_page import FIT_TIMEOUT_MS

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (or fails under CI)
    expect = None

SHOW = """
import json
import numpy as np
from app.notebook import show
rng = np.random.default_rng(1)
P = rng.dirichlet(np.ones(3), size=800)
y = np.array([rng.choice(3, p=(row + 0.2) / 1.6) for row in P])
soft = np.sqrt(P) / np.sqrt(P).sum(1, keepdims=True)
dashboard = show({{"kernel alpha": (P, y), "kernel beta": (soft, y)}},
                 notebook_origin={origin!r}, url_host="127.0.0.1", height=1200)
print(json.dumps({{"url": dashboard.url}}))
"""


class NotebookPage(ThreadingHTTPServer):
    """A page at http://127.0.0.1:<port>/ whose body (``.body``) is the notebook's output."""

    body = ""

    def __init__(self) -> None:
        outer = self

        class Page(BaseHTTPRequestHandler):
            def do_GET(self):
                data = (
                    "<!DOCTYPE html><html lang='en'><head><title>notebook</title></head>"
                    f"<body>{outer.body}</body></html>"
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Page)
        self.origin = f"http://127.0.0.1:{self.server_port}"


@pytest.fixture
def notebook_page():
    """The notebook's page, served on a thread until the test ends."""
    server = NotebookPage()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_framed_dashboard_opens_on_the_kernels_models_and_fits_them(
    browser, kernel, notebook_page
):
    outputs = kernel.run(SHOW.format(origin=notebook_page.origin))
    notebook_page.body = next(
        o["data"]["text/html"] for o in outputs if o["type"] == "display_data"
    )
    printed = "".join(o.get("text", "") for o in outputs if o["type"] == "stream")
    url = json.loads([x for x in printed.splitlines() if x.startswith("{")][-1])["url"]
    assert f'src="{url}"' in notebook_page.body
    context = browser.new_context(viewport=VIEWPORT)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(notebook_page.origin + "/")
        frame = page.frame_locator("iframe")
        for name in ("kernel alpha", "kernel beta"):
            expect(frame.locator(".gtitle", has_text=name)).to_be_visible()
        summary = frame.locator("#fit-summary")
        expect(summary).to_have_text(re.compile(r"fitted", re.I), timeout=FIT_TIMEOUT_MS)
        expect(frame.locator(".gtitle", has_text="kernel alpha")).to_be_visible()
        page.screenshot(path=str(SCREENS / "notebook-frame.png"), full_page=True)
    finally:
        context.close()
        kernel.run("dashboard.stop()")
    assert not errors, errors


def test_a_notebook_figure_exported_as_static_html_draws_its_panels(browser, tmp_path):
    """What a static HTML export of the notebook shows: the figure drawn by plotly.js alone."""
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), size=600)
    labels = np.array([rng.choice(3, p=row) for row in probs])
    figure = reliability_diagram(probs, labels, maps=["temperature"], name="exported model")
    path = tmp_path / "figure.html"
    figure.write_html(path, include_plotlyjs=True, full_html=True)
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        expect(page.locator(".gtitle", has_text="exported model")).to_be_visible()
        for panel in ("uncalibrated", "temperature"):
            expect(page.locator(".annotation-text", has_text=panel).first).to_be_visible()
        scatter = sum(1 for trace in figure.data if trace.type == "scatter")
        expect(page.locator(".scatterlayer .trace")).to_have_count(scatter)
    finally:
        context.close()
