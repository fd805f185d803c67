"""Diagnostics section: numbers equal to the core's, figures, callbacks, report, soft labels."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from app import ids
from app.callbacks.diagnostics import (
    bootstrap_panel,
    decision_panel,
    human_panel,
    model_picker,
    overview,
    resampling_panel,
    run_bootstrap_job,
    run_resampling_job,
    toggle_state,
)
from app.callbacks.exports import small_export
from app.callbacks.fit import run_fits
from app.callbacks.view import render
from app.config import AppConfig
from app.context import AppContext
from app.diagnostics import (
    BOOT_INTERVAL,
    SEED,
    bootstrap_rows,
    calibration_tests,
    decision_view,
    diag_target,
    estimator_rows,
    hosmer_lemeshow_rows,
    human_rows,
    remembered,
    sensitivity_curves,
    shifted_threshold,
)
from app.diagnostics_report import diagnostics_html
from app.diagnostics_tables import bootstrap_table, hosmer_lemeshow_table
from app.factory import create_app
from app.figures_diagnostics import cost_figure, format_p, null_figure, sensitivity_figure
from app.session import COOKIE_NAME, SessionManager, new_session_id
from app.settings import ALL_CLASSES, RawSettings
from app.soft_labels import get_soft_labels
from app.store import DataStore
from app.upload import UPLOAD_PATH
from calibration_core import (
    CalibrationInputError,
    Predictions,
    adaptive_classwise_ece,
    adaptive_ece,
    binary_ece,
    bootstrap_ci,
    classwise_ece,
    confidence_ece,
    debiased_ece,
    plugin_calibration_error,
)
from calibration_core.goodness_of_fit import SmallSampleWarning, hosmer_lemeshow
from calibration_core.significance import calibration_test

SECRET = "test-secret-key-0123456789abcdef"
R = 200  # resamples (the smallest choice) keep the file fast


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    root = tmp_path_factory.mktemp("diag")
    config = AppConfig(cache_dir=root, secret_key=SECRET, session_ttl_seconds=3600)
    store = DataStore(root / "store", ttl_seconds=3600)
    context = AppContext(config=config, store=store, sessions=SessionManager(SECRET, 3600))
    yield context
    store.close()


@pytest.fixture(scope="module")
def sid():
    return new_session_id()


def _demo(ctx, name):
    return next(m for m in ctx.store.demo_models() if m.name == name)


def _progress(_value):
    pass


def _soft_csv(n=500, seed=0, bad=False) -> bytes:
    """A binary problem with 5 annotators per row (h_ columns) and an overconfident model."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 2, size=n)
    y = rng.random(n) < truth
    p = 1 / (1 + np.exp(-1.8 * np.log(truth / (1 - truth))))
    votes = rng.binomial(5, truth)
    frame = pd.DataFrame(
        {
            "p_no": 1 - p,
            "p_yes": p,
            "label": np.where(y, "yes", "no"),
            "h_yes": votes,
            "h_no": 5 - votes,
        }
    )
    if bad:
        frame.loc[3, "h_no"] = -1
    return frame.to_csv(index=False).encode()


# --------------------------------------------------------------- estimators
@pytest.mark.parametrize(
    ("notion", "class_value", "scheme", "n_bins"),
    [
        ("confidence", None, "width", 15),
        ("confidence", None, "frequency", 7),
        ("class", "3", "width", 20),
        ("class", ALL_CLASSES, "width", 10),
    ],
)
def test_estimators_equal_the_core_functions(ctx, sid, notion, class_value, scheme, n_bins):
    info = _demo(ctx, "digits · random forest")
    raw = RawSettings(
        None, [], notion=notion, class_value=class_value, scheme=scheme, n_bins=n_bins
    )
    target = diag_target(ctx.store, sid, info.handle, raw)
    (row,) = estimator_rows(ctx.store, target)
    pred = ctx.store.predictions(info.handle)
    p, y = pred.probs, pred.labels
    kw = (
        {"notion": "confidence"}
        if notion == "confidence"
        else {"notion": "classwise"}
        if class_value == ALL_CLASSES
        else {"notion": "class", "class_index": 3}
    )
    if notion == "confidence":
        plugin = confidence_ece(p, y, n_bins=n_bins, scheme=scheme)
    elif class_value == ALL_CLASSES:
        plugin = classwise_ece(p, y, n_bins=n_bins, scheme=scheme)
    else:
        plugin = binary_ece(p[:, 3], y == 3, n_bins=n_bins, scheme=scheme)
    assert row.plugin_ece == pytest.approx(plugin, abs=1e-12)
    assert row.adaptive_ece == pytest.approx(adaptive_ece(p, y, n_bins=n_bins, **kw), abs=1e-12)
    assert row.plugin_l2 == pytest.approx(
        plugin_calibration_error(p, y, p=2, n_bins=n_bins, **kw), abs=1e-12
    )
    assert row.debiased_l2 == pytest.approx(debiased_ece(p, y, n_bins=n_bins, **kw), abs=1e-12)
    assert row.ace == pytest.approx(adaptive_classwise_ece(p, y, n_bins=n_bins), abs=1e-12)
    # The plug-in column is the metrics table's ECE for the same settings.
    table = render(ctx, sid, RawSettings([info.handle], [], **_view_kwargs(raw)))
    assert table[1][0]["ece"] == pytest.approx(row.plugin_ece, abs=1e-12)


