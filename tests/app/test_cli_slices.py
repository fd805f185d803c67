"""``evaluate --group-by/--window`` and ``check --per-group`` (issue 19)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from app import cli
from app.cli.outputs import SLICES_NOT_IN_CSV

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def slices_csv(tmp_path) -> Path:
    """Site s2 miscalibrated, a tiny site s9, drift from the 8th day."""
    rng = np.random.default_rng(1)
    n = 4000
    conf = rng.uniform(0.5, 1, n)
    g = rng.integers(0, 4, n)
    g[:60] = 9
    t = 1_700_006_400 + np.sort(rng.integers(0, 10 * 86400, n))
    truth = conf - 0.2 * (g == 2) - 0.2 * ((t - t[0]) // 86400 >= 7)
    correct = rng.random(n) < truth
    stamps = pd.to_datetime(t, unit="s").strftime("%Y-%m-%dT%H:%M:%SZ")
    frame = pd.DataFrame({"site": [f"s{i}" for i in g], "timestamp": stamps, "p_a": conf,
                          "p_b": 1 - conf, "label": np.where(correct, "a", "b")})  # fmt: skip
    path = tmp_path / "slices.csv"
    frame.to_csv(path, index=False)
    return path


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_evaluate_json_slices_and_windows_documented(slices_csv, capsys):
    argv = ["evaluate", str(slices_csv), "--maps", "temperature", "--format", "json",
            "--group-by", "site", "--window", "1d", "--reference-windows", "3",
            "--slice-resamples", "50", "--group-maps", "temperature"]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    model = json.loads(out)["models"][0]
    s, t = model["slices"], model["time"]
    assert s["worst"] == "site=s2" and s["homogeneity"]["p_value"] < 0.05
    small = [row["group"] for row in s["groups"] if row["small"]]
    assert small == ["site=s9"]
    flagged = [w["window"] for w in t["windows"] if w["flagged"]]
    assert flagged and all(w >= "2023-11-22" for w in flagged)
    doc = (REPO / "docs" / "evaluate-json-schema.md").read_text()
    keys = {*s, *s["groups"][0], *s["homogeneity"], *t, *t["windows"][0],
            *model["group_maps"][0]}  # fmt: skip
    documented = [k for k in keys if f"`{k}`" in doc or f"`{k}[]`" in doc]
    missing = [k for k in keys if k not in documented and not k.endswith(("_lower", "_upper"))]
    assert not missing


def test_evaluate_table_and_rows_window(slices_csv, capsys):
    argv = ["evaluate", str(slices_csv), "--maps", "temperature", "--group-by", "site",
            "--window", "1000rows", "--slice-resamples", "20"]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "worst group: site=s2" in out and "SMALL (< 100 rows, not judged)" in out
    assert "rows 1-1000: 1000 rows" in out and "rows 3001-4000: 1000 rows" in out


def test_csv_output_says_the_groups_are_elsewhere(slices_csv, capsys):
    argv = ["evaluate", str(slices_csv), "--maps", "temperature", "--format", "csv",
            "--group-by", "site", "--slice-resamples", "20"]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert out.startswith("model,") and "site=s2" not in out
    assert SLICES_NOT_IN_CSV in err


def test_check_per_group_fails_on_the_bad_group_and_skips_small(slices_csv, capsys):
    argv = ["check", str(slices_csv), "--max", "confidence_ece=0.12", "--group-by", "site",
            "--per-group"]  # fmt: skip
    code, out, err = run(argv, capsys)
    lines = out.splitlines()
    assert code == 1, err
    assert any(line.startswith("FAIL") and "group site=s2" in line for line in lines)
    assert any(line.startswith("SKIP") and "group site=s9" in line for line in lines)
    code, out, err = run([*argv, "--min-group-rows", "10", "--format", "json"], capsys)
    doc = json.loads(out)
    judged = [r for r in doc["results"] if "group" in r]
    assert all(r["judged"] for r in judged) and doc["settings"]["per_group"] is True
    code, _, err = run(["check", str(slices_csv), "--max", "confidence_ece=1", "--per-group"],
                       capsys)  # fmt: skip
    assert code == 2 and "--group-by" in err


def test_group_by_unknown_or_too_fine_column_is_a_clear_error(slices_csv, capsys):
    code, _, err = run(["evaluate", str(slices_csv), "--maps", "temperature", "--group-by",
                        "nope"], capsys)  # fmt: skip
    assert code == 1 and "'site', 'timestamp'" in err
    code, _, err = run(["evaluate", str(slices_csv), "--maps", "temperature", "--group-by",
                        "timestamp"], capsys)  # fmt: skip
    assert code == 1 and "coarser column" in err


# ------------------------------------------------------------------ report
class _Tables(HTMLParser):
    """The tables of an HTML fragment: rows of (highlighted, cells); ``<br>`` -> newline."""

    def __init__(self):
        super().__init__()
        self.tables, self.row, self.cell = [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.row = (dict(attrs).get("class") == "highlight", [])
        elif tag in ("td", "th"):
            self.cell = ""
        elif tag == "br" and self.cell is not None:
            self.cell += "\n"

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.row[1].append(self.cell)
            self.cell = None
        elif tag == "tr":
            self.tables[-1].append(self.row)

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def _slice_tables(text: str) -> list:
    start = text.index('<div class="diagnostics slices">')
    end = text.index('<div class="diagnostics">')
    parser = _Tables()
    parser.feed(text[start:end])
    return parser.tables


def _numbers(cell: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+", cell)]


def _expected(row: dict, name: str) -> list[float]:
    return [row[name], row[f"{name}_lower"], row[f"{name}_upper"]]


@pytest.mark.slow  # a whole offline report, figures included
def test_report_sections_show_the_cores_numbers(slices_csv, tmp_path, capsys):
    """Every number of the group and time tables is calibration_core.slices' (4 decimals)."""
    from calibration_core import Binning, load_predictions
    from calibration_core.slices import drift_report, group_index, slice_report, time_windows

    out = tmp_path / "report.html"
    argv = ["report", str(slices_csv), "--maps", "temperature", "--folds", "2",
            "--group-by", "site", "--window", "1d", "--reference-windows", "3",
            "--slice-resamples", "30", "-o", str(out)]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 0, err
    text = out.read_text()
    assert "Calibration by group · " in text and "Calibration over time · " in text
    (pred,) = load_predictions(slices_csv)
    groups = group_index(pred, ["site"])
    s = slice_report(pred, groups, binning=Binning(), n_resamples=30).to_dict()
    _, windows = time_windows(pred, "1d")
    d = drift_report(pred, windows, reference=3, binning=Binning(), n_resamples=30).to_dict()
    by_group, by_time = _slice_tables(text)
    header, *rows = by_group
    assert header[1][:4] == ["group", "rows", "accuracy", "ECE"]
    for (_, cells), row in zip(
        rows, [*s["groups"], s["whole"] | {"group": "all rows"}], strict=True
    ):
        assert cells[0] == row["group"]
        for i, name in enumerate(("accuracy", "ece", "mce", "brier_score", "log_loss")):
            assert _numbers(cells[2 + i]) == pytest.approx(_expected(row, name), abs=5.1e-5)
    assert f"Worst group: {s['worst']}, ECE {s['worst_gap']:.4f}" in text
    assert f"p = {s['homogeneity']['p_value']:.3g}" in text
    header, reference, *rows = by_time
    assert _numbers(reference[1][2]) == pytest.approx(_expected(d["reference"], "ece"), abs=5.1e-5)
    assert len(rows) == len(d["windows"])
    for (highlighted, cells), row in zip(rows, d["windows"], strict=True):
        assert cells[0] == row["window"] and highlighted == row["flagged"]
        for i, name in enumerate(("ece", "accuracy", "confidence")):
            assert _numbers(cells[2 + i]) == pytest.approx(_expected(row, name), abs=5.1e-5)
    assert any(row["flagged"] for row in d["windows"])  # the planted drift is highlighted
    assert text.count('"staticPlot": true') >= 2  # time chart and small multiples


