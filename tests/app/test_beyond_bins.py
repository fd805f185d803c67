"""The binning-free diagram kinds (smooth, cumulative) and the "Beyond bins" card and report.

Every number drawn or tabled must be the core's (calibration_core.measures)
for the same predictions; the figures are checked trace by trace.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.analysis import build_view
from app.callbacks.diagnostics.beyond import beyond_panel, run_beyond_job
from app.curves import CURVE_POINTS, MAX_SMOOTH_BANDS, CurvePanel, CurveView, curve_view
from app.diagnostics.beyond import (
    BEYOND_TITLE,
    MEASURES,
    NOT_COMPUTED,
    beyond_record,
    beyond_rows,
    beyond_table,
)
from app.diagnostics.target import NotionSpec, diag_target, notion_spec
from app.figures.cumulative import cumulative_figure_dict
from app.figures.diagram import diagram_figure_dict
from app.figures.smooth import MIN_DENSITY, smooth_figure_dict
from app.report.diagnostics import diagnostics_html
from app.settings import HeldOut, RawSettings, SettingsError, parse_view
from calibration_core import Predictions
from calibration_core.measures import (
    calibration_hierarchy,
    cumulative_differences,
    cumulative_test,
    skce,
    smooth_ece,
    smooth_reliability_curve,
    spiegelhalter_test,
)
from calibration_core.measures.ece_variants import thresholded_adaptive_ece

from .diagnostics_helpers import progress

DIGITS_NB = "digits · naive Bayes"
CANCER_NB = "breast cancer · naive Bayes"


def _demo(ctx, name):
    return next(m for m in ctx.store.demo_models() if m.name == name)


def _overconfident(n: int, seed: int = 0) -> Predictions:
    """Binary predictions pushed away from 0.5 (over-confident), shape (n, 2)."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < truth).astype(int)
    logit = np.log(truth / (1 - truth)) * 2.0
    p = 1 / (1 + np.exp(-logit))
    return Predictions.from_probs(np.column_stack([1 - p, p]), y)


def _traces(fig: dict, name: str) -> list[dict]:
    return [t for t in fig["data"] if t.get("name") == name]


def _notes(fig: dict) -> list[str]:
    return [a["text"] for a in fig["layout"]["annotations"]]


# ------------------------------------------------------------------ settings
def test_the_diagram_kind_is_a_validated_view_setting():
    assert parse_view("confidence", None, "width", 15, "wilson", 0.95).kind == "binned"
    assert RawSettings(kind="cumulative").parse()[3].kind == "cumulative"
    with pytest.raises(SettingsError, match="the diagram must be one of binned, smooth"):
        parse_view("confidence", None, "width", 15, "wilson", 0.95, kind="<b>pie</b>")


# ------------------------------------------------------------------- figures
def test_smooth_figure_draws_the_cores_curve_band_and_smooth_ece():
    pred = _overconfident(3000)
    curve = smooth_reliability_curve(pred, notion="binary", n_resamples=40, level=0.9, seed=0)
    view = parse_view("binary", None, "width", 15, "wilson", 0.9, kind="smooth")
    cv = CurveView("smooth", [CurvePanel("uncalibrated", "1", smooth=curve)], [])
    fig = smooth_figure_dict("m", cv, view, HeldOut(), 3000)
    (line,) = _traces(fig, "smoothed frequency")
    keep = curve.density >= MIN_DENSITY
    assert keep.sum() > 150  # the scores cover most of [0, 1]
    np.testing.assert_array_equal(line["x"], curve.mesh)
    np.testing.assert_array_equal(line["y"][keep].astype(float), curve.observed[keep])
    assert all(v is None for v in line["y"][~keep])
    (band,) = _traces(fig, "bootstrap 90% (40×)")
    ys = [v for v in band["y"] if v is not None]
    assert sorted(ys) == sorted([*curve.upper[keep], *curve.lower[keep]])
    (sparse,) = _traces(fig, "few scores (dotted)")
    np.testing.assert_array_equal(sparse["y"], curve.observed)
    sece = smooth_ece(pred, notion="binary")
    assert f"smooth ECE {sece.value:.4f}" in _notes(fig)[1]
    assert (
        "smooth reliability · binary (positive class) · no bins"
        in (fig["layout"]["title"]["subtitle"]["text"])
    )