def _view_kwargs(raw: RawSettings) -> dict:
    return {
        "notion": raw.notion,
        "class_value": raw.class_value,
        "scheme": raw.scheme,
        "n_bins": raw.n_bins,
    }


def test_sensitivity_curves_and_figure(ctx, sid):
    info = _demo(ctx, "breast cancer · logistic regression")
    target = diag_target(ctx.store, sid, info.handle, RawSettings(None, [], notion="binary"))
    ((name, sens),) = sensitivity_curves(ctx.store, target)
    pred = ctx.store.predictions(info.handle)
    assert name == "uncalibrated" and list(sens.n_bins) == list(range(2, 101))
    for m in (2, 15, 64, 100):
        for scheme in ("width", "frequency"):
            expected = binary_ece(pred.probs[:, 1], pred.labels, n_bins=m, scheme=scheme)
            assert sens.by_scheme(scheme)[m - 2] == pytest.approx(expected, abs=1e-12)
    fig = sensitivity_figure([(name, sens)], 15, "binary", "<b>model</b>")
    assert len(fig["data"]) == 2
    assert [t["line"]["dash"] for t in fig["data"]] == ["solid", "dot"]
    np.testing.assert_array_equal(fig["data"][1]["y"], sens.frequency)
    assert fig["layout"]["shapes"][0]["x0"] == 15
    assert "<b>" not in fig["layout"]["title"]["text"]  # user text is escaped
    assert "&lt;b&gt;" in fig["layout"]["title"]["text"]


# ------------------------------------------------------------ Hosmer-Lemeshow
def test_hosmer_lemeshow_rows_use_the_holdout_dof(ctx, sid):
    info = _demo(ctx, "digits · logistic regression")
    target = diag_target(ctx.store, sid, info.handle, RawSettings(None, []))
    (row,) = hosmer_lemeshow_rows(ctx.store, target, 8)
    pred = ctx.store.predictions(info.handle)
    core = hosmer_lemeshow(pred.probs, pred.labels, n_groups=8, holdout=True)
    assert row.statistic == pytest.approx(core.statistic)
    assert row.p_value == pytest.approx(core.p_value)
    assert row.dof == core.n_groups * (10 - 1)  # G (K - 1), the held-out rule
    assert not row.small_sample
    table = hosmer_lemeshow_table([row], 10, 8)
    assert table.rows[0][2] == str(row.dof) and table.warnings == []
    # Naive Bayes puts most rows at P(class 0) = 0 or 1: tied scores leave fewer groups.
    nb = _demo(ctx, "digits · naive Bayes")
    (tied,) = hosmer_lemeshow_rows(
        ctx.store, diag_target(ctx.store, sid, nb.handle, RawSettings(None, [])), 10
    )
    assert tied.n_groups < 10 and tied.dof == tied.n_groups * 9
    table = hosmer_lemeshow_table([tied], 10, 10)
    assert any("fewer than 10 groups for uncalibrated" in w for w in table.warnings)
    assert any("G(K − 1)" in n for n in table.notes)


