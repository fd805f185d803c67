"""The "Download deployable map" action in a real browser: the verdict's recommendation by default,
any model and map on request; the download loads and applies like the command line."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from calibration_core import deployable_map, load_map
from calibration_core.demo import demo_predictions
from calibration_core.deploy import apply_map_to_file, load_deployable

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

FIRST, SECOND = "digits · naive Bayes", "digits · random forest"  # the default models
#: The map named in a verdict badge ("clear winner: x", "no clear winner (best: x)", ...).
BADGE_MAP = re.compile(r"(?:winner: |best: |candidate: )([\w-]+)")
#: The recommended map, named after the winner when it is another one.
BADGE_RECOMMENDED = re.compile(r"recommended: ([\w-]+)")


def recommended_in(badge: str) -> str:
    """The map a verdict badge recommends (the deployable default)."""
    found = BADGE_RECOMMENDED.search(badge) or BADGE_MAP.search(badge)
    return found.group(1)


def demo_model(name: str):
    """The server's demo predictions of a model (the store's demo seed is 0)."""
    (pred,) = [p for p in demo_predictions(0) if p.name == name]
    return pred


def download_map(page) -> tuple[str, str]:
    """Click the deployable map's button; returns (suggested file name, downloaded path)."""
    with page.expect_download() as info:
        page.locator("#export-deployable").click()
    dl = info.value
    assert dl.failure() is None, dl.failure()
    return dl.suggested_filename, dl.path()


def pick(page, picker: str, option: str) -> None:
    """Choose an option of one of the deployable map's dropdowns."""
    page.locator(picker).click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.locator(picker)).to_contain_text(option)


def written_rows(pred, path) -> None:
    """A predictions CSV of the model's rows (label and one ``p_<class>`` column each)."""
    frame = pd.DataFrame(pred.probs, columns=[f"p_{c}" for c in pred.class_names])
    frame.insert(0, "label", np.take(pred.class_names, pred.labels))
    frame.to_csv(path, index=False, float_format="%.17g")


def test_download_deployable_map_loads_and_applies_like_the_cli(
    page, ui, watch, screenshot, tmp_path
):
    ui.open()
    badge = ui.verdict_card(FIRST).locator(".verdict-badge")
    expect(badge).to_have_text(BADGE_MAP)
    winner = recommended_in(badge.inner_text())  # the deployable default
    assert winner != "uncalibrated"  # the demo's naive Bayes is far from calibrated
    expect(page.locator("#deploy-model")).to_contain_text(FIRST)
    expect(page.locator("#deploy-map")).to_contain_text("Verdict's recommendation")

    # Default: the verdict's recommended map of the first model, refitted on all its rows.
    name, path = download_map(page)
    assert re.fullmatch(r"calibration-map-\d{8}-\d{6}\.json", name), name
    expect(page.locator("#export-message")).to_have_text(
        f"Deployable map: {winner} of {FIRST}, refitted on all rows."
    )
    doc = json.loads(open(path, encoding="utf-8").read())
    pred = demo_model(FIRST)
    assert (doc["model"], doc["map"]["map"], doc["n_rows"]) == (FIRST, winner, pred.n_samples)
    fitted = load_map(path)
    got = fitted.predict_proba(pred.probs)
    expected = deployable_map(pred, winner).map.predict_proba(pred.probs)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    # The same rows written to a file, through `calibration-dashboard apply`'s function.
    written_rows(pred, tmp_path / "rows.csv")
    apply_map_to_file(load_deployable(path), tmp_path / "rows.csv", tmp_path / "out.csv")
    applied = pd.read_csv(tmp_path / "out.csv")
    columns = [f"p_{c}" for c in pred.class_names]
    np.testing.assert_allclose(applied[columns].to_numpy(), got, rtol=0, atol=1e-12)

    # Any shown model and any selected map.
    pick(page, "#deploy-model", SECOND)
    pick(page, "#deploy-map", "temperature")
    screenshot("deployable-map-pickers")
    _, path = download_map(page)
    expect(page.locator("#export-message")).to_have_text(
        f"Deployable map: temperature of {SECOND}, refitted on all rows."
    )
    doc = json.loads(open(path, encoding="utf-8").read())
    assert (doc["model"], doc["map"]["map"]) == (SECOND, "temperature")
    second = demo_model(SECOND)
    expected = deployable_map(second, "temperature").map.predict_proba(second.probs)
    np.testing.assert_allclose(load_map(doc).predict_proba(second.probs), expected, atol=1e-12)
    watch.assert_clean()
