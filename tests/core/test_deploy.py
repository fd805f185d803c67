"""Deployable maps: refit on all rows, export, load_map, apply to files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import calibration_core
from calibration_core import CalibrationInputError, Predictions, compare_maps, stable_softmax
from calibration_core.deploy import (
    DEPLOY_FORMAT,
    IDENTITY_WORDS,
    apply_map_to_file,
    deployable_map,
    load_deployable,
    load_map,
    recommended_map,
)
from calibration_core.maps import available_maps

CLASSES = ("cat", "dog", "owl")


def make_logits(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident logits (true temperature 2) and labels drawn from the true model."""
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.normal(size=(n, 3))
    p_true = stable_softmax(z / 2.0)
    y = (p_true.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    return z, y


@pytest.fixture(scope="module")
def logit_preds() -> Predictions:
    z, y = make_logits()
    return Predictions.from_logits(z, y, class_names=CLASSES, name="net")


@pytest.fixture(scope="module")
def prob_preds(logit_preds) -> Predictions:
    return Predictions.from_probs(
        np.asarray(logit_preds.probs), logit_preds.labels, class_names=CLASSES, name="net"
    )


def raw_input(preds: Predictions) -> np.ndarray:
    return np.asarray(preds.probs if preds.logits is None else preds.logits)


# ------------------------------------------------------------------ round trip
@pytest.mark.parametrize("kind", ["logits", "probs"])
@pytest.mark.parametrize("name", available_maps())
def test_round_trip_equals_the_in_memory_map(name, kind, logit_preds, prob_preds, tmp_path):
    preds = logit_preds if kind == "logits" else prob_preds
    deployable = deployable_map(preds, name, folds=3)
    path = tmp_path / "map.json"
    deployable.save(path)
    loaded = load_map(path)
    x = raw_input(preds)
    expected = deployable.map.predict_proba(x)
    np.testing.assert_allclose(loaded.predict_proba(x), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(loaded.predict_proba(preds), expected, rtol=0, atol=1e-12)
    assert loaded.input == kind and type(loaded) is type(deployable.map)


def test_the_map_is_refitted_on_all_rows(logit_preds):
    deployable = deployable_map(logit_preds, "temperature", folds=3)
    alone = calibration_core.maps.make_map("temperature", input="logits").fit(
        np.asarray(logit_preds.logits), logit_preds.labels
    )
    assert deployable.n_rows == logit_preds.n_samples
    assert deployable.map.temperature_ == pytest.approx(alone.temperature_, abs=1e-12)
    assert 1.5 < deployable.map.temperature_ < 2.6  # the true temperature is 2


def test_document_fields(logit_preds):
    comparison = compare_maps(logit_preds, maps=["temperature", "histogram"], folds=3, seed=1)
    doc = json.loads(deployable_map(logit_preds, "temperature", comparison).to_json())
    assert doc["format"] == DEPLOY_FORMAT == "calibration-dashboard/export/v2"
    assert doc["kind"] == "deployable-map"
    assert doc["library_version"] == calibration_core.__version__
    assert (doc["model"], doc["input"], doc["n_classes"]) == ("net", "logits", 3)
    assert doc["class_names"] == list(CLASSES) and doc["n_rows"] == 400
    assert doc["map"]["map"] == "temperature" and doc["map"]["params"] == {"input": "logits"}
    rows = {row["map"]: row for row in comparison.rows()}
    held = doc["held_out"]
    assert (held["method"], held["folds"], held["seed"]) == ("crossfit", 3, 1)
    for metric in ("log_loss", "confidence_ece", "brier_score"):
        assert held["uncalibrated"][metric] == rows["uncalibrated"][metric]
        assert held["calibrated"][metric] == rows["temperature"][metric]
    assert held["calibrated"]["log_loss"] < held["uncalibrated"]["log_loss"]


def test_recommended_map_is_the_verdicts(logit_preds):
    comparison = compare_maps(logit_preds, maps=["histogram", "temperature", "platt"], folds=3)
    verdict = comparison.verdict()
    assert recommended_map(comparison) == verdict.recommended
    eligible = [c for c in verdict.contenders if not c.clearly_worse]
    assert verdict.recommended == min(eligible, key=lambda c: c.n_parameters).name


def test_uncalibrated_deploys_the_identity_map(logit_preds):
    comparison = compare_maps(logit_preds, maps=[], folds=3)
    assert recommended_map(comparison) == "uncalibrated"
    deployable = deployable_map(logit_preds, "uncalibrated", comparison)
    assert deployable.map.temperature_ == 1.0 and deployable.map.n_parameters_ == 1
    np.testing.assert_allclose(
        deployable.map.predict_proba(logit_preds), logit_preds.probs, atol=1e-12
    )
    held = deployable.held_out
    assert held["calibrated"] == held["uncalibrated"]
    assert "unchanged" in IDENTITY_WORDS


def test_a_map_missing_from_the_comparison_is_refused(logit_preds):
    comparison = compare_maps(logit_preds, maps=["histogram"], folds=3)
    with pytest.raises(CalibrationInputError, match="no held-out result for map 'temperature'"):
        deployable_map(logit_preds, "temperature", comparison)


# ------------------------------------------------------------- fold-map export
def fold_export(comparison) -> dict:
    """Today's "Fitted maps JSON" download (app.exports.params_json) as a dict."""
    maps = comparison.to_dict(include_maps=True)["maps"]
    return {
        "format": "calibration-dashboard/export/v1",
        "kind": "fitted-maps",
        "settings": {},
        "models": {"net": maps},
    }


def test_fold_map_export_entries_still_load(logit_preds):
    comparison = compare_maps(logit_preds, maps=["temperature", "isotonic"], folds=3)
    export = json.loads(json.dumps(fold_export(comparison)))
    x = np.asarray(logit_preds.probs)
    for name in ("temperature", "isotonic"):
        for fold, fitted in enumerate(comparison.fitted[name]):
            entry = export["models"]["net"][name][fold]
            np.testing.assert_allclose(
                load_map(entry).predict_proba(x), fitted.predict_proba(x), rtol=0, atol=1e-12
            )
            whole = load_map(export, map_name=name, fold=fold)
            np.testing.assert_allclose(
                whole.predict_proba(x), fitted.predict_proba(x), rtol=0, atol=1e-12
            )
    with pytest.raises(CalibrationInputError, match=r"holds 2 maps.*map_name="):
        load_map(export, fold=0)
    with pytest.raises(CalibrationInputError, match=r"holds 3 folds.*fold="):
        load_map(export, map_name="temperature")
    with pytest.raises(CalibrationInputError, match="no model 'other'"):
        load_map(export, model="other", map_name="temperature", fold=0)


# ---------------------------------------------------------------------- errors
@pytest.fixture(scope="module")
def doc(logit_preds) -> dict:
    return json.loads(deployable_map(logit_preds, "vector", folds=3).to_json())


def test_a_newer_format_version_is_refused(doc):
    newer = {**doc, "format": "calibration-dashboard/export/v3"}
    with pytest.raises(CalibrationInputError, match=r"newer than this library.*upgrade"):
        load_map(newer)
    entry = {**doc["map"], "format": "calibration-dashboard/map/v2"}
    with pytest.raises(CalibrationInputError, match="newer than this library"):
        load_map(entry)


def test_wrong_number_of_classes_at_predict_time(doc, logit_preds):
    fitted = load_map(doc)
    with pytest.raises(CalibrationInputError, match="fitted on 3 classes but got 4 columns"):
        fitted.predict_proba(np.random.default_rng(0).normal(size=(5, 4)))


def test_probabilities_passed_to_a_logit_map(doc, logit_preds):
    with pytest.raises(CalibrationInputError, match="look like probabilities, not logits"):
        load_map(doc).predict_proba(np.asarray(logit_preds.probs))


def test_logits_passed_to_a_probability_map(prob_preds, logit_preds):
    fitted = load_map(json.loads(deployable_map(prob_preds, "platt", folds=3).to_json()))
    with pytest.raises(CalibrationInputError, match=r"not on the simplex.*logits"):
        fitted.predict_proba(np.asarray(logit_preds.logits))


def test_bad_json_names_the_file_and_the_line(tmp_path, doc):
    path = tmp_path / "map.json"
    path.write_text(json.dumps(doc, indent=2)[:200])
    with pytest.raises(CalibrationInputError, match=r"map.json' is not valid JSON .*line \d+"):
        load_map(path)
    with pytest.raises(CalibrationInputError, match="map file not found"):
        load_map(tmp_path / "missing.json")
    path.write_text("[1, 2]")
    with pytest.raises(CalibrationInputError, match="its JSON is a list"):
        load_map(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("n_classes"), "field 'n_classes' .* is missing"),
        (lambda d: d.update(n_classes="3"), "field 'n_classes' must be a whole number"),
        (lambda d: d.update(n_rows=True), "field 'n_rows' must be"),
        (lambda d: d.update(input="scores"), "'input' is 'scores' but its map reads 'logits'"),
        (lambda d: d.update(class_names=["a", "b"]), "'class_names' .* disagree"),
        (lambda d: d["map"].pop("state"), "field 'state' .* is missing"),
        (lambda d: d["map"].update(map="nonsense"), "unknown calibration map 'nonsense'"),
        (lambda d: d["map"]["state"].clear(), "fitted state.s .coef. is missing"),
        (lambda d: d.update(format="something/else"), "not a calibration map document"),
        (lambda d: d.update(kind="metrics"), "holds no fitted map"),
    ],
)
def test_a_damaged_document_says_what_and_how_to_fix(doc, change, message):
    damaged = json.loads(json.dumps(doc))
    change(damaged)
    with pytest.raises(CalibrationInputError, match=message):
        load_map(damaged)


