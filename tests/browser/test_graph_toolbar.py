"""The figures' toolbar (Plotly's modebar) and the keyboard path past it.

Issue 15, item 8: the modebar offered "Share chart..." (an upload of the
figure to Plotly's cloud), its buttons were tab stops (seven per figure) and
the Export panel came before the Fit button in the tab order.
"""

from __future__ import annotations

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

#: Whether ``a`` comes before ``b`` in the document (hence in the tab order).
PRECEDES = "([a, b]) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING)"


@pytest.mark.parametrize("width", [1400, 900])
def test_toolbar_has_no_share_button_and_no_tab_stops(page, ui, watch, screenshot, width):
    page.set_viewport_size({"width": width, "height": 900})
    ui.open()
    graph = ui.graphs().first
    graph.hover()
    buttons = graph.locator(".modebar-btn")
    expect(buttons.first).to_be_visible()
    titles = buttons.evaluate_all("els => els.map(e => e.getAttribute('data-title'))")
    assert "Share chart..." not in titles
    assert not [t for t in titles if "cloud" in t.lower() or "chart studio" in t.lower()]
    assert "Download plot as a PNG" in titles
    # Out of the tab order, every figure's (assets/modebar.js); still clickable.
    all_buttons = page.locator(".modebar-btn")
    expect(all_buttons.first).to_have_attribute("tabindex", "-1")
    assert all_buttons.evaluate_all("els => els.filter(e => e.tabIndex >= 0).length") == 0

    # Fit comes before Export in the tab order (DOM order, no positive tabindex).
    fit = page.locator("#fit-start")
    export = page.locator("#export-metrics-csv")
    assert page.evaluate(PRECEDES, [fit.element_handle(), export.element_handle()])
    assert (
        page.locator("[tabindex]").evaluate_all("els => els.filter(e => e.tabIndex > 0).length")
        == 0
    )
    # From Fit, Tab never lands on a toolbar button.
    fit.focus()
    for _ in range(3):
        page.keyboard.press("Tab")
        assert not page.evaluate("() => document.activeElement.matches('.modebar-btn')")

    # Where the Export panel is drawn: under the controls (wide) or after the results.
    controls = page.locator("#controls-dock").bounding_box()
    exports = page.locator(".sidebar-exports").bounding_box()
    results = page.locator(".results").bounding_box()
    if width >= 1000:
        assert exports["x"] == pytest.approx(controls["x"], abs=1)
        assert exports["y"] >= controls["y"] + controls["height"]
        assert exports["x"] + exports["width"] < results["x"]
        # Right under the controls, not pushed down by the results' height.
        assert exports["y"] - (controls["y"] + controls["height"]) < 40
    else:
        assert exports["y"] >= results["y"] + results["height"]
    screenshot(f"15-toolbar-{width}px")
    watch.assert_clean()
