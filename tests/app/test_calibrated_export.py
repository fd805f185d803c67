"""The calibrated export: one file per model and map in the input's layout, as ``apply`` writes."""

from __future__ import annotations

import csv
import io
import zipfile

import numpy as np
import pandas as pd
import pytest

from app.callbacks.exports import create_calibrated_export, export_stream
from app.exports import CalibratedFile, member_names
from app.services.fit import run_fits
from app.settings import RawSettings
from calibration_core import Predictions, load_predictions
from calibration_core.deploy import apply_map_to_file, load_deployable


def write_inputs(tmp_path):
    """A binary ``score`` CSV and a 3-class ``logit_`` CSV, each with an id column."""
    rng = np.random.default_rng(3)
    n = 300
    score = rng.uniform(0.02, 0.98, n)
    binary = pd.DataFrame(
        {"id": [f"b{i}" for i in range(n)], "score": score, "label": rng.random(n) < score**2}
    )
    binary["label"] = binary["label"].astype(int)
    z = rng.normal(size=(n, 3)) * 2
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    multi = pd.DataFrame({f"logit_{c}": z[:, j] for j, c in enumerate("abc")})
    multi.insert(0, "id", [f"m{i}" for i in range(n)])
    multi["label"] = np.array(list("abc"))[(p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)]
    paths = {"binary": tmp_path / "binary.csv", "multi": tmp_path / "multi.csv"}
    binary.to_csv(paths["binary"], index=False)
    multi.to_csv(paths["multi"], index=False)
    return paths


def probability_file(pred, tmp_path):
    """The 3-class model's softmax probabilities as a ``p_`` CSV (ids first, as its input)."""
    frame = pd.DataFrame({f"p_{c}": pred.probs[:, j] for j, c in enumerate(pred.class_names)})
    frame.insert(0, "id", [f"m{i}" for i in range(pred.n_samples)])
    frame["label"] = np.asarray(pred.class_names)[pred.labels]
    path = tmp_path / "multi-probs.csv"
    frame.to_csv(path, index=False)
    return path


def upload(ctx, sid, path) -> str:
    (info,) = ctx.store.add_models(sid, load_predictions(path), path.name)
    return info.handle


def read_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode())))


def test_zip_of_input_layouts_equals_apply(ctx, sid, tmp_path):
    paths = write_inputs(tmp_path)
    handles = {kind: upload(ctx, sid, path) for kind, path in paths.items()}
    assert ctx.store.predictions(handles["binary"]).score_column
    assert not ctx.store.predictions(handles["multi"]).score_column
    maps = ["temperature", "platt"]
    state = run_fits(ctx, sid, list(handles.values()), maps, "split", 5, 0.4, lambda p: None)
    assert state["error"] is None
    raw = RawSettings(handles=list(handles.values()), maps=maps, heldout="split", fraction=0.4)
    url = create_calibrated_export(ctx, sid, raw)
    name, mimetype, chunks = export_stream(ctx, sid, url.rsplit("/", 1)[1])
    assert mimetype == "application/zip" and name.endswith(".zip")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(chunks)))
    assert sorted(archive.namelist()) == sorted(
        f"{kind}.{m}.csv" for kind in ("binary", "multi") for m in maps
    )
    heldout = raw.parse()[2]
    for kind, handle in handles.items():
        for m in maps:
            rows = read_csv(archive.read(f"{kind}.{m}.csv"))
            layout = ["score"] if kind == "binary" else ["p_a", "p_b", "p_c"]
            assert rows[0] == ["row", "label", *layout]
            assert len(rows) - 1 == round(0.4 * 300)  # the test rows only
            # `apply` of the same fitted map to the input file gives the same values.
            entry = ctx.store.get_fit(handle, m, heldout, params=True).params[0]
            source = paths[kind]
            if kind == "multi" and entry["params"]["input"] == "probs":  # Platt reads p_
                source = probability_file(ctx.store.predictions(handle), tmp_path)
            out = tmp_path / f"{kind}-{m}-applied.csv"
            apply_map_to_file(load_deployable(entry), source, out)
            applied = pd.read_csv(out)
            assert list(applied.columns)[:-1] == ["id", *layout]  # apply keeps the rest
            index = [int(r[0]) for r in rows[1:]]
            got = np.array([[float(v) for v in r[2:]] for r in rows[1:]])
            np.testing.assert_allclose(got, applied[layout].to_numpy()[index], rtol=0, atol=1e-12)
            labels = pd.read_csv(paths[kind])["label"].astype(str).to_numpy()[index]
            assert [r[1] for r in rows[1:]] == list(labels)


def test_one_file_is_a_plain_csv_and_uncalibrated_is_left_out(ctx, sid, tmp_path):
    paths = write_inputs(tmp_path)
    handle = upload(ctx, sid, paths["binary"])
    run_fits(ctx, sid, [handle], ["platt"], "folds", 2, 0.5, lambda p: None)
    url = create_calibrated_export(ctx, sid, RawSettings(handles=[handle], maps=["platt"], folds=2))
    name, mimetype, chunks = export_stream(ctx, sid, url.rsplit("/", 1)[1])
    assert mimetype == "text/csv" and name.endswith(".csv")
    rows = read_csv(b"".join(chunks))
    assert rows[0] == ["row", "label", "score"] and len(rows) == 301
    assert [int(r[0]) for r in rows[1:]] == list(range(300))


def test_nothing_fitted_is_a_clear_error(ctx, sid):
    demo = ctx.store.demo_models()[0]
    with pytest.raises(Exception, match="pick a model and a map"):
        create_calibrated_export(ctx, sid, RawSettings(handles=[demo.handle], maps=[]))


def test_member_names_are_unique_and_path_free():
    pred = Predictions.from_probs(np.array([[0.5, 0.5]]), [0])
    items = [
        CalibratedFile(model, "platt", pred, None, False)
        for model in ("../../etc/x", "a b", "a_b", "", ".hidden")
    ]
    names = member_names(items)
    assert names == [
        "etc_x.platt.csv",
        "a_b.platt.csv",
        "a_b-2.platt.csv",
        "model.platt.csv",
        "hidden.platt.csv",
    ]
    assert all("/" not in n and not n.startswith(".") for n in names)
