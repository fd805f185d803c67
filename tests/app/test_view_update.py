"""Which outputs of the view a change writes (app.view_update): only what the page lacks.

A model-selection change on three CIFAR-100 models spent most of its time
redrawing the diagrams of the models that stayed (BENCHMARKS.md, issue 15).
These tests pin which slot and which output each kind of change writes, on
the real view of demo models and on plain values.
"""

from __future__ import annotations

from dash import html, no_update

from app import ids
from app.callbacks.view import render
from app.settings import RawSettings
from app.view_update import (
    EMPTY_SLOT,
    PART_NAMES,
    SLOTS,
    assign_slots,
    grid_slots,
    slot_update,
    view_update,
)


def _graph(name: str, content: str = "") -> html.Div:
    """A stand-in for a model's diagram: id by model, content by figure."""
    return html.Div(content, id={"type": ids.GRAPH_TYPE, "model": name})


def _written(values: list) -> set[int]:
    return {s for s, v in enumerate(values) if v is not no_update}


def _view(*graphs, rows=("r",)) -> tuple:
    return (list(graphs), list(rows), [], "caption", "title", [], [], "fitted")


def test_a_model_keeps_its_slot_and_a_new_one_takes_a_free_slot_in_screen_order():
    before = [["a", "d", 0], ["b", "d", 1], ["c", "d", 2]] + [None] * (SLOTS - 3)
    assert assign_slots(before, ["a", "c"]) == [0, 2]
    assert assign_slots(before, ["a", "x", "c"]) == [0, 1, 2]
    assert assign_slots(before, ["b", "c", "x"]) == [1, 2, 3]
    assert assign_slots([None] * SLOTS, ["x", "y"]) == [0, 1]
    # Only slot 0 is free, before b: a new model after c would read first.
    after_c = [None, ["b", "d", 0], ["c", "d", 1]] + [["z", "d", 9]] * (SLOTS - 3)
    assert assign_slots(after_c, ["x", "b", "c"]) == [0, 1, 2]
    assert assign_slots(after_c[:3] + [None] * (SLOTS - 3), ["b", "c", "x"]) == [1, 2, 3]
    full = [None] + [[k, "d", 0] for k in "bcdefgh"]
    assert assign_slots(full, list("bcdefghx")) == list(range(SLOTS))  # no room after h
    # Kept models in another order: every model takes the slot of its place.
    assert assign_slots(before, ["c", "x", "a"]) == [0, 1, 2]


def test_deselecting_a_model_empties_its_slot_and_moves_no_diagram():
    _, _, shown = slot_update(None, [_graph("a"), _graph("b"), _graph("c")])
    children, styles, after = slot_update({"slots": shown}, [_graph("a"), _graph("c")])
    assert _written(children) == {1}
    assert children[1] == [] and styles[1] == EMPTY_SLOT
    # c stays in slot 2 and moves up the screen by its order alone.
    assert _written(styles) == {1, 2} and styles[2] == {"order": 1}
    assert after[0][:2] == shown[0][:2] and after[2][:2] == shown[2][:2] and after[1] is None


def test_selecting_a_model_writes_its_slot_only():
    _, _, shown = slot_update(None, [_graph("a"), _graph("c")])
    grid = [_graph("a"), _graph("c"), _graph("b")]
    children, styles, _ = slot_update({"slots": shown}, grid)
    assert _written(children) == {2} and children[2] == [grid[2]]
    assert _written(styles) == {2} and styles[2] == {"order": 2}


def test_a_changed_figure_is_written_and_an_equal_one_is_not():
    _, _, shown = slot_update(None, [_graph("a", "15 bins"), _graph("b", "15 bins")])
    children, styles, _ = slot_update({"slots": shown}, [_graph("a", "10"), _graph("b", "10")])
    assert _written(children) == {0, 1} and _written(styles) == set()
    children, styles, _ = slot_update(
        {"slots": shown}, [_graph("a", "15 bins"), _graph("b", "15 bins")]
    )
    assert _written(children) == set() and _written(styles) == set()


def test_a_missing_or_malformed_store_writes_every_slot():
    grid = [_graph("a"), _graph("b")]
    for before in (
        None,
        {},
        {"slots": "x"},
        {"slots": [None] * (SLOTS - 1)},
        {"slots": [1] * SLOTS},
    ):
        children, styles, _ = slot_update(before, grid)
        assert children == [[grid[0]], [grid[1]]] + [[]] * (SLOTS - 2)
        assert styles == [{"order": 0}, {"order": 1}] + [EMPTY_SLOT] * (SLOTS - 2)


def test_unchanged_outputs_are_no_update_and_changed_ones_are_sent():
    _, _, _, keys = view_update(None, _view(_graph("a"), rows=("r1",)))
    _, _, parts, again = view_update(keys, _view(_graph("a"), rows=("r1",)))
    assert parts == [no_update] * len(PART_NAMES) and again == keys
    _, _, parts, _ = view_update(keys, _view(_graph("a"), rows=("r2",)))
    assert parts[PART_NAMES.index("rows")] == ["r2"]
    assert _written(parts) == {PART_NAMES.index("rows")}


def test_the_first_page_fills_the_first_slots_in_order():
    slots, keys = grid_slots(ids.GRAPH_SLOT, _view(_graph("a"), _graph("b")))
    assert [s.id for s in slots] == [f"{ids.GRAPH_SLOT}-{i}" for i in range(SLOTS)]
    assert [bool(s.children) for s in slots] == [True, True] + [False] * (SLOTS - 2)
    assert [s.style for s in slots[:3]] == [{"order": 0}, {"order": 1}, EMPTY_SLOT]
    # The first callback after it writes nothing that is already there.
    children, styles, _, _ = view_update(keys, _view(_graph("a"), _graph("b")))
    assert _written(children) == set() and _written(styles) == set()


def test_on_the_real_view_a_selection_change_redraws_only_the_model_it_adds(ctx, sid):
    a, b, c = (m.handle for m in ctx.store.demo_models()[:3])
    three = render(ctx, sid, RawSettings(handles=[a, b, c]))
    two = render(ctx, sid, RawSettings(handles=[a, c]))
    _, _, _, keys = view_update(None, three)
    children, _, parts, keys = view_update(keys, two)
    assert _written(children) == {1}  # b's slot emptied; a's and c's diagrams untouched
    assert parts[PART_NAMES.index("rows")] is not no_update  # the table lost b's rows
    children, _, _, _ = view_update(keys, three)
    assert _written(children) == {1} and children[1] == [three[0][1]]
    # A binning change redraws every diagram.
    _, _, _, keys = view_update(None, three)
    rebinned = render(ctx, sid, RawSettings(handles=[a, b, c], n_bins=7))
    children, styles, _, _ = view_update(keys, rebinned)
    assert _written(children) == {0, 1, 2} and _written(styles) == set()
