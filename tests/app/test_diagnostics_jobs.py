"""Diagnostics jobs and panels: the resampling test, bootstrap intervals and the decision view."""

from __future__ import annotations

import numpy as np
import pytest

from app.callbacks.diagnostics import decision_panel
from app.callbacks.diagnostics.jobs import (
    bootstrap_panel,
    resampling_panel,
    run_bootstrap_job,
    run_resampling_job,
)
from app.callbacks.view import render
from app.diagnostics.cards import decision_view, shifted_threshold
from app.diagnostics.resampling import SEED, bootstrap_rows, calibration_tests
from app.diagnostics.tables import bootstrap_table, format_p, resampling_table
from app.diagnostics.target import diag_target, remembered
from app.figures.diagnostics import cost_figure, null_figure
from app.services.fit import run_fits
from app.session import new_session_id
from app.settings import ALL_CLASSES, RawSettings
from calibration_core import CalibrationInputError, bootstrap_ci
from calibration_core.measures.significance import calibration_test

from .diagnostics_helpers import R, demo, diag_context, progress, view_kwargs


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    context = diag_context(tmp_path_factory.mktemp("diag"))
    yield context
    context.store.close()


@pytest.fixture(scope="module")
def sid():
    return new_session_id()


# ------------------------------------------------------------ resampling test
def test_resampling_test_runs_on_demand_and_equals_the_core(ctx, sid):
    info = demo(ctx, "digits · naive Bayes")
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


def test_resampling_notes_say_what_each_measure_detects_and_its_sides(ctx, sid):
    info = demo(ctx, "digits · naive Bayes")
    raw = RawSettings(None, [])
    target = diag_target(ctx.store, sid, info.handle, raw)
    run_resampling_job(ctx, sid, info.handle, raw, "log_loss", R, lambda v: None)
    (row,) = calibration_tests(ctx.store, target, "log_loss", R)
    assert row.result.sides == "two-sided" and row.result.null_mean is not None  # stored too
    notes = resampling_table([row], "log_loss", R).notes
    assert any("two-sided" in n and "under-confidence" in n for n in notes)
    assert any(n.startswith("What log-loss can detect:") for n in notes)
    ece_notes = resampling_table([], "confidence_ece", R).notes
    assert any("over- and under-confidence alike" in n for n in ece_notes)
    assert not any("two-sided" in n for n in ece_notes)


def test_resampling_test_rejects_a_binary_measure_on_ten_classes(ctx, sid):
    info = demo(ctx, "digits · MLP")
    raw = RawSettings(None, [])
    state = run_resampling_job(ctx, sid, info.handle, raw, "binary_ece", R, progress)
    assert "needs 2 classes" in state["error"]
    state = run_resampling_job(ctx, sid, info.handle, raw, "bogus", R, progress)
    assert "test measure must be one of" in state["error"]
    state = run_resampling_job(ctx, sid, info.handle, raw, "log_loss", 7, progress)
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
    from app.diagnostics.resampling import ResamplingRow

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
    info = demo(ctx, name)
    raw = RawSettings(None, [], notion=notion, class_value=class_value, n_bins=10)
    out = render(ctx, sid, RawSettings([info.handle], [], **view_kwargs(raw)))
    table_row = out[1][0]
    target = diag_target(ctx.store, sid, info.handle, raw)
    (row,) = bootstrap_rows(ctx.store, target, 0.9, R)
    assert not row.complete
    (row,) = bootstrap_rows(ctx.store, target, 0.9, R, compute=True)
    assert row.complete
    for field, item in row.intervals.items():
        assert item["estimate"] == pytest.approx(table_row[field], abs=1e-12), field
        # The core's defaults: per-bin bounds for the one-column MCE (not the classwise MCE
        # of "all classes"), hybrid for every other column.
        max_of_bins = field == "mce" and class_value != ALL_CLASSES
        assert item["interval"] == ("max-of-bins" if max_of_bins else "hybrid"), field
        assert 0.0 <= item["lower"] <= item["estimate"] <= item["upper"]
    # Independently: the row-mean columns with the core's default interval.
    pred = ctx.store.predictions(info.handle)
    core = bootstrap_ci("log_loss", pred.probs, pred.labels, level=0.9, n_resamples=R, seed=SEED)
    assert row.intervals["log_loss"]["lower"] == pytest.approx(core.lower)
    assert row.intervals["log_loss"]["upper"] == pytest.approx(core.upper)


def test_bootstrap_panel_and_job(ctx, sid):
    # One control: the panel says what the button does; pressing it computes and shows.
    info = demo(ctx, "breast cancer · naive Bayes")
    raw = RawSettings(None, [])
    (note,) = bootstrap_panel(ctx, sid, info.handle, raw, 0.95, R)
    assert "Press “Compute intervals for every metric”" in note.children
    target = diag_target(ctx.store, sid, info.handle, raw)
    assert not bootstrap_rows(ctx.store, target, 0.95, R)[0].complete
    assert run_bootstrap_job(ctx, sid, info.handle, raw, 0.95, R, progress)["error"] is None
    (row,) = bootstrap_rows(ctx.store, target, 0.95, R)
    assert row.complete
    shown = bootstrap_panel(ctx, sid, info.handle, raw, 0.95, R)
    assert len(shown) == 1 and "Press" not in str(shown)  # the table, no "press" note
    pred = ctx.store.predictions(info.handle)
    ece = bootstrap_ci("confidence_ece", pred.probs, pred.labels, n_resamples=R, seed=SEED)
    assert row.intervals["ece"]["upper"] == pytest.approx(ece.upper)
    assert row.intervals["ece"]["corrected"] == pytest.approx(ece.corrected)
    assert ece.lower <= ece.estimate <= ece.upper  # the interval holds its estimate
    table = bootstrap_table([row], {}, 0.95, R)
    assert table.rows[0][1] == f"{ece.estimate:.4f}\n[{ece.lower:.4f},\u00a0{ece.upper:.4f}]"
    assert any(n.startswith("How to read a cell") for n in table.notes)
    assert any("never below 0" in n for n in table.notes)


# ------------------------------------------------------------------ decision
def test_decision_view_costs_and_shifted_threshold(ctx, sid):
    info = demo(ctx, "breast cancer · random forest")
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
            diag_target(ctx.store, sid, demo(ctx, "digits · MLP").handle, RawSettings(None, [])),
            1.0,
            1.0,
        )
    note, _, style = decision_panel(ctx, sid, info.handle, RawSettings(None, []), 0, 0, None, None)
    assert style == {"display": "none"} and "both 0" in note.children
    note, _, _ = decision_panel(ctx, sid, info.handle, RawSettings(None, []), 1, 1, None, 1.5)
    assert "strictly between 0 and 1" in note.children


def test_decision_after_fitted_maps(ctx, sid):
    info = demo(ctx, "breast cancer · naive Bayes")
    raw = RawSettings([info.handle], ["platt", "isotonic"], heldout="folds", folds=3)
    run_fits(ctx, sid, raw.handles, raw.maps, "folds", 3, 0.5, progress)
    target = diag_target(ctx.store, sid, info.handle, raw)
    view = decision_view(target, 2.0, 1.0)
    assert view.comparison.names == ("uncalibrated", "isotonic", "platt")
    for i, v in enumerate(target.variants):
        s, y = v.pred.probs[:, 1], v.pred.labels
        positive = s >= 2 / 3
        expected = (2 * np.sum(positive & (y == 0)) + np.sum(~positive & (y == 1))) / y.size
        assert view.comparison.expected_cost[i] == pytest.approx(expected)