@pytest.mark.parametrize("kind", ["smooth", "cumulative"])
def test_binning_free_figures_beside_another_get_the_binned_grids_layout(kind):
    """Two models side by side: fewer columns, a two-line subtitle, room for the legend.

    The figure beside another is about half as wide: with the one-model layout
    its legend overlapped the subtitle and the subtitle ran past the right edge.
    """
    pred = _overconfident(2000, seed=2)
    view = parse_view("binary", None, "width", 15, "wilson", 0.9, kind=kind)
    if kind == "smooth":
        curve = smooth_reliability_curve(pred, notion="binary", n_resamples=10, seed=0)
        panels = [CurvePanel(name, "1", smooth=curve) for name in ("uncalibrated", "T", "iso")]
        draw = smooth_figure_dict
    else:
        from app.curves import cumulative_panel

        thin, band, test = cumulative_panel(pred, "binary", None, 0.9)
        panels = [CurvePanel(n, "1", None, thin, band, test) for n in ("uncalibrated", "T", "iso")]
        draw = cumulative_figure_dict
    cv = CurveView(kind, panels, [])
    alone = draw("m", cv, view, HeldOut(), 2000)["layout"]
    beside = draw("m", cv, view, HeldOut(), 2000, side_by_side=True)["layout"]
    assert alone["xaxis3"]["domain"][0] > alone["xaxis2"]["domain"][0] > 0  # one row of three
    assert beside["xaxis3"]["domain"][0] == 0  # two columns: the third panel starts a row
    assert [beside[f"yaxis{s}"]["showticklabels"] for s in ("", "2", "3")] == [True, False, True]
    assert beside["height"] > alone["height"]
    assert beside["margin"]["t"] == alone["margin"]["t"] + 50
    one_line, two_lines = (lay["title"]["subtitle"]["text"] for lay in (alone, beside))
    assert "<br>" not in one_line
    assert two_lines.split("<br>") == [
        f"{'smooth reliability' if kind == 'smooth' else 'cumulative differences'}"
        " · binary (positive class) · no bins",
        one_line.split(" · no bins · ")[1],
    ]


def test_cumulative_figure_draws_the_thinned_curve_band_and_full_tests():
    pred = _overconfident(20_000, seed=1)
    view = parse_view("binary", None, "width", 15, "wilson", 0.95, kind="cumulative")
    full = cumulative_differences(pred, notion="binary")
    assert full.rank.shape[0] > 2 * CURVE_POINTS
    from app.curves import cumulative_panel

    thin, band, test = cumulative_panel(pred, "binary", None, 0.95)
    cv = CurveView("cumulative", [CurvePanel("uncalibrated", "1", None, thin, band, test)], [])
    fig = cumulative_figure_dict("m", cv, view, HeldOut(), 20_000)
    (line,) = _traces(fig, "cumulative difference (labels − scores)")
    assert len(line["x"]) <= CURVE_POINTS + 2
    np.testing.assert_array_equal(line["y"], thin.difference)
    # the thinned curve keeps the extremes: KS and Kuiper read off it are the full curve's
    assert np.max(np.abs(line["y"])) == pytest.approx(np.max(np.abs(full.difference)))
    (shade,) = _traces(fig, "expected under calibration 95%")
    np.testing.assert_allclose(shade["y"][: len(thin.rank)], 1.959963984540054 * thin.std)
    expected = cumulative_test(pred, notion="binary")
    assert test.ks_error == pytest.approx(expected.ks_error)
    assert f"KS {expected.ks_error:.4f}" in _notes(fig)[1]
    lim = fig["layout"]["yaxis"]["range"][1]
    assert lim >= np.max(np.abs(full.difference))


