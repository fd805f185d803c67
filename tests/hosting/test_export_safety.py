"""Exports are safe to open in a spreadsheet; hostile names render as text everywhere.

A file whose model names are a spreadsheet formula and an HTML tag, and whose
class names start with ``=``, ``@``, ``-`` and ``+``, goes through the real
upload route and the page's callbacks; then every export is checked:
formula-like string cells are quoted (OWASP CSV injection), numbers are
untouched, file names are generated, and the figures and the HTML report
carry the names as escaped text. (The browser check of the same names is in
``test_csp_browser.py``.)
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
import zipfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.exports import FORMULA_PREFIXES, csv_text, safe_cell
from app.factory import create_app

FORMULA = '=HYPERLINK("http://evil.example","click")'
TAG = "<img src=x onerror=alert(1)>"
SCRIPT = "</script><script>alert(2)</script>"
CLASSES = ["=cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "+plus"]
NAME = re.compile(r"^calibration-[a-z-]+-\d{8}-\d{6}\.(csv|json|html)$")
ZIP_NAME = re.compile(r"^calibration-calibrated-\d{8}-\d{6}\.zip$")


@pytest.mark.parametrize("prefix", FORMULA_PREFIXES)
def test_formula_like_strings_are_quoted(prefix):
    assert safe_cell(prefix + "1+1") == "'" + prefix + "1+1"


@pytest.mark.parametrize("value", [1, -1, -0.5, 0.0, np.float64(-2.5), np.int64(-3), None, True])
def test_numbers_and_none_are_untouched(value):
    assert safe_cell(value) is value


@pytest.mark.parametrize("value", ["a=b", "x-1", "", "plain", "1e-3", " =x"])
def test_ordinary_strings_are_untouched(value):
    assert safe_cell(value) == value


def test_csv_text_quotes_headers_and_cells():
    text = csv_text(["=h", "n"], [["@x", -1.5], ["ok", 2]])
    assert list(csv.reader(io.StringIO(text))) == [["'=h", "n"], ["'@x", "-1.5"], ["ok", "2"]]


def _hostile_csv() -> bytes:
    rng = np.random.default_rng(0)
    frames = []
    for model in (FORMULA, TAG + SCRIPT):
        p = rng.dirichlet(np.ones(4) * 0.7, size=300)
        y = np.array([rng.choice(4, p=row) for row in p])
        frame = pd.DataFrame({f"p_{c}": p[:, j] for j, c in enumerate(CLASSES)})
        frame["label"] = np.asarray(CLASSES, dtype=object)[y]
        frame.insert(0, "model", model)
        frames.append(frame)
    return pd.concat(frames).to_csv(index=False).encode()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, dash_tab):
    from app.config import AppConfig

    config = AppConfig(cache_dir=tmp_path_factory.mktemp("exports"), secret_key="e" * 32)
    dash_app = create_app(config)
    tab = dash_tab(flask_client=dash_app.server.test_client()).load()
    status, body = tab.upload("hostile.csv", _hostile_csv())
    assert status == 200 and not body["errors"], body
    handles = [m["handle"] for m in body["models"]]
    assert [m["name"] for m in body["models"]] == [FORMULA, TAG + SCRIPT]
    assert body["models"][0]["class_names"] == CLASSES
    return tab, handles


def _fit_platt(tab, handles) -> None:
    """Fit Platt scaling (2 folds) on the tab's models in process, as the background fit does.

    The calibrated export holds fitted maps only (the uncalibrated rows are the input).
    """
    from app.services.fit import run_fits

    ctx = tab.flask.application.extensions["calibration_dashboard"]
    sid = ctx.sessions.verify(tab.cookie())[0]
    state = run_fits(ctx, sid, handles, ["platt"], "folds", 2, 0.5, lambda _: None)
    assert state["error"] is None, state


def _calibrated(tab, handles) -> tuple[str, bytes]:
    """``(file name, body)`` of the calibrated export of Platt scaling on ``handles``."""
    _fit_platt(tab, handles)
    out = tab.call(
        "download-url.data",
        ["export-calibrated-csv.n_clicks"],
        {
            "export-calibrated-csv.n_clicks": 1,
            "model-select.value": handles,
            "maps.value": ["platt"],
            "folds.value": 2,
        },
    )
    status, headers, body = tab.get(out["download-url.data"]["url"])
    assert status == 200
    return re.search(r'filename="([^"]+)"', headers["Content-Disposition"]).group(1), body


def _unsafe_cells(text: str) -> list[str]:
    """Cells a spreadsheet would run as a formula: formula-like and not a number."""
    bad = []
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell.startswith(FORMULA_PREFIXES):
                try:
                    float(cell)
                except ValueError:
                    bad.append(cell)
    return bad


def _download(tab, handles, button: str) -> dict:
    status, _, body = tab.call_raw(
        "download.data",
        [f"{button}.n_clicks"],
        {f"{button}.n_clicks": 1, "model-select.value": handles, "maps.value": []},
    )
    assert status == 200
    return json.loads(body)["response"]["download"]["data"]


def test_metrics_csv_is_spreadsheet_safe_and_keeps_numbers(hostile):
    tab, handles = hostile
    data = _download(tab, handles, "export-metrics-csv")
    assert NAME.match(data["filename"])
    rows = list(csv.DictReader(io.StringIO(data["content"])))
    assert not _unsafe_cells(data["content"])
    assert {r["model"] for r in rows} == {"'" + FORMULA, TAG + SCRIPT}
    # Numbers are written as they are: the CSV equals the table on screen, to full precision.
    view = tab.view(handles, maps=[])
    table = {r["model"]: r for r in view["metrics-grid.rowData"]}
    for row in rows:
        name = row["model"][1:] if row["model"].startswith("'") else row["model"]
        assert float(row["ece"]) == table[name]["ece"]
        assert int(row["n"]) == 300


def test_calibrated_csv_is_spreadsheet_safe(hostile):
    tab, handles = hostile
    filename, body = _calibrated(tab, handles)
    assert ZIP_NAME.match(filename)
    archive = zipfile.ZipFile(io.BytesIO(body))
    # Member names are reduced to letters, digits, - and _: no path, no markup.
    assert sorted(archive.namelist()) == [
        "HYPERLINK_http_evil_example_click.platt.csv",
        "img_src_x_onerror_alert_1_script_script_alert_2_script.platt.csv",
    ]
    for member in archive.namelist():
        text = archive.read(member).decode()
        assert not _unsafe_cells(text)
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0] == ["row", "label", *[f"p_{c}" for c in CLASSES]]
        assert {r[1] for r in rows[1:]} <= {"'" + c if c[0] in "=@-+" else c for c in CLASSES}
        probs = np.array([[float(x) for x in r[2:]] for r in rows[1:]])
        assert np.allclose(probs.sum(axis=1), 1.0)  # numbers untouched


def test_json_exports_have_generated_names(hostile):
    tab, handles = hostile
    for button in ("export-metrics-json", "export-params-json"):
        data = _download(tab, handles, button)
        assert NAME.match(data["filename"])
        doc = json.loads(data["content"])
        assert doc["format"].startswith("calibration-dashboard/export")


def test_html_report_escapes_every_name(hostile):
    tab, handles = hostile
    data = _download(tab, handles, "export-report-html")
    assert NAME.match(data["filename"])
    page = data["content"]
    assert TAG not in page and "<img" not in page
    assert "</script><script>alert(2)" not in page
    assert page.count("<script") == page.count("</script>")  # no script closed early
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_figures_carry_names_as_text(hostile):
    tab, handles = hostile
    out = tab.view(handles, maps=[], notion="class", class_value="__all__")
    figures = [k["props"]["figure"] for k in out["reliability-grid.children"]]
    assert len(figures) == 2 and all(f["data"] for f in figures)
    text = json.dumps(figures)
    assert "<img" not in text and "<script" not in text and "</script>" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    # The table's cells are plain text (no HTML renderer), whatever the names.
    for col in out["metrics-grid.columnDefs"]:
        assert "cellRenderer" not in col and "dangerously_allow_code" not in json.dumps(col)


def _first_cell_is_safe(cell: str) -> bool:
    return not cell or not (cell[0] in FORMULA_PREFIXES or unicodedata.category(cell[0])[0] == "C")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=6), st.lists(st.text(), min_size=1, max_size=6))
def test_any_text_is_one_cell_that_cannot_start_a_formula(header, row):
    text = csv_text(header, [row])
    read = list(csv.reader(io.StringIO(text, newline="")))
    assert read == [[safe_cell(h) for h in header], [safe_cell(c) for c in row]]
    assert all(_first_cell_is_safe(cell) for line in read for cell in line)


CARRIAGE_RETURN_NAMES = ("\r=1+1", "a\r=1+1", "\n@SUM(1)", "\u202e=2+2")


@pytest.fixture(scope="module")
def carriage_returns(tmp_path_factory, dash_tab):
    """Models and classes whose names hide a formula behind a bare carriage return."""
    from app.config import AppConfig

    config = AppConfig(cache_dir=tmp_path_factory.mktemp("cr"), secret_key="c" * 32)
    tab = dash_tab(flask_client=create_app(config).server.test_client()).load()
    rng = np.random.default_rng(1)
    classes = ["ok", "p_\r=2+2"]
    frames = []
    for model in CARRIAGE_RETURN_NAMES:
        p = rng.dirichlet(np.ones(2), size=120)
        frame = pd.DataFrame({f"p_{c}": p[:, j] for j, c in enumerate(classes)})
        frame["label"] = np.asarray(classes, dtype=object)[rng.integers(0, 2, 120)]
        frame.insert(0, "model", model)
        frames.append(frame)
    buffer = io.BytesIO()
    pd.concat(frames).to_parquet(buffer, index=False)
    status, body = tab.upload("cr.parquet", buffer.getvalue())
    assert status == 200 and not body["errors"], body
    assert {m["name"] for m in body["models"]} == set(CARRIAGE_RETURN_NAMES)
    return tab, [m["handle"] for m in body["models"]]


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_carriage_returns_never_split_a_metrics_csv_row(carriage_returns):
    tab, handles = carriage_returns
    rows = _cells(_download(tab, handles, "export-metrics-csv")["content"])
    assert len(rows) == 1 + len(CARRIAGE_RETURN_NAMES)
    assert all(_first_cell_is_safe(cell) for row in rows for cell in row if not _number(cell))
    assert {row[0] for row in rows[1:]} == {safe_cell(n) for n in CARRIAGE_RETURN_NAMES}


def test_carriage_returns_never_split_a_calibrated_csv_row(carriage_returns):
    tab, handles = carriage_returns
    _, body = _calibrated(tab, handles)
    archive = zipfile.ZipFile(io.BytesIO(body))
    assert len(archive.namelist()) == len(CARRIAGE_RETURN_NAMES)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+\.platt\.csv", n) for n in archive.namelist())
    for member in archive.namelist():
        rows = _cells(archive.read(member).decode())
        assert len(rows) == 1 + 120
        assert {len(row) for row in rows} == {4}
        assert rows[0] == ["row", "label", "p_ok", "p_p_\r=2+2"]
        assert all(_first_cell_is_safe(cell) for row in rows for cell in row if not _number(cell))


def test_the_command_line_csv_is_neutralised_too(tmp_path):
    from app.cli.outputs import write_csv
    from calibration_core.compare import TABLE_COLUMNS

    row = {"map": "\n=map", **dict.fromkeys(TABLE_COLUMNS, -0.5)}
    out = io.StringIO()
    write_csv([{"model": "\r=1+1", "rows": [row]}], out)
    rows = _cells(out.getvalue())
    assert len(rows) == 2
    assert rows[1][:3] == ["'\r=1+1", "'\n=map", "-0.5"]


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
