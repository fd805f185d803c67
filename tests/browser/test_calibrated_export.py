"""The calibrated export in a real browser (issue 15, items 12 and 13).

One file per model and map, zipped, each in its input's own column layout (a binary
``score`` file stays one ``score`` column), with the values the command line's
``apply`` writes for the same fitted map; and the Brier/log-loss parts in the table.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import zipfile

import numpy as np
import pandas as pd
import pytest

from app import cli
from app.exports import CalibratedFile, member_names

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

MAPS = ("isotonic", "temperature")
PARTS = ("brier_calibration", "brier_refinement", "log_loss_calibration", "log_loss_refinement")


def write_inputs(tmp_path) -> dict[str, object]:
    """A binary ``score`` CSV and a 4-class ``p_`` CSV, each with an id column."""
    rng = np.random.default_rng(11)
    n = 500
    score = rng.uniform(0.01, 0.99, n)
    binary = pd.DataFrame(
        {
            "id": [f"s{i}" for i in range(n)],
            "score": score,
            "label": (rng.uniform(size=n) < score**1.4).astype(int),
        }
    )
    z = rng.normal(size=(n, 4)) * 2.5
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    multi = pd.DataFrame({f"p_{c}": p[:, j] for j, c in enumerate(("cat", "dog", "fox", "owl"))})
    multi.insert(0, "id", [f"m{i}" for i in range(n)])
    truth = (np.exp(0.6 * z) / np.exp(0.6 * z).sum(axis=1, keepdims=True)).cumsum(axis=1)
    multi["label"] = np.array(["cat", "dog", "fox", "owl"])[(truth > rng.random((n, 1))).argmax(1)]
    paths = {"scores": tmp_path / "scores.csv", "animals": tmp_path / "animals.csv"}
    binary.to_csv(paths["scores"], index=False)
    multi.to_csv(paths["animals"], index=False)
    return paths


def download(page, button: str):
    with page.expect_download() as info:
        page.locator(button).click()
    dl = info.value
    assert dl.failure() is None, dl.failure()
    return dl.suggested_filename, open(dl.path(), "rb").read()


def apply_cli(entry: dict, source, tmp_path, name: str) -> pd.DataFrame:
    """``calibration-dashboard apply`` of one fitted-map entry to ``source``."""
    map_file = tmp_path / f"{name}.json"
    map_file.write_text(json.dumps(entry), encoding="utf-8")
    out = tmp_path / f"{name}-applied.csv"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["apply", str(map_file), str(source), "-o", str(out)]) == 0
    return pd.read_csv(out, dtype={"id": str})


def test_calibrated_zip_keeps_each_input_layout_and_equals_apply(
    page, ui, watch, tmp_path, screenshot
):
    page.set_viewport_size({"width": 1400, "height": 1000})
    paths = write_inputs(tmp_path)
    ui.open()
    ui.upload(*paths.values())
    expect(ui.upload_lines("ok")).to_have_count(2)
    ui.wait_callbacks()
    page.locator("#heldout input[value=split]").check()
    ui.wait_fit_idle()
    ui.wait_callbacks()
    models = {}
    for kind in paths:
        shown = page.locator("#metrics-grid [col-id=model]", has_text=re.compile(f"^{kind}"))
        expect(shown.first).to_be_visible()
        models[kind] = shown.first.inner_text().strip()
        for m in MAPS:
            expect(ui.cell(models[kind], m, "status")).to_have_text("ok")

    _, text = download(page, "#export-params-json")
    fitted = json.loads(text)["models"]
    name, data = download(page, "#export-calibrated-csv")
    assert re.fullmatch(r"calibration-calibrated-\d{8}-\d{6}\.zip", name), name
    archive = zipfile.ZipFile(io.BytesIO(data))
    pairs = [(kind, m) for kind in paths for m in MAPS]
    names = member_names([CalibratedFile(models[k], m, None, None, False) for k, m in pairs])
    expected = dict(zip(pairs, names, strict=True))
    assert sorted(archive.namelist()) == sorted(expected.values())
    for (kind, m), member in expected.items():
        got = pd.read_csv(io.BytesIO(archive.read(member)), dtype={"label": str})
        layout = ["score"] if kind == "scores" else ["p_cat", "p_dog", "p_fox", "p_owl"]
        assert list(got.columns) == ["row", "label", *layout], member
        assert len(got) == 250  # split mode: the test half only
        (entry,) = fitted[models[kind]][m]
        applied = apply_cli(entry, paths[kind], tmp_path, f"{kind}-{m}")
        assert list(applied.columns) == ["id", *layout, "label"]
        rows = got["row"].to_numpy()
        np.testing.assert_allclose(
            got[layout].to_numpy(), applied[layout].to_numpy()[rows], rtol=0, atol=1e-12
        )
        assert list(got["label"]) == list(applied["label"].astype(str).to_numpy()[rows])
    screenshot("15-calibrated-export")
    watch.assert_clean()


def test_score_parts_columns_appear_next_to_brier_and_log_loss(page, ui, watch, screenshot):
    page.set_viewport_size({"width": 1400, "height": 1000})
    ui.open()
    header = page.locator("#metrics-grid .ag-header-cell[col-id=brier_calibration]")
    expect(header).to_have_count(0)
    page.locator("#score-parts input").check()
    ui.wait_callbacks()
    expect(header).to_be_visible()
    expect(page.locator("#metrics-caption")).to_contain_text(
        "Brier and log-loss = calibration (cal.) + refinement (ref.)"
    )
    model = "digits · naive Bayes"
    for calibrator in ("uncalibrated", "temperature"):
        for field in PARTS:
            expect(ui.cell(model, calibrator, field)).to_have_text(re.compile(r"^\d\.\d{4}$"))
    order = page.locator("#metrics-grid .ag-header-cell[col-id]").evaluate_all(
        """cells => cells
             .sort((a, b) => +a.getAttribute('aria-colindex') - +b.getAttribute('aria-colindex'))
             .map(c => c.getAttribute('col-id'))"""
    )
    assert order[order.index("brier_score") + 1 : order.index("brier_score") + 3] == list(PARTS[:2])
    assert order[order.index("log_loss") + 1 : order.index("log_loss") + 3] == list(PARTS[2:])
    # Calibrating lowers the calibration part of the over-confident naive Bayes.
    before = float(ui.cell(model, "uncalibrated", "log_loss_calibration").inner_text())
    after = float(ui.cell(model, "temperature", "log_loss_calibration").inner_text())
    assert after < before
    screenshot("15-score-parts")
    page.locator("#score-parts input").uncheck()
    ui.wait_callbacks()
    expect(header).to_have_count(0)
    watch.assert_clean()