def test_small_sample_warning_is_shown(ctx, sid):
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(2), size=300)
    y = (rng.random(300) < p[:, 1]).astype(int)
    (info,) = ctx.store.add_models(sid, [Predictions.from_probs(p, y, name="small")], "small.csv")
    target = diag_target(ctx.store, sid, info.handle, RawSettings(None, []))
    (row,) = hosmer_lemeshow_rows(ctx.store, target)
    assert row.small_sample and row.dof == 10  # binary, 10 groups, held-out: G
    with pytest.warns(SmallSampleWarning):
        core = hosmer_lemeshow(p, y, holdout=True)
    assert row.statistic == pytest.approx(core.statistic)
    table = hosmer_lemeshow_table([row], 2)
    assert any("Fewer than 400 rows" in w for w in table.warnings)


# ------------------------------------------------------------ resampling test
def test_resampling_test_runs_on_demand_and_equals_the_core(ctx, sid):
    info = _demo(ctx, "digits · naive Bayes")
    raw = RawSettings(None, [], scheme="frequency", n_bins=12)
    target = diag_target(ctx.store, sid, info.handle, raw)
    # Before a run: a message, nothing computed.
    (row,) = calibration_tests(ctx.store, target, "classwise_ece", R)
    assert row.result is None and "Run test" in row.message
    _children, _, style = resampling_panel(ctx, sid, info.handle, raw, "classwise_ece", R)
    assert style == {"display": "none"}
    calls = []
    state = run_resampling_job(
        ctx, sid, info.handle, raw, "classwise_ece", R, lambda v: calls.append(v)
    )
    assert state["error"] is None and calls  # progress was reported
    (row,) = calibration_tests(ctx.store, target, "classwise_ece", R)
    pred = ctx.store.predictions(info.handle)
    core = calibration_test(
        pred.probs,
        pred.labels,
        measure="classwise_ece",
        n_resamples=R,
        seed=SEED,
        n_bins=12,
        scheme="frequency",
    )
    assert row.result.observed == pytest.approx(core.observed)
    np.testing.assert_allclose(row.result.null, core.null)
    assert row.result.p_value == core.p_value
    # The panel now draws the null distribution with the observed value.
    _, fig, style = resampling_panel(ctx, sid, info.handle, raw, "classwise_ece", R)
    assert style == {}
    bars, line = fig["data"][:2]
    assert int(np.sum(bars["y"])) == R
    assert line["x"] == [core.observed, core.observed]
    assert f"p = {format_p(core.p_value)}" in fig["layout"]["annotations"][0]["text"]
    # The session's choice is remembered for the report.
    assert remembered(ctx.store, sid, "test") == {"measure": "classwise_ece", "n_resamples": R}


def test_resampling_test_rejects_a_binary_measure_on_ten_classes(ctx, sid):
    info = _demo(ctx, "digits · MLP")
    raw = RawSettings(None, [])
    state = run_resampling_job(ctx, sid, info.handle, raw, "binary_ece", R, _progress)
    assert "needs 2 classes" in state["error"]
    state = run_resampling_job(ctx, sid, info.handle, raw, "bogus", R, _progress)
    assert "test measure must be one of" in state["error"]
    state = run_resampling_job(ctx, sid, info.handle, raw, "log_loss", 7, _progress)
    assert "number of resamples must be one of" in state["error"]


def test_null_figure_and_p_formatting():
    assert format_p(0.04321) == "0.0432"
    assert format_p(2.5e-7) == "2.5e-07"
    assert format_p(0.0) == "< 1e-300"
    assert format_p(float("nan")) == "n/a"
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=400)
    y = rng.integers(0, 3, size=400)
    res = calibration_test(p, y, measure="brier_score", n_resamples=300, seed=1)
    from app.diagnostics import ResamplingRow

    fig = null_figure(
        [ResamplingRow("uncalibrated", res), ResamplingRow("iso", res)], "brier_score", "m"
    )
    assert len(fig["data"]) == 4 and "xaxis2" in fig["layout"]
    lo, hi = fig["layout"]["xaxis"]["range"]
    assert lo <= min(res.null.min(), res.observed) and hi >= max(res.null.max(), res.observed)


