"""The ``calibration-dashboard`` command line (app.cli)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from app import cli
from calibration_core import compare_maps, load_predictions
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
    }
    assert [m["model"] for m in doc["models"]] == ["alpha", "beta"]
    for model, loaded in zip(doc["models"], load_predictions(preds_csv), strict=True):
        assert model["n_samples"] == 240 and model["n_classes"] == 3
        assert [r["map"] for r in model["rows"]] == ["uncalibrated", "test-cli-prior"]
        assert all(set(r) == {"map", *TABLE_COLUMNS} for r in model["rows"])
        # the same numbers as the library, for the same settings
        expected = compare_maps(
            loaded, ["test-cli-prior"], folds=3, n_bins=10, scheme="frequency", seed=4
        ).rows()
        for got, want in zip(model["rows"], expected, strict=True):
            for col in ("accuracy", "confidence_ece", "classwise_mce", "brier_score", "log_loss"):
                assert got[col] == pytest.approx(want[col], rel=1e-12)


def test_evaluate_table_lists_every_model_and_map(preds_csv, capsys):
    code, out, err = run(
        ["evaluate", str(preds_csv), "--maps", "test-cli-prior", "--folds", "2"], capsys
    )
    assert code == 0, err
    assert out.startswith("alpha: 240 rows, 3 classes; 2-fold cross-fitting")
    assert "\nbeta: 240 rows" in out
    assert out.count("uncalibrated") == 2 and out.count("test-cli-prior") == 2
    assert "confidence_ece" in out and "log_loss" in out


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
    assert cli.parse_maps("all") == "all"
    assert cli.parse_maps(" temperature, isotonic ,") == ("temperature", "isotonic")


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
