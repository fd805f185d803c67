"""The "Per group" section in Chromium: pick a group column, see the planted group flagged.

The file has five sites and a small one; "west" is overconfident (its
probabilities sharpened), so it must come out as the worst group, first in
the table and in the diagrams, with its intervals following from the
background job, and a map of its own beating the global one. Screenshots at 1400 and 900 px wide.
"""

from __future__ import annotations

import re

import pytest

from tests.hosting.test_per_group import planted_csv

try:
    from playwright.sync_api import expect
except ImportError:  # reported by conftest's `browser_available` fixture
    expect = None

from .dashboard_page import FIT_TIMEOUT_MS


def pick_group(page, column: str) -> None:
    """Choose a column in the group picker (typed in its search box, then clicked)."""
    page.locator("#group-select").click()
    menu = page.locator(".dash-dropdown-content")
    menu.locator("input[type=search]").fill(column)
    menu.get_by_role("option", name=column, exact=True).click()


@pytest.mark.parametrize("width", [1400, 900])
def test_a_planted_miscalibrated_group_is_flagged_worst(page, ui, tmp_path, screenshot, width):
    page.set_viewport_size({"width": width, "height": 1000})
    ui.open()
    path = tmp_path / "sites.csv"
    path.write_bytes(planted_csv())
    ui.upload(path)
    expect(ui.upload_lines("ok")).to_have_text("sites.csv: loaded sites.")
    ui.wait_fit_idle()
    section = page.locator("#group-section")
    expect(section).to_be_hidden()  # no grouping by default
    ui.show_controls()
    pick_group(page, "site")
    if page.locator("#controls-toggle").is_visible():
        page.locator("#controls-toggle").click()  # close the drawer again
    expect(section).to_be_visible()
    expect(page).to_have_url(re.compile(r"[?&]group=site(&|$)"))
    summary = page.locator("#group-summary")
    expect(summary).to_contain_text(re.compile(r"Worst group: site=west, ECE 0\.\d{4}, \+0\.\d{4}"))
    first = page.locator("#group-table tbody tr").nth(1)  # after "all rows"
    expect(first.locator("td").nth(0)).to_have_text("site=west")
    expect(first.locator("td").nth(2)).to_have_text("worst")
    island = page.locator("#group-table tbody tr", has_text="site=island")
    expect(island).to_contain_text("small: not judged")
    titles = page.locator("#group-graph .annotation-text")
    expect(titles.filter(has_text=re.compile(r"^west · worst$"))).to_have_count(1)
    # Intervals and the test follow from the background job.
    expect(first).to_contain_text("[", timeout=FIT_TIMEOUT_MS)
    expect(summary).to_contain_text(re.compile(r"p = [\d.e-]+: the groups differ"))
    # So do the global vs per-group maps: west's own temperature beats the global one.
    maps = page.locator("#group-maps")
    west = maps.locator("tbody tr", has_text="site=west")
    expect(west).to_contain_text("per-group map", timeout=FIT_TIMEOUT_MS)
    expect(maps.locator("tbody tr", has_text="site=island")).to_contain_text("small: not judged")
    ui.wait_callbacks()
    section.scroll_into_view_if_needed()
    screenshot(f"per-group-{width}")
