"""The "Over time" card in the browser (issue 19): planted drift flagged, a clicked window drawn.

Fixtures (server, page, watch, ui, screenshot) are in ``conftest.py``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

FLAGGED = ["2023-11-22", "2023-11-23", "2023-11-24"]


def drift_frame(n: int, seed: int = 1) -> pd.DataFrame:
    """Ten days of calibrated predictions whose accuracy drops by 0.25 from the 8th day
    (as tests/app/test_over_time.py)."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1, n)
    t = 1_700_006_400 + np.sort(rng.integers(0, 10 * 86400, n))
    correct = rng.random(n) < conf - 0.25 * ((t - 1_700_006_400) // 86400 >= 7)
    stamps = pd.to_datetime(t, unit="s").strftime("%Y-%m-%dT%H:%M:%SZ")
    return pd.DataFrame({"timestamp": stamps, "p_a": conf, "p_b": 1 - conf,
                         "label": np.where(correct, "a", "b")})  # fmt: skip


def pick(page, picker: str, option: str) -> None:
    page.locator(picker).click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.locator(picker)).to_contain_text(option)


def ece_points(page):
    """The points of the chart's ECE panel (one per window), as Plotly draws them."""
    return page.locator("#time-graph .scatterlayer .trace").first.locator("path.point")


def click_point(page, index: int) -> None:
    """Click the ``index``-th window of the chart's ECE panel where Plotly draws it."""
    box = ece_points(page).nth(index).bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def test_over_time_flags_the_drift_and_draws_a_clicked_window(
    page, ui, watch, screenshot, tmp_path
):
    path = tmp_path / "drift.csv"
    drift_frame(4000).to_csv(path, index=False)
    ui.open()
    ui.upload(path)
    expect(ui.upload_lines("ok")).to_have_text("drift.csv: loaded drift.")
    ui.wait_fit_idle()
    page.locator("#diag-toggle").click()
    pick(page, "#diag-model", "drift (4,000 × 2)")
    card = page.locator("#diag-time-card")
    pick(page, "#time-window", "day")
    card.locator("#time-reference").fill("3")
    card.locator("#time-reference").press("Enter")
    # The card's settings are in the page address (only those unlike the defaults).
    expect(page).to_have_url(re.compile(r"&window=1d&ref=3$"))
    # Point estimates at once: ten days, the time column found, no table yet.
    expect(card).to_contain_text("Point estimates only")
    expect(ece_points(page)).to_have_count(10)
    expect(page.locator("#time-column")).to_contain_text("timestamp, time or date")
    # Intervals in the background; then the drifted days are highlighted.
    card.locator("#time-run").click()
    rows = card.locator("#time-table tbody tr.highlight")
    expect(rows).to_have_count(3, timeout=120_000)
    assert [r.split("\t")[0] for r in rows.all_inner_texts()] == FLAGGED
    expect(card).not_to_contain_text("Point estimates only")
    expect(card.locator("#time-graph .errorbar")).not_to_have_count(0)
    # A click on the 9th day draws its reliability diagram.
    click_point(page, 8)
    diagram = page.locator("#time-diagram")
    expect(diagram).to_be_visible()
    expect(diagram.locator(".gtitle")).to_have_text(re.compile(r"window 2023-11-23$"))
    expect(
        diagram.locator(".annotation-text", has_text=re.compile(r"^ECE 0\.\d{4}$"))
    ).to_have_count(1)
    # A reference period in dates: a reversed one is refused in words, then the same three
    # days as dates give the same windows above it.
    reference = card.locator("#time-reference")
    reference.fill("2023-11-17:2023-11-15")
    reference.press("Enter")
    expect(card.locator("#time-message")).to_contain_text("ends before it starts")
    reference.fill("2023-11-15:2023-11-17")
    reference.press("Enter")
    expect(page).to_have_url(re.compile(r"&ref=2023-11-15%3A2023-11-17$"))
    card.locator("#time-run").click()
    expect(card.locator("#time-table")).to_contain_text("reference (2023-11-15 to 2023-11-17)")
    expect(rows).to_have_count(3)
    assert [r.split("\t")[0] for r in rows.all_inner_texts()] == FLAGGED
    ui.wait_callbacks()
    card.scroll_into_view_if_needed()
    shot = screenshot("diagnostics-over-time")
    card.screenshot(
        path=str(shot.with_name("diagnostics-over-time-card.png")), animations="disabled"
    )
    watch.assert_clean()
