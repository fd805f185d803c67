"""Diagnostics estimators: plug-in, adaptive and debiased errors, bin sensitivity,
Hosmer-Lemeshow and the overview, each equal to the core's numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.callbacks.diagnostics import overview
from app.callbacks.view import render
from app.diagnostics.cards import hl_resamples, hosmer_lemeshow_rows
from app.diagnostics.overview import estimator_rows, sensitivity_curves
from app.diagnostics.tables import hosmer_lemeshow_table
from app.diagnostics.target import diag_target
from app.figures.diagnostics import sensitivity_figure
from app.session import new_session_id
from app.settings import ALL_CLASSES, RawSettings
from calibration_core import (
    Predictions,
    adaptive_classwise_ece,
    adaptive_ece,
    binary_ece,
    classwise_ece,
    confidence_ece,
    debiased_ece,
    plugin_calibration_error,
)
from calibration_core.errors import SmallSampleWarning
from calibration_core.measures.goodness_of_fit import hosmer_lemeshow

from .diagnostics_helpers import demo, diag_context, view_kwargs


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    context = diag_context(tmp_path_factory.mktemp("diag"))
    yield context
    context.store.close()


@pytest.fixture(scope="module")
def sid():
    return new_session_id()


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
    info = demo(ctx, "digits · random forest")
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
    table = render(ctx, sid, RawSettings([info.handle], [], **view_kwargs(raw)))
    assert table[1][0]["ece"] == pytest.approx(row.plugin_ece, abs=1e-12)


def test_sensitivity_curves_and_figure(ctx, sid):
    info = demo(ctx, "breast cancer · logistic regression")
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
def test_hosmer_lemeshow_rows_use_the_core_default_bootstrap_p_value(ctx, sid):
    info = demo(ctx, "digits · logistic regression")
    target = diag_target(ctx.store, sid, info.handle, RawSettings(None, []))
    (row,) = hosmer_lemeshow_rows(ctx.store, target, 8)
    pred = ctx.store.predictions(info.handle)
    core = hosmer_lemeshow(pred.probs, pred.labels, n_groups=8)  # the library's defaults
    assert core.method == "bootstrap"
    assert row.statistic == pytest.approx(core.statistic)
    assert row.p_value == pytest.approx(core.p_value)
    assert row.dof == core.n_groups * (10 - 1)  # G (K - 1), the held-out rule
    assert not row.small_sample
    table = hosmer_lemeshow_table([row], 10, 8)
    assert table.rows[0][2] == str(row.dof) and table.warnings == []
    # Naive Bayes puts most rows at P(class 0) = 0 or 1: tied scores leave fewer groups.
    nb = demo(ctx, "digits · naive Bayes")
    (tied,) = hosmer_lemeshow_rows(
        ctx.store, diag_target(ctx.store, sid, nb.handle, RawSettings(None, [])), 10
    )
    assert tied.n_groups < 10 and tied.dof == tied.n_groups * 9
    table = hosmer_lemeshow_table([tied], 10, 10)
    assert any("fewer than 10 groups for uncalibrated" in w for w in table.warnings)
    assert any("parametric bootstrap under calibration" in n for n in table.notes)


def test_page_bootstrap_label_sets_shrink_only_above_100k_rows():
    assert hl_resamples(1000) == hl_resamples(100_000) == 1000  # the library's default
    assert hl_resamples(500_000) == 200 and hl_resamples(10**7) == 199


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


def test_overview_states_its_settings_and_reports_problems(ctx, sid):
    info = demo(ctx, "digits · MLP")
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
