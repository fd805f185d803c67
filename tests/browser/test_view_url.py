"""The view in the page address: a reload, a new page of the session, Back, a foreign link.

Issue 15, item 5: reloading the page reset models, maps, notion, bins and
options to the demo's defaults. The settings now live in the query string
(app/view_url.py); here models, maps, notion, class, binning and band are
changed, then the page is reloaded and the same address is opened in a new
page of the same session: both must show the same controls and draw the same
panels (titles, panel titles with their ECE, table rows). Back and Forward
show the view of their address; an uploaded model stays selected after a
reload, and a link to it in another session drops it with a notice.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from .conftest import VIEWPORT
from .dashboard_page import Dashboard

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

DIGITS = "(1,797 × 10)"
#: What the address must hold after the changes of the first test (in this order).
CHANGED = re.compile(
    r"\?models=demo-5,demo-7&maps=platt,temperature&notion=class&class=3&bins=9"
    r"&scheme=frequency&band=jeffreys&level=0\.95&heldout=folds&folds=5$"
)

ALL_FITTED = re.compile(r"all selected maps are fitted\.", re.IGNORECASE)
#: The controls and what is drawn, as shown.
VIEW_STATE_JS = """() => {
  const texts = (root, sel) => [...root.querySelectorAll(sel)].map(e => e.textContent.trim());
  const checked = sel => [...document.querySelectorAll(sel + ' input:checked')].map(i => i.value);
  return {
    models: checked('#model-select'),
    maps: checked('#maps'),
    notion: checked('#notion'),
    scheme: checked('#scheme'),
    band: document.querySelector('#band').textContent.trim(),
    bins: document.querySelector('#n-bins input[type=number]').value,
    cls: document.querySelector('#class-select').textContent.trim(),
    title: document.querySelector('#view-title').textContent.trim(),
    panels: [...document.querySelectorAll('#reliability-grid .reliability-graph')].map(
      g => [texts(g, '.gtitle'), texts(g, '.annotation-text')]),
  };
}"""


def view_state(ui: Dashboard) -> dict:
    """The controls, the panels and the table (without its fit times, which differ per load)."""
    state = ui.page.evaluate(VIEW_STATE_JS)
    state["table"] = [
        {col: text for col, text in row.items() if col != "fit_seconds"} for row in ui.table_rows()
    ]
    return state


def change_view(page, ui: Dashboard) -> None:
    """Models, maps, notion, class, binning and band away from the defaults."""
    ui.model_checkbox(f"digits · naive Bayes {DIGITS}").uncheck()
    ui.model_checkbox(f"digits · MLP {DIGITS}").check()
    ui.map_checkbox("isotonic regression").uncheck()
    ui.map_checkbox("Platt scaling").check()
    ui.set_notion("class")
    page.locator("#class-select").click()
    page.get_by_role("option", name="class 3", exact=True).click()
    ui.set_bins(9)
    ui.set_scheme("frequency")
    page.locator("#band").click()
    page.get_by_role("option", name="Jeffreys", exact=True).click()
    expect(page).to_have_url(CHANGED)
    expect(page.locator("#view-title")).to_have_text(
        "one class vs rest (class 3) · 9 equal-frequency bins · band: Jeffreys 95%"
    )
    # Every map of the new view fitted and drawn: no fit job is still polling when the
    # page reloads.
    for model in ("digits · random forest", "digits · MLP"):
        for calibrator in ("platt", "temperature"):
            expect(ui.cell(model, calibrator, "status")).to_have_text("ok")
        notes = ui.graph_of(model).locator(".annotation-text", has_text=re.compile("^ECE "))
        expect(notes).to_have_count(3)
    expect(page.locator("#fit-summary")).to_have_text(ALL_FITTED)
    ui.wait_fit_idle()
    ui.wait_callbacks()


def assert_changed_view(state: dict) -> None:
    """The view of :data:`CHANGED`, drawn."""
    assert state["models"] == ["demo-5", "demo-7"] and state["maps"] == ["platt", "temperature"]
    assert (state["notion"], state["scheme"], state["bins"]) == (["class"], ["frequency"], "9")
    assert state["cls"] == "class 3" and state["band"].startswith("Jeffreys")
    assert [p[0] for p in state["panels"]] == [
        ["digits · random forest"],
        ["digits · MLP"],
    ]
    for _title, notes in state["panels"]:
        for name in ("uncalibrated", "platt", "temperature"):
            assert f"{name} · class 3" in notes
        assert sum(n.startswith("ECE ") for n in notes) == 3
    table = [(row["model"], row["map"]) for row in state["table"]]
    assert table == [
        (model, calibrator)
        for model in ("digits · random forest", "digits · MLP")
        for calibrator in ("uncalibrated", "platt", "temperature")
    ]


def test_the_view_survives_a_reload_and_opens_in_a_new_page(page, context, ui, watch, screenshot):
    ui.open()
    assert page.url.endswith("/")  # a plain first load leaves the address alone
    change_view(page, ui)
    before = view_state(ui)
    assert_changed_view(before)
    address = page.url
    ui.reload()
    expect(page).to_have_url(address)
    assert view_state(ui) == before
    expect(page.locator("#address-notice")).to_be_empty()
    screenshot("view-url-01-after-reload")

    # The same address in a new page of the same session (a shared link).
    other = context.new_page()
    watch.attach(other)
    other_ui = Dashboard(other, watch)
    other_ui.open(address=address)
    assert view_state(other_ui) == before
    expect(other).to_have_url(address)  # loading never rewrites the address
    screenshot("view-url-02-new-page", other)
    other.close()
    watch.assert_clean()


def test_back_and_forward_show_the_view_of_their_address(page, ui, watch):
    ui.open()
    ui.set_bins(9)
    expect(page).to_have_url(re.compile(r"&bins=9&"))
    expect(page.locator("#view-title")).to_contain_text("9 equal-width bins")
    ui.wait_callbacks()

    ui.step_history(back=True)  # to the plain address: the default view, drawn by the server
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("#view-title")).to_contain_text("15 equal-width bins")
    expect(page.locator("#n-bins input[type=number]")).to_have_value("15")

    ui.step_history(back=False)
    expect(page).to_have_url(re.compile(r"&bins=9&"))
    expect(page.locator("#view-title")).to_contain_text("9 equal-width bins")
    expect(page.locator("#n-bins input[type=number]")).to_have_value("9")
    watch.assert_clean()


def test_a_link_with_foreign_models_and_bad_values_says_what_it_dropped(
    page, ui, watch, screenshot
):
    address = (
        "/?models=up-fromanothersession,demo-6&maps=temperature,evil&bins=500"
        "&notion=class&class=zzz"
    )
    ui.open(address=address)
    notice = page.locator("#address-notice")
    expect(notice).to_have_text(
        "Not restored from the page address: 1 model not in this session; unknown map 'evil'; "
        "the number of bins must be from 2 to 100, got 500; "
        "class 'zzz' is not a class of the selected models."
    )
    # The rest of the address is the view.
    expect(ui.graphs()).to_have_count(1)
    expect(ui.graph_of("digits · logistic regression")).to_be_visible()
    expect(page.locator("#view-title")).to_contain_text("one class vs rest")
    expect(page.locator("#n-bins input[type=number]")).to_have_value("15")
    expect(page.locator("#maps input:checked")).to_have_count(1)
    screenshot("view-url-03-dropped")

    # The next change writes the whole view into the address and clears the notice.
    ui.set_bins(12)
    expect(page).to_have_url(
        re.compile(r"\?models=demo-6&maps=temperature&notion=class&class=\w+&bins=12&")
    )
    expect(notice).to_be_empty()
    ui.wait_callbacks()
    watch.assert_clean()


def test_an_upload_stays_in_the_view_of_its_session_only(
    page, browser, server, ui, watch, tmp_path, screenshot
):
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(3), size=150)
    frame = pd.DataFrame({f"p_{c}": probs[:, j] for j, c in enumerate("abc")})
    frame["label"] = np.array(list("abc"))[rng.integers(0, 3, 150)]
    path = tmp_path / "mine.csv"
    frame.to_csv(path, index=False)

    ui.open()
    ui.upload(path)
    expect(ui.upload_lines("ok")).to_have_text("mine.csv: loaded mine.")
    expect(page).to_have_url(re.compile(r"\?models=up-[A-Za-z0-9_-]+&maps="))
    expect(ui.graph_of("mine")).to_be_visible()
    expect(page.locator("#fit-summary")).to_have_text(ALL_FITTED)
    ui.wait_callbacks()
    address = page.url

    ui.reload()  # the session's own upload is still selected and drawn
    expect(ui.model_checkbox("mine (150 × 3)")).to_be_checked()
    expect(ui.graphs()).to_have_count(1)
    expect(ui.graph_of("mine")).to_be_visible()
    expect(page.locator("#address-notice")).to_be_empty()
    watch.assert_clean()

    # Another browser session (its own cookie) cannot use the handle: the link shows
    # the rest of the view and says what it dropped.
    stranger = browser.new_context(viewport=VIEWPORT, base_url=server.url)
    try:
        other = stranger.new_page()
        watch.attach(other)
        other.goto(address)
        expect(other.locator("#reliability-grid")).to_contain_text("Pick a model on the left")
        expect(other.locator("#address-notice")).to_have_text(
            "Not restored from the page address: 1 model not in this session."
        )
        expect(other.locator("#model-select input:checked")).to_have_count(0)
        Dashboard(other, watch).wait_callbacks()
        screenshot("view-url-04-other-session", other)
        watch.assert_clean()
    finally:
        stranger.close()