# ----------------------------------------------------------------- bootstrap
@pytest.mark.parametrize(
    ("name", "notion", "class_value"),
    [
        ("digits · random forest", "confidence", None),
        ("digits · random forest", "class", "7"),
        ("digits · random forest", "class", ALL_CLASSES),
        ("breast cancer · MLP", "binary", None),
    ],
)
def test_bootstrap_estimates_are_the_table_numbers(ctx, sid, name, notion, class_value):
    info = _demo(ctx, name)
    raw = RawSettings(None, [], notion=notion, class_value=class_value, n_bins=10)
    out = render(ctx, sid, RawSettings([info.handle], [], **_view_kwargs(raw)))
    table_row = out[1][0]
    target = diag_target(ctx.store, sid, info.handle, raw)
    (row,) = bootstrap_rows(ctx.store, target, 0.9, R)
    assert not row.complete
    (row,) = bootstrap_rows(ctx.store, target, 0.9, R, compute=True)
    assert row.complete
    for field, item in row.intervals.items():
        assert item["estimate"] == pytest.approx(table_row[field], abs=1e-12), field
        assert item["interval"] == BOOT_INTERVAL[field]
        assert item["lower"] <= item["upper"]
    # Independently: the row-mean columns with the core's percentile interval.
    pred = ctx.store.predictions(info.handle)
    core = bootstrap_ci("log_loss", pred.probs, pred.labels, level=0.9, n_resamples=R, seed=SEED)
    assert row.intervals["log_loss"]["lower"] == pytest.approx(core.lower)
    assert row.intervals["log_loss"]["upper"] == pytest.approx(core.upper)


def test_bootstrap_panel_and_job(ctx, sid):
    info = _demo(ctx, "breast cancer · naive Bayes")
    raw = RawSettings(None, [])
    note = bootstrap_panel(ctx, sid, info.handle, raw, [], 0.95, R)
    assert "Tick" in note.children
    assert run_bootstrap_job(ctx, sid, info.handle, raw, [], 0.95, R, _progress)["error"] is None
    target = diag_target(ctx.store, sid, info.handle, raw)
    assert not bootstrap_rows(ctx.store, target, 0.95, R)[0].complete  # toggle off: nothing ran
    run_bootstrap_job(ctx, sid, info.handle, raw, ["on"], 0.95, R, _progress)
    (row,) = bootstrap_rows(ctx.store, target, 0.95, R)
    assert row.complete
    pred = ctx.store.predictions(info.handle)
    ece = bootstrap_ci(
        "confidence_ece", pred.probs, pred.labels, n_resamples=R, seed=SEED, interval="basic"
    )
    assert row.intervals["ece"]["upper"] == pytest.approx(ece.upper)
    table = bootstrap_table([row], {}, 0.95, R)
    lower = max(ece.lower, 0.0)
    assert table.rows[0][1] == f"{ece.estimate:.4f}\n[{lower:.4f},\u00a0{ece.upper:.4f}]"
    assert any("basic bootstrap interval" in n for n in table.notes)
    assert any("percentile interval" in n for n in table.notes)


# ------------------------------------------------------------------ decision
def test_decision_view_costs_and_shifted_threshold(ctx, sid):
    info = _demo(ctx, "breast cancer · random forest")
    target = diag_target(ctx.store, sid, info.handle, RawSettings(None, []))
    pred = ctx.store.predictions(info.handle)
    s, y = pred.probs[:, 1], pred.labels
    view = decision_view(target, 1.0, 3.0)
    c = 1.0 / (1.0 + 3.0)
    assert view.cost_threshold == pytest.approx(c) and view.comparison.threshold == pytest.approx(c)
    fp = np.sum((s >= c) & (y == 0))
    fn = np.sum((s < c) & (y == 1))
    assert view.comparison.expected_cost[0] == pytest.approx((fp + 3 * fn) / y.size)
    # Best threshold on these rows: brute force over every distinct score.
    costs = [(np.sum((s >= t) & (y == 0)) + 3 * np.sum((s < t) & (y == 1))) / y.size for t in s]
    assert view.comparison.best_cost[0] == pytest.approx(min(min(costs), np.sum(y) * 3 / y.size))
    # A changed prior moves the threshold: t = c r / (c r + (1 - c) r').
    pi = float(np.mean(y == 1))
    shifted = decision_view(target, 1.0, 3.0, None, 0.1)
    r, r2 = pi / (1 - pi), 0.1 / 0.9
    assert shifted_threshold(shifted) == pytest.approx(c * r / (c * r + (1 - c) * r2))
    assert shifted.comparison.threshold == pytest.approx(shifted_threshold(shifted))
    fig = cost_figure(shifted, info.name)
    assert len(fig["layout"]["shapes"]) == 2  # the used and the unshifted threshold
    _children, _, style = decision_panel(
        ctx, sid, info.handle, RawSettings(None, []), 1, 3, None, 0.1
    )
    assert style == {}
    with pytest.raises(CalibrationInputError, match="binary problems"):
        decision_view(
            diag_target(ctx.store, sid, _demo(ctx, "digits · MLP").handle, RawSettings(None, [])),
            1.0,
            1.0,
        )
    note, _, style = decision_panel(ctx, sid, info.handle, RawSettings(None, []), 0, 0, None, None)
    assert style == {"display": "none"} and "both 0" in note.children
    note, _, _ = decision_panel(ctx, sid, info.handle, RawSettings(None, []), 1, 1, None, 1.5)
    assert "strictly between 0 and 1" in note.children


