"""Below 1000 px the controls are a drawer: the first diagram is on the first screen.

Issue 15, item 9: at 900 px, 1,450 px of controls came before the first
diagram. Now a bar with a "Controls" button (``aria-expanded``) replaces them;
the drawer it opens holds every control, which works there (Escape closes
it, ``assets/keyboard.js``); the metrics table keeps model names and status
in view (pinned columns).
"""

from __future__ import annotations

import re

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

HEIGHT = 900
#: At least this much of the first diagram is on the first screen.
FIRST_SCREEN_PX = 200


def first_diagram_top(ui) -> float:
    return ui.graphs().first.bounding_box()["y"]


def test_narrow_window_controls_in_a_drawer(page, ui, watch, screenshot):
    page.set_viewport_size({"width": 900, "height": HEIGHT})
    ui.open()
    toggle = page.locator("#controls-toggle")
    drawer = page.locator("#controls-drawer")
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_have_attribute("aria-controls", "controls-drawer")
    expect(drawer).to_be_hidden()
    assert page.evaluate("() => window.scrollY") == 0
    top = first_diagram_top(ui)
    assert top + FIRST_SCREEN_PX <= HEIGHT, f"the first diagram starts at {top:.0f} px"
    screenshot("15-drawer-900px-closed")

    # Keyboard: Enter opens it, and the next Tab stop is inside it.
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(drawer).to_be_visible()
    page.keyboard.press("Tab")
    assert page.evaluate(
        "() => document.getElementById('controls-drawer').contains(document.activeElement)"
    )
    # Over the results: the diagrams stay where they were.
    assert first_diagram_top(ui) == pytest.approx(top, abs=1)
    screenshot("15-drawer-900px-open")

    # The controls work inside it.
    ui.set_bins(10)
    expect(page.locator("#view-title")).to_have_text(re.compile(r"· 10 equal-width bins ·"))
    extra = ui.model_checkbox("digits · logistic regression (1,797 × 10)")
    extra.check()
    expect(ui.graphs()).to_have_count(3)
    expect(ui.graph_of("digits · logistic regression")).to_have_count(1)
    ui.wait_fit_idle()
    ui.wait_callbacks()
    # Model names and status stay in view in the table (pinned to its edges).
    for column in ("model", "status"):
        cell = ui.cell("digits · logistic regression", "isotonic", column)
        expect(cell).to_be_visible()
        box, grid = cell.bounding_box(), page.locator("#metrics-grid").bounding_box()
        assert grid["x"] <= box["x"] and box["x"] + box["width"] <= grid["x"] + grid["width"] + 1
    expect(ui.cell("digits · logistic regression", "isotonic", "status")).to_have_text("ok")

    # Escape inside it closes it and gives the focus back to the button.
    page.locator("#n-bins input[type=number]").focus()
    page.keyboard.press("Escape")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(drawer).to_be_hidden()
    expect(toggle).to_be_focused()
    # Mouse presses open and close it; the settings stay.
    toggle.click()
    expect(drawer).to_be_visible()
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(drawer).to_be_hidden()
    expect(page.locator("#view-title")).to_have_text(re.compile(r"· 10 equal-width bins ·"))
    watch.assert_clean()


def test_wide_window_has_no_drawer(page, ui, watch, screenshot):
    page.set_viewport_size({"width": 1400, "height": HEIGHT})
    ui.open()
    expect(page.locator("#controls-toggle")).to_be_hidden()
    drawer = page.locator("#controls-drawer")
    expect(drawer).to_be_visible()
    controls = drawer.bounding_box()
    results = page.locator(".results").bounding_box()
    assert controls["x"] + controls["width"] < results["x"], "controls left of the results"
    assert first_diagram_top(ui) + FIRST_SCREEN_PX <= HEIGHT
    screenshot("15-drawer-1400px")
    watch.assert_clean()
