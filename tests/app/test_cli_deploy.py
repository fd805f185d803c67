"""``calibration-dashboard fit`` and ``apply`` (app.cli), and the page's fold-map export loading."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from app import cli
from app.cli.common import EXIT_INPUT, EXIT_OK
from app.exports import params_json
from calibration_core import compare_maps, load_map, load_predictions, stable_softmax

CLASSES = ("cat", "dog", "owl")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """logits.csv (over-confident logits, string labels, an id column) and probs.parquet."""
    root = tmp_path_factory.mktemp("deploy")
    rng = np.random.default_rng(3)
    z = 2.5 * rng.normal(size=(300, 3))
    y = (stable_softmax(z / 2.5).cumsum(axis=1) > rng.random(300)[:, None]).argmax(axis=1)
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(300)], "label": np.take(CLASSES, y)})
    for j, c in enumerate(CLASSES):
        frame[f"logit_{c}"] = z[:, j]
    frame.to_csv(root / "logits.csv", index=False, float_format="%.17g")
    probs = frame[["id", "label"]].copy()
    for j, c in enumerate(CLASSES):
        probs[f"p_{c}"] = stable_softmax(z)[:, j]
    probs.to_parquet(root / "probs.parquet")
    return root


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_fit_writes_the_deployable_map_and_a_json_summary(files, tmp_path, capsys):
    code, out, err = run(
        capsys, "fit", files / "logits.csv", "--map", "temperature", "-o", tmp_path / "m.json"
    )
    assert code == EXIT_OK, err
    summary = json.loads(out)
    assert summary["schema"] == "calibration-dashboard/fit/v1"
    assert (summary["map"], summary["input"], summary["n_rows"]) == ("temperature", "logits", 300)
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["kind"] == "deployable-map" and doc["class_names"] == list(CLASSES)
    assert doc["held_out"] == summary["held_out"]
    (model,) = load_predictions(files / "logits.csv")
    expected = compare_maps(model, maps=["temperature"]).rows()[1]["log_loss"]
    assert doc["held_out"]["calibrated"]["log_loss"] == pytest.approx(expected, abs=1e-12)


def test_fit_select_best_deploys_the_recommended_map(files, tmp_path, capsys):
    maps = "histogram,temperature,isotonic,vector"
    code, out, _ = run(
        capsys, "fit", files / "logits.csv", "--select", "best", "--maps", maps,
        "-o", tmp_path / "m.json",
    )  # fmt: skip
    assert code == EXIT_OK
    summary = json.loads(out)
    losses = {r["map"]: r["log_loss"] for r in summary["comparison"][1:]}
    assert set(losses) == set(maps.split(","))
    verdict = summary["verdict"]
    eligible = [c for c in verdict["contenders"] if not c["clearly_worse"]]
    simplest = min(eligible, key=lambda c: c["n_parameters"])["maps"][0]
    assert summary["map"] == verdict["recommended"] == simplest == "temperature"
    assert summary["selected"] == "best"
    assert json.loads((tmp_path / "m.json").read_text())["map"]["map"] == summary["map"]


def test_fit_select_best_of_calibrated_predictions_deploys_the_identity(tmp_path, capsys):
    rng = np.random.default_rng(5)
    z = rng.normal(size=(400, 3))
    y = (stable_softmax(z).cumsum(axis=1) > rng.random(400)[:, None]).argmax(axis=1)
    frame = pd.DataFrame({"label": np.take(CLASSES, y)})
    for j, c in enumerate(CLASSES):
        frame[f"logit_{c}"] = z[:, j]
    frame.to_csv(tmp_path / "calibrated.csv", index=False, float_format="%.17g")
    code, out, err = run(
        capsys, "fit", tmp_path / "calibrated.csv", "--select", "best", "--maps",
        "temperature,vector", "-o", tmp_path / "m.json",
    )  # fmt: skip
    assert code == EXIT_OK, err
    summary = json.loads(out)
    assert summary["map"] == summary["verdict"]["recommended"] == "uncalibrated"
    assert "deployable map is the identity map" in err and "unchanged" in err
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["map"]["map"] == "temperature" and doc["map"]["state"]["temperature"] == 1.0


@pytest.mark.parametrize("out_ext", ["csv", "parquet", "npz"])
def test_apply_equals_predict_proba_and_keeps_other_columns(files, tmp_path, capsys, out_ext):
    run(capsys, "fit", files / "logits.csv", "--map", "vector", "-o", tmp_path / "m.json")
    out = tmp_path / f"calibrated.{out_ext}"
    code, stdout, err = run(capsys, "apply", tmp_path / "m.json", files / "logits.csv", "-o", out)
    assert code == EXIT_OK, err
    assert json.loads(stdout)["rows"] == 300
    assert err == ""  # no progress bar when stderr is not a terminal
    source = pd.read_csv(files / "logits.csv")
    expected = load_map(tmp_path / "m.json").predict_proba(
        source[[f"logit_{c}" for c in CLASSES]].to_numpy()
    )
    if out_ext == "npz":
        with np.load(out, allow_pickle=False) as npz:
            got, ids, labels = npz["probs"], npz["id"], npz["label"]
    else:
        table = pd.read_csv(out) if out_ext == "csv" else pd.read_parquet(out)
        assert list(table.columns) == ["id", "label", "p_cat", "p_dog", "p_owl"]
        got, ids, labels = table.iloc[:, 2:].to_numpy(), table["id"], table["label"]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert list(ids) == list(source["id"]) and list(labels) == list(source["label"])


def test_apply_output_is_itself_a_predictions_file(files, tmp_path, capsys):
    run(capsys, "fit", files / "probs.parquet", "--map", "platt", "-o", tmp_path / "m.json")
    run(capsys, "apply", tmp_path / "m.json", files / "probs.parquet", "-o", tmp_path / "c.csv")
    (calibrated,) = load_predictions(tmp_path / "c.csv")
    assert calibrated.class_names == CLASSES and calibrated.n_samples == 300


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["fit", "{logits}", "-o", "{tmp}/m.json"], 2, "name one map with --map"),
        (["fit", "{logits}", "--map", "a,b", "-o", "{tmp}/m.json"], 2, "name one map"),
        (["fit", "{tmp}/none.csv", "--map", "platt", "-o", "{tmp}/m.json"], 1, "file not found"),
        (["fit", "{logits}", "--map", "nope", "-o", "{tmp}/m.json"], 1, "unknown calibration map"),
        (["apply", "{tmp}/bad.json", "{logits}", "-o", "{tmp}/c.csv"], 1, "is not valid JSON"),
        (["apply", "{tmp}/m.json", "{probs}", "-o", "{tmp}/c.csv"], 1, "the map reads logits"),
        (["apply", "{tmp}/m.json", "{logits}", "-o", "{tmp}/c.xlsx"], 1, "must end in .csv"),
        (["apply", "{tmp}/m.json", "{logits}"], 2, "the following arguments are required"),
    ],
)
def test_bad_input_is_one_line_and_an_exit_code(files, tmp_path, capsys, argv, code, message):
    run(capsys, "fit", files / "logits.csv", "--map", "temperature", "-o", tmp_path / "m.json")
    (tmp_path / "bad.json").write_text('{"format": ')
    values = {"logits": files / "logits.csv", "probs": files / "probs.parquet", "tmp": tmp_path}
    got, out, err = run(capsys, *(a.format(**values) for a in argv))
    assert got == code and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_progress_bar_on_a_terminal(files, tmp_path, capsys, monkeypatch):
    run(capsys, "fit", files / "logits.csv", "--map", "temperature", "-o", tmp_path / "m.json")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, _, err = run(
        capsys, "apply", tmp_path / "m.json", files / "logits.csv", "-o", tmp_path / "c.csv"
    )
    assert code == EXIT_OK
    assert err.startswith("\r") and "100.0%" in err and err.endswith("\n")


def test_the_pages_fold_map_export_still_loads(files):
    (model,) = load_predictions(files / "logits.csv")
    comparison = compare_maps(model, maps=["temperature", "beta"], folds=3)
    fits = {model.name: comparison.to_dict(include_maps=True)["maps"]}
    export = json.loads(params_json(fits, {"folds": 3}))
    for name in ("temperature", "beta"):
        for fold, fitted in enumerate(comparison.fitted[name]):
            for loaded in (
                load_map(export["models"][model.name][name][fold]),
                load_map(export, map_name=name, fold=fold),
            ):
                np.testing.assert_allclose(
                    loaded.predict_proba(model), fitted.predict_proba(model), rtol=0, atol=1e-12
                )


def test_densenet_cifar100_fit_select_best_and_apply(realdata, tmp_path, capsys):
    """The new user's path on real over-confident predictions (../shared/realdata)."""
    source = realdata["densenet-bc-100-cifar-100"]
    code, out, err = run(
        capsys, "fit", source, "--select", "best", "--maps", "temperature,histogram",
        "-o", tmp_path / "m.json",
    )  # fmt: skip
    assert code == EXIT_OK, err
    summary = json.loads(out)
    assert summary["map"] == "temperature" and summary["n_classes"] == 100
    held = summary["held_out"]
    assert (
        held["calibrated"]["confidence_ece"] < 0.03 < 0.1 < held["uncalibrated"]["confidence_ece"]
    )
    fitted = load_map(tmp_path / "m.json")
    assert 1.9 < fitted.temperature_ < 2.4  # Guo et al.'s effect: T near 2.1
    code, _, err = run(capsys, "apply", tmp_path / "m.json", source, "-o", tmp_path / "c.npz")
    assert code == EXIT_OK, err
    with np.load(source) as raw, np.load(tmp_path / "c.npz", allow_pickle=False) as got:
        expected = fitted.predict_proba(raw["predictions"].astype(np.float64))
        np.testing.assert_allclose(got["probs"], expected, rtol=0, atol=1e-12)
        assert np.array_equal(got["ground_truth"], raw["ground_truth"])


