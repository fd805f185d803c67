"""Callback functions as plain functions: validation, numbers equal to the core's, no refits."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

import app.services.fit as fit_module
from app import ids
from app.callbacks.exports import create_calibrated_export
from app.callbacks.fit import cancelled_fit_state
from app.callbacks.models import after_upload
from app.callbacks.view import render
from app.exports import safe_cell
from app.options import class_choices, notion_for_selection
from app.services.fit import plan_fits, run_fits
from app.services.report import small_export
from app.settings import ALL_CLASSES, RawSettings
from calibration_core import (
    Predictions,
    brier_score,
    classwise_ece,
    confidence_ece,
    confidence_mce,
    log_loss,
)
from calibration_core.compare import compare_maps
from calibration_core.maps.base import CalibrationMap

from .conftest import make_config, prediction_csv


def _demo(ctx, name):
    return next(m for m in ctx.store.demo_models() if m.name == name)


def _rows(out):
    return {(r["model"], r["map"]): r for r in out[1]}


def test_uncalibrated_rows_equal_the_core(ctx, sid):
    nb = _demo(ctx, "digits · naive Bayes")
    pred = ctx.store.predictions(nb.handle)
    for scheme, n_bins in (("width", 15), ("frequency", 7), ("width", 100)):
        raw = RawSettings(handles=[nb.handle], maps=[], scheme=scheme, n_bins=n_bins)
        out = render(ctx, sid, raw)
        assert out[5] == []
        row = _rows(out)[(nb.name, "uncalibrated")]
        kw = {"n_bins": n_bins, "scheme": scheme}
        assert row["ece"] == pytest.approx(confidence_ece(pred.probs, pred.labels, **kw), abs=1e-12)
        assert row["mce"] == pytest.approx(confidence_mce(pred.probs, pred.labels, **kw), abs=1e-12)
        assert row["classwise_ece"] == pytest.approx(
            classwise_ece(pred.probs, pred.labels, **kw), abs=1e-12
        )
        assert row["brier_score"] == pytest.approx(brier_score(pred.probs, pred.labels))
        assert row["log_loss"] == pytest.approx(log_loss(pred.probs, pred.labels))
        assert row["n"] == 1797
        assert f"{n_bins} equal-{scheme}" in out[3]  # the caption states the binning


def test_one_class_and_binary_notions(ctx, sid):
    bc = _demo(ctx, "breast cancer · naive Bayes")
    pred = ctx.store.predictions(bc.handle)
    out = render(ctx, sid, RawSettings(handles=[bc.handle], notion="binary", n_bins=10))
    row = _rows(out)[(bc.name, "uncalibrated")]
    from calibration_core import binary_ece

    assert row["ece"] == pytest.approx(binary_ece(pred.probs[:, 1], pred.labels, n_bins=10))
    # The binary notion on a 10-class model is a readable message, not a crash.
    digits = _demo(ctx, "digits · MLP")
    out = render(ctx, sid, RawSettings(handles=[digits.handle], notion="binary"))
    assert any("needs 2 classes" in m for m in out[5])
    # All classes: mean of the classes' ECE (= classwise ECE), one panel per class.
    dpred = ctx.store.predictions(digits.handle)
    out = render(
        ctx,
        sid,
        RawSettings(handles=[digits.handle], notion="class", class_value=ALL_CLASSES, n_bins=12),
    )
    row = _rows(out)[(digits.name, "uncalibrated")]
    assert row["ece"] == pytest.approx(classwise_ece(dpred.probs, dpred.labels, n_bins=12))
    assert len(out[0]) == 1  # one graph per model


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("n_bins", 10**9, "number of bins"),
        ("n_bins", -3, "number of bins"),
        ("n_bins", 1, "number of bins"),
        ("n_bins", "15", "number of bins"),
        ("n_bins", 2.5, "number of bins"),
        ("n_bins", True, "number of bins"),
        ("n_bins", float("nan"), "number of bins"),
        ("scheme", "quantile", "binning scheme"),
        ("notion", "<script>", "notion"),
        ("band", "bootstrap", "band"),
        ("level", 1.5, "band level"),
        ("level", "high", "band level"),
        ("maps", ["temperature", "rm -rf"], "unknown calibration map"),
        ("maps", "temperature", "list of map names"),
        ("handles", ["../../etc/passwd"], "not valid"),
        ("handles", ["demo-0"] * 3 + [f"demo-{i}" for i in range(8)], "at most"),
        ("heldout", "bootstrap", "held-out"),
        ("folds", 10**6, "folds"),
        ("fraction", 0.99, "test fraction"),
    ],
)
def test_crafted_payloads_are_rejected_server_side(ctx, sid, field, value, needle):
    raw = RawSettings(handles=["demo-4"], maps=[])
    if field == "fraction":
        raw.heldout = "split"
    setattr(raw, field, value)
    _grid, rows, cols, _caption, _title, messages, _verdict, status = render(ctx, sid, raw)
    assert rows == [] and cols == [] and status == ""  # nothing drawn: no fit status
    assert any(needle in m for m in messages), messages
    assert not any("Traceback" in m for m in messages)


def test_someone_elses_handle_reads_as_expired(ctx, sid):
    other = "up-" + "A" * 24
    out = render(ctx, sid, RawSettings(handles=[other]))
    assert out[1] == []
    assert any("expired, please upload again" in m for m in out[5])


def test_planner_asks_for_missing_work_only(ctx, sid, monkeypatch):
    rf = _demo(ctx, "digits · random forest")
    state, request = plan_fits(ctx, sid, [rf.handle], ["temperature"], "folds", 3, 0.5)
    assert state is None
    assert request["handles"] == [rf.handle] and request["maps"] == ["temperature"]
    assert (request["mode"], request["folds"]) == ("folds", 3)
    # The background step fits exactly that request.
    done = run_fits(
        ctx,
        sid,
        request["handles"],
        request["maps"],
        request["mode"],
        request["folds"],
        request["fraction"],
        lambda p: None,
    )
    assert done["fitted"] == [f"{rf.handle}:temperature"]
    # Now the planner answers without a job (and without fitting anything).
    monkeypatch.setattr(fit_module, "compare_maps", None)
    state, request = plan_fits(ctx, sid, [rf.handle], ["temperature"], "folds", 3, 0.5)
    assert request is None and state["summary"] == "All selected maps are fitted."
    # Another held-out scheme is other work.
    state, request = plan_fits(ctx, sid, [rf.handle], ["temperature"], "split", 3, 0.3)
    assert state is None and request["mode"] == "split"
    # Bad settings are an error state, never a job.
    state, request = plan_fits(ctx, sid, [rf.handle], ["no-such-map"], "folds", 3, 0.5)
    assert request is None and "no-such-map" in state["error"]


def test_fit_then_cheap_changes_never_refit(ctx, sid, monkeypatch):
    rf = _demo(ctx, "digits · random forest")
    progress = []
    state = run_fits(
        ctx, sid, [rf.handle], ["temperature", "isotonic"], "folds", 3, 0.5, progress.append
    )
    assert state["error"] is None and len(state["fitted"]) == 2
    assert progress and all(len(p) == 3 for p in progress)
    assert progress[-1][0] == progress[-1][1] == "6"  # 2 maps x 3 folds

    # The dashboard's numbers are compare_maps' numbers for the same held-out folds.
    pred = ctx.store.predictions(rf.handle)
    reference = compare_maps(pred, maps=["temperature", "isotonic"], folds=3, seed=0, n_bins=15)

    def no_fitting(*args, **kwargs):
        raise AssertionError("a cheap change refitted a map")

    monkeypatch.setattr(CalibrationMap, "fit", no_fitting)
    monkeypatch.setattr(fit_module, "compare_maps", no_fitting)
    again = run_fits(
        ctx, sid, [rf.handle], ["temperature", "isotonic"], "folds", 3, 0.5, progress.append
    )
    assert again["fitted"] == [] and again["summary"] == "All selected maps are fitted."

    raw = RawSettings(handles=[rf.handle], maps=["temperature", "isotonic"], folds=3)
    rows = _rows(render(ctx, sid, raw))
    for name in ("uncalibrated", "temperature", "isotonic"):
        expected = reference.table.loc[name]
        row = rows[(rf.name, name)]
        assert row["ece"] == pytest.approx(expected["confidence_ece"], abs=1e-12)
        assert row["classwise_ece"] == pytest.approx(expected["classwise_ece"], abs=1e-12)
        assert row["brier_score"] == pytest.approx(expected["brier_score"], abs=1e-12)
        assert row["accuracy"] == pytest.approx(expected["accuracy"])
    calibrated = reference.calibrated["temperature"]
    for change in (
        {"n_bins": 40},
        {"scheme": "frequency"},
        {"band": "consistency"},
        {"notion": "class", "class_value": "3"},
        {"level": 0.8},
    ):
        raw = RawSettings(handles=[rf.handle], maps=["temperature", "isotonic"], folds=3, **change)
        out = render(ctx, sid, raw)
        assert out[5] == []
        assert len(out[1]) == 3
    out = render(
        ctx,
        sid,
        RawSettings(
            handles=[rf.handle], maps=["temperature"], folds=3, n_bins=40, scheme="frequency"
        ),
    )
    row = _rows(out)[(rf.name, "temperature")]
    assert row["ece"] == pytest.approx(
        confidence_ece(calibrated.probs, calibrated.labels, n_bins=40, scheme="frequency")
    )


def test_unfitted_maps_show_as_pending_not_as_errors(ctx, sid):
    nb = _demo(ctx, "breast cancer · naive Bayes")
    out = render(ctx, sid, RawSettings(handles=[nb.handle], maps=["platt"]))
    row = _rows(out)[(nb.name, "platt")]
    assert row["status"].startswith("fitting")
    assert out[5] == []
    # After a cancel, the same panels say so instead of promising a fit.
    out = render(
        ctx, sid, RawSettings(handles=[nb.handle], maps=["platt"]), fit_state={"cancelled": True}
    )
    assert "cancelled" in _rows(out)[(nb.name, "platt")]["status"]


def test_split_mode_scores_everything_on_the_test_rows(ctx, sid):
    lr = _demo(ctx, "breast cancer · logistic regression")
    state = run_fits(ctx, sid, [lr.handle], ["platt"], "split", 5, 0.4, lambda p: None)
    assert state["error"] is None
    out = render(
        ctx, sid, RawSettings(handles=[lr.handle], maps=["platt"], heldout="split", fraction=0.4)
    )
    rows = _rows(out)
    n_test = rows[(lr.name, "uncalibrated")]["n"]
    assert n_test == rows[(lr.name, "platt")]["n"] == round(0.4 * 569)
    reference = compare_maps(
        ctx.store.predictions(lr.handle), maps=["platt"], test_fraction=0.4, seed=0
    )
    assert rows[(lr.name, "platt")]["ece"] == pytest.approx(
        reference.table.loc["platt", "confidence_ece"]
    )


def test_after_upload_refreshes_from_the_server(ctx, sid):
    rng = np.random.default_rng(0)
    pred = Predictions.from_probs(rng.dirichlet([1, 1], 50), rng.integers(0, 2, 50), name="new")
    (info,) = ctx.store.add_models(sid, [pred], "new.csv")
    result = {
        "results": [
            {"file": "new.csv", "models": [{"handle": info.handle, "name": "new"}]},
            {"file": "bad.csv", "error": "bad.csv: no label column"},
            {"file": "forged.csv", "models": [{"handle": "up-notmine", "name": "x"}]},
        ]
    }
    models, options, selection, message, _, _ = after_upload(ctx.store, sid, result, ["demo-1"])
    # First upload: the new model is selected, the demo deselected, the forged handle ignored.
    assert selection == [info.handle]
    assert [o["value"] for o in options][-1] == info.handle
    assert len(models) == 9
    texts = [m.children for m in message]
    assert texts == ["new.csv: loaded new.", "bad.csv: no label column"]


def test_class_choices_union_and_visibility():
    models = [
        {
            "handle": "demo-0",
            "name": "a",
            "n_samples": 1,
            "n_classes": 2,
            "class_names": ["x", "y"],
            "source": "",
            "has_logits": False,
        },
        {
            "handle": "demo-1",
            "name": "b",
            "n_samples": 1,
            "n_classes": 2,
            "class_names": ["y", "z"],
            "source": "",
            "has_logits": False,
        },
    ]
    options, value, style = class_choices(models, ["demo-0", "demo-1"], "class", None)
    assert [o["value"] for o in options] == [ALL_CLASSES, "x", "y", "z"]
    assert value == "x" and style == {}
    assert class_choices(models, ["demo-1"], "confidence", "z")[1:] == ("z", {"display": "none"})


def test_a_selection_that_becomes_all_binary_opens_in_the_binary_view():
    def model(handle, k):
        names = [str(c) for c in range(k)]
        return {
            "handle": handle,
            "name": handle,
            "n_samples": 10,
            "n_classes": k,
            "class_names": names,
            "source": "",
            "has_logits": False,
        }

    models = [model("score", 2), model("other", 2), model("digits", 10)]
    # Becoming all binary (after an upload, or by hand): the binary view.
    assert notion_for_selection(models, ["score"], "confidence", False) == ("binary", True)
    assert notion_for_selection(models, ["score"], "class", False) == ("binary", True)
    # Still all binary: the notion the user picked stays.
    assert notion_for_selection(models, ["score", "other"], "confidence", True) == (None, True)
    # A multiclass model selected, or nothing selected: no change.
    assert notion_for_selection(models, ["score", "digits"], "confidence", False) == (None, False)
    assert notion_for_selection(models, ["score", "digits"], "binary", True) == (None, False)
    assert notion_for_selection(models, [], "confidence", False) == (None, False)
    # Already binary: nothing to switch.
    assert notion_for_selection(models, ["score"], "binary", False) == (None, True)


def test_small_exports(ctx, sid):
    rng = np.random.default_rng(1)
    pred = Predictions.from_probs(
        rng.dirichlet([1, 1, 1], 300),
        rng.integers(0, 3, 300),
        name='=HYPERLINK("http://x")',
        class_names=["-a", "b", "c"],
    )
    (info,) = ctx.store.add_models(sid, [pred], "evil.csv")
    raw = RawSettings(handles=[info.handle, "demo-4"], maps=[])
    data = small_export(ctx, sid, ids.EXPORT_METRICS_CSV, raw)
    assert data["filename"].startswith("calibration-metrics-") and data["filename"].endswith(".csv")
    table = list(csv.DictReader(io.StringIO(data["content"])))
    assert table[0]["model"] == '\'=HYPERLINK("http://x")'
    assert float(table[0]["ece"]) == pytest.approx(confidence_ece(pred.probs, pred.labels))
    doc = json.loads(small_export(ctx, sid, ids.EXPORT_METRICS_JSON, raw)["content"])
    assert doc["rows"][1]["model"] == "digits · naive Bayes"
    assert doc["settings"]["binning"] == {"scheme": "width", "n_bins": 15}
    report = small_export(ctx, sid, ids.EXPORT_REPORT_HTML, raw)["content"]
    assert report.startswith("<!DOCTYPE html>") and "plotly" in report.lower()
    assert '<script src="http' not in report  # plotly.js inlined: opens offline
    assert "&lt;" not in report or "<img" not in report
    assert safe_cell(-0.5) == -0.5 and safe_cell("-0.5") == "'-0.5" and safe_cell("@x") == "'@x"
    assert safe_cell("\tx") == "'\tx" and safe_cell("\rx") == "'\rx" and safe_cell("ok") == "ok"


def test_params_export_after_fitting(ctx, sid):
    lr = _demo(ctx, "breast cancer · logistic regression")
    run_fits(ctx, sid, [lr.handle], ["temperature"], "folds", 2, 0.5, lambda p: None)
    raw = RawSettings(handles=[lr.handle], maps=["temperature"], folds=2)
    doc = json.loads(small_export(ctx, sid, ids.EXPORT_PARAMS_JSON, raw)["content"])
    folds = doc["models"][lr.name]["temperature"]
    assert len(folds) == 2 and all(f["map"] == "temperature" for f in folds)


def test_calibrated_csv_is_streamed_to_its_session_only(tmp_path):
    from app.factory import create_app
    from app.session import COOKIE_NAME

    dash_app = create_app(make_config(tmp_path))
    ctx = dash_app.server.extensions["calibration_dashboard"]
    owner, stranger = dash_app.server.test_client(), dash_app.server.test_client()
    owner.get("/_dash-dependencies")
    stranger.get("/_dash-dependencies")
    sid = ctx.sessions.verify(owner.get_cookie(COOKIE_NAME).value)[0]
    data = {"file": [(io.BytesIO(prediction_csv(n=120, k=2, class_names=["no", "=yes"])), "m.csv")]}
    handle = owner.post("/api/upload", data=data, content_type="multipart/form-data").json[
        "models"
    ][0]["handle"]
    run_fits(ctx, sid, [handle], ["platt"], "folds", 2, 0.5, lambda p: None)
    url = create_calibrated_export(ctx, sid, RawSettings(handles=[handle], maps=["platt"], folds=2))
    assert stranger.get(url).status_code == 404
    response = owner.get(url)
    assert response.status_code == 200
    assert "attachment" in response.headers["Content-Disposition"]
    assert response.mimetype == "text/csv"  # one model, one map: one file
    rows = list(csv.reader(io.StringIO(response.get_data(as_text=True))))
    assert rows[0] == ["row", "label", "p_no", "p_=yes"]
    assert [int(r[0]) for r in rows[1:]] == list(range(120))
    assert {r[1] for r in rows[1:]} <= {"no", "'=yes"}
    cal = ctx.store.predictions(
        ctx.store.get_fit(handle, "platt", RawSettings(folds=2).parse()[2]).variant
    )
    values = np.array([[float(v) for v in r[2:]] for r in rows[1:]])
    assert np.array_equal(values, cal.probs)  # full precision: the same bits


def _find(node, component_id):
    if isinstance(node, dict):
        if (node.get("props") or {}).get("id") == component_id:
            return node["props"]
        node = list(node.values())
    if isinstance(node, list):
        for child in node:
            found = _find(child, component_id)
            if found is not None:
                return found
    return None


def test_page_arrives_idle_and_says_when_its_maps_are_fitted(tmp_path):
    from app.factory import create_app
    from app.layout.page import default_settings

    dash_app = create_app(make_config(tmp_path))
    client = dash_app.server.test_client()
    first = client.get("/_dash-layout").get_json()
    assert _find(first, ids.FIT_START)["disabled"] is False  # no job runs yet
    assert _find(first, ids.FIT_SUMMARY).get("children") in ("", None)

    ctx = dash_app.server.extensions["calibration_dashboard"]
    raw = default_settings(ctx.store.demo_models())
    assert raw.maps  # the demo opens with maps selected
    run_fits(ctx, None, raw.handles, raw.maps, raw.heldout, raw.folds, raw.fraction, print)
    again = client.get("/_dash-layout").get_json()
    assert _find(again, ids.FIT_SUMMARY)["children"] == "All selected maps are fitted."
    assert _find(again, ids.FIT_START)["disabled"] is False


def test_the_fit_status_never_says_fitted_while_a_panel_waits(ctx, sid):
    # Issue 28, item 5: the line next to the Fit button said "all selected maps are
    # fitted" (the last job's summary) while the panels of a map ticked since said
    # "fitting…". It is now written with the view, from the same lookup as its panels.
    info = _demo(ctx, "digits · random forest")
    done = run_fits(ctx, sid, [info.handle], ["temperature"], "folds", 3, 0.5, print)
    assert done["summary"].endswith("all selected maps are fitted.")
    raw = RawSettings([info.handle], ["temperature"], "folds", 3)
    assert render(ctx, sid, raw, done)[-1] == done["summary"]
    ticked = RawSettings([info.handle], ["temperature", "platt"], "folds", 3)
    out = render(ctx, sid, ticked, done)  # platt ticked: the planner's job has not run yet
    assert "fitting…" in str(out[1]) and "verdict-waiting" in str(out[6])
    assert out[-1] == ""
    # An error or a cancellation is said whatever the panels show.
    assert render(ctx, sid, ticked, {**done, "error": "boom"})[-1] == "boom"
    cancelled = cancelled_fit_state()
    assert render(ctx, sid, ticked, cancelled)[-1] == cancelled["summary"]
    after = run_fits(ctx, sid, [info.handle], ticked.maps, "folds", 3, 0.5, print)
    assert render(ctx, sid, ticked, after)[-1] == after["summary"]


def test_a_fit_out_of_memory_is_a_stated_error_and_not_stored(ctx, sid, monkeypatch):
    """A ``MemoryError`` in a fit is the job's JOB_MEMORY_LIMIT_MB (app.job_limits): the
    fit says so, and stores no record that would stop a retry with more memory."""

    class Greedy(CalibrationMap):
        name = "temperature"

        def _fit(self, probs, logits, labels):
            raise MemoryError("Unable to allocate 8.00 GiB for an array")

    real = fit_module.compare_maps
    monkeypatch.setattr(
        fit_module,
        "compare_maps",
        lambda pred, maps, **kw: real(pred, maps={maps[0]: Greedy()}, **kw),
    )
    rf = _demo(ctx, "digits · random forest")
    state = run_fits(ctx, sid, [rf.handle], ["temperature"], "folds", 3, 0.5, lambda *_: None)
    assert state["error"].startswith(f"The fit of temperature on model {rf.name!r} stopped: it ")
    assert "limit of 4096 MB per job (JOB_MEMORY_LIMIT_MB)" in state["error"]
    assert plan_fits(ctx, sid, [rf.handle], ["temperature"], "folds", 3, 0.5)[1] is not None


def test_after_upload_shows_notices_and_the_label_picker(ctx, sid):
    rng = np.random.default_rng(1)
    pred = Predictions.from_probs(rng.dirichlet([1, 1], 50), rng.integers(0, 2, 50), name="r")
    (info,) = ctx.store.add_models(sid, [pred], "r.csv")
    result = {
        "results": [
            {
                "file": "r.csv",
                "models": [{"handle": info.handle, "name": "r"}],
                "notices": ["r.csv: 3 probability row(s) ..."],
            },
            {
                "file": "u.csv",
                "error": "u.csv: no label column",
                "remedy": "label_column",
                "columns": ["truth", "p_a"],
            },
        ]
    }
    *_, message, options, hidden = after_upload(ctx.store, sid, result, [])
    assert [m.className for m in message] == [
        "upload-line ok",
        "upload-line notice",
        "upload-line error",
    ]
    assert hidden is False
    assert [o.value for o in options] == ["", "truth", "p_a"]
    *_, options, hidden = after_upload(ctx.store, sid, {"results": []}, [])
    assert (options, hidden) == ([], True)


def _counting_fits(monkeypatch) -> list[list[str]]:
    """Record the maps of every ``compare_maps`` call of the background fit."""
    calls: list[list[str]] = []
    real = fit_module.compare_maps

    def counting(pred, maps, **kwargs):
        calls.append(list(maps))
        return real(pred, maps=maps, **kwargs)

    monkeypatch.setattr(fit_module, "compare_maps", counting)
    return calls


def test_matrix_and_dirichlet_fit_once_on_probabilities(ctx, sid, monkeypatch):
    rf = _demo(ctx, "breast cancer · random forest")  # probabilities, no logits
    calls = _counting_fits(monkeypatch)
    maps = ["matrix", "dirichlet"]
    state = run_fits(ctx, sid, [rf.handle], maps, "split", 5, 0.4, lambda p: None)
    assert state["error"] is None
    assert state["fitted"] == [f"{rf.handle}:{m}" for m in ("uncalibrated", *maps)]
    assert calls == [[], ["matrix"]]  # the uncalibrated test rows, then one fit
    raw = RawSettings(handles=[rf.handle], maps=maps, heldout="split", fraction=0.4)
    rows = _rows(render(ctx, sid, raw))
    matrix, dirichlet = rows[(rf.name, "matrix")], rows[(rf.name, "dirichlet")]
    for field in ("ece", "brier_score", "log_loss", "n"):
        assert dirichlet[field] == matrix[field]
    assert matrix["status"] == "ok" and dirichlet["status"] == "ok (same fit as matrix)"
    assert dirichlet["fit_seconds"] is None and matrix["fit_seconds"] > 0
    # The fitted-maps export holds a Dirichlet map that predicts as the matrix map does.
    doc = json.loads(small_export(ctx, sid, ids.EXPORT_PARAMS_JSON, raw)["content"])
    fitted = doc["models"][rf.name]
    assert [p["map"] for p in fitted["dirichlet"]] == ["dirichlet"]
    probs = ctx.store.predictions(rf.handle).probs
    by_map = {m: CalibrationMap.from_dict(fitted[m][0]) for m in maps}
    assert type(by_map["dirichlet"]).__name__ == "DirichletCalibration"
    assert np.array_equal(
        by_map["dirichlet"].predict_proba(probs), by_map["matrix"].predict_proba(probs)
    )


def test_matrix_and_dirichlet_both_fit_on_logits(ctx, sid, monkeypatch):
    lr = _demo(ctx, "breast cancer · logistic regression")  # has logits: two models
    calls = _counting_fits(monkeypatch)
    maps = ["matrix", "dirichlet"]
    state = run_fits(ctx, sid, [lr.handle], maps, "split", 5, 0.4, lambda p: None)
    assert state["error"] is None
    assert calls == [[], ["matrix"], ["dirichlet"]]
    raw = RawSettings(handles=[lr.handle], maps=maps, heldout="split", fraction=0.4)
    rows = _rows(render(ctx, sid, raw))
    assert rows[(lr.name, "dirichlet")]["status"] == rows[(lr.name, "matrix")]["status"] == "ok"


def test_score_parts_columns_follow_the_box_and_exports_always_carry_them(ctx, sid):
    from calibration_core import PART_FIELDS, score_parts

    nb = _demo(ctx, "digits · naive Bayes")
    pred = ctx.store.predictions(nb.handle)
    raw = RawSettings(handles=[nb.handle], maps=[], scheme="frequency", n_bins=12)
    out = render(ctx, sid, raw)
    assert not set(PART_FIELDS) & {c["field"] for c in out[2]}
    assert not set(PART_FIELDS) & set(_rows(out)[(nb.name, "uncalibrated")])
    shown = RawSettings(**{**raw.__dict__, "score_parts": ["parts"]})
    out = render(ctx, sid, shown)
    fields = [c["field"] for c in out[2]]
    assert fields[fields.index("brier_score") + 1 : fields.index("brier_score") + 3] == list(
        PART_FIELDS[:2]
    )
    assert fields[fields.index("log_loss") + 1 : fields.index("log_loss") + 3] == list(
        PART_FIELDS[2:]
    )
    tips = {c["field"]: c.get("headerTooltip", "") for c in out[2]}
    assert all("12 equal-frequency bins" in tips[f] for f in PART_FIELDS)
    assert (
        "= calibration (cal.) + refinement (ref.) + a binning residual" in out[3]
    )  # the caption's one line
    want = score_parts(pred.probs, pred.labels, n_bins=12, scheme="frequency")
    row = _rows(out)[(nb.name, "uncalibrated")]
    assert {f: row[f] for f in PART_FIELDS} == want
    # Exports carry them with the box unticked.
    doc = json.loads(small_export(ctx, sid, ids.EXPORT_METRICS_JSON, raw)["content"])
    assert {f: doc["rows"][0][f] for f in PART_FIELDS} == want
    report = small_export(ctx, sid, ids.EXPORT_REPORT_HTML, raw)["content"]
    assert (
        "<th>brier_calibration</th>" in report
        and "calibration (cal.) + refinement (ref.)" in report
    )
