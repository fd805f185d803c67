"""Bootstrap intervals in the browser: one control, estimates inside their intervals (issue 15).

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

CELL = re.compile(r"^(\d+\.\d{4})\s*\[(\d+\.\d{4}),\s(\d+\.\d{4})\]$")


def test_one_control_computes_intervals_that_hold_their_estimates(page, ui, watch, screenshot):
    ui.open()
    page.locator("#diag-toggle").click()
    card = page.locator("#diag-boot-card")
    # No checklist gates the button any more: the card says what the one button does.
    expect(card.locator("input[type=checkbox]")).to_have_count(0)
    expect(card).to_contain_text("Press “Compute intervals for every metric”")
    card.locator("#diag-boot-run").click()
    table = page.locator("#diag-boot-table table")
    expect(table).to_be_visible(timeout=120_000)
    expect(card).to_contain_text("How to read a cell")
    cells = table.locator("tbody td:not(:first-child)").all_inner_texts()
    assert cells and all(CELL.match(c.strip()) for c in cells), cells
    for text in cells:
        estimate, lower, upper = (float(v) for v in CELL.match(text.strip()).groups())
        assert 0.0 <= lower <= estimate <= upper, text  # never entirely below its estimate
    # Every card links to what its numbers promise, served by the app.
    link = page.locator("#diag-boot-card a.diag-doc-link")
    expect(link).to_have_attribute("href", "statistics#bootstrap-intervals")
    card.scroll_into_view_if_needed()
    screenshot("diagnostics-bootstrap-intervals")
    watch.assert_clean()


def test_statistics_page_is_served(page):
    page.goto("/statistics#hosmer-lemeshow")
    expect(page.locator("h2#hosmer-lemeshow")).to_be_visible()
    expect(page.locator("h2#bootstrap-intervals")).to_be_visible()