def test_decision_after_fitted_maps(ctx, sid):
    info = _demo(ctx, "breast cancer · naive Bayes")
    raw = RawSettings([info.handle], ["platt", "isotonic"], heldout="folds", folds=3)
    run_fits(ctx, sid, raw.handles, raw.maps, "folds", 3, 0.5, _progress)
    target = diag_target(ctx.store, sid, info.handle, raw)
    view = decision_view(target, 2.0, 1.0)
    assert view.comparison.names == ("uncalibrated", "isotonic", "platt")
    for i, v in enumerate(target.variants):
        s, y = v.pred.probs[:, 1], v.pred.labels
        positive = s >= 2 / 3
        expected = (2 * np.sum(positive & (y == 0)) + np.sum(~positive & (y == 1))) / y.size
        assert view.comparison.expected_cost[i] == pytest.approx(expected)


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
    client.get("/healthz")
    body = _upload(client, "votes.csv", _soft_csv())
    assert body["errors"] == []
    (model,) = body["models"]
    ctx = dash_app.server.extensions["calibration_dashboard"]
    sid = _client_session(dash_app, client)
    soft = get_soft_labels(ctx.store, model["handle"])
    frame = pd.read_csv(io.BytesIO(_soft_csv()))
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
    run_fits(ctx, sid, raw.handles, [], "split", 5, 0.3, _progress)
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
    client.get("/healthz")
    body = _upload(client, "bad.csv", _soft_csv(bad=True))
    assert body["models"] == []
    assert "negative" in body["errors"][0]["error"] and "data row 4" in body["errors"][0]["error"]


def test_report_has_every_diagnostic_escaped(dash_app):
    client = dash_app.server.test_client()
    client.get("/healthz")
    content = _soft_csv().replace(b"p_no", b"p_no").replace(b"label", b"label")
    frame = pd.read_csv(io.BytesIO(content))
    frame.insert(0, "model", "<script>alert(1)</script>")
    body = _upload(client, "x.csv", frame.to_csv(index=False).encode())
    (model,) = body["models"]
    ctx = dash_app.server.extensions["calibration_dashboard"]
    sid = _client_session(dash_app, client)
    raw = RawSettings([model["handle"]], [])
    run_resampling_job(ctx, sid, model["handle"], raw, "log_loss", R, _progress)
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
    options, value = model_picker(models, ["demo-1", "demo-0"], None)
    assert [o["value"] for o in options] == ["demo-1", "demo-0"] and value == "demo-1"
    assert model_picker(models, ["demo-1", "demo-0"], "demo-0")[1] == "demo-0"
    assert model_picker(models, [], "demo-0") == ([], None)


def test_overview_states_its_settings_and_reports_problems(ctx, sid):
    info = _demo(ctx, "digits · MLP")
    caption, fig, _table, messages = overview(
        ctx, sid, info.handle, RawSettings(None, [], n_bins=9)
    )
    assert messages == [] and "9 equal-width bins" in caption and "1,797 scored rows" in caption
    assert len(fig["data"]) == 2
    caption, _, _, messages = overview(
        ctx, sid, info.handle, RawSettings(None, [], notion="binary")
    )
    assert caption == "" and "needs 2 classes" in messages[0]
    _, _, _, messages = overview(ctx, sid, None, RawSettings(None, []))
    assert "Pick a model" in messages[0]
    _, _, _, messages = overview(ctx, sid, "up-notmine", RawSettings(None, []))
    assert "no longer available" in messages[0]
    _, _, _, messages = overview(ctx, sid, info.handle, RawSettings(None, [], n_bins=10**9))
    assert "number of bins" in messages[0]
    assert math.isfinite(
        estimator_rows(ctx.store, diag_target(ctx.store, sid, info.handle, RawSettings(None, [])))[
            0
        ].debiased_l2
    )
