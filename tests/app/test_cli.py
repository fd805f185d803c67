"""The ``calibration-dashboard`` command line (app.cli)."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from app import cli
from app.cli.common import parse_maps
from calibration_core import (
    PART_FIELDS,
    brier_decomposition,
    compare_maps,
    load_predictions,
    log_loss_decomposition,
)
from calibration_core.compare import TABLE_COLUMNS
from calibration_core.maps import available_maps, registry
from calibration_core.maps.base import CalibrationMap

REPO = Path(__file__).resolve().parents[2]


class CliPriorMap(CalibrationMap):
    """Test-only map: the training class frequencies for every row."""

    name = "test-cli-prior"

    def _fit(self, probs, logits, labels):
        self.prior_ = np.bincount(labels, minlength=probs.shape[1]) / labels.shape[0]

    def _predict_proba(self, probs, logits):
        return np.tile(self.prior_, (probs.shape[0], 1))

    def _fitted_state(self):
        return {"prior": self.prior_.tolist()}

    def _load_fitted_state(self, state):
        self.prior_ = np.asarray(state["prior"])


@pytest.fixture(scope="module", autouse=True)
def _registered_test_map():
    registry.register(CliPriorMap)
    yield
    registry._REGISTRY.pop(CliPriorMap.name, None)


def write_predictions_csv(path: Path, n: int = 240, seed: int = 0) -> Path:
    """Two over-confident models, three named classes, string labels."""
    rng = np.random.default_rng(seed)
    classes = ["cat", "dog", "owl"]
    lines = ["model,label," + ",".join(f"p_{c}" for c in classes)]
    for model, sharpen in (("alpha", 3.0), ("beta", 1.5)):
        z = rng.normal(size=(n, 3))
        p_true = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        y = (p_true.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
        p = np.exp(sharpen * z)
        p /= p.sum(axis=1, keepdims=True)
        for row, label in zip(p, y, strict=True):
            lines.append(f"{model},{classes[label]}," + ",".join(f"{v:.17g}" for v in row))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def preds_csv(tmp_path) -> Path:
    return write_predictions_csv(tmp_path / "preds.csv")


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------- evaluate
def test_evaluate_json_schema_and_values(preds_csv, capsys):
    code, out, err = run(
        ["evaluate", str(preds_csv), "--maps", "test-cli-prior", "--format", "json",
         "--folds", "3", "--bins", "10", "--scheme", "frequency", "--seed", "4"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "calibration-dashboard/evaluate/v1"
    assert doc["settings"] == {
        "n_bins": 10,
        "scheme": "frequency",
        "folds": 3,
        "seed": 4,
        "maps": ["test-cli-prior"],
        "label_column": None,
        "renormalize": False,
        "level": 0.95,
        "measures": False,
        "group_by": None,
        "window": None,
    }
    assert [m["model"] for m in doc["models"]] == ["alpha", "beta"]
    assert all("measures" not in m for m in doc["models"])
    for model, loaded in zip(doc["models"], load_predictions(preds_csv), strict=True):
        assert model["n_samples"] == 240 and model["n_classes"] == 3
        assert [r["map"] for r in model["rows"]] == ["uncalibrated", "test-cli-prior"]
        assert all(
            set(r) == {"map", *TABLE_COLUMNS, *PART_FIELDS, "evaluated_on"} for r in model["rows"]
        )
        # every row is held out on every row of the model (the Dask engine: on a sample)
        assert all(r["evaluated_on"] == "all rows" for r in model["rows"])
        # the parts follow log_loss
        keys = list(model["rows"][0])
        assert keys[keys.index("log_loss") + 1 :][:4] == list(PART_FIELDS)
        # the same numbers as the library, for the same settings
        comparison = compare_maps(
            loaded, maps=["test-cli-prior"], folds=3, n_bins=10, scheme="frequency", seed=4
        )
        for got, want in zip(model["rows"], comparison.rows(), strict=True):
            for col in ("accuracy", "confidence_ece", "classwise_mce", "brier_score", "log_loss"):
                assert got[col] == pytest.approx(want[col], rel=1e-12)
            pred = comparison.calibrated[got["map"]]
            brier = brier_decomposition(pred, None, n_bins=10, scheme="frequency")
            loss = log_loss_decomposition(pred, None, n_bins=10, scheme="frequency")
            assert got["brier_calibration"] == pytest.approx(brier.calibration, rel=1e-12)
            assert got["brier_refinement"] == pytest.approx(brier.refinement, rel=1e-12)
            assert got["log_loss_calibration"] == pytest.approx(loss.calibration, rel=1e-12)
            assert got["log_loss_refinement"] == pytest.approx(loss.refinement, rel=1e-12)
            # calibration + refinement is the score up to the small binning residual
            assert got["brier_calibration"] + got["brier_refinement"] == pytest.approx(
                got["brier_score"], abs=0.02
            )
        # the verdict: the library's, for the same settings (the comparison's seed)
        want = (
            compare_maps(
                loaded, maps=["test-cli-prior"], folds=3, n_bins=10, scheme="frequency", seed=4
            )
            .verdict()
            .to_dict()
        )
        assert model["verdict"] == {**want, "evaluated_on": "all rows"}
        assert model["verdict"]["interval"] == "3-fold cross-fitting, each map fitted on 160 rows"


def test_evaluate_ignores_the_old_resamples_option_and_says_so(preds_csv, capsys):
    args = ["evaluate", str(preds_csv), "--maps", "test-cli-prior", "--format", "json"]
    code, out, err = run([*args, "--resamples", "200"], capsys)
    assert code == 0 and "--resamples is ignored" in err
    _, plain, plain_err = run(args, capsys)
    verdicts = [[m["verdict"] for m in json.loads(text)["models"]] for text in (out, plain)]
    assert verdicts[0] == verdicts[1] and "--resamples" not in plain_err


def test_evaluate_measures_section_is_the_library_summary(preds_csv, capsys):
    from calibration_core.measures import measures_summary

    code, out, err = run(
        ["evaluate", str(preds_csv), "--maps", "test-cli-prior", "--format", "json",
         "--folds", "3", "--seed", "2", "--measures"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["settings"]["measures"] is True
    for model, loaded in zip(doc["models"], load_predictions(preds_csv), strict=True):
        m = model["measures"]
        want = {**measures_summary(loaded, seed=2), "evaluated_on": "all rows"}
        assert m == json.loads(json.dumps(want))
        # K = 3: no binary block
        assert set(m) == {"confidence", "classwise", "canonical", "evaluated_on"}
        top = m["confidence"]
        assert set(top) == {"cumulative", "spiegelhalter", "smooth_ece", "hierarchy"}
        assert set(top["hierarchy"]) == {
            "n_samples", "level", "in_the_large", "recalibration", "curve", "spiegelhalter"
        }  # fmt: skip
        assert len(m["classwise"]["ks_errors"]) == 3
        assert m["canonical"]["skce"]["n_quadratic"] == 240
        assert m["canonical"]["vector_binned_ece"]["n_occupied"] >= 1
    # alpha is the sharpened (over-confident) model
    slope = doc["models"][0]["measures"]["confidence"]["hierarchy"]["recalibration"]["slope"]
    assert slope["upper"] < 1
    code, out, err = run(
        ["evaluate", str(preds_csv), "--maps", "test-cli-prior", "--measures"], capsys
    )
    assert code == 0, err
    assert "alpha: measures of the uncalibrated predictions" in out
    assert "KS error" in out and "smooth ECE" in out and "slope" in out


def test_evaluate_measures_of_a_binary_file_have_a_binary_block(tmp_path, capsys):
    rng = np.random.default_rng(1)
    s = rng.random(300)
    y = (rng.random(300) < s).astype(int)
    path = tmp_path / "binary.csv"
    path.write_text(
        "label,p_0,p_1\n"
        + "".join(f"{b},{1 - a:.17g},{a:.17g}\n" for a, b in zip(s, y, strict=True))
    )
    code, out, err = run(["evaluate", str(path), "--maps", "test-cli-prior", "--format", "json",
                          "--measures"], capsys)  # fmt: skip
    assert code == 0, err
    m = json.loads(out)["models"][0]["measures"]
    assert m["binary"]["hierarchy"]["in_the_large"]["n_samples"] == 300
    assert m["canonical"]["vector_binned_ece"]["n_cells"] == 25


def test_evaluate_table_lists_every_model_and_map(preds_csv, capsys):
    code, out, err = run(
        ["evaluate", str(preds_csv), "--maps", "test-cli-prior", "--folds", "2"], capsys
    )
    assert code == 0, err
    assert out.startswith("alpha: 240 rows, 3 classes; 2-fold cross-fitting")
    assert "\nbeta: 240 rows" in out
    first_cells = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert first_cells.count("uncalibrated") == 2 and first_cells.count("test-cli-prior") == 2
    assert "confidence_ece" in out and "log_loss" in out
    verdicts = [line for line in out.splitlines() if ": verdict: " in line]
    assert [v.split(":")[0] for v in verdicts] == ["alpha", "beta"]


def test_evaluate_table_counts_parameters_and_says_the_recommendation(preds_csv, capsys):
    code, out, err = run(
        ["evaluate", str(preds_csv), "--maps", "temperature,vector,test-cli-prior", "--folds", "2"],
        capsys,
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].split()[:2] == ["map", "parameters"]
    counts = {line.split()[0]: line.split()[1] for line in lines[2:6]}
    assert counts == {"uncalibrated": "0", "temperature": "1", "vector": "6", "test-cli-prior": "-"}
    verdicts = [line for line in lines if ": verdict: " in line]
    assert all("Recommended: " in line and "parameter" in line for line in verdicts)


def test_evaluate_csv_is_one_table(preds_csv, capsys):
    code, out, err = run(
        ["evaluate", str(preds_csv), "--maps", "test-cli-prior", "--format", "csv"], capsys
    )
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["model", "map", *TABLE_COLUMNS]
    assert [(r["model"], r["map"]) for r in rows] == [
        ("alpha", "uncalibrated"),
        ("alpha", "test-cli-prior"),
        ("beta", "uncalibrated"),
        ("beta", "test-cli-prior"),
    ]
    assert rows[1]["converged"] == "true" and rows[0]["converged"] == ""
    assert 0 <= float(rows[1]["confidence_ece"]) <= 1


def test_evaluate_with_real_temperature_scaling(preds_csv, capsys):
    if "temperature" not in available_maps():
        pytest.skip("temperature scaling is not registered yet")
    code, out, err = run(
        ["evaluate", str(preds_csv), "--maps", "temperature", "--format", "json"], capsys
    )
    assert code == 0, err
    rows = json.loads(out)["models"][0]["rows"]  # alpha: sharpened 3x, over-confident
    assert rows[1]["map"] == "temperature" and rows[1]["error"] is None
    assert rows[1]["accuracy"] == rows[0]["accuracy"]
    assert rows[1]["log_loss"] < rows[0]["log_loss"]


def test_maps_option_parsing():
    assert parse_maps("all") == "all"
    assert parse_maps(" temperature, isotonic ,") == ("temperature", "isotonic")


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("argv", "code", "needle"),
    [
        (["evaluate", "{missing}"], 1, "file not found"),
        (["evaluate", "{bad}"], 1, "bad.csv"),
        (["evaluate", "{csv}", "--maps", "no-such-map"], 1, "unknown calibration map"),
        (["evaluate", "{csv}", "--folds", "1"], 1, "folds"),
        (["evaluate", "{csv}", "--scheme", "quantile"], 2, "invalid choice"),
        (["evaluate", "{csv}", "--bins", "0"], 2, "--bins"),
        (["evaluate"], 2, "FILE"),
        (["frobnicate"], 2, "invalid choice"),
    ],
)
def test_errors_are_one_line_on_stderr(tmp_path, preds_csv, capsys, argv, code, needle):
    bad = tmp_path / "bad.csv"
    bad.write_text("label,p_a,p_b\n0,0.2,0.8\n1,1.7,-0.7\n")
    paths = {"missing": tmp_path / "nope.csv", "bad": bad, "csv": preds_csv}
    argv = [a.format(**{k: str(v) for k, v in paths.items()}) for a in argv]
    got, out, err = run(argv, capsys)
    assert got == code
    assert out == ""
    assert err.startswith("calibration-dashboard: error: ")
    assert err.count("\n") == 1 and needle in err
    assert "Traceback" not in err


def test_console_run_in_a_subprocess(tmp_path):
    """A real process: JSON on stdout, no dash imported, then a one-line error, exit 1."""
    path = write_predictions_csv(tmp_path / "p.csv", n=60)
    missing = tmp_path / "missing.csv"
    script = (
        "import sys\n"
        "from app.cli import main\n"
        "from calibration_core.maps import available_maps\n"
        "maps = 'vector' if 'vector' in available_maps() else ''\n"
        f"code = main(['evaluate', {str(path)!r}, '--maps', maps, '--format', 'json'])\n"
        "assert code == 0, code\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('dash', 'plotly', 'flask')]\n"
        f"sys.exit(main(['evaluate', {str(missing)!r}]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == f"calibration-dashboard: error: file not found: {missing}"
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "calibration-dashboard/evaluate/v1"
    assert [m["model"] for m in doc["models"]] == ["alpha", "beta"]


# ------------------------------------------------------------------- serve
@pytest.fixture
def fake_server(monkeypatch):
    calls = []
    module = types.ModuleType("app.server")
    module.serve = lambda **kwargs: calls.append(kwargs)
    monkeypatch.setitem(sys.modules, "app.server", module)
    return calls


def test_serve_passes_host_port_debug(fake_server):
    assert cli.main(["serve", "--host", "0.0.0.0", "--port", "9001", "--debug"]) == 0
    assert fake_server == [{"host": "0.0.0.0", "port": 9001, "debug": True}]


def test_no_subcommand_serves_the_demo_with_defaults(fake_server):
    assert cli.main([]) == 0
    assert fake_server == [{"host": "127.0.0.1", "port": 8050, "debug": False}]


def test_serve_without_server_module_is_a_clean_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "app.server", None)  # import fails like a missing module
    code, _, err = run(["serve"], capsys)
    assert code == 1
    assert err.startswith("calibration-dashboard: error: the dashboard is not available")
    assert "Traceback" not in err


def test_serve_checks_the_configuration_before_the_server(fake_server, monkeypatch, capsys):
    monkeypatch.setenv("APP_ENV", "production")
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setenv("MAX_JOBS", "-1")
    code, out, err = run(["serve"], capsys)
    assert (code, out, fake_server) == (2, "", [])
    assert err.count("\n") == 1 and "SECRET_KEY" in err and "MAX_JOBS" in err, err


def test_serve_with_a_bad_configuration_in_a_subprocess(tmp_path):
    """``calibration-dashboard serve``: one line naming both settings, exit 2, within
    10 s, and no server started (nothing else printed, the port never bound)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env.update(
        APP_ENV="production", ALLOWED_HOSTS="*", MAX_UPLOAD_MB="lots", CACHE_DIR=str(tmp_path)
    )
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - started < 10
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("calibration-dashboard: configuration error: 2 problems: ")
    assert "MAX_UPLOAD_MB" in lines[0] and "SECRET_KEY is required" in lines[0]
    assert not list(tmp_path.iterdir()), "the server wrote to CACHE_DIR"


