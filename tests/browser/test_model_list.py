"""The model list with uploads next to the demo: one column, grouped by file, searchable.

Issue 15, item 1: the checklist (CSS ``columns`` plus a max-height) put every
model after the ninth into a clipped second column that scrolled sideways, so
two of three uploads could not be seen. Here three files are uploaded next to
the demo's eight models at 1400 and 900 px: every upload must lie inside the
list's visible area once scrolled to, with no horizontal overflow, be selected,
and the demo deselected; the search box and the per-file "all"/"none" buttons
are exercised too.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from app.settings import MAX_SELECTED_MODELS

from .conftest import SCREENS

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

NAMES = ("resnet_with_a_rather_long_file_name_for_the_list", "vit", "mlp")
N_ROWS = 120
DEMO_LABEL = "digits · naive Bayes (1,797 × 10)"


def write_files(folder) -> list:
    rng = np.random.default_rng(3)
    paths = []
    for name in NAMES:
        probs = rng.dirichlet(np.ones(3), size=N_ROWS)
        frame = pd.DataFrame({f"p_{c}": probs[:, j] for j, c in enumerate("abc")})
        frame["label"] = np.array(list("abc"))[rng.integers(0, 3, N_ROWS)]
        path = folder / f"{name}.csv"
        frame.to_csv(path, index=False)
        paths.append(path)
    return paths


def shoot_list(page, name: str) -> None:
    """A PNG of the model list alone in ``artifacts/screens``."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.locator(".model-list").screenshot(path=str(SCREENS / f"{name}.png"))


def label(name: str) -> str:
    return f"{name} ({N_ROWS} × 3)"


def assert_inside_list(page, box) -> None:
    """Scrolled into view, the checkbox row lies inside the list's visible box."""
    row = box.locator("xpath=ancestor::label")
    row.scroll_into_view_if_needed()  # the row, not its checkbox: all of it in view
    outer = page.locator("#model-select").bounding_box()
    inner = row.bounding_box()
    assert (
        outer["x"] - 1 <= inner["x"]
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1
    )
    assert (
        outer["y"] - 1 <= inner["y"]
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1
    )


@pytest.mark.parametrize("width", [1400, 900])
def test_uploads_visible_selected_searchable(page, ui, screenshot, tmp_path, width):
    page.set_viewport_size({"width": width, "height": 900})
    ui.open()
    ui.show_controls()  # a drawer below 1000 px
    expect(ui.model_checkbox(DEMO_LABEL)).to_be_checked()
    ui.upload(*write_files(tmp_path))
    expect(ui.upload_lines("ok")).to_have_count(len(NAMES), timeout=30_000)

    for name in NAMES:
        box = ui.model_checkbox(label(name))
        expect(box).to_be_checked()
        assert_inside_list(page, box)
    demo = page.locator("#model-select label:has-text('built-in demo')")
    expect(demo).to_have_count(1)
    for box in page.locator("#model-select input[value^=demo-]").all():
        expect(box).not_to_be_checked()
    widths = page.locator("#model-select").evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] <= widths[1], f"the list scrolls sideways: {widths}"
    screenshot(f"model-list-uploads-{width}")
    shoot_list(page, f"model-list-uploads-{width}-list")

    # Search: only matching models are listed; the selection survives the filter.
    page.locator("#model-search").fill("vit")
    expect(page.locator("#model-select input:not([disabled])")).to_have_count(1)
    expect(ui.model_checkbox(label("vit"))).to_be_checked()
    shoot_list(page, f"model-list-search-{width}-list")
    page.locator("#model-search").fill("")
    expect(page.locator("#model-select input:not([disabled])")).to_have_count(8 + len(NAMES))
    for name in NAMES:
        expect(ui.model_checkbox(label(name))).to_be_checked()

    # "none" / "all" per file; "all" on the demo would make 11 > 8: the first 8, and a note.
    group = page.locator("#model-select .model-group-head", has_text="mlp.csv")
    group.get_by_role("button", name="none").click()
    expect(ui.model_checkbox(label("mlp"))).not_to_be_checked()
    expect(ui.model_checkbox(label("vit"))).to_be_checked()
    demo_head = page.locator("#model-select .model-group-head", has_text="built-in demo")
    demo_head.get_by_role("button", name="all").click()
    note = page.locator("#model-list-note")
    expect(note).to_have_text(re.compile(rf"At most {MAX_SELECTED_MODELS} models"))
    demo_boxes = page.locator("#model-select input[value^=demo-]")
    for box in demo_boxes.all():
        expect(box).to_be_checked()
    expect(page.locator("#model-select input:checked")).to_have_count(MAX_SELECTED_MODELS)
    demo_head.get_by_role("button", name="none").click()
    expect(page.locator("#model-select input:checked")).to_have_count(0)
    group.get_by_role("button", name="all").click()
    expect(ui.model_checkbox(label("mlp"))).to_be_checked()
    expect(note).to_be_empty()
    shoot_list(page, f"model-list-groups-{width}-list")
