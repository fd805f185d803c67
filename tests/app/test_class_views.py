"""One class vs rest on many classes (issue 15, items 2 and 10).

* the class picker opens on the first model's worst class (one-vs-rest ECE),
  keeps the user's class across selection changes and never falls back to
  "all classes" by itself (a briefly empty selection used to do that);
* "all classes" draws the ``ALL_CLASSES_SHOWN`` worst classes per calibrator
  and says so, while the metric row still covers every class;
* the score histograms of a grid row share one count axis.
"""

from __future__ import annotations

import numpy as np
import pytest
from dash import no_update

from app.analysis import UNCALIBRATED, ModelView, Panel, build_view, classes_per_calibrator
from app.callbacks.models import class_picker
from app.callbacks.view import render
from app.figures.grid import PANEL_COLUMNS, panel_positions
from app.figures.reliability import reliability_figure_dict
from app.options import class_value
from app.settings import (
    ALL_CLASSES,
    ALL_CLASSES_SHOWN,
    SMALL_MULTIPLES_PER_PAGE,
    HeldOut,
    RawSettings,
    parse_view,
)
from app.store.records import ModelInfo
from calibration_core import (
    Predictions,
    binary_ece,
    classwise_ece,
    classwise_mce,
    reliability_curve,
)

K = 30


