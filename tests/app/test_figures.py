"""Figure builders: the numbers drawn are the core's numbers (no browser)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from app.analysis import UNCALIBRATED, ModelView, Panel, build_view
from app.figures.common import empty_figure, graph_config, plot_text, safe_file_stem, wrapped_text
from app.figures.reliability import reliability_figure, reliability_figure_dict
from app.settings import HeldOut, parse_view
from app.store.records import ModelInfo
from calibration_core import Binning, Predictions, ReliabilityCurve, reliability_curve
from calibration_core.bands import binomial_band, consistency_band_from_statistics

HOSTILE = "<img src=x onerror=alert(1)>"


def _pred(n=2000, k=3, seed=0, name="m") -> Predictions:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=r) for r in p])
    return Predictions.from_probs(p, y, name=name, class_names=["a", HOSTILE, "c"][:k])


def _info(pred: Predictions) -> ModelInfo:
    return ModelInfo.of("up-test", pred, "test")


def _traces(fig: dict, name: str) -> list[dict]:
    return [t for t in fig["data"] if t.get("name") == name]


def test_points_band_and_histogram_are_the_cores_numbers():
    pred = _pred()
    view = parse_view("confidence", None, "width", 12, "wilson", 0.9)
    scores, targets = pred.confidence, pred.correct
    curve = reliability_curve(scores, targets, n_bins=12, scheme="width")
    band = binomial_band(curve, method="wilson", level=0.9)
    mv = ModelView(_info(pred), [Panel(UNCALIBRATED, None, curve, band)])
    fig = reliability_figure_dict(mv, view, HeldOut())
    (points,) = _traces(fig, "observed frequency at mean score")
    keep = curve.count > 0
    np.testing.assert_allclose(points["x"], curve.x[keep])  # mean score, not bin centre
    np.testing.assert_allclose(points["y"], curve.y[keep])
    np.testing.assert_array_equal(points["customdata"][:, 2], curve.count[keep])
    np.testing.assert_allclose(points["customdata"][:, 0], curve.edges[:-1][keep])
    np.testing.assert_allclose(points["customdata"][:, 1], curve.edges[1:][keep])
    np.testing.assert_allclose(points["customdata"][:, 3], band[0][keep])
    np.testing.assert_allclose(points["customdata"][:, 4], band[1][keep])
    assert "interval" in points["hovertemplate"] and "count" in points["hovertemplate"]
    (shade,) = _traces(fig, "Wilson 90% interval")
    m = int(keep.sum())
    np.testing.assert_allclose(shade["y"][:m], band[1][keep])
    np.testing.assert_allclose(shade["y"][m:], band[0][keep][::-1])
    (hist,) = _traces(fig, "scores per bin")
    np.testing.assert_array_equal(hist["y"], curve.count)  # equal-width: the same bins
    ece_notes = [a["text"] for a in fig["layout"]["annotations"] if a["text"].startswith("ECE")]
    assert ece_notes == [f"ECE {curve.ece:.4f}"]
    assert fig["layout"]["xaxis"]["range"] == [0, 1]


def test_view_panels_match_the_core_for_every_notion(ctx, sid):
    demo = {m.name: m for m in ctx.store.demo_models()}
    info = demo["digits · random forest"]
    pred = ctx.store.predictions(info.handle)
    for notion, cls, k in (("confidence", None, None), ("class", "7", 7)):
        view = parse_view(notion, cls, "frequency", 9, "consistency", 0.95)
        result = build_view(ctx.store, sid, (info.handle,), (), HeldOut(), view)
        (mv,) = result.models
        (panel,) = mv.panels
        binning = Binning("frequency", 9)
        stats = pred.statistics(binning, notion, k)
        expected = ReliabilityCurve.from_statistics(stats, binning)
        np.testing.assert_array_equal(panel.curve.count, expected.count)
        np.testing.assert_allclose(panel.curve.x, expected.x, equal_nan=True)
        lo, hi = consistency_band_from_statistics(stats, n_resamples=1000, level=0.95, seed=0)
        np.testing.assert_allclose(panel.band[0], lo, equal_nan=True)
        np.testing.assert_allclose(panel.band[1], hi, equal_nan=True)
        fig = reliability_figure_dict(mv, view, HeldOut())
        (points,) = _traces(fig, "observed frequency at mean score")
        np.testing.assert_allclose(points["y"], expected.y[expected.count > 0])
        # Equal-frequency diagrams get an equal-width score histogram beneath.
        (hist,) = _traces(fig, "scores per bin")
        assert len(hist["y"]) == 40 and int(np.sum(hist["y"])) == pred.n_samples


def test_all_classes_draws_small_multiples_with_shared_axes(ctx, sid):
    info = next(m for m in ctx.store.demo_models() if m.name == "digits · naive Bayes")
    view = parse_view("class", "__all__", "width", 10, "none", 0.95)
    (mv,) = build_view(ctx.store, sid, (info.handle,), (), HeldOut(), view).models
    # Ten classes (fewer than ALL_CLASSES_SHOWN): all of them, the worst first.
    assert sorted(p.class_label for p in mv.panels) == sorted(info.class_names)
    eces = [p.curve.ece for p in mv.panels]
    assert eces == sorted(eces, reverse=True)
    fig = reliability_figure_dict(mv, view, HeldOut())
    layout = fig["layout"]
    # A compact grid: fixed, unlinked ranges and no histogram axes (Plotly draws
    # many linked axes slowly), the calibrator named on the left y axis.
    rel_x = [f"xaxis{2 * i + 1}" if i else "xaxis" for i in range(10)]
    assert all(layout[a]["range"] == [0, 1] and "matches" not in layout[a] for a in rel_x)
    rel_y = [layout[f"yaxis{2 * i + 1}" if i else "yaxis"] for i in range(10)]
    assert all(a["range"] == [-0.02, 1.02] for a in rel_y)
    assert not any(f"yaxis{2 * i + 2}" in layout for i in range(10))
    assert not _traces(fig, "scores per bin")
    # Ten classes: two rows of five.
    assert [a["title"]["text"] for a in rel_y[:6]] == ["uncalibrated"] + [""] * 4 + ["uncalibrated"]
    titles = [a["text"] for a in layout["annotations"] if "class" in a["text"]]
    assert titles[:2] == [f"class {p.class_label}" for p in mv.panels[:2]]
    assert not _traces(fig, "none interval")  # no band drawn


def test_names_render_as_text_never_html():
    pred = _pred(name=HOSTILE)
    curve = reliability_curve(pred.probs[:, 1], pred.labels == 1, n_bins=5)
    view = parse_view("class", HOSTILE, "width", 5, "none", 0.95)
    mv = ModelView(_info(pred), [Panel(UNCALIBRATED, HOSTILE, curve, None)])
    fig = reliability_figure_dict(mv, view, HeldOut())
    text = str(fig["layout"]["title"]) + str(fig["layout"]["annotations"])
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert plot_text("a<b>&c") == "a&lt;b&gt;&amp;c"


def test_pending_panels_show_their_message():
    pred = _pred()
    curve = reliability_curve(pred.confidence, pred.correct, n_bins=5)
    panels = [Panel(UNCALIBRATED, None, curve), Panel("dirichlet", None, message="fitting…")]
    view = parse_view("confidence", None, "width", 5, "none", 0.95)
    fig = reliability_figure_dict(ModelView(_info(pred), panels), view, HeldOut())
    assert "fitting…" in [a["text"] for a in fig["layout"]["annotations"]]
    assert len(_traces(fig, "observed frequency at mean score")) == 1
    long = wrapped_text("failed: <b>" + " word" * 60)
    assert "<br>" in long and "&lt;b&gt;" in long and "<b>" not in long
    assert long.count("<br>") <= 5 and long.endswith("…")


def test_title_states_notion_binning_band_and_heldout():
    pred = _pred()
    curve = reliability_curve(pred.confidence, pred.correct, n_bins=20, scheme="frequency")
    view = parse_view("confidence", None, "frequency", 20, "jeffreys", 0.99)
    mv = ModelView(_info(pred), [Panel(UNCALIBRATED, None, curve)], n_scored=2000)
    sub = reliability_figure_dict(mv, view, HeldOut("split", test_fraction=0.3))["layout"]["title"]
    text = sub["subtitle"]["text"]
    for piece in (
        "confidence (top label)",
        "20 equal-frequency bins",
        "Jeffreys 99%",
        "30%",
        "N = 2,000",
    ):
        assert piece in text


def test_plotly_figure_wrapper_keeps_the_data():
    pred = _pred()
    curve = reliability_curve(pred.confidence, pred.correct, n_bins=8)
    view = parse_view("confidence", None, "width", 8, "none", 0.95)
    mv = ModelView(_info(pred), [Panel(UNCALIBRATED, None, curve)])
    fig = reliability_figure(mv, view, HeldOut())
    assert isinstance(fig, go.Figure)
    points = next(t for t in fig.data if t.name == "observed frequency at mean score")
    np.testing.assert_allclose(points.x, curve.x[curve.count > 0])


def test_empty_figure_and_graph_config():
    assert "&lt;b&gt;" in empty_figure("<b>")["layout"]["annotations"][0]["text"]
    png = graph_config("digits · MLP", "png")["toImageButtonOptions"]
    assert png == {"format": "png", "filename": "reliability-digits-MLP", "scale": 2}
    assert graph_config("x", "svg")["toImageButtonOptions"]["format"] == "svg"
    assert graph_config("x", "exe")["toImageButtonOptions"]["format"] == "png"
    assert safe_file_stem("../../<x>") == "x" and safe_file_stem("///") == "figure"


@pytest.mark.parametrize("n_bins", [2, 100])
def test_extreme_bin_counts_draw(n_bins):
    pred = _pred()
    curve = reliability_curve(pred.confidence, pred.correct, n_bins=n_bins)
    view = parse_view("confidence", None, "width", n_bins, "clopper-pearson", 0.8)
    band = binomial_band(curve, method="clopper-pearson", level=0.8)
    fig = reliability_figure_dict(
        ModelView(_info(pred), [Panel(UNCALIBRATED, None, curve, band)]), view, HeldOut()
    )
    (points,) = _traces(fig, "observed frequency at mean score")
    assert len(points["x"]) == int((curve.count > 0).sum())
