"""The page's "Deployable map" download (app.deployable and its export callback)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.callbacks.exports import deployable_export
from app.deployable import BEST_MAP, deploy_model_picker, map_picker, resolve_choice
from app.services.fit import run_fits
from app.services.view import compute_view
from app.settings import RawSettings
from calibration_core import CalibrationInputError, Predictions, deployable_map, load_map

from .test_verdict import overconfident


def calibrated(n=600, seed=1, name="calibrated") -> Predictions:
    """Predictions that are already calibrated: no map should beat them clearly."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 3))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    return Predictions.from_probs(p, y, name=name)


def fitted(ctx, sid, preds, maps):
    infos = ctx.store.add_models(sid, preds, source="m.csv")
    handles = [info.handle for info in infos]
    run_fits(ctx, sid, handles, maps, "folds", 5, 0.5, lambda _: None)
    return infos, RawSettings(handles, maps, "folds", 5)


def test_download_loads_and_equals_a_refit_on_all_rows(ctx, sid):
    pred = overconfident(name="net")
    _, raw = fitted(ctx, sid, [pred], ["temperature", "platt"])
    data, message = deployable_export(ctx, sid, raw, None, BEST_MAP)
    assert data["filename"].startswith("calibration-map-") and data["filename"].endswith(".json")
    doc = json.loads(data["content"])
    assert doc["kind"] == "deployable-map" and doc["n_rows"] == pred.n_samples
    assert doc["class_names"] == list(pred.class_names) and doc["model"] == "net"
    winner = view_recommended(ctx, sid, raw)
    assert doc["map"]["map"] == winner and message.startswith(f"Deployable map: {winner} of net")
    expected = deployable_map(pred, winner).map.predict_proba(pred.probs)
    assert np.abs(load_map(doc).predict_proba(pred.probs) - expected).max() <= 1e-12
    # The held-out estimate uses the page's scheme (5 folds, seed 0, every row scored).
    assert doc["held_out"]["folds"] == 5 and doc["held_out"]["n_scored"] == pred.n_samples


def view_recommended(ctx, sid, raw) -> str:
    """The verdict's recommended map (the deployable default)."""
    from app.verdict import view_verdicts

    (item,) = view_verdicts(ctx.store, compute_view(ctx, sid, raw))
    return item.verdict.recommended


def test_any_selected_map_of_any_shown_model(ctx, sid):
    first, second = overconfident(name="a"), overconfident(seed=3, name="b")
    (_, info), raw = fitted(ctx, sid, [first, second], ["temperature", "histogram"])
    data, message = deployable_export(ctx, sid, raw, info.handle, "histogram")
    doc = json.loads(data["content"])
    assert doc["model"] == "b" and doc["map"]["map"] == "histogram"
    expected = deployable_map(second, "histogram").map.predict_proba(second.probs)
    assert np.abs(load_map(doc).predict_proba(second.probs) - expected).max() <= 1e-12
    assert message == "Deployable map: histogram of b, refitted on all rows."


def test_uncalibrated_recommendation_deploys_the_identity_and_says_so(ctx, sid):
    pred = calibrated()
    (info,), raw = fitted(ctx, sid, [pred], ["histogram"])
    assert view_recommended(ctx, sid, raw) == "uncalibrated"
    data, message = deployable_export(ctx, sid, raw, info.handle, BEST_MAP)
    doc = json.loads(data["content"])
    assert doc["map"]["map"] == "temperature" and doc["map"]["state"]["temperature"] == 1.0
    assert np.abs(load_map(doc).predict_proba(pred.probs) - pred.probs).max() <= 1e-12
    assert message.startswith("Deployable map: uncalibrated of ") and "unchanged" in message
    data, _ = deployable_export(ctx, sid, raw, info.handle, "histogram")
    assert json.loads(data["content"])["map"]["map"] == "histogram"


def test_unfitted_or_unselected_maps_are_refused_clearly(ctx, sid):
    pred = overconfident()
    (info,) = ctx.store.add_models(sid, [pred], source="m.csv")
    raw = RawSettings([info.handle], ["temperature"], "folds", 5)
    result = compute_view(ctx, sid, raw)
    with pytest.raises(CalibrationInputError, match="still being fitted"):
        resolve_choice(ctx.store, result, info.handle, "temperature")
    with pytest.raises(CalibrationInputError, match="not among the selected maps"):
        resolve_choice(ctx.store, result, info.handle, "platt")
    with pytest.raises(CalibrationInputError, match="nothing to deploy"):
        deployable_export(ctx, sid, RawSettings([], ["temperature"]), None, BEST_MAP)


def test_pickers_follow_the_selection(ctx, sid):
    a, b = ctx.store.add_models(sid, [overconfident(name="a"), overconfident(name="b")], "m.csv")
    models, model = deploy_model_picker([a, b], None)
    maps, choice = map_picker(["platt", "temperature"], None)
    assert models == [{"label": "a", "value": a.handle}, {"label": "b", "value": b.handle}]
    assert model == a.handle and choice == BEST_MAP
    assert [o["value"] for o in maps] == [BEST_MAP, "platt", "temperature"]  # display order
    assert deploy_model_picker([a, b], b.handle)[1] == b.handle
    assert map_picker(["platt"], "platt")[1] == "platt"
    assert deploy_model_picker([a], b.handle)[1] == a.handle
    assert map_picker(["temperature"], "platt")[1] == BEST_MAP
    assert deploy_model_picker([], a.handle) == ([], None)
    assert map_picker(["no such map"], "platt") == (
        [{"label": "Verdict's recommendation", "value": BEST_MAP}],
        BEST_MAP,
    )