# ------------------------------------------------------- hostile map documents
def hostile_documents(root: Path) -> dict[str, Path]:
    """Issue 31's map files: deep nesting, bad n_classes, and a 1e8-element array."""
    texts = {
        "deep": "[" * 100_000,
        "negative": '{"format": "calibration-dashboard/map/v1", "map": "temperature", '
        '"params": {}, "n_classes": -5, "state": {"temperature": 1.0}}',
        "huge_k": '{"format": "calibration-dashboard/map/v1", "map": "temperature", '
        '"params": {}, "n_classes": 1000000000, "state": {"temperature": 1.0}}',
        "float_k": '{"format": "calibration-dashboard/map/v1", "map": "temperature", '
        '"params": {}, "n_classes": 1e12, "state": {"temperature": 1.0}}',
        "digits": '{"format": "calibration-dashboard/map/v1", "n_classes": ' + "9" * 5001 + "}",
    }
    paths = {}
    for name, text in texts.items():
        paths[name] = root / f"{name}.json"
        paths[name].write_text(text)
    return paths


@pytest.mark.parametrize("case", ["deep", "negative", "huge_k", "float_k", "digits"])
def test_apply_refuses_a_hostile_map_in_one_line(capsys, files, tmp_path, case):
    path = hostile_documents(tmp_path)[case]
    code, out, err = run(capsys, "apply", path, files / "probs.parquet", "-o", tmp_path / "o.csv")
    assert code == EXIT_INPUT and out == ""
    assert err.count("\n") == 1 and len(err) < 600 and "Traceback" not in err
    assert "--traceback" not in err  # a CalibrationInputError, not an unexpected error


def test_apply_reads_max_classes_from_the_environment(capsys, files, tmp_path, monkeypatch):
    fitted = tmp_path / "map.json"
    run(capsys, "fit", files / "probs.parquet", "--map", "temperature", "-o", fitted)
    monkeypatch.setenv("MAX_CLASSES", "2")
    code, _, err = run(capsys, "apply", fitted, files / "probs.parquet", "-o", tmp_path / "o.csv")
    assert code == EXIT_INPUT and "max_classes" in err and "2" in err


@pytest.mark.slow
def test_apply_refuses_a_1e8_element_map_fast_in_one_line(files, tmp_path):
    path = tmp_path / "huge.json"
    path.write_text(
        '{"format": "calibration-dashboard/map/v1", "extra": [' + "0," * (10**8 - 1) + "0]}"
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "apply",
            str(path),
            str(files / "probs.parquet"),
            "-o",
            str(tmp_path / "o.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert time.perf_counter() - start < 20  # the import of the CLI, not the parse
    assert proc.returncode == EXIT_INPUT and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "bytes" in proc.stderr and len(proc.stderr) < 600