def test_truncated_fitted_state_is_caught_at_load(doc):
    damaged = json.loads(json.dumps(doc))
    state = damaged["map"]["state"]
    key = next(k for k, v in state.items() if isinstance(v, list) and len(v) == 3)
    state[key] = state[key][:2]
    with pytest.raises(CalibrationInputError, match=r"cannot be loaded.*export the map again"):
        load_map(damaged)


# ------------------------------------------------------------------ apply files
def write_table(preds: Predictions, ids) -> pd.DataFrame:
    prefix, values = ("logit_", preds.logits) if preds.logits is not None else ("p_", preds.probs)
    frame = pd.DataFrame({"id": ids, "label": [CLASSES[i] for i in preds.labels]})
    for j, c in enumerate(CLASSES):
        frame[f"{prefix}{c}"] = np.asarray(values)[:, j]
    frame["extra"] = np.arange(len(ids)) * 0.5
    return frame


@pytest.mark.parametrize("out_ext", ["csv", "tsv", "parquet", "npz"])
@pytest.mark.parametrize("in_ext", ["csv", "csv.gz", "parquet", "npz"])
def test_apply_on_a_file_equals_predict_proba(logit_preds, tmp_path, in_ext, out_ext):
    deployable = load_deployable(
        json.loads(deployable_map(logit_preds, "temperature", folds=3).to_json())
    )
    ids = [f"row{i}" for i in range(logit_preds.n_samples)]
    frame = write_table(logit_preds, ids)
    src = tmp_path / f"in.{in_ext}"
    if in_ext.startswith("csv"):
        frame.to_csv(src, index=False, float_format="%.17g")
    elif in_ext == "parquet":
        frame.to_parquet(src)
    else:
        np.savez(
            src, logits=np.asarray(logit_preds.logits), id=np.array(ids), label=logit_preds.labels
        )
    out = tmp_path / f"out.{out_ext}"
    assert apply_map_to_file(deployable, src, out) == logit_preds.n_samples
    expected = deployable.map.predict_proba(np.asarray(logit_preds.logits))
    if out_ext == "npz":
        with np.load(out, allow_pickle=False) as npz:
            got, got_ids = npz["probs"], list(npz["id"])
            assert list(npz["class_names"]) == list(CLASSES)
    else:
        if out_ext == "parquet":
            table = pq.read_table(out).to_pandas()
        else:
            table = pd.read_csv(out, sep="," if out_ext == "csv" else "\t")
        got = table[[f"p_{c}" for c in CLASSES]].to_numpy()
        got_ids = list(table["id"])
        assert not any(c.startswith("logit_") for c in table.columns)
        if in_ext != "npz":
            assert list(table.columns) == ["id", "label", "p_cat", "p_dog", "p_owl", "extra"]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert got_ids == ids