@pytest.mark.slow  # a whole offline report, figures included
def test_report_section_problem_is_a_message_not_a_failure(slices_csv, tmp_path, capsys):
    out = tmp_path / "report.html"
    argv = ["report", str(slices_csv), "--maps", "temperature", "--folds", "2", "--window",
            "1w", "--time-column", "site", "--slice-resamples", "5", "-o", str(out)]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert "time column 'site'" in err and "not times" in err and "rows 1" in err
    text = out.read_text()
    assert "Calibration over time · " in text and "not times" in text
    assert "Diagnostics · " in text  # the rest of the report is written


# ------------------------------------------------------ reference period


def daily_windows(slices_csv, capsys, *extra) -> dict:
    """The ``time`` object of ``evaluate --window 1d`` (JSON) with the ``extra`` options."""
    argv = ["evaluate", str(slices_csv), "--maps", "temperature", "--format", "json",
            "--window", "1d", "--slice-resamples", "30", *extra]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    return json.loads(out)["models"][0]["time"]


def test_reference_period_in_dates_same_as_the_first_windows(slices_csv, capsys):
    docs = [
        daily_windows(slices_csv, capsys, "--reference-windows", "3"),
        daily_windows(slices_csv, capsys, "--reference", "2023-11-15:2023-11-17"),
    ]
    assert docs[0]["windows"] == docs[1]["windows"]
    assert docs[1]["reference_period"] == "2023-11-15:2023-11-17"
    assert docs[1]["reference_windows"] == 3
    argv = ["evaluate", str(slices_csv), "--maps", "temperature", "--window", "1d",
            "--slice-resamples", "5", "--reference", "8:10"]  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "reference: windows 8 to 10, ECE" in out