def test_band_none_leaves_both_bands_out(ctx):
    info = _demo(ctx, CANCER_NB)
    for kind in ("smooth", "cumulative"):
        view = parse_view("binary", None, "width", 15, "none", 0.95, kind=kind)
        result = build_view(ctx.store, None, (info.handle,), (), HeldOut(), view)
        fig = diagram_figure_dict(ctx.store, result, result.models[0])
        assert not [t for t in fig["data"] if t.get("fill") == "toself"], kind


def test_diagram_kinds_share_the_binned_grid_and_say_what_is_missing(ctx):
    info = _demo(ctx, DIGITS_NB)
    view = parse_view("class", "__all__", "width", 15, "wilson", 0.95, kind="smooth")
    # a map that is not fitted: its panels carry the binned grid's message
    cv = curve_view(ctx.store, info, ("isotonic",), HeldOut(), view, pending="fitting…")
    assert [p.class_label for p in cv.panels[:10]] == list(info.class_names)
    assert len(cv.panels) == 2 * info.n_classes > MAX_SMOOTH_BANDS
    assert all(p.message == "fitting…" for p in cv.panels[10:])
    assert all(p.smooth is not None and p.smooth.n_resamples == 0 for p in cv.panels[:10])
    assert "no bootstrap band: 20 panels" in cv.notes[0]
    result = build_view(ctx.store, None, (info.handle,), ("isotonic",), HeldOut(), view)
    fig = smooth_figure_dict(info.name, cv, view, HeldOut(), None)
    assert "no bootstrap band" in fig["layout"]["title"]["subtitle"]["text"]
    assert "fitting…" in _notes(fig)[-1]
    assert "xaxis20" in fig["layout"] and "xaxis21" not in fig["layout"]  # one axis per panel
    result.view = dataclasses.replace(view, kind="binned")
    binned = diagram_figure_dict(ctx.store, result, result.models[0])
    # the same 20 panels (small multiples of all classes: axes 1, 3, ..., 39, no histograms)
    axes = [key for key in binned["layout"] if key.startswith("xaxis")]
    assert len(axes) == 20 and "xaxis39" in axes
    # The page draws the binned view's classes (the worst first, only the k worst of many).
    mv = result.models[0]
    assert [label for _, label in mv.class_rows] != list(info.class_names)  # worst first
    cv = curve_view(ctx.store, info, (), HeldOut(), view, rows=mv.class_rows[:3])
    assert [p.class_label for p in cv.panels] == [label for _, label in mv.class_rows[:3]]


# ---------------------------------------------------------------- the card
def test_beyond_record_is_the_cores_numbers(ctx):
    info = _demo(ctx, CANCER_NB)
    pred = ctx.store.predictions(info.handle)
    record = beyond_record(pred, NotionSpec("binary"))
    col = record["column"]
    assert col["smooth_ece"]["value"] == pytest.approx(smooth_ece(pred, notion="binary").value)
    ks = cumulative_test(pred, notion="binary")
    assert col["cumulative"]["ks_error"] == pytest.approx(ks.ks_error)
    assert col["cumulative"]["kuiper_p_value"] == pytest.approx(ks.kuiper_p_value)
    assert col["spiegelhalter"]["z"] == pytest.approx(spiegelhalter_test(pred, notion="binary").z)
    h = calibration_hierarchy(pred, notion="binary")
    assert col["hierarchy"]["recalibration"]["slope"]["value"] == pytest.approx(
        h.recalibration.slope.value
    )
    assert col["hierarchy"]["curve"]["ici"] == pytest.approx(h.curve.ici)
    assert record["tace"] == pytest.approx(thresholded_adaptive_ece(pred))
    assert record["skce"]["p_value"] == pytest.approx(skce(pred, seed=0).p_value)