def test_apply_streams_in_batches_and_reports_progress(logit_preds, tmp_path, monkeypatch):
    from calibration_core.deploy import files

    monkeypatch.setattr(files, "PARQUET_BATCH_ROWS", 64)
    deployable = deployable_map(logit_preds, "temperature", folds=3)
    write_table(logit_preds, list(range(400))).to_parquet(tmp_path / "in.parquet")
    seen = []
    apply_map_to_file(
        deployable,
        tmp_path / "in.parquet",
        tmp_path / "out.csv",
        progress=lambda *a: seen.append(a),
    )
    assert [s[0] for s in seen] == [64, 128, 192, 256, 320, 384, 400]
    assert {s[1:] for s in seen} == {(400, "rows")}
    got = pd.read_csv(tmp_path / "out.csv")[["p_cat", "p_dog", "p_owl"]].to_numpy()
    expected = deployable.map.predict_proba(np.asarray(logit_preds.logits))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_apply_matches_class_columns_by_name(prob_preds, tmp_path):
    deployable = deployable_map(prob_preds, "platt", folds=3)
    frame = write_table(prob_preds, list(range(400)))
    frame[["id", "p_owl", "p_cat", "p_dog"]].to_csv(tmp_path / "in.csv", index=False)
    apply_map_to_file(deployable, tmp_path / "in.csv", tmp_path / "out.parquet")
    got = pq.read_table(tmp_path / "out.parquet").to_pandas()
    assert list(got.columns) == ["id", "p_cat", "p_dog", "p_owl"]
    expected = deployable.map.predict_proba(np.asarray(prob_preds.probs))
    np.testing.assert_allclose(got.iloc[:, 1:].to_numpy(), expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (["id", "p_cat", "p_dog", "p_owl"], "map reads logits, but 'in.csv' holds probabilities"),
        (["id", "logit_cat", "logit_dog"], "fitted on 3 classes but 'in.csv' has 2 prediction"),
        (["id", "logit_cat", "logit_dog", "logit_emu"], "do not match the map's: missing"),
    ],
)
def test_apply_refuses_files_that_do_not_fit_the_map(logit_preds, tmp_path, columns, message):
    deployable = deployable_map(logit_preds, "temperature", folds=3)
    frame = pd.DataFrame(
        np.random.default_rng(0).normal(size=(5, len(columns) - 1)), columns=columns[1:]
    )
    frame.insert(0, "id", range(5))
    frame.to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(CalibrationInputError, match=message):
        apply_map_to_file(deployable, tmp_path / "in.csv", tmp_path / "out.csv")
    assert not (tmp_path / "out.csv").exists()


