"""The smooth and cumulative diagrams and the "Beyond bins" card in a real browser (issue 17)."""

from __future__ import annotations

import re

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

#: Background jobs on a busy machine: the measures cost seconds per calibrator.
JOB_TIMEOUT_MS = 180_000


def test_switch_to_smooth_and_cumulative_then_compute_the_measures(page, ui, screenshot):
    page.set_viewport_size({"width": 1400, "height": 1000})
    ui.open()
    title = page.locator("#view-title")
    first = ui.graphs().first
    expect(page.locator("#diagram-kind input[value=binned]")).to_be_checked()

    ui.show_controls()
    page.locator("#diagram-kind input[value=smooth]").check()
    expect(title).to_contain_text("smooth reliability (no bins)")
    expect(
        first.locator(".annotation-text", has_text=re.compile(r"^smooth ECE 0\.\d{4}"))
    ).not_to_have_count(0)
    expect(first.locator(".legendtext", has_text="smoothed frequency")).to_have_count(1)
    ui.wait_callbacks()
    screenshot("17-smooth-diagram")

    page.locator("#diagram-kind input[value=cumulative]").check()
    expect(title).to_contain_text("cumulative differences (no bins)")
    expect(
        first.locator(".annotation-text", has_text=re.compile(r"^KS 0\.\d{4} \(p "))
    ).not_to_have_count(0)
    expect(first.locator(".legendtext", has_text="expected under calibration 95%")).to_have_count(1)
    ui.wait_callbacks()
    screenshot("17-cumulative-diagram")

    page.locator("#diag-toggle").click()
    card = page.locator("#diag-beyond-card")
    expect(card).to_contain_text("Not computed for these settings yet")
    page.locator("#diag-beyond-run").click()
    table = page.locator("#diag-beyond-table table")
    expect(page.locator("#diag-beyond-table")).not_to_contain_text(
        "not computed", timeout=JOB_TIMEOUT_MS
    )
    expect(page.locator("#diag-beyond-run")).to_be_enabled(timeout=JOB_TIMEOUT_MS)
    expect(table.locator("tr", has_text="smooth ECE").locator("td").nth(2)).to_have_text(
        re.compile(r"^0\.\d{4}$")
    )
    expect(table.locator("tr", has_text="SKCE (p)")).to_contain_text("(0.")
    ui.wait_callbacks()
    card.scroll_into_view_if_needed()
    screenshot("17-beyond-bins-card")