def many_classes(k: int = K, n: int = 3000, seed: int = 5) -> Predictions:
    """A ``k``-class model whose classes are miscalibrated by different amounts."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 1.5
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    # Labels from a sharper (per-class tilted) distribution: over-confidence that varies by class.
    tilt = np.exp(z * 1.8 + rng.normal(scale=0.8, size=k))
    q = tilt / tilt.sum(axis=1, keepdims=True)
    y = (q.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    return Predictions.from_probs(p, y, name="many", class_names=[f"c{j}" for j in range(k)])


def one_vs_rest_eces(pred: Predictions, n_bins: int = 15) -> np.ndarray:
    """Each class's ECE from the core's direct (not re-binned) function."""
    return np.array(
        [binary_ece(pred.probs[:, j], pred.labels == j, n_bins=n_bins) for j in range(K)]
    )


@pytest.fixture
def many(ctx, sid):
    pred = many_classes()
    (info,) = ctx.store.add_models(sid, [pred], "many.csv")
    return info, pred


def models_json(*infos: ModelInfo) -> list[dict]:
    return [i.to_json() for i in infos]


# -- the class picker -----------------------------------------------------------
def test_class_value_keeps_the_users_choice_and_replaces_its_own():
    names = ["a", "b", "c"]
    worst = lambda: "c"  # noqa: E731
    assert class_value(names, None, None, worst) == "c"  # nothing chosen yet
    assert class_value(names, "b", None, worst) == "b"  # the user's class stays
    assert class_value(names, ALL_CLASSES, None, worst) == ALL_CLASSES  # so does "all"
    assert class_value(names, "b", "b", worst) == "c"  # the page's own pick follows the models
    assert class_value(names, "gone", None, worst) == "c"  # a class the models lack
    assert class_value(names, None, None, lambda: None) == "a"  # no default: the first class


def test_the_picker_opens_on_the_first_models_worst_class(ctx, sid, many):
    info, pred = many
    demo = ctx.store.demo_models()[0]
    models = models_json(demo, info)
    options, value, style, auto = class_picker(
        ctx.store, sid, models, [info.handle, demo.handle], "class", None, None, "width", 15
    )
    expected = f"c{int(np.argmax(one_vs_rest_eces(pred)))}"
    assert value == auto == expected
    assert style == {}
    assert [o["value"] for o in options][:3] == [ALL_CLASSES, "c0", "c1"]


def test_a_briefly_empty_selection_leaves_the_picker_alone(ctx, sid, many):
    info, _ = many
    models = models_json(info)
    out = class_picker(ctx.store, sid, models, [], "class", "c7", None, "width", 15)
    assert out == (no_update, no_update, {}, no_update)
    # The models come back: the user's class is still there.
    _, value, _, auto = class_picker(
        ctx.store, sid, models, [info.handle], "class", "c7", None, "width", 15
    )
    assert (value, auto) == ("c7", None)


def test_the_pages_own_class_follows_the_first_model(ctx, sid, many):
    info, pred = many
    demo = next(m for m in ctx.store.demo_models() if m.n_classes == 10)
    models = models_json(demo, info)
    _, value, _, auto = class_picker(
        ctx.store, sid, models, [demo.handle], "class", None, None, "width", 15
    )
    assert value == auto and value in demo.class_names
    # Another model takes the first place: the page's pick moves to its worst class.
    _, value, _, auto = class_picker(
        ctx.store, sid, models, [info.handle], "class", value, auto, "width", 15
    )
    assert value == auto == f"c{int(np.argmax(one_vs_rest_eces(pred)))}"


# -- "all classes": the k worst ------------------------------------------------
def test_all_classes_draws_the_k_worst_and_counts_them(ctx, sid, many):
    info, pred = many
    view = parse_view("class", ALL_CLASSES, "width", 15, "wilson", 0.95)
    (mv,) = build_view(ctx.store, sid, (info.handle,), (), HeldOut(), view).models
    eces = one_vs_rest_eces(pred)
    worst = [f"c{j}" for j in np.argsort(-eces, kind="stable")[:ALL_CLASSES_SHOWN]]
    assert ALL_CLASSES_SHOWN < K
    assert [p.class_label for p in mv.panels] == worst
    for panel in mv.panels:
        assert panel.curve.ece == pytest.approx(eces[int(panel.class_label[1:])], abs=1e-12)
    note = f"showing the {ALL_CLASSES_SHOWN} worst of {K} classes by ECE"
    assert mv.classes_note() == note
    fig = reliability_figure_dict(mv, view, HeldOut())
    assert note in fig["layout"]["title"]["subtitle"]["text"]


def test_all_classes_row_and_title_cover_every_class(ctx, sid, many):
    info, pred = many
    raw = RawSettings(handles=[info.handle], maps=[], notion="class", class_value=ALL_CLASSES)
    grid, rows, *_rest = render(ctx, sid, raw)
    title = _rest[2]
    (row,) = rows
    # The row's ECE is the mean over all 30 classes, not over the 12 drawn.
    assert row["ece"] == pytest.approx(classwise_ece(pred.probs, pred.labels), abs=1e-12)
    assert row["mce"] == pytest.approx(classwise_mce(pred.probs, pred.labels), abs=1e-12)
    assert len(grid) == 1
    assert title.endswith(f"showing the {ALL_CLASSES_SHOWN} worst of {K} classes by ECE")


def test_a_model_with_few_classes_shows_them_all_worst_first(ctx, sid):
    digits = next(m for m in ctx.store.demo_models() if m.n_classes == 10)
    view = parse_view("class", ALL_CLASSES, "width", 10, "none", 0.95)
    (mv,) = build_view(ctx.store, sid, (digits.handle,), (), HeldOut(), view).models
    eces = [p.curve.ece for p in mv.panels]
    assert sorted(p.class_label for p in mv.panels) == sorted(digits.class_names)
    assert eces == sorted(eces, reverse=True)
    assert mv.classes_note() == "showing all 10 classes, the worst by ECE first"


# -- grid and shared histogram axes ----------------------------------------------
def _panels(calibrators, labels, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for c in calibrators:
        for j, label in enumerate(labels):
            n = 200 * (j + 1)  # panels with very different counts
            scores = rng.uniform(size=n)
            curve = reliability_curve(scores, rng.uniform(size=n) < scores, n_bins=10)
            out.append(Panel(c, label, curve))
    return out


def test_each_calibrator_starts_a_row_in_all_classes():
    view = parse_view("class", ALL_CLASSES, "width", 10, "none", 0.95)
    panels = _panels([UNCALIBRATED, "temperature"], [str(j) for j in range(8)])
    alone, beside = PANEL_COLUMNS[view.all_classes]
    positions, n_rows, n_cols = panel_positions(panels, alone, rows_by_calibrator=True)
    assert n_cols == 4 and n_rows == 4  # 8 classes in two rows of 4 (at most 6 columns)
    assert positions[8] == (2, 0)  # temperature's first class opens row 3
    positions, n_rows, n_cols = panel_positions(panels, beside, rows_by_calibrator=True)
    assert n_cols == 3 and n_rows == 6 and positions[8] == (3, 0)
    positions, n_rows, n_cols = panel_positions(
        panels[:4] + panels[8:12], beside, rows_by_calibrator=True
    )
    assert n_cols == 2 and n_rows == 4  # 4 classes: 2 x 2, not 3 + 1


@pytest.mark.parametrize("notion", ["confidence", "class"])
def test_histograms_of_a_row_share_one_count_axis(notion):
    view = parse_view(notion, "a", "width", 10, "none", 0.95)
    labels = ["a"] if notion == "class" else [None]
    panels = [p for j in range(6) for p in _panels([f"map{j}"], labels, seed=j)]
    for j, panel in enumerate(panels):  # counts grow along the row
        panel.curve = reliability_curve(
            np.linspace(0.01, 0.99, 100 * (j + 1)), np.zeros(100 * (j + 1)), n_bins=10
        )
    pred = many_classes(k=3, n=50)
    fig = reliability_figure_dict(
        ModelView(ModelInfo.of("up-x", pred, "x"), panels), view, HeldOut()
    )
    layout = fig["layout"]
    hist_axes = [layout[f"yaxis{2 * i + 2}"] for i in range(len(panels))]
    positions, _, n_cols = panel_positions(panels, PANEL_COLUMNS[view.all_classes][0])
    assert n_cols == 4
    for row in (0, 1):
        ranges = [a["range"] for a, (r, _) in zip(hist_axes, positions, strict=True) if r == row]
        tallest = max(
            max(p.curve.count) for p, (r, _) in zip(panels, positions, strict=True) if r == row
        )
        assert all(rg == ranges[0] for rg in ranges)  # one scale per row
        assert ranges[0][0] == 0 and tallest <= ranges[0][1] <= 1.1 * tallest
    assert hist_axes[0]["range"] != hist_axes[4]["range"]  # rows scale on their own
    assert [a["showticklabels"] for a in hist_axes[:4]] == [True, False, False, False]


def test_all_classes_keeps_the_page_to_a_panel_budget(ctx, sid, many):
    assert classes_per_calibrator(1, 1) == ALL_CLASSES_SHOWN
    assert classes_per_calibrator(3, 3) == SMALL_MULTIPLES_PER_PAGE // 9 == 4
    assert classes_per_calibrator(8, 9) == 1  # at least one class
    info, _ = many
    digits = next(m for m in ctx.store.demo_models() if m.n_classes == 10)
    view = parse_view("class", ALL_CLASSES, "width", 15, "none", 0.95)
    three = (info.handle, digits.handle, info.handle + "x")  # the third is unknown: a message
    for handles, maps, k in (((info.handle, digits.handle), (), 12), (three, ("platt",), 6)):
        result = build_view(ctx.store, sid, handles, maps, HeldOut(), view)
        panels = [len(mv.panels) for mv in result.models]
        assert panels == [k * (len(maps) + 1), min(k, 10) * (len(maps) + 1)]
        assert result.models[0].classes_note() == f"showing the {k} worst of {K} classes by ECE"