def test_apply_reports_bad_rows_and_leaves_no_partial_output(prob_preds, tmp_path):
    deployable = deployable_map(prob_preds, "platt", folds=3)
    frame = write_table(prob_preds, list(range(400)))
    frame.loc[7, "p_cat"] = 3.5
    frame.to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(CalibrationInputError, match=r"in data rows 1-400 .* not on the simplex"):
        apply_map_to_file(deployable, tmp_path / "in.csv", tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()
    frame.loc[7, "p_cat"] = np.nan
    frame.to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(CalibrationInputError, match=r"'p_cat' .* missing values at data rows 8"):
        apply_map_to_file(deployable, tmp_path / "in.csv", tmp_path / "out.csv")
    with pytest.raises(CalibrationInputError, match=r"must end in \.csv, \.tsv, \.parquet or"):
        apply_map_to_file(deployable, tmp_path / "in.csv", tmp_path / "out.xlsx")


def test_apply_on_a_binary_score_column(tmp_path):
    rng = np.random.default_rng(5)
    s = rng.random(300)
    y = (rng.random(300) < s**2).astype(int)
    preds = Predictions.from_scores(s, y, name="bin")
    deployable = deployable_map(preds, "isotonic", folds=3)
    pd.DataFrame({"id": range(300), "score": s}).to_csv(tmp_path / "in.csv", index=False)
    apply_map_to_file(deployable, tmp_path / "in.csv", tmp_path / "out.csv")
    got = pd.read_csv(tmp_path / "out.csv")
    assert list(got.columns) == ["id", "score"]
    expected = deployable.map.predict_proba(np.asarray(preds.probs))[:, 1]
    np.testing.assert_allclose(got["score"], expected, rtol=0, atol=1e-12)


def test_best_map_still_answers_with_a_deprecation_warning():
    """The old name keeps its meaning (lowest held-out log-loss among the maps) for one release."""
    from calibration_core.deploy import best_map, recommended_map

    rng = np.random.default_rng(3)
    s = rng.beta(2, 3, 2000)
    y = (rng.random(2000) < s).astype(int)
    comparison = compare_maps(
        Predictions.from_scores(s, y), maps=("temperature", "isotonic"), seed=0
    )
    with pytest.warns(DeprecationWarning, match="use recommended_map"):
        old = best_map(comparison)
    table = comparison.table.drop(index="uncalibrated")
    assert old == table["log_loss"].idxmin()
    assert recommended_map(comparison) in ("uncalibrated", "temperature", "isotonic")
