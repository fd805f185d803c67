"""The page under its Content-Security-Policy in a real headless Chromium.

The dashboard is served (production settings, debug off) on 127.0.0.1 and
opened with Playwright on ``/usr/bin/chromium``. Checks, in one page:

* the page renders (graphs, table) with the CSP in force and the console stays
  clean: no CSP violation (``securitypolicyviolation`` events are recorded
  from the first script on), no console error, no page error;
* the CSP really is enforced: an inline script injected into the page is
  refused and reported (the positive control for the listener above);
* a file whose model name is ``<img src=x onerror=alert(1)>`` uploaded
  through the page shows that name as text in the model list, the figure and
  the table, and never runs it (no dialog, no ``img`` element);
* rapid changes of the bin count end with the figure and caption of the
  final value (Dash drops answers of superseded requests for an output), also
  when the earlier answers arrive last: they are held back (``page.route``)
  until the final view is drawn, then released, and the page is checked once
  it has handled every answer.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TAG = "<img src=x onerror=alert(1)>"
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__csp.push({directive: e.violatedDirective, blocked: e.blockedURI,
                     sample: e.sample, source: e.sourceFile});
});
"""


#: Header that marks the answers :class:`StaleViewAnswers` released late.
RELEASED_HEADER = "x-test-released-late"
#: Counts the late answers the page has handled (``window.__lateAnswersHandled``). Dash
#: reads every answer of a plain callback with ``res.json().then(...)``; the count's
#: ``then`` is registered first and only queues a macrotask, which runs after all of
#: Dash's microtasks for that answer (using it, or dropping it as superseded).
COUNT_LATE_ANSWERS = f"""
window.__lateAnswersHandled = 0;
const realFetch = window.fetch;
window.fetch = function (...args) {{
  return realFetch.apply(this, args).then((res) => {{
    if (res.headers.get('{RELEASED_HEADER}') === '1') {{
      const readJson = res.json.bind(res);
      res.json = () => {{
        const parsed = readJson();
        const handled = () => setTimeout(() => {{ window.__lateAnswersHandled += 1; }}, 0);
        parsed.then(handled, handled);
        return parsed;
      }};
    }}
    return res;
  }});
}};
"""


class StaleViewAnswers:
    """Holds back the view callback's answers for every bin count but the final one.

    :meth:`route` is a ``page.route`` handler for ``/_dash-update-component``;
    :meth:`release` delivers the held answers once the final view is drawn
    and waits until the page has handled them.

    Parameters
    ----------
    final_bins : int
        The bin count whose request goes through at once.
    """

    def __init__(self, final_bins: int) -> None:
        self.final_bins = final_bins
        self.held: list = []

    def route(self, route) -> None:
        payload = route.request.post_data_json or {}
        bins = [i.get("value") for i in payload.get("inputs") or [] if i.get("id") == "n-bins"]
        is_view = "metrics-grid.rowData" in str(payload.get("output"))
        if is_view and bins and bins[0] != self.final_bins:
            self.held.append(route)
        else:
            route.continue_()

    def release(self, page, timeout_ms: int = 60_000) -> None:
        """Send the held requests, hand their answers to the page, wait until it handled them.

        Each answer is marked with :data:`RELEASED_HEADER`, which
        :data:`COUNT_LATE_ANSWERS` counts. The deadline is only a safety net:
        every answer is handled, however slow the machine.
        """
        for route in self.held:
            answer = route.fetch()
            route.fulfill(response=answer, headers={**answer.headers, RELEASED_HEADER: "1"})
        page.wait_for_function(
            "n => window.__lateAnswersHandled === n", arg=len(self.held), timeout=timeout_ms
        )
        # Whatever the page did with them is drawn by the second animation frame.
        page.evaluate(
            "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )


@pytest.fixture(scope="module")
def live_url(tmp_path_factory):
    from werkzeug.serving import make_server

    from app.config import AppConfig
    from app.factory import create_app

    config = AppConfig(
        app_env="production",
        allowed_hosts=("127.0.0.1", "localhost"),
        cache_dir=tmp_path_factory.mktemp("csp"),
        secret_key="browser-secret-0123456789abcdef",
        session_cookie_secure=False,
    )
    dash_app = create_app(config)
    # Unthreaded, as ``calibration-dashboard serve`` runs it: the upload's fit is a job
    # forked from this process (app.jobs.LocalJobManager).
    server = make_server("127.0.0.1", 0, dash_app.server, threaded=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


@pytest.fixture(scope="module")
def browser(browser_available):
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def test_page_renders_under_the_csp_with_a_clean_console(live_url, browser, make_csv):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(RECORD_VIOLATIONS)
    context.add_init_script(COUNT_LATE_ANSWERS)
    page = context.new_page()
    console, errors, dialogs = [], [], []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    response = page.goto(live_url + "/")
    csp = response.headers["content-security-policy"]
    assert "script-src 'self' 'sha256-" in csp and "frame-ancestors 'none'" in csp
    page.wait_for_selector("#reliability-grid .reliability-graph .main-svg", timeout=90_000)
    page.wait_for_selector("#metrics-grid [col-id=ece]", timeout=60_000)

    # Upload a model named like an HTML tag through the page's own upload script.
    content = make_csv(n=400, k=3, seed=7, model=TAG)
    page.set_input_files(
        "#upload-input", files=[{"name": "tag.csv", "mimeType": "text/csv", "buffer": content}]
    )
    page.wait_for_selector("#upload-message .upload-line.ok", timeout=60_000)
    assert TAG in page.inner_text("#model-select")
    page.wait_for_function(
        "tag => Array.from(document.querySelectorAll('#reliability-grid text'))"
        ".some(t => t.textContent.includes(tag))",
        arg=TAG,
        timeout=60_000,
    )
    grid_models = page.locator("#metrics-grid .ag-cell[col-id=model]").all_inner_texts()
    assert TAG in grid_models
    assert page.locator("img[src='x']").count() == 0

    # Rapid bin-count changes: the view ends on the last value, also when the answers
    # to the earlier values arrive after it. They do, for certain: they are held back
    # until the final figure is drawn, then released.
    stale = StaleViewAnswers(final_bins=12)
    page.route("**/_dash-update-component*", stale.route)
    box = page.locator("#n-bins input[type=number]")
    for n in range(5, 13):
        box.fill(str(n))
        box.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#metrics-caption').textContent"
        ".includes('Binning: 12 equal-width bins')",
        timeout=60_000,
    )
    assert stale.held, "no earlier answer was pending when the final one was drawn"
    stale.release(page)
    page.unroute("**/_dash-update-component*", stale.route)
    assert "Binning: 12 equal-width bins" in page.inner_text("#metrics-caption")
    assert "12 equal-width bins" in page.inner_text("#view-title")

    violations = page.evaluate("window.__csp")
    assert violations == [], violations
    assert [m for m in console if m[0] == "error"] == []
    assert errors == [] and dialogs == []

    # Positive control: an injected inline script is refused and reported.
    page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.__inline_ran = true'; document.body.appendChild(s); }"
    )
    page.wait_for_function("window.__csp.length > 0", timeout=10_000)
    assert page.evaluate("window.__inline_ran") is None
    (control,) = page.evaluate("window.__csp")
    assert control["directive"].startswith("script-src")
    context.close()