def test_beyond_table_rows_and_missing_parts(ctx):
    info = _demo(ctx, DIGITS_NB)
    pred = ctx.store.predictions(info.handle)
    spec = NotionSpec("confidence", None, "confidence (top label)")
    from app.diagnostics.beyond import BeyondRow

    rows = [BeyondRow("uncalibrated", beyond_record(pred, spec)), BeyondRow("x", None, "why")]
    table = beyond_table(rows, spec)
    assert [r[0] for r in table.rows] == [label for label, _ in MEASURES.values()]
    assert all(r[1] for r in table.rows)  # one line on what each measure detects
    by = {r[0]: r for r in table.rows}
    assert by["smooth ECE"][2] == f"{smooth_ece(pred).value:.4f}"
    # the hierarchy is for binary / one-vs-rest: said once, in its first row
    assert by["observed / expected events"][2] == "for binary and one-vs-rest views only"
    assert by["calibration slope"][2] == ""
    assert by["smooth ECE"][3] == "why" and by["TACE"][3] == ""
    classwise = beyond_record(pred, NotionSpec("classwise"))
    assert classwise["column"] is None
    cells = beyond_table([BeyondRow("u", classwise)], NotionSpec("classwise")).rows
    assert "pick one class" in cells[0][2]


def test_card_is_computed_on_demand_then_read_from_the_store(ctx, sid):
    info = _demo(ctx, CANCER_NB)
    raw = RawSettings([info.handle], [], notion="binary")
    before = beyond_panel(ctx, sid, info.handle, raw)
    assert "press “Compute measures”" in str(before)
    target = diag_target(ctx.store, sid, info.handle, raw)
    assert [r.message for r in beyond_rows(ctx.store, target)] == [NOT_COMPUTED]
    seen = []
    state = run_beyond_job(ctx, sid, info.handle, raw, seen.append)
    assert state["error"] is None and seen[-1] == ("1", "1", "")
    (row,) = beyond_rows(ctx.store, target)
    assert row.record["column"]["hierarchy"] is not None
    after = str(beyond_panel(ctx, sid, info.handle, raw))
    assert "Not computed" not in after and "calibration slope" in after
    bad = run_beyond_job(
        ctx, sid, info.handle, RawSettings([info.handle], [], notion="x"), progress
    )
    assert "the notion must be one of" in bad["error"]


# ---------------------------------------------------------------- the report
def test_report_has_the_beyond_bins_section(ctx, sid):
    info = _demo(ctx, CANCER_NB)
    raw = RawSettings([info.handle], [], notion="binary")
    view = raw.parse()[3]
    result = build_view(ctx.store, sid, (info.handle,), (), HeldOut(), view)
    before = diagnostics_html(ctx, sid, result)
    assert f"<h3>{BEYOND_TITLE}</h3>" in before
    assert "Not computed: press “Compute measures”" in before
    target = diag_target(ctx.store, sid, info.handle, raw)
    beyond_rows(ctx.store, target, compute=True)
    after = diagnostics_html(ctx, sid, result)
    pred = ctx.store.predictions(info.handle)
    slope = calibration_hierarchy(pred, notion="binary").recalibration.slope.value
    assert f"{slope:.3f} [" in after
    assert notion_spec(info, view).label in after