def test_help_exits_zero(capsys):
    code, out, _ = run(["evaluate", "--help"], capsys)
    assert code == 0 and "--label-column" in out


def test_version_comes_from_the_package_metadata(capsys):
    from importlib.metadata import version

    import calibration_core

    code, out, _ = run(["--version"], capsys)
    assert code == 0
    assert out.strip() == f"calibration-dashboard {version('calibration-dashboard')}"
    assert calibration_core.__version__ == version("calibration-dashboard")


def test_schema_doc_example_matches_the_output(preds_csv, capsys):
    text = (REPO / "docs" / "evaluate-json-schema.md").read_text()
    example = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    code, out, err = run(
        ["evaluate", str(preds_csv), "--maps", "test-cli-prior", "--format", "json"], capsys
    )
    assert code == 0, err
    doc = json.loads(out)
    assert example["schema"] == doc["schema"]
    assert example.keys() == doc.keys()
    assert example["settings"].keys() == doc["settings"].keys()
    assert example["models"][0].keys() == doc["models"][0].keys()
    assert example["models"][0]["rows"][0].keys() == doc["models"][0]["rows"][0].keys()
    assert example["models"][0]["verdict"].keys() == doc["models"][0]["verdict"].keys()


# ------------------------------------------------------------------- check
def test_check_pass_and_fail_exit_codes_and_lines(preds_csv, capsys):
    models = load_predictions(preds_csv)
    ece = {
        m.name: compare_maps(m, maps=[]).table.loc["uncalibrated", "confidence_ece"] for m in models
    }
    high = max(ece.values()) + 0.01
    code, out, err = run(
        ["check", str(preds_csv), "--max", f"confidence_ece={high}", "--max", "brier_score=2"],
        capsys,
    )
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 4 and all(line.startswith("PASS ") for line in lines)
    assert lines[0] == f"PASS confidence_ece = {ece['alpha']:.4f} <= {high:g} (model alpha)"
    low = min(ece.values()) - 0.01  # fails for both models
    code, out, err = run(["check", str(preds_csv), "--max", f"confidence_ece={low}"], capsys)
    assert code == 1, err
    assert [line.split()[0] for line in out.splitlines()] == ["FAIL", "FAIL"]
    assert f"> {low:g} (model beta)" in out.splitlines()[1]


