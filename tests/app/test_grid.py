"""The one panel grid (app.figures.grid) lays out the binned and the binning-free diagrams.

The expected positions are the grid's pixel rules, stated here once per
figure family: a row of ``row_px`` pixels holds each panel's plots at fixed
offsets from the row's top; the plot area is ``row_px * rows - trim_px``
pixels tall; the columns tile [0, 1] with a gap of 0.045; a panel's title
sits centred on the top edge of its first plot. These are the rules the
reliability and curve-grid modules each applied before they shared the grid.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.analysis import UNCALIBRATED, ModelView, Panel
from app.curves import CurvePanel, CurveView
from app.figures.grid import panel_title
from app.figures.reliability import reliability_figure_dict
from app.figures.smooth import smooth_figure_dict
from app.settings import HeldOut, parse_view
from app.store.records import ModelInfo
from calibration_core import Predictions, reliability_curve
from calibration_core.measures import smooth_reliability_curve

GAP = 0.045
CALIBRATORS = [UNCALIBRATED, "temperature", "isotonic", "beta", "histogram", "<b>x</b>"]
#: Per family: row height, (top offset, height) of each plot of a panel, trimmed
#: pixels, axis pairs per panel.
RELIABILITY = (300, [(26, 190), (224, 52)], 24, 2)
COMPACT = (180, [(20, 132)], 24, 2)
CURVES = (260, [(24, 190)], 0, 1)


def _info() -> ModelInfo:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=60)
    return ModelInfo.of("up-grid", Predictions.from_probs(p, p.argmax(axis=1)), "grid")


def _reliability_panels(calibrators, labels=(None,)) -> list[Panel]:
    rng = np.random.default_rng(1)
    panels = []
    for calibrator in calibrators:
        for label in labels:
            scores = rng.uniform(size=300)
            curve = reliability_curve(scores, rng.uniform(size=300) < scores, n_bins=8)
            panels.append(Panel(calibrator, label, curve))
    return panels


def _curve_panels(n: int) -> list[CurvePanel]:
    rng = np.random.default_rng(2)
    q = rng.uniform(size=400)
    pred = Predictions.from_probs(np.column_stack([1 - q, q]), (rng.uniform(size=400) < q) * 1)
    curve = smooth_reliability_curve(pred, notion="binary", n_resamples=0, seed=0)
    panels = [CurvePanel(c, "1", smooth=curve) for c in CALIBRATORS[:n]]
    if n > 1:
        panels[1] = CurvePanel(CALIBRATORS[1], "1", message="not fitted yet")
    return panels


def _suffix(n: int) -> str:
    return "" if n == 1 else str(n)


def _check_grid(layout: dict, titles: list[str], positions, family) -> None:
    """Every panel's axes, domains and title follow the family's pixel rules."""
    row_px, plots, trim_px, per_panel = family
    n_rows = max(r for r, _ in positions) + 1
    n_cols = max(c for _, c in positions) + 1
    plot_px = row_px * n_rows - trim_px
    assert layout["height"] == plot_px + layout["margin"]["t"] + layout["margin"]["b"]
    width = (1 - GAP * (n_cols - 1)) / n_cols
    title_notes = [a for a in layout["annotations"] if a["yref"] == "paper"]
    assert [a["text"] for a in title_notes] == titles  # one title per panel, in order
    for i, (r, c) in enumerate(positions):
        x_dom = (c * (width + GAP), c * (width + GAP) + width)
        for j, (top, height) in enumerate(plots):
            s = _suffix(per_panel * i + j + 1)
            x_axis, y_axis = layout[f"xaxis{s}"], layout[f"yaxis{s}"]
            assert (x_axis["anchor"], y_axis["anchor"]) == (f"y{s}", f"x{s}")
            np.testing.assert_allclose(x_axis["domain"], x_dom, atol=1e-12)
            pixels = [(1 - f) * plot_px for f in reversed(y_axis["domain"])]
            top_px = r * row_px + top
            np.testing.assert_allclose(pixels, [top_px, top_px + height], atol=1e-9)
        title = title_notes[i]
        first_y = layout[f"yaxis{_suffix(per_panel * i + 1)}"]["domain"]
        assert title["x"] == pytest.approx((x_dom[0] + x_dom[1]) / 2)
        assert title["y"] == first_y[1] and title["yanchor"] == "bottom"
    assert math.isclose(width * n_cols + GAP * (n_cols - 1), 1.0)


@pytest.mark.parametrize(("n", "side_by_side"), [(1, False), (3, False), (6, False), (3, True)])
def test_reliability_grid_follows_the_grid_rules(n, side_by_side):
    view = parse_view("confidence", None, "width", 8, "none", 0.9)
    mv = ModelView(_info(), _reliability_panels(CALIBRATORS[:n]))
    layout = reliability_figure_dict(mv, view, HeldOut(), side_by_side)["layout"]
    cols = min(n, 2 if side_by_side else 4)
    positions = [divmod(i, cols) for i in range(n)]
    titles = [
        "uncalibrated",
        "temperature",
        "isotonic",
        "beta",
        "histogram",
        "&lt;b&gt;x&lt;/b&gt;",
    ]
    _check_grid(layout, titles[:n], positions, RELIABILITY)


def test_all_classes_grid_starts_each_calibrator_on_a_row():
    view = parse_view("class", "", "width", 8, "none", 0.9)
    panels = _reliability_panels(CALIBRATORS[:2], labels=[str(k) for k in range(5)])
    layout = reliability_figure_dict(ModelView(_info(), panels), view, HeldOut())["layout"]
    positions = [(r, c) for r in range(2) for c in range(5)]
    _check_grid(layout, [f"class {k}" for k in range(5)] * 2, positions, COMPACT)
    assert layout["yaxis"]["title"]["text"] == "uncalibrated"
    assert layout["yaxis11"]["title"]["text"] == "temperature"  # panel 5: x11/y11


def test_group_grid_keeps_the_groups_own_titles():
    view = parse_view("confidence", None, "width", 8, "none", 0.9)
    panels = _reliability_panels([UNCALIBRATED] * 7)
    for j, panel in enumerate(panels):
        panel.title = f"group {j} (n = {j + 10})"
    mv = ModelView(_info(), panels)
    layout = reliability_figure_dict(mv, view, None, compact=True)["layout"]
    positions = [divmod(i, 4) for i in range(7)]  # at most 6 a row, balanced: 4 + 3
    _check_grid(layout, [p.title for p in panels], positions, COMPACT)


@pytest.mark.parametrize(("n", "side_by_side"), [(1, False), (3, False), (5, False), (3, True)])
def test_curve_grid_follows_the_grid_rules(n, side_by_side):
    view = parse_view("binary", None, "width", 15, "none", 0.9, kind="smooth")
    cv = CurveView("smooth", _curve_panels(n), [])
    layout = smooth_figure_dict("m", cv, view, HeldOut(), None, side_by_side)["layout"]
    cols = min(n, 2 if side_by_side else 4)
    positions = [divmod(i, cols) for i in range(n)]
    titles = ["uncalibrated", "temperature", "isotonic", "beta", "histogram"]
    _check_grid(layout, titles[:n], positions, CURVES)
    if n > 1:
        assert "not fitted yet" in [a["text"] for a in layout["annotations"]]


def test_one_panel_title_names_calibrator_and_class():
    one_class = parse_view("class", "a", "width", 8, "none", 0.9)
    confidence = parse_view("confidence", None, "width", 8, "none", 0.9)
    panel = CurvePanel("temperature", "a")
    assert panel_title(panel, one_class) == "temperature · class a"
    assert panel_title(panel, confidence) == "temperature"
    assert panel_title(panel, one_class, class_only=True) == "class a"


@pytest.mark.parametrize("n", [2, 5])
def test_every_panel_has_a_trace_so_plotly_draws_its_axes(n):
    """Plotly draws no subplot that no trace uses: a message-only panel needs an anchor trace.

    Without one, the "not fitted yet" note (``x2 domain``) was drawn in the first panel.
    """
    view = parse_view("binary", None, "width", 15, "none", 0.9, kind="smooth")
    figure = smooth_figure_dict(
        "m", CurveView("smooth", _curve_panels(n), []), view, HeldOut(), 400
    )
    used = {(t.get("xaxis", "x"), t.get("yaxis", "y")) for t in figure["data"]}
    assert used == {(f"x{_suffix(i + 1)}", f"y{_suffix(i + 1)}") for i in range(n)}
    note = next(a for a in figure["layout"]["annotations"] if a["text"] == "not fitted yet")
    assert note["xref"] == "x2 domain"