def test_cli_report_draws_the_chosen_diagram_and_computes_the_section(tmp_path, capsys):
    from app import cli

    rng = np.random.default_rng(0)
    p = rng.uniform(0.02, 0.98, 300)
    y = (rng.uniform(size=300) < p**1.5).astype(int)
    csv = tmp_path / "scores.csv"
    csv.write_text("score,label\n" + "".join(f"{a:.6f},{b}\n" for a, b in zip(p, y, strict=True)))
    out = tmp_path / "report.html"
    code = cli.main(["report", str(csv), "--maps", "", "--diagram", "cumulative", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    text = out.read_text(encoding="utf-8")
    assert "cumulative differences" in text and "expected under calibration" in text
    assert f"<h3>{BEYOND_TITLE}</h3>" in text
    beyond = text.split(f"<h3>{BEYOND_TITLE}</h3>", 1)[1].split("<h3>", 1)[0]
    assert "Not computed" not in beyond  # the CLI computes the section
    ks = cumulative_test(np.column_stack([1 - p, p]), y, notion="confidence")
    assert f"{ks.ks_error:.4f} (" in text  # the top-label KS error of the only model
    code = cli.main(["report", str(csv), "--diagram", "pie", "-o", str(out)])
    assert code == 2 and "invalid choice: 'pie'" in capsys.readouterr().err


def test_smooth_band_is_left_out_above_the_row_budget(ctx, monkeypatch):
    import app.curves

    info = _demo(ctx, CANCER_NB)
    view = parse_view("binary", None, "width", 15, "wilson", 0.95, kind="smooth")
    (panel,) = curve_view(ctx.store, info, (), HeldOut(), view).panels
    assert panel.smooth.n_resamples == 100
    monkeypatch.setattr(app.curves, "MAX_BAND_ROWS", info.n_samples - 1)
    cv = curve_view(ctx.store, info, (), HeldOut(), view)
    assert cv.panels[0].smooth.n_resamples == 0
    assert cv.notes == [f"no bootstrap band: 569 rows over the panels (at most 568: {TOO_LONG})"]


TOO_LONG = "it would take too long"


def test_page_report_draws_the_views_diagram_kind(ctx, sid):
    from app import ids
    from app.services.report import small_export

    info = _demo(ctx, CANCER_NB)
    raw = RawSettings([info.handle], [], notion="binary", kind="smooth")
    report = small_export(ctx, sid, ids.EXPORT_REPORT_HTML, raw)["content"]
    assert "smooth reliability (no bins)" in report and "smoothed frequency" in report
    assert "Not computed: press “Compute measures”" in report


def test_cifar100_curves_are_thinned_and_keep_the_cores_numbers(realdata):
    """DenseNet on CIFAR-100 (over-confident, 10,000 rows): both kinds, top label."""
    from calibration_core import load_predictions

    (pred,) = load_predictions(realdata["densenet-bc-100-cifar-100"])
    view = parse_view("confidence", None, "width", 15, "wilson", 0.95, kind="cumulative")
    from app.curves import cumulative_panel

    thin, band, test = cumulative_panel(pred, "confidence", None, 0.95)
    cv = CurveView("cumulative", [CurvePanel("uncalibrated", None, None, thin, band, test)], [])
    fig = cumulative_figure_dict("densenet", cv, view, HeldOut(), pred.n_samples)
    (line,) = _traces(fig, "cumulative difference (labels − scores)")
    assert len(line["x"]) <= CURVE_POINTS + 2 < pred.n_samples
    expected = cumulative_test(pred)
    assert np.max(np.abs(line["y"])) == pytest.approx(expected.ks_error, rel=1e-12)
    assert expected.ks_error > 0.05 and expected.ks_p_value < 1e-6  # over-confident
    assert np.min(line["y"]) < 0  # fewer right answers than the confidence promises
    curve = smooth_reliability_curve(pred, n_resamples=0)
    cv = CurveView("smooth", [CurvePanel("uncalibrated", None, smooth=curve)], [])
    smooth_view = dataclasses.replace(view, kind="smooth")
    fig = smooth_figure_dict("densenet", cv, smooth_view, HeldOut(), pred.n_samples)
    assert f"smooth ECE {smooth_ece(pred).value:.4f}" in _notes(fig)[1]


def test_the_diagram_kind_is_kept_in_the_page_address():
    from app.view_url import NOTICE_PREFIX, decode_view, encode_view

    default = RawSettings(handles=[], maps=[])
    assert "diagram" not in encode_view(default)  # the binned default is not written
    for kind in ("smooth", "cumulative"):
        query = encode_view(dataclasses.replace(default, kind=kind))
        assert query.endswith(f"&diagram={kind}")
        assert decode_view(query, [], default) == (dataclasses.replace(default, kind=kind), [])
    raw, notices = decode_view("?diagram=<pie>", [], default)
    assert raw.kind == "binned"
    assert notices == [
        NOTICE_PREFIX + "the diagram must be one of binned, smooth, cumulative; got '<pie>'."
    ]
