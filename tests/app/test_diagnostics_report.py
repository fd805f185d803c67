"""Diagnostics from uploads and the page: soft labels, the HTML report, toggle and model picker."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from app import ids
from app.callbacks.diagnostics import human_panel, toggle_state
from app.callbacks.diagnostics.jobs import run_resampling_job
from app.callbacks.models import model_pickers
from app.config import AppConfig
from app.diagnostics.cards import human_rows
from app.diagnostics.target import diag_target
from app.factory import create_app
from app.report.diagnostics import diagnostics_html
from app.services.fit import run_fits
from app.services.report import small_export
from app.session import COOKIE_NAME
from app.settings import RawSettings
from app.store.soft_label_store import get_soft_labels
from app.upload import UPLOAD_PATH

from .diagnostics_helpers import SECRET, R, progress, soft_csv


# ------------------------------------------------------- soft labels, report
def _client_session(dash_app, client) -> str:
    ctx = dash_app.server.extensions["calibration_dashboard"]
    return ctx.sessions.verify(client.get_cookie(COOKIE_NAME).value)[0]


@pytest.fixture(scope="module")
def dash_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("diag-app")
    return create_app(AppConfig(cache_dir=root, secret_key=SECRET, session_ttl_seconds=3600))


def _upload(client, name, content):
    data = {"file": [(io.BytesIO(content), name)]}
    return client.post(UPLOAD_PATH, data=data, content_type="multipart/form-data").json


def test_uploaded_soft_labels_give_human_uncertainty(dash_app):
    client = dash_app.server.test_client()
    client.get("/_dash-dependencies")
    body = _upload(client, "votes.csv", soft_csv())
    assert body["errors"] == []
    (model,) = body["models"]
    ctx = dash_app.server.extensions["calibration_dashboard"]
    sid = _client_session(dash_app, client)
    soft = get_soft_labels(ctx.store, model["handle"])
    frame = pd.read_csv(io.BytesIO(soft_csv()))
    expected = frame[["h_no", "h_yes"]].to_numpy() / 5.0  # class order of the predictions
    np.testing.assert_allclose(soft, expected)
    target = diag_target(ctx.store, sid, model["handle"], RawSettings(None, []))
    (row,) = human_rows(ctx.store, target)
    p = frame[["p_no", "p_yes"]].to_numpy()
    tvd = 0.5 * np.abs(p - expected).sum(axis=1)
    assert row.result.distce == pytest.approx(tvd.mean())

    def entropy(q):
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.nansum(np.where(q > 0, q * np.log(q), 0.0), axis=1)

    assert row.result.entce == pytest.approx(np.mean(np.abs(entropy(p) - entropy(expected))))
    panel = human_panel(ctx, sid, model["handle"], RawSettings(None, []))
    assert "EntCE" in str(panel)
    # Split mode: the soft labels follow the scored (test) rows.
    raw = RawSettings([model["handle"]], [], heldout="split", fraction=0.3)
    run_fits(ctx, sid, raw.handles, [], "split", 5, 0.3, progress)
    target = diag_target(ctx.store, sid, model["handle"], raw)
    (row,) = human_rows(ctx.store, target)
    rows = ctx.store.scored_rows(model["handle"], target.heldout)
    tvd = 0.5 * np.abs(p[rows] - expected[rows]).sum(axis=1)
    assert row.result.distce == pytest.approx(tvd.mean())
    # Models without soft labels say how to provide them.
    demo = ctx.store.demo_models()[0]
    note = human_panel(ctx, sid, demo.handle, RawSettings(None, []))
    assert "h_<class>" in note.children
    assert (
        human_rows(ctx.store, diag_target(ctx.store, sid, demo.handle, RawSettings(None, [])))
        is None
    )


def test_bad_soft_labels_reject_the_file(dash_app):
    client = dash_app.server.test_client()
    client.get("/_dash-dependencies")
    body = _upload(client, "bad.csv", soft_csv(bad=True))
    assert body["models"] == []
    assert "negative" in body["errors"][0]["error"] and "data row 4" in body["errors"][0]["error"]


def test_report_has_every_diagnostic_escaped(dash_app):
    client = dash_app.server.test_client()
    client.get("/_dash-dependencies")
    content = soft_csv().replace(b"p_no", b"p_no").replace(b"label", b"label")
    frame = pd.read_csv(io.BytesIO(content))
    frame.insert(0, "model", "<script>alert(1)</script>")
    body = _upload(client, "x.csv", frame.to_csv(index=False).encode())
    (model,) = body["models"]
    ctx = dash_app.server.extensions["calibration_dashboard"]
    sid = _client_session(dash_app, client)
    raw = RawSettings([model["handle"]], [])
    run_resampling_job(ctx, sid, model["handle"], raw, "log_loss", R, progress)
    report = small_export(ctx, sid, ids.EXPORT_REPORT_HTML, raw)["content"]
    for heading in (
        "ECE against the number of bins",
        "Plug-in, adaptive and debiased calibration errors",
        "Hosmer-Lemeshow goodness of fit",
        "Resampling test of calibration",
        "Bootstrap confidence intervals",
        "Decision view",
        "Human-uncertainty calibration",
    ):
        assert f"<h3>{heading}</h3>" in report, heading
    assert "<script>alert(1)</script>" not in report
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report
    assert "observed log-loss" in report  # the stored test result is in the report
    # The fragment alone: nothing for a view without models.
    result = type("R", (), {"models": []})()
    assert diagnostics_html(ctx, sid, result) == ""


# ----------------------------------------------------------------- callbacks
def test_toggle_and_model_picker():
    assert toggle_state(0)[3] is False and toggle_state(1)[3] is True
    assert toggle_state(1)[:3] == ({}, "Hide diagnostics", "true")
    assert toggle_state(2)[0] == {"display": "none"}
    models = [
        {
            "handle": "demo-0",
            "name": "a",
            "n_samples": 5,
            "n_classes": 2,
            "class_names": ["0", "1"],
            "source": "x",
            "has_logits": False,
        },
        {
            "handle": "demo-1",
            "name": "b",
            "n_samples": 5,
            "n_classes": 2,
            "class_names": ["0", "1"],
            "source": "x",
            "has_logits": False,
        },
    ]
    # The Diagnostics section's picker (the last two of the selection callback's pickers).
    options, value = model_pickers(models, ["demo-1", "demo-0"], None, None)[2:]
    assert [o["value"] for o in options] == ["demo-1", "demo-0"] and value == "demo-1"
    assert options[0]["label"] == "b (5 × 2)"
    assert model_pickers(models, ["demo-1", "demo-0"], None, "demo-0")[3] == "demo-0"
    assert model_pickers(models, [], None, "demo-0")[2:] == ([], None)
