"""Page objects of the browser tests: ``PageWatch`` (what a page reported) and ``Dashboard``.

``conftest.py`` builds them in its ``watch`` and ``ui`` fixtures.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

try:
    from playwright.sync_api import expect
except ImportError:  # reported by conftest's `browser_available` fixture
    expect = None

#: Fitting maps in the background can take longer than one UI step.
FIT_TIMEOUT_MS = 120_000
#: Chromium's error for requests aborted by a change of the host's network.
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"
#: Chromium's error for requests the page still had running when it was left or reloaded.
ABORTED = "net::ERR_ABORTED"


#: Every body row element of the metrics grid (pinned and centre containers), as XPath.
GRID_ROW = "//*[@id='metrics-grid']//div[contains(concat(' ', @class, ' '), ' ag-row ')]"


def xpath_literal(text: str) -> str:
    """``text`` (whitespace normalised, as ``normalize-space``) as an XPath 1.0 string."""
    text = " ".join(text.split())
    if "'" not in text:
        return f"'{text}'"
    return "concat(" + ', "\'", '.join(f"'{part}'" for part in text.split("'")) + ")"


@dataclass
class PageWatch:
    """Everything a page reported that a clean dashboard never produces."""

    console: list[tuple[str, str, str]] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    http_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    #: True while a test reloads the page or steps through its history (:meth:`leaving`).
    navigating: bool = False

    def attach(self, page) -> None:
        page.on("console", self._on_console)
        page.on("pageerror", lambda err: self.page_errors.append(str(err)))
        page.on("requestfailed", self._on_request_failed)
        page.on("response", self._on_response)
        page.on("dialog", self._on_dialog)

    def _on_console(self, msg) -> None:
        loc = msg.location or {}
        where = f"{loc.get('url', '')}:{loc.get('lineNumber', '')}"
        self.console.append((msg.type, msg.text, where))

    def _on_request_failed(self, request) -> None:
        if self.navigating and ABORTED in str(request.failure):
            return  # the old document's requests end with it, in any browser
        self.failed_requests.append(f"{request.method} {request.url}: {request.failure}")

    def _on_response(self, response) -> None:
        if response.status >= 400:
            self.http_errors.append(f"{response.status} {response.request.method} {response.url}")

    def _on_dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def errors(self) -> list[str]:
        """Console errors and warnings, page errors, failed requests, HTTP errors, dialogs.

        Nothing is filtered: a dashboard page in production mode logs nothing
        at warning level or above.
        """
        out = [
            f"console {kind}: {text} ({where})"
            for kind, text, where in self.console
            if kind in ("error", "warning")
        ]
        out += [f"page error: {e}" for e in self.page_errors]
        out += [f"request failed: {r}" for r in self.failed_requests]
        out += [f"HTTP error: {r}" for r in self.http_errors]
        out += [f"dialog opened: {d}" for d in self.dialogs]
        return out

    def drop_network_changes(self) -> int:
        """Forget what Chromium aborted because the host's network changed; returns how many.

        Chromium aborts requests in flight with ``net::ERR_NETWORK_CHANGED`` when
        the host's network configuration changes (other jobs on a shared CI
        machine can cause that); it says nothing about the dashboard. Only
        :meth:`Dashboard.open` calls this, and then reloads the page.
        """
        before = len(self.console) + len(self.failed_requests)
        self.console = [m for m in self.console if NETWORK_CHANGED not in m[1]]
        self.failed_requests = [r for r in self.failed_requests if NETWORK_CHANGED not in r]
        return before - len(self.console) - len(self.failed_requests)

    @contextmanager
    def leaving(self) -> Iterator[None]:
        """While the test replaces the page's document: its aborted requests are no fault.

        A reload (or Back to an address that reloads) aborts whatever the old
        document was still fetching, e.g. Chromium's favicon request after the
        address changed. Any other failure is still recorded.
        """
        self.navigating = True
        try:
            yield
        finally:
            self.navigating = False

    def assert_clean(self) -> None:
        problems = self.errors()
        assert not problems, "the page reported problems:\n" + "\n".join(problems)


class Dashboard:
    """The dashboard page: navigation, uploads, controls and the metrics table."""

    def __init__(self, page, watch: PageWatch) -> None:
        self.page = page
        self.watch = watch

    # -- navigation
    def open(self, attempts: int = 3, address: str = "/") -> None:
        """Load the page at ``address``; wait for the first diagrams and the end of the initial fit.

        A load during which the host's network changed is not the dashboard's
        fault: it is reloaded (at most ``attempts`` loads), with a notice.
        """
        for attempt in range(1, attempts + 1):
            try:
                self.page.goto(address)
                self._wait_loaded()
            except AssertionError:
                if attempt == attempts or not self.watch.drop_network_changes():
                    raise
            else:
                if attempt == attempts or not self.watch.drop_network_changes():
                    return
            print(f"page load {attempt}: the network changed ({NETWORK_CHANGED}); reloading")

    def reload(self) -> None:
        """Reload the page (at its current address) and wait as :meth:`open` does."""
        with self.watch.leaving():
            self.page.reload()
            self._wait_loaded()

    def step_history(self, back: bool = True) -> None:
        """Back (or Forward); the page reloads at that address (``assets/view_history.js``).

        Waits for the new document (the old one carries a mark), then as :meth:`open` does.
        """
        self.page.evaluate("() => { window.leftByTest = true; }")
        with self.watch.leaving():
            if back:
                self.page.go_back()
            else:
                self.page.go_forward()
            self.page.wait_for_function("() => !window.leftByTest")
            self._wait_loaded()

    def _wait_loaded(self) -> None:
        expect(self.graphs().first.locator(".main-svg").first).to_be_visible()
        # upload.js creates the file input once the page is loaded
        expect(self.page.locator("#upload-input")).to_be_attached()
        # On a fresh store the planner starts a background fit of the default maps
        # (none once they are stored); interacting only after it keeps every test
        # on the same footing.
        self.wait_fit_idle()
        self.wait_callbacks()

    def wait_callbacks(self) -> None:
        """No Dash callback output pending (the renderer marks them data-dash-is-loading)."""
        expect(self.page.locator("[data-dash-is-loading=true]")).to_have_count(0)

    def graphs(self):
        return self.page.locator("#reliability-grid .reliability-graph")

    def graph_of(self, model_name: str):
        """The diagram of a model (its figure title starts with the model name)."""
        return self.graphs().filter(has=self.page.locator(".gtitle", has_text=model_name))

    # -- fitting
    def wait_fit_idle(self) -> None:
        """No fit running: the Fit button is enabled, the progress bar hidden and the
        outcome shown (a fresh page has none until its planner or fit has answered)."""
        expect(self.page.locator("#fit-start")).to_be_enabled(timeout=FIT_TIMEOUT_MS)
        expect(self.page.locator("#fit-progress")).to_have_class(
            re.compile(r"\bidle\b"), timeout=FIT_TIMEOUT_MS
        )
        summary = self.page.locator("#fit-summary")
        expect(summary).to_have_text(re.compile(r"\S"), timeout=FIT_TIMEOUT_MS)
        expect(summary).not_to_have_class(re.compile(r"\bhidden\b"), timeout=FIT_TIMEOUT_MS)

    # -- upload
    def upload(self, *paths: Path) -> None:
        """Pick files through the hidden file input of ``assets/upload.js``."""
        self.page.set_input_files("#upload-input", [str(p) for p in paths])

    def upload_lines(self, kind: str):
        return self.page.locator(f"#upload-message .upload-line.{kind}")

    # -- controls
    def show_controls(self) -> None:
        """Open the controls drawer if the window is narrow enough to have one (< 1000 px)."""
        toggle = self.page.locator("#controls-toggle")
        if toggle.is_visible() and toggle.get_attribute("aria-expanded") != "true":
            toggle.click()
            expect(toggle).to_have_attribute("aria-expanded", "true")
        expect(self.page.locator("#controls-drawer")).to_be_visible()

    def model_checkbox(self, label: str):
        return self.page.locator("#model-select").get_by_label(label, exact=True)

    def map_checkbox(self, label: str):
        return self.page.locator("#maps").get_by_label(label, exact=True)

    def set_bins(self, n: int) -> None:
        """Type the bin count in the slider's number box and press Enter."""
        self.show_controls()
        box = self.page.locator("#n-bins input[type=number]")
        box.fill(str(n))
        box.press("Enter")

    def set_scheme(self, scheme: str) -> None:
        self.show_controls()
        self.page.locator(f"#scheme input[value={scheme}]").check()

    def set_notion(self, notion: str) -> None:
        self.show_controls()
        self.page.locator(f"#notion input[value={notion}]").check()

    # -- verdict
    def verdict_card(self, model: str):
        """The verdict card of a model (above the metrics table)."""
        return self.page.locator(f'#verdict .verdict-card[data-model="{model}"]')

    def verdict_lines(self, model: str) -> list[str]:
        """The sentences of a model's verdict, as shown."""
        return self.verdict_card(model).locator(".verdict-lines li").all_inner_texts()

    # -- table
    def row(self, model: str, calibrator: str):
        """The ag-grid row whose model and calibrator cells read exactly so.

        The model and status columns are pinned (left and right containers),
        so a row is up to three elements sharing a ``row-index``: all of them.
        """

        def indices(column: str, text: str) -> str:
            cell = f"@col-id='{column}' and normalize-space(.)={xpath_literal(text)}"
            return f"{GRID_ROW}[.//*[{cell}]]/@row-index"

        both = (
            f"@row-index = {indices('model', model)} and @row-index = {indices('map', calibrator)}"
        )
        return self.page.locator(f"xpath={GRID_ROW}[{both}]")

    def cell(self, model: str, calibrator: str, column: str):
        return self.row(model, calibrator).locator(f'[col-id="{column}"]')

    def table_rows(self) -> list[dict[str, str]]:
        """The rendered table as text: one dict (col-id -> cell text) per row, in order.

        A row's cells are gathered from the pinned and the centre containers.
        """
        return self.page.locator("#metrics-grid .ag-body").evaluate(
            """(body) => {
                 const rows = new Map();
                 for (const part of body.querySelectorAll('.ag-row[row-index]')) {
                   const index = +part.getAttribute('row-index');
                   const cells = rows.get(index) || {};
                   for (const cell of part.querySelectorAll('[col-id]')) {
                     cells[cell.getAttribute('col-id')] = cell.textContent.trim();
                   }
                   rows.set(index, cells);
                 }
                 return Array.from(rows.keys()).sort((a, b) => a - b).map(i => rows.get(i));
               }"""
        )
