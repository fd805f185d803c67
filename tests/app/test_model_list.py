"""The model list: grouped options, name filter, select all/none per file, first upload."""

from __future__ import annotations

import numpy as np

from app import ids
from app.callbacks.models import after_upload, group_action
from app.model_list import GROUP_VALUE_PREFIX, model_options
from app.settings import MAX_SELECTED_MODELS
from app.store.records import DEMO_SOURCE
from calibration_core import Predictions


def _upload(ctx, sid, source, names):
    rng = np.random.default_rng(len(names))
    preds = [
        Predictions.from_probs(rng.dirichlet([1, 1], 30), rng.integers(0, 2, 30), name=n)
        for n in names
    ]
    infos = ctx.store.add_models(sid, preds, source)
    return {"results": [{"file": source, "models": [i.to_json() for i in infos]}]}, infos


def test_options_are_grouped_by_file_with_disabled_headers(ctx, sid):
    _upload(ctx, sid, "a.csv", ["alpha", "beta"])
    options = model_options(ctx.store.session_models(sid))
    headers = [o for o in options if o.get("disabled")]
    assert [o["value"] for o in headers] == [GROUP_VALUE_PREFIX + DEMO_SOURCE, "file:a.csv"]
    values = [o["value"] for o in options]
    assert values.index("file:a.csv") == len(values) - 3  # header, then its two models
    assert all(isinstance(o["label"], str) for o in options if not o.get("disabled"))


def test_search_filters_by_name_or_file(ctx, sid):
    _upload(ctx, sid, "a.csv", ["alpha", "beta"])
    infos = ctx.store.session_models(sid)
    labels = [o["label"] for o in model_options(infos, " ALPHA ") if not o.get("disabled")]
    assert labels == ["alpha (30 × 2)"]
    by_file = [o for o in model_options(infos, "a.csv") if not o.get("disabled")]
    assert len(by_file) == 2
    assert model_options(infos, "no such model") == []


def test_first_upload_deselects_the_demo_later_uploads_keep_it(ctx, sid):
    result, (first,) = _upload(ctx, sid, "one.csv", ["one"])
    _, _, selection, *_ = after_upload(ctx.store, sid, result, ["demo-0", "demo-1"])
    assert selection == [first.handle]
    result, (second,) = _upload(ctx, sid, "two.csv", ["two"])
    _, _, selection, *_ = after_upload(ctx.store, sid, result, ["demo-0", first.handle])
    assert selection == ["demo-0", first.handle, second.handle]


def test_select_all_caps_at_the_limit_and_says_so(ctx, sid):
    _, infos = _upload(ctx, sid, "many.csv", [f"m{i}" for i in range(10)])
    handles = [i.handle for i in infos]
    trigger = {"type": ids.MODEL_GROUP_ALL, "group": "many.csv"}
    selection, note = group_action(ctx.store, sid, trigger, ["demo-0"])
    assert selection == handles[:MAX_SELECTED_MODELS]
    assert f"At most {MAX_SELECTED_MODELS}" in note and "many.csv" in note
    selection, note = group_action(ctx.store, sid, {**trigger, "group": DEMO_SOURCE}, ["up-x"])
    assert note == "" and selection == [i.handle for i in ctx.store.demo_models()]
    none = {"type": ids.MODEL_GROUP_NONE, "group": "many.csv"}
    selection, note = group_action(ctx.store, sid, none, ["demo-0", *handles[:3]])
    assert (selection, note) == (["demo-0"], "")


def test_a_large_upload_selects_its_first_models_and_says_so(ctx, sid):
    result, infos = _upload(ctx, sid, "big.csv", [f"n{i}" for i in range(12)])
    _, _, selection, message, *_ = after_upload(ctx.store, sid, result, ["demo-0"])
    assert selection == [i.handle for i in infos[:MAX_SELECTED_MODELS]]
    (notice,) = [m for m in message if "notice" in m.className]
    assert f"selected {MAX_SELECTED_MODELS} of the 12 new models" in notice.children
