"""Uploads in a real browser: the table shows the core's numbers; a bad file leaves a message.

The expected numbers are computed here with ``calibration_core`` on the same
file (parsed by the same loader the upload route uses) and the same settings
the app uses: 5-fold cross-fitting with seed 0 (``app.settings.HeldOut``),
one ``compare_maps`` call per map (the folds depend only on labels and seed).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from calibration_core import (
    accuracy,
    brier_score,
    classwise_ece,
    confidence_ece,
    confidence_mce,
    log_loss,
)
from calibration_core.compare import compare_maps
from calibration_core.io import load_predictions

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

CLASSES = ("cat", "dog", "bird")
DEMO_LABELS = ("digits · naive Bayes (1,797 × 10)", "digits · random forest (1,797 × 10)")
#: Column of the table -> column of ``compare_maps(...).table``.
TABLE_COLUMNS = {
    "ece": "confidence_ece",
    "mce": "confidence_mce",
    "classwise_ece": "classwise_ece",
    "brier_score": "brier_score",
    "log_loss": "log_loss",
    "accuracy": "accuracy",
}


def overconfident_predictions(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels drawn from softmax(z); the model reports softmax(2.5 z) (overconfident)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, len(CLASSES))) * 1.2
    true = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    labels = (rng.uniform(size=(n, 1)) > np.cumsum(true, axis=1)).sum(axis=1)
    sharp = np.exp(2.5 * z)
    reported = sharp / sharp.sum(axis=1, keepdims=True)
    return reported, labels, true


def write_predictions(path, probs, labels, classes=CLASSES) -> None:
    frame = pd.DataFrame({f"p_{c}": probs[:, j] for j, c in enumerate(classes)})
    frame["label"] = np.asarray(classes, dtype=object)[labels]
    frame.to_csv(path, index=False)  # floats as shortest round-trip text


def shown(value: float) -> str:
    """A metric as the grid shows it (d3.format('.4f'))."""
    return f"{value:.4f}"


def test_upload_fit_and_table_equals_core(page, ui, watch, screenshot, tmp_path):
    probs, labels, _ = overconfident_predictions(2000, seed=11)
    path = tmp_path / "overconfident.csv"
    write_predictions(path, probs, labels)
    n_bins, scheme = 12, "frequency"
    maps = ("histogram", "temperature", "vector")

    ui.open()
    # Only the uploaded model, so the view and the table are about it alone.
    for label in DEMO_LABELS:
        ui.model_checkbox(label).uncheck()
    expect(ui.graphs()).to_have_count(0)

    ui.upload(path)
    expect(ui.upload_lines("ok")).to_have_text("overconfident.csv: loaded overconfident.")
    expect(ui.upload_lines("error")).to_have_count(0)
    model_box = ui.model_checkbox("overconfident (2,000 × 3)")
    expect(model_box).to_be_checked()
    expect(ui.graph_of("overconfident")).to_be_visible()

    # Pick maps: drop isotonic regression, add histogram binning and vector scaling.
    ui.map_checkbox("isotonic regression").uncheck()
    ui.map_checkbox("histogram binning").check()
    ui.map_checkbox("vector scaling").check()
    # Cheap settings: equal-frequency bins, 12 of them.
    ui.set_scheme(scheme)
    ui.set_bins(n_bins)
    expect(page.locator("#metrics-caption")).to_contain_text("Binning: 12 equal-frequency bins")
    expect(page.locator("#view-title")).to_contain_text("12 equal-frequency bins")

    # What the core says about the same file with the same settings.
    (pred,) = load_predictions(path)
    assert tuple(pred.class_names) == CLASSES
    np.testing.assert_allclose(pred.probs, probs, rtol=0, atol=1e-15)
    expected = {
        "uncalibrated": {
            "ece": confidence_ece(pred.probs, pred.labels, n_bins=n_bins, scheme=scheme),
            "mce": confidence_mce(pred.probs, pred.labels, n_bins=n_bins, scheme=scheme),
            "classwise_ece": classwise_ece(pred.probs, pred.labels, n_bins=n_bins, scheme=scheme),
            "brier_score": brier_score(pred.probs, pred.labels),
            "log_loss": log_loss(pred.probs, pred.labels),
            "accuracy": accuracy(pred.probs, pred.labels),
        }
    }
    table = compare_maps(pred, maps=list(maps), folds=5, seed=0, n_bins=n_bins, scheme=scheme).table
    for name in maps:
        expected[name] = {col: float(table.loc[name, src]) for col, src in TABLE_COLUMNS.items()}
    # The data is overconfident and temperature scaling fixes most of it.
    assert expected["temperature"]["ece"] < expected["uncalibrated"]["ece"] / 2

    # The background fit finishes; every row shows the core's numbers.
    for calibrator in ("uncalibrated", *maps):
        for column, value in expected[calibrator].items():
            expect(ui.cell("overconfident", calibrator, column)).to_have_text(shown(value))
        expect(ui.cell("overconfident", calibrator, "n")).to_have_text("2,000")
        expect(ui.cell("overconfident", calibrator, "status")).to_have_text("ok")
    ui.wait_fit_idle()
    rows = ui.table_rows()
    assert [r["map"] for r in rows] == ["uncalibrated", *maps]
    assert {r["model"] for r in rows} == {"overconfident"}

    # The diagram: one panel per calibrator, each printing the table's ECE.
    graph = ui.graph_of("overconfident")
    panel_text = graph.locator(".annotation-text")
    for calibrator in ("uncalibrated", *maps):
        exact = re.compile(f"^{calibrator}$")
        expect(panel_text.filter(has_text=exact)).to_have_count(1)
        expect(
            panel_text.filter(has_text=f"ECE {shown(expected[calibrator]['ece'])}")
        ).not_to_have_count(0)
    expect(graph.locator(".gtitle-subtitle")).to_contain_text(
        "confidence (top label) · 12 equal-frequency bins"
    )
    screenshot("03-upload-fitted")
    watch.assert_clean()


def test_bad_upload_shows_message_and_keeps_models(page, ui, watch, screenshot, tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    p_a = rng.uniform(0.05, 0.95, n)
    labels = (rng.uniform(size=n) > p_a).astype(int)
    good = tmp_path / "good.csv"
    write_predictions(good, np.column_stack([p_a, 1 - p_a]), labels, classes=("a", "b"))
    # Row 5 (1-based, after the header) holds 1.3 and -0.3: not probabilities.
    bad_probs = np.column_stack([p_a, 1 - p_a])
    bad_probs[4] = [1.3, -0.3]
    bad_range = tmp_path / "bad_range.csv"
    write_predictions(bad_range, bad_probs, labels, classes=("a", "b"))
    no_label = tmp_path / "no_label.csv"
    pd.DataFrame({"p_a": p_a, "p_b": 1 - p_a}).to_csv(no_label, index=False)

    ui.open()
    ui.upload(good)
    expect(ui.upload_lines("ok")).to_have_text("good.csv: loaded good.")
    good_box = ui.model_checkbox("good (300 × 2)")
    expect(good_box).to_be_checked()
    expect(ui.graph_of("good")).to_be_visible()
    expect(ui.cell("good", "uncalibrated", "ece")).to_have_text(re.compile(r"^\d\.\d{4}$"))
    graphs_before = ui.graphs().count()

    # Two malformed files at once: one message each, next to the upload.
    ui.upload(bad_range, no_label)
    errors = ui.upload_lines("error")
    expect(errors).to_have_count(2)
    expect(errors.nth(0)).to_contain_text("bad_range.csv")
    expect(errors.nth(0)).to_contain_text("must hold probabilities in [0, 1]")
    expect(errors.nth(0)).to_contain_text("found 1.3 at data row 5")
    expect(errors.nth(1)).to_contain_text("no_label.csv")
    expect(errors.nth(1)).to_contain_text("has no label column")
    expect(ui.upload_lines("ok")).to_have_count(0)
    zone = page.locator("#upload-zone").bounding_box()
    message = page.locator("#upload-message").bounding_box()
    assert 0 <= message["y"] - (zone["y"] + zone["height"]) < 80, (zone, message)

    # The earlier model is still listed, selected and drawn; nothing else was added.
    expect(good_box).to_be_checked()
    expect(ui.graph_of("good")).to_be_visible()
    expect(ui.graphs()).to_have_count(graphs_before)
    expect(page.locator("#model-select")).not_to_contain_text("bad_range")
    expect(page.locator("#model-select")).not_to_contain_text("no_label")
    expect(page.locator("#message .message-line")).to_have_count(0)
    expect(ui.cell("good", "uncalibrated", "ece")).to_have_text(re.compile(r"^\d\.\d{4}$"))
    screenshot("04-upload-errors")
    watch.assert_clean()
