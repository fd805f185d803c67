"""The verdict per model above the metrics table, in a real browser (issue 14).

Fixtures (server, page, watch, ui, screenshot) are in ``conftest.py``.
"""

from __future__ import annotations

import re

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
