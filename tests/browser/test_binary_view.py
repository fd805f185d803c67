"""A binary ``score`` file opens in the binary view (issue 15, item 4).

It used to open in the confidence view, max(p, 1 - p) on [0.5, 1], which hides
half of a binary model's scores.
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

DEMO_MODELS = ("digits · naive Bayes (1,797 × 10)", "digits · random forest (1,797 × 10)")


def score_csv(path, n: int = 600, seed: int = 3):
    """A one-column ``score`` CSV of a binary model (P(class 1)) with its labels."""
    rng = np.random.default_rng(seed)
    score = rng.uniform(0.01, 0.99, n)
    label = (rng.uniform(size=n) < score**1.3).astype(int)
    pd.DataFrame({"score": score.round(4), "label": label}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("width", [1400, 900])
def test_a_binary_score_file_opens_in_the_binary_view(page, ui, watch, tmp_path, screenshot, width):
    page.set_viewport_size({"width": width, "height": 900})
    ui.open()
    notion = page.locator("#notion")
    title = page.locator("#view-title")
    expect(notion.locator("input[value=confidence]")).to_be_checked()

    ui.upload(score_csv(tmp_path / "scores.csv"))
    expect(ui.upload_lines("ok")).to_have_count(1)
    uploaded = page.locator("#model-select").get_by_label(re.compile(r"^scores.*× 2\)$"))
    expect(uploaded).to_be_checked()
    ui.wait_callbacks()
    # The first upload deselects the demo's ten-class models: every selected model is
    # binary, so the file opens in the binary view.
    for label in DEMO_MODELS:
        expect(ui.model_checkbox(label)).not_to_be_checked()
    expect(notion.locator("input[value=binary]")).to_be_checked()
    expect(title).to_have_text(re.compile(r"^binary"))
    expect(ui.graphs()).to_have_count(1)
    ui.wait_fit_idle()
    ui.wait_callbacks()
    screenshot(f"15-binary-view-{width}px")

    # A notion the user picks stays while the selection stays all binary.
    ui.set_notion("confidence")
    expect(title).to_have_text(re.compile(r"^confidence"))
    ui.wait_callbacks()
    expect(notion.locator("input[value=confidence]")).to_be_checked()
    watch.assert_clean()