def test_reference_period_of_one_date_alone_is_that_day(slices_csv, capsys):
    """The help's example: ``--reference 2024-01-15`` alone is that whole day (here the
    second daily window, as ``--reference 2:2``)."""
    docs = [daily_windows(slices_csv, capsys, "--reference", p) for p in ("2:2", "2023-11-16")]
    assert docs[0]["windows"] == docs[1]["windows"]
    assert docs[1]["reference_period"] == "2023-11-16"
    assert docs[1]["reference_windows"] == 1


def test_reference_period_problems_are_clear_errors(slices_csv, capsys):
    base = ["evaluate", str(slices_csv), "--maps", "temperature", "--window", "1d",
            "--slice-resamples", "5"]  # fmt: skip
    code, _, err = run([*base, "--reference", "2023-11-20:2023-11-16"], capsys)
    assert code == 1 and "ends before it starts" in err
    code, _, err = run([*base, "--reference", "2025-01-01:2025-02-01"], capsys)
    assert code == 1 and "lies outside the data" in err and "2023-11-15" in err
    code, _, err = run([*base, "--reference", "2", "--reference-windows", "2"], capsys)
    assert code == 1 and "not both" in err


@pytest.mark.slow  # a whole offline report, figures included
def test_report_names_the_chosen_reference_period(slices_csv, tmp_path, capsys):
    out = tmp_path / "report.html"
    argv = ["report", str(slices_csv), "--maps", "temperature", "--folds", "2", "--window",
            "1d", "--reference", "2023-11-16:2023-11-18", "--slice-resamples", "5",
            "-o", str(out)]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 0, err
    text = out.read_text()
    assert "reference: 2023-11-16 to 2023-11-18" in text
    assert "reference (2023-11-16 to 2023-11-18)" in text
