"""The verdict per model above the metrics table, in a real browser (issue 14).

Fixtures (server, page, watch, ui, screenshot) are in ``conftest.py``.
"""

from __future__ import annotations

import re
import time

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

DEMO_MODELS = ("digits · naive Bayes", "digits · random forest")
BADGE = re.compile(
    r"^(clear winner: \w+|no clear winner \(best: \w+\)|only candidate: \w+)"
    r"(; recommended: \w+)?$"
)
#: A difference or bound: 2 significant digits, never a bare 0 (format_difference).
NUMBER = r"-?(\d\.\d+|\d\.?\d*e-\d+|0\.0*[1-9]\d?)"
SUMMARY = re.compile(
    rf"(beats|no clear winner).* held-out log-loss \d\.\d{{4}} vs \d\.\d{{4}}, difference "
    rf"{NUMBER} \(95% interval {NUMBER} to {NUMBER} on 1,797 held-out rows, fitting noise "
    r"included: 5-fold cross-fitting, each map fitted on 1,438 rows\)"
)


def _shown(ui, model: str) -> str:
    card = ui.verdict_card(model)
    expect(card).to_have_count(1)
    expect(card).not_to_have_class(re.compile(r"\bverdict-waiting\b"))
    return card.inner_text()


def test_verdict_of_the_demo_above_the_table_follows_the_maps(page, ui, watch, screenshot):
    ui.open()  # temperature and isotonic are the default maps; open() waits for their fit
    table = page.locator("#metrics-grid").bounding_box()
    assert page.locator("#verdict").bounding_box()["y"] < table["y"]
    before = {}
    for model in DEMO_MODELS:
        card = ui.verdict_card(model)
        expect(card).to_have_class(re.compile(r"\bverdict-(clear|unclear)\b"))
        expect(card.locator(".verdict-model")).to_have_text(model)
        expect(card.locator(".verdict-badge")).to_have_text(BADGE)
        lines = ui.verdict_lines(model)
        assert SUMMARY.search(lines[0]), lines
        assert lines[1].startswith("Recommended: "), lines
        assert re.fullmatch(
            r"Held-out log-loss \(parameters\): .*\buncalibrated [\d.]+ \(0\).*", lines[2]
        )
        assert re.fullmatch(
            r"Held-out confidence ECE: \w+ \d\.\d{4}(, \w+ \d\.\d{4}){1,2}\.", lines[3]
        )
        assert any(
            re.fullmatch(r"temperature: T = [\d.]+( to [\d.]+ over 5 folds)?\.", t) for t in lines
        )
        assert "isotonic" in lines[0] or "isotonic" in lines[1]
        before[model] = _shown(ui, model)
    expect(page.locator("#verdict .caption")).to_contain_text(
        "its interval includes the noise of fitting the maps"
    )
    screenshot("verdict-demo")

    # Without isotonic, the verdict is temperature against the uncalibrated predictions.
    ui.map_checkbox("isotonic regression").uncheck()
    for model in DEMO_MODELS:
        expect(ui.verdict_card(model).locator(".verdict-lines")).not_to_contain_text("isotonic")
        expect(ui.verdict_card(model).locator(".verdict-lines li").first).to_contain_text(
            "uncalibrated"
        )
        assert "temperature" in _shown(ui, model)
    # Back to both maps (already fitted): the same verdict as before.
    ui.map_checkbox("isotonic regression").check()
    ui.wait_fit_idle()
    for model in DEMO_MODELS:
        expect(ui.verdict_card(model)).to_have_text(before[model].replace("\n", ""))
    ui.wait_callbacks()
    watch.assert_clean()


#: Records, on every change of the page, the moments the line next to the Fit button says
#: "all selected maps are fitted" while a panel or a verdict still waits. (The table's
#: status column is left out: the grid draws the rows of the same answer after the
#: diagrams, about 0.2 s later on the test machine.)
WATCH_STATUS_JS = """() => {
  window.statusConflicts = [];
  const check = () => {
    const line = document.querySelector('#fit-summary');
    if (!line || line.classList.contains('hidden')) return;
    if (!/all selected maps are fitted/i.test(line.textContent)) return;
    const waiting = [
      ...document.querySelectorAll('#reliability-grid .annotation-text'),
      ...document.querySelectorAll('#verdict .verdict-waiting'),
    ].filter(e => /fitting…|waits for/.test(e.textContent)).map(e => e.closest('[id]').id);
    if (waiting.length) window.statusConflicts.push(`${line.textContent} | ${waiting}`);
  };
  new MutationObserver(check).observe(
    document.body, {subtree: true, childList: true, characterData: true, attributes: true});
}"""
#: How long the server's answers around a fit are held back (the machine may be fast).
HOLD_SECONDS = 1.5


def _hold_fit_answers(route) -> None:
    """Hold back the start of the fit job and the view that follows its end."""
    body = route.request.post_data_json or {}
    changed = body.get("changedPropIds") or []
    job_start = "fit-request.data" in changed and "job=" not in route.request.url
    view_after_fit = "fit-state.data" in changed and "verdict.children" in body.get("output", "")
    if job_start or view_after_fit:
        time.sleep(HOLD_SECONDS)
    route.continue_()


@pytest.mark.slow
def test_the_fit_status_says_fitted_only_with_the_panels(page, ui, watch):
    # Issue 28, item 5: the line next to the Fit button followed the fit state in the
    # browser, so it kept the last job's "all selected maps are fitted" while the panels
    # of a map ticked since said "fitting…" (until the job started), and said it again
    # as soon as the job ended, before the view drew the fitted panels. The server's
    # answers are held back here to make both moments last.
    ui.open()
    expect(page.locator("#fit-summary")).to_have_text(
        re.compile("all selected maps are fitted", re.I)
    )
    page.evaluate(WATCH_STATUS_JS)
    page.route("**/_dash-update-component*", _hold_fit_answers)
    ui.map_checkbox("beta calibration").check()
    for model in DEMO_MODELS:
        expect(ui.cell(model, "beta", "status")).to_have_text("ok")
        expect(ui.verdict_card(model)).not_to_have_class(re.compile(r"\bverdict-waiting\b"))
    expect(page.locator("#fit-summary")).to_have_text(
        re.compile(r"^Fitted 2 map\(s\) in [\d.]+ s; all selected maps are fitted\.$")
    )
    ui.wait_fit_idle()
    ui.wait_callbacks()
    assert page.evaluate("() => window.statusConflicts") == []
    page.unroute("**/_dash-update-component*")
    watch.assert_clean()