def test_check_after_a_map_bounds_its_held_out_metrics(preds_csv, capsys):
    (alpha, beta) = load_predictions(preds_csv)
    held_out = {
        m.name: compare_maps(m, maps=["test-cli-prior"], folds=3, seed=2).table.loc[
            "test-cli-prior"
        ]
        for m in (alpha, beta)
    }
    bound = float(held_out["alpha"]["log_loss"]) + 1e-9  # alpha passes; does beta?
    argv = ["check", str(preds_csv), "--max", f"log_loss={bound!r}", "--after", "test-cli-prior",
            "--folds", "3", "--seed", "2", "--format", "json"]  # fmt: skip
    code, out, err = run(argv, capsys)
    doc = json.loads(out)
    assert doc["schema"] == "calibration-dashboard/check/v1"
    assert doc["settings"]["after"] == "test-cli-prior" and doc["settings"]["folds"] == 3
    got = {r["model"]: r for r in doc["results"]}
    for name in ("alpha", "beta"):
        assert got[name]["value"] == pytest.approx(held_out[name]["log_loss"], rel=1e-12)
        assert got[name]["passed"] == (held_out[name]["log_loss"] <= bound)
        assert got[name]["after"] == "test-cli-prior" and got[name]["metric"] == "log_loss"
    assert doc["passed"] == all(r["passed"] for r in doc["results"])
    assert code == (0 if doc["passed"] else 1), err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--max", "calibration=0.1"], "choose one of accuracy, confidence_ece"),
        (["--max", "confidence_ece"], "malformed bound"),
        (["--max", "confidence_ece=abc"], "finite number"),
        (["--max", "log_loss=nan"], "finite number"),
        (["--max", "confidence_ece=-1"], "impossible bound --max confidence_ece=-1"),
        (["--max", "log_loss=-0.1"], "log_loss is never below 0"),
        (["--max", "confidence_ece=5"], "can never fail: confidence_ece is at most 1"),
        (["--max", "brier_score=2.5"], "brier_score is at most 2"),
        (["--max", "log_loss=1", "--after", "no-such-map"], "unknown calibration map"),
        (["--max", "log_loss=1", "--file", "{missing}"], "file not found"),
        (["--max", "log_loss=1", "--file", "{bad}"], "bad.csv"),
        ([], "--max"),
    ],
)
def test_check_bad_input_exits_2(tmp_path, preds_csv, capsys, argv, needle):
    bad = tmp_path / "bad.csv"
    bad.write_text("label,p_a,p_b\n0,0.2,0.8\n1,1.7,-0.7\n")
    target = str(preds_csv)
    if "--file" in argv:
        i = argv.index("--file")
        target = argv[i + 1].format(missing=tmp_path / "nope.csv", bad=bad)
        argv = argv[:i] + argv[i + 2 :]
    code, out, err = run(["check", target, *argv], capsys)
    assert code == 2
    assert out == ""
    assert err.startswith("calibration-dashboard: error: ") and err.count("\n") == 1
    assert needle in err and "Traceback" not in err


