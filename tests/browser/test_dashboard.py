"""The dashboard in a real browser: the demo view, keyboard use, names shown as text.

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

FOUR_DECIMALS = re.compile(r"^\d+\.\d{4}$")
DEMO_MODELS = ("digits · naive Bayes", "digits · random forest")
DEFAULT_CALIBRATORS = ("uncalibrated", "isotonic", "temperature")


def test_opens_on_the_demo(page, ui, watch, screenshot):
    ui.open()
    # One diagram per default demo model, each titled with the model.
    expect(ui.graphs()).to_have_count(len(DEMO_MODELS))
    for model in DEMO_MODELS:
        expect(ui.graph_of(model)).to_have_count(1)
        expect(ui.model_checkbox(f"{model} (1,797 × 10)")).to_be_checked()
    # Title, figure subtitles and table caption state the notion and the binning.
    expect(page.locator("#view-title")).to_have_text(
        "confidence (top label) · 15 equal-width bins · band: Wilson 95%"
    )
    caption = page.locator("#metrics-caption")
    expect(caption).to_contain_text("ECE and MCE: confidence (top label)")
    expect(caption).to_contain_text("Binning: 15 equal-width bins")
    for model in DEMO_MODELS:
        expect(ui.graph_of(model).locator(".gtitle-subtitle")).to_contain_text(
            "confidence (top label) · 15 equal-width bins"
        )

    # The default maps are fitted in the background; then every panel has a curve.
    ui.wait_fit_idle()
    for model in DEMO_MODELS:
        panels = ui.graph_of(model).locator(".annotation-text")
        for calibrator in DEFAULT_CALIBRATORS:
            expect(panels.filter(has_text=re.compile(f"^{calibrator}$"))).to_have_count(1)
            expect(ui.cell(model, calibrator, "ece")).to_have_text(FOUR_DECIMALS)
            expect(ui.cell(model, calibrator, "status")).to_have_text("ok")
        expect(panels.filter(has_text="fitting")).to_have_count(0)
        # The ECE printed in each panel is the table's.
        shown = sorted(t for t in panels.all_text_contents() if t.startswith("ECE "))
        table = sorted("ECE " + ui.cell(model, c, "ece").inner_text() for c in DEFAULT_CALIBRATORS)
        assert shown == table
    rows = ui.table_rows()
    assert [(r["model"], r["map"]) for r in rows] == [
        (m, c) for m in DEMO_MODELS for c in DEFAULT_CALIBRATORS
    ]
    # Each model's best value per column is highlighted (ties aside, one cell or more).
    for model in DEMO_MODELS:
        best = page.locator(f'#metrics-grid [row-id^="{model}"] [col-id="ece"].cell-best')
        expect(best).not_to_have_count(0)
    screenshot("01-demo-confidence")

    # Another notion: the class picker appears, on the first model's worst class (one-vs-rest
    # ECE), and the title and caption say so.
    ui.set_notion("class")
    expect(page.locator("#class-field")).to_be_visible()
    title = page.locator("#view-title")
    pattern = r"^one class vs rest \(class (\d)\) · 15 equal-width bins · band: Wilson 95%$"
    expect(title).to_have_text(re.compile(pattern))
    worst = re.match(pattern, title.inner_text().strip()).group(1)
    expect(caption).to_contain_text(f"one class vs rest, class {worst}")
    expect(page.locator("#class-select")).to_contain_text(f"class {worst}")
    expect(
        ui.graphs().first.locator(".annotation-text", has_text=f"uncalibrated · class {worst}")
    ).to_be_visible()
    screenshot("02-demo-one-vs-rest")
    watch.assert_clean()


def test_metrics_grid_sorts_and_diagnostics_open(page, ui, watch):
    """The grid is fully functional and the hidden Diagnostics body opens."""
    ui.open()
    expect(ui.graphs()).to_have_count(len(DEMO_MODELS))
    expect(page.locator("#metrics-grid .ag-row")).not_to_have_count(0)
    # Sorting works.
    header = page.locator('#metrics-grid .ag-header-cell[col-id="ece"]')
    header.click()
    expect(header).to_have_attribute("aria-sort", re.compile("ascending|descending"))
    # The hidden Diagnostics body opens with its controls rendered.
    page.locator("#diag-toggle").click()
    expect(page.locator("#diag-model")).to_be_visible()
    watch.assert_clean()


def test_diagnostics_send_nothing_until_opened(page, ui, watch):
    """A closed Diagnostics section costs no request; opened, its panels follow the settings."""
    posts: list[str] = []
    page.on(
        "request",
        lambda r: "_dash-update-component" in r.url and posts.append(r.post_data or ""),
    )
    ui.open()
    ui.wait_callbacks()
    assert not [p for p in posts if '"diag-' in p], posts
    page.locator("#diag-toggle").click()
    caption = page.locator("#diag-caption")
    expect(caption).to_contain_text("15 equal-width bins")
    expect(page.locator("#diag-sensitivity .main-svg").first).to_be_visible()
    expect(page.locator("#diag-hl")).not_to_be_empty()
    expect(page.locator("#diag-decision")).not_to_be_empty()
    # While open, the panels follow the view's settings.
    ui.set_bins(12)
    expect(caption).to_contain_text("12 equal-width bins")
    # Closed again, a change of setting sends nothing to the section.
    page.locator("#diag-toggle").click()
    ui.wait_callbacks()
    sent = len(posts)
    ui.set_bins(10)
    expect(page.locator("#view-title")).to_contain_text("10 equal-width bins")
    ui.wait_callbacks()
    assert not [p for p in posts[sent:] if '"diag-' in p], posts[sent:]
    watch.assert_clean()


def test_keyboard_upload_and_bin_count(page, ui, watch, tmp_path, screenshot):
    path = tmp_path / "keyboard.csv"
    rng = np.random.default_rng(5)
    p = rng.uniform(0.02, 0.98, 400)
    frame = pd.DataFrame({"p_no": 1 - p, "p_yes": p})
    frame["label"] = np.where(rng.uniform(size=p.size) < p, "yes", "no")
    frame.to_csv(path, index=False)

    # Playwright turns file-chooser interception on without waiting for the browser's
    # answer; a listener added before the page loads makes sure it is on in time.
    page.on("filechooser", lambda _chooser: None)
    ui.open()
    # The first Tab stop is the drop zone; Enter opens the file picker.
    page.keyboard.press("Tab")
    expect(page.locator("#upload-zone")).to_be_focused()
    with page.expect_file_chooser() as chooser:
        page.keyboard.press("Enter")
    chooser.value.set_files(str(path))
    expect(ui.upload_lines("ok")).to_have_text("keyboard.csv: loaded keyboard.")
    expect(ui.graph_of("keyboard")).to_be_visible()

    # Tab on from the drop zone to the bin count's number box.
    page.locator("#upload-zone").focus()
    number_box = page.locator("#n-bins input[type=number]")
    presses = 0
    while not number_box.evaluate("box => box === document.activeElement"):
        presses += 1
        assert presses <= 30, "30 Tab presses from the drop zone never reached the bin count"
        page.keyboard.press("Tab")
    expect(number_box).to_be_focused()

    # Type a count and press Enter: title, subtitles and table caption follow.
    page.keyboard.press("Control+A")
    page.keyboard.type("8")
    page.keyboard.press("Enter")
    expect(page.locator("#view-title")).to_contain_text("8 equal-width bins")
    subtitle = ui.graph_of("keyboard").locator(".gtitle-subtitle")
    expect(subtitle).to_contain_text("8 equal-width bins")
    expect(page.locator("#metrics-caption")).to_contain_text("Binning: 8 equal-width bins")
    expect(number_box).to_be_focused()

    # The next Tab stop is the slider itself: arrow keys move it one bin at a time.
    page.keyboard.press("Tab")
    thumb = page.locator("#n-bins [role=slider]")
    expect(thumb).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(thumb).to_have_attribute("aria-valuenow", "9")
    expect(subtitle).to_contain_text("9 equal-width bins")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(subtitle).to_contain_text("7 equal-width bins")
    expect(number_box).to_have_value("7")
    screenshot("05-keyboard-7-bins")
    watch.assert_clean()


XSS_CLASS = "<img src=x onerror=alert(1)>"
XSS_MODEL = "<script>alert(2)</script>"
XSS_FILE = "<svg onload=alert(3)>names.csv"  # no "/" in a file name


def test_names_render_as_text(page, ui, watch, tmp_path, screenshot):
    rng = np.random.default_rng(8)
    p = rng.uniform(0.02, 0.98, 300)
    frame = pd.DataFrame({"model": XSS_MODEL, f"p_{XSS_CLASS}": p, "p_plain": 1 - p})
    frame["label"] = np.where(rng.uniform(size=p.size) < p, XSS_CLASS, "plain")
    path = tmp_path / XSS_FILE
    frame.to_csv(path, index=False)

    ui.open()
    for model in DEMO_MODELS:
        ui.model_checkbox(f"{model} (1,797 × 10)").uncheck()
    ui.upload(path)
    expect(ui.upload_lines("ok")).to_have_text(f"{XSS_FILE}: loaded {XSS_MODEL}.")
    expect(ui.model_checkbox(f"{XSS_MODEL} (300 × 2)")).to_be_checked()
    expect(ui.graph_of(XSS_MODEL)).to_be_visible()
    expect(ui.cell(XSS_MODEL, "uncalibrated", "model")).to_have_text(XSS_MODEL)

    # One class vs rest (it opens on one class), all classes as small multiples (titled
    # by class alone), then the payload class alone.
    ui.set_notion("class")
    panel = ui.graph_of(XSS_MODEL).locator(".annotation-text")
    expect(panel.filter(has_text=re.compile(r"^uncalibrated · class "))).to_have_count(1)
    page.locator("#class-select").click()
    page.get_by_role("option", name=re.compile(r"^all classes")).click()
    expect(
        panel.filter(has_text=re.compile(f"^class {re.escape(XSS_CLASS)}$")).first
    ).to_be_visible()
    expect(panel.filter(has_text=re.compile(r"^class plain$")).first).to_be_visible()
    page.locator("#class-select").click()
    page.get_by_role("option", name=f"class {XSS_CLASS}", exact=True).click()
    expect(page.locator("#view-title")).to_contain_text(f"one class vs rest (class {XSS_CLASS})")
    expect(page.locator("#class-select")).to_contain_text(f"class {XSS_CLASS}")
    expect(panel.filter(has_text="uncalibrated · class plain")).to_have_count(0)
    expect(panel.filter(has_text=f"uncalibrated · class {XSS_CLASS}")).to_have_count(1)
    expect(page.locator("#metrics-caption")).to_contain_text(f"class {XSS_CLASS}")
    ui.wait_fit_idle()
    expect(ui.cell(XSS_MODEL, "temperature", "status")).to_have_text("ok")

    # Nothing was parsed as markup: no such elements, no dialog, no handler ran.
    assert page.locator("img[src=x], svg[onload], script:text('alert')").count() == 0
    assert watch.dialogs == []
    screenshot("06-names-as-text")
    watch.assert_clean()


def test_a_selection_change_redraws_only_the_diagram_it_adds_or_removes(page, ui, watch):
    """The diagrams of the models that stay are the same elements, not drawn again
    (app.view_update; issue 15: a selection change <= 0.5 s)."""
    ui.open()
    ui.wait_fit_idle()
    ui.wait_callbacks()
    expect(ui.graphs()).to_have_count(len(DEMO_MODELS))
    mark = "els => els.forEach(el => { el.__kept = el.querySelector('.gtitle').textContent; })"
    kept = "els => els.filter(el => el.__kept).map(el => el.__kept)"
    extra_name = "digits · logistic regression"
    everyone = [*DEMO_MODELS, extra_name]
    ui.graphs().evaluate_all(mark)
    extra = ui.model_checkbox(f"{extra_name} (1,797 × 10)")
    extra.check()
    expect(ui.graphs()).to_have_count(3)
    expect(ui.graph_of(extra_name).locator(".main-svg").first).to_be_visible()
    # Its maps are fitted in the background, and its diagram is drawn again with them.
    for calibrator in DEFAULT_CALIBRATORS:
        expect(ui.cell(extra_name, calibrator, "status")).to_have_text("ok", timeout=60_000)
    ui.wait_fit_idle()
    ui.wait_callbacks()
    assert sorted(ui.graphs().evaluate_all(kept)) == sorted(DEMO_MODELS)
    # With three models side by side, the first one deselected and selected again:
    # the other two stay as they are drawn.
    ui.graphs().evaluate_all(mark)
    first = ui.model_checkbox(f"{DEMO_MODELS[0]} (1,797 × 10)")
    first.uncheck()
    expect(ui.graphs()).to_have_count(2)
    ui.wait_callbacks()
    assert sorted(ui.graphs().evaluate_all(kept)) == sorted(everyone[1:])
    first.check()
    expect(ui.graphs()).to_have_count(3)
    expect(ui.graph_of(DEMO_MODELS[0]).locator(".main-svg").first).to_be_visible()
    ui.wait_callbacks()
    assert sorted(ui.graphs().evaluate_all(kept)) == sorted(everyone[1:])
    # On the screen the diagrams are in the table's order of models.
    boxes = ui.graphs().evaluate_all(
        "els => els.map(el => [el.getBoundingClientRect().top, el.getBoundingClientRect().left,"
        " el.querySelector('.gtitle').textContent])"
    )
    table = list(dict.fromkeys(row["model"] for row in ui.table_rows()))
    assert sorted(table) == sorted(everyone)
    assert [title for *_, title in sorted(boxes)] == table
    # ... and in the page's order (what a screen reader reads).
    assert [title for *_, title in boxes] == table
