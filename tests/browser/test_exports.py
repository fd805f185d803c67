"""Exports in a real browser: metrics CSV/JSON equal the table; the HTML report opens offline."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser

DEMO_MODELS = ("digits · naive Bayes", "digits · random forest")
CALIBRATORS = ("uncalibrated", "isotonic", "temperature")
METRIC_COLUMNS = ("ece", "mce", "classwise_ece", "brier_score", "log_loss", "accuracy")


def download(page, button: str) -> tuple[str, str]:
    """Click an export button; returns (suggested file name, text content)."""
    with page.expect_download() as info:
        page.locator(button).click()
    dl = info.value
    assert dl.failure() is None, dl.failure()
    return dl.suggested_filename, open(dl.path(), encoding="utf-8").read()


def fit_time(seconds: float) -> str:
    """Seconds as the grid's fit-time column shows them (ms under a second)."""
    if seconds < 0.0005:
        return "< 1 ms"
    if seconds < 0.9995:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


def as_shown(row: dict, column: str) -> str:
    """An exported value formatted as the grid shows it."""
    value = row[column]
    if value in ("", None):
        return ""
    if column == "n":
        return f"{int(value):,}"
    if column == "fit_seconds":
        return fit_time(float(value))
    return f"{float(value):.4f}"


def test_metrics_exports_equal_the_table_and_report_opens_offline(
    page, ui, watch, context, screenshot, tmp_path
):
    ui.open()
    ui.set_bins(10)
    expect(page.locator("#metrics-caption")).to_contain_text("Binning: 10 equal-width bins")
    ui.wait_fit_idle()
    for model in DEMO_MODELS:
        for calibrator in CALIBRATORS:
            expect(ui.cell(model, calibrator, "status")).to_have_text("ok")
    table = ui.table_rows()
    assert len(table) == len(DEMO_MODELS) * len(CALIBRATORS)

    # Metrics CSV: one row per table row, in the same order, same numbers (full precision).
    name, text = download(page, "#export-metrics-csv")
    assert re.fullmatch(r"calibration-metrics-\d{8}-\d{6}\.csv", name), name
    exported = list(csv.DictReader(io.StringIO(text)))
    assert [(r["model"], r["map"]) for r in exported] == [(r["model"], r["map"]) for r in table]
    for got, shown in zip(exported, table, strict=True):
        for column in ("n", *METRIC_COLUMNS, "fit_seconds"):
            assert as_shown(got, column) == shown[column], (got["model"], got["map"], column)
        assert got["status"] == shown["status"]
        # Fit times in seconds in the CSV, in ms on the page for fast fits (not "0.00").
        assert not shown["fit_seconds"].startswith("0.00")
        # More digits than the screen: the CSV carries full precision.
        assert len(got["ece"].split(".")[1]) > 4

    fit_times = [r["fit_seconds"] for r in table if r["map"] != "uncalibrated"]
    assert all(re.fullmatch(r"< 1 ms|\d+ ms|\d+\.\d\d s", t) for t in fit_times), fit_times
    # The demo's maps fit in well under a second each.
    assert any(t.endswith(" ms") for t in fit_times), fit_times

    # Metrics JSON: the same rows and the settings they were computed with.
    name, text = download(page, "#export-metrics-json")
    assert name.endswith(".json")
    doc = json.loads(text)
    assert doc["settings"]["binning"] == {"scheme": "width", "n_bins": 10}
    assert doc["settings"]["models"] == list(DEMO_MODELS)
    for got, row in zip(doc["rows"], exported, strict=True):
        assert (got["model"], got["map"]) == (row["model"], row["map"])
        for column in METRIC_COLUMNS:
            assert got[column] == float(row[column])

    # Fitted maps: one exported map per fold, per model and map.
    name, text = download(page, "#export-params-json")
    fitted = json.loads(text)["models"]
    assert set(fitted) == set(DEMO_MODELS)
    for model in DEMO_MODELS:
        assert set(fitted[model]) == {"isotonic", "temperature"}
        assert all(len(folds) == 5 for folds in fitted[model].values())

    # Calibrated predictions (streamed from /api/export/<token>): a zip of one CSV per
    # model and map (the uncalibrated rows are the input itself), every row of each.
    with page.expect_download() as info:
        page.locator("#export-calibrated-csv").click()
    name = info.value.suggested_filename
    assert re.fullmatch(r"calibration-calibrated-\d{8}-\d{6}\.zip", name), name
    expect(page.locator("#export-message")).to_have_text(
        "Calibrated predictions: download started."
    )
    archive = zipfile.ZipFile(info.value.path())
    stems = {
        "digits · naive Bayes": "digits_naive_Bayes",
        "digits · random forest": "digits_random_forest",
    }
    maps = [c for c in CALIBRATORS if c != "uncalibrated"]
    assert sorted(archive.namelist()) == sorted(
        f"{stems[model]}.{m}.csv" for model in DEMO_MODELS for m in maps
    )
    for member in archive.namelist():
        lines = list(csv.reader(io.TextIOWrapper(archive.open(member), encoding="utf-8")))
        assert lines[0] == ["row", "label", *[f"p_{k}" for k in range(10)]]
        assert [int(r[0]) for r in lines[1:]] == list(range(1797))
        sums = [sum(float(v) for v in r[2:]) for r in lines[1:]]
        assert max(abs(t - 1) for t in sums) < 1e-6

    # HTML report: self-contained with plotly, and it draws offline.
    name, text = download(page, "#export-report-html")
    assert name.endswith(".html")
    assert "plotly" in text.lower()
    assert re.search(r"<script[^>]+src=[\"']https?:", text) is None, "report loads remote scripts"
    for model in DEMO_MODELS:
        assert model in text
    report = tmp_path / "report.html"
    report.write_text(text, encoding="utf-8")
    context.set_offline(True)
    offline = context.new_page()
    watch.attach(offline)
    offline.goto(report.as_uri())
    plots = offline.locator(".js-plotly-plot")
    for model in DEMO_MODELS:
        diagram = plots.filter(has=offline.locator(".gtitle", has_text=model))
        expect(diagram.first.locator(".main-svg").first).to_be_visible()
    expect(offline.locator("body")).to_contain_text("10 equal-width bins")
    # Its metrics table is the dashboard's table.
    metrics = offline.locator("h2", has_text=re.compile("^Metrics$"))
    report_rows = metrics.locator("xpath=following-sibling::table[1]/tbody/tr")
    expect(report_rows).to_have_count(len(table))
    for tr, shown in zip(report_rows.all(), table, strict=True):
        cells = tr.locator("td").all_text_contents()
        assert cells[:2] == [shown["model"], shown["map"]]
        assert cells[3] == shown["ece"]
    screenshot("07-exported")
    screenshot("08-html-report-offline", offline)
    offline.close()
    context.set_offline(False)
    watch.assert_clean()