def test_check_help_lists_the_metrics(capsys):
    code, out, _ = run(["check", "--help"], capsys)
    assert code == 0
    assert "confidence_ece" in out and "brier_score" in out and "--after" in out


# ------------------------------------------------------------------ report
def test_report_writes_a_standalone_html_with_details_and_verdict(tmp_path, capsys):
    path = write_predictions_csv(tmp_path / "preds.csv", n=150)
    target = tmp_path / "out" / "report.html"
    target.parent.mkdir()
    code, out, err = run(
        ["report", str(path), "--maps", "temperature", "--folds", "3", "--bins", "10",
         "-o", str(target)],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert out == "" and f"wrote {target}" in err
    text = target.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "</html>" in text
    assert '<script src="http' not in text  # opens offline: plotly.js is embedded
    import calibration_core

    assert f"calibration-dashboard {calibration_core.__version__}" in text
    assert "<th>date</th>" in text and "<th>input files</th><td>preds.csv</td>" in text
    assert "3-fold cross-fitting" in text and "&quot;n_bins&quot;: 10" in text
    assert "<h2>Verdict</h2>" in text and "<h3>alpha</h3>" in text and "<h3>beta</h3>" in text
    (alpha, _) = load_predictions(path)
    verdict = compare_maps(alpha, maps=["temperature"], folds=3, n_bins=10).verdict()
    import html

    assert html.escape(verdict.summary) in text  # the core's verdict, same folds and seed
    assert "Diagnostics · alpha" in text  # the page's report, diagnostics included


def test_report_bad_input_is_one_line(tmp_path, preds_csv, capsys):
    target = tmp_path / "x.html"
    code, out, err = run(["report", str(tmp_path / "nope.csv"), "-o", str(target)], capsys)
    assert code == 1 and out == "" and "file not found" in err and err.count("\n") == 1
    code, _, err = run(["report", str(preds_csv), "--maps", "nope", "-o", str(target)], capsys)
    assert code == 1 and "unknown calibration map" in err
    assert not target.exists()
    code, _, err = run(["report", str(preds_csv)], capsys)
    assert code == 2 and "--output" in err


# ------------------------------------------------------ row sums, label column
BOUND = ("--max", "brier_score=2")


def test_input_errors_name_the_flags_not_python(tmp_path, capsys):
    # Two rows only: nothing to fit, a bound that always holds.
    scaled = tmp_path / "scaled.csv"
    scaled.write_text("label,p_a,p_b\na,0.6,0.6\nb,0.2,0.6\n")
    code, _, err = run(["check", str(scaled), *BOUND], capsys)
    assert code == 2 and "add --renormalize" in err and "renormalize=True" not in err
    code, _, err = run(["check", str(scaled), *BOUND, "--renormalize"], capsys)
    assert code == 0, err
    assert "warning: 2 probability row(s) of 'scaled.csv'" in err
    unnamed = tmp_path / "unnamed.csv"
    unnamed.write_text("truth,p_a,p_b\na,0.5,0.5\nb,0.25,0.75\n")
    code, _, err = run(["check", str(unnamed), *BOUND], capsys)
    assert code == 2 and "--label-column C" in err and "label_column=" not in err
    code, _, err = run(["check", str(unnamed), *BOUND, "--label-column", "truth"], capsys)
    assert code == 0, err
