"""Send the page only the parts of the view that changed since it last drew them.

The view callback recomputes the whole view on every change, and the page
redraws whatever it receives: ``dcc.Graph`` compares its figure by identity,
so an equal figure that arrives again is drawn again by Plotly, and Dash's
renderer mounts every component under a ``children`` property afresh when
that property is written (a ``dash.Patch`` of the list included). On three
100-class models a model-selection change spent most of its time there
(long tasks of 0.35-1.0 s in the browser after the view's answer,
BENCHMARKS.md, issue 15), redrawing the diagrams of the models that stayed.

So the diagrams live in :data:`SLOTS` fixed slots (``html.Div``, one diagram
each, in screen order), and a model keeps its slot while it stays selected
(:func:`assign_slots`): the view writes only the slots whose diagram
changed. The page keeps a digest of each slot and of each other output of
the view (``VIEW_KEYS`` store, :func:`view_update`); an output whose digest
did not change is answered with ``dash.no_update``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from dash import html, no_update
from plotly.io.json import to_json_plotly

from .settings import MAX_SELECTED_MODELS

#: Diagram slots on the page: one per selected model at most (a message takes one).
SLOTS = MAX_SELECTED_MODELS
#: The style of a slot without a diagram.
EMPTY_SLOT = {"display": "none"}
#: The view's outputs after its diagrams, in :func:`app.callbacks.view.render`'s order.
PART_NAMES = ("rows", "columns", "caption", "title", "messages", "verdict", "fit_status")


def slot_id(prefix: str, i: int) -> str:
    """The id of slot ``i`` (``prefix``: :data:`app.ids.GRAPH_SLOT`)."""
    return f"{prefix}-{i}"


def digest(value: Any) -> str:
    """A short digest of ``value`` as Dash sends it (JSON; components by their props)."""
    return hashlib.blake2b(to_json_plotly(value).encode(), digest_size=12).hexdigest()


def graph_key(graph) -> str:
    """Which diagram a child of the grid is: its id as JSON (``"null"`` for a message)."""
    return to_json_plotly(getattr(graph, "id", None))


def assign_slots(before: list, keys: list[str]) -> list[int]:
    """The slot of each diagram: the one it had (``before[s][0]`` is its key), or a free one.

    ``before``: per slot ``[key, digest, order]`` or None (empty); ``keys``
    (at most :data:`SLOTS`, unique): the diagrams to show, in order. Slots
    follow the screen order, so that the page's order (what a screen reader
    reads) is the order on the screen: a new diagram takes the first free
    slot between its neighbours' slots. When there is none, or the diagrams
    kept changed order, every diagram takes the slot of its place (those
    that move are drawn again).
    """
    had = {entry[0]: s for s, entry in enumerate(before) if entry}
    kept = [had[k] for k in keys if k in had]
    in_place = list(range(len(keys)))
    if kept != sorted(kept):
        return in_place
    taken, out, low = set(kept), [], -1
    for i, key in enumerate(keys):
        slot = had.get(key)
        if slot is None:
            high = next((had[k] for k in keys[i + 1 :] if k in had), SLOTS)
            slot = next((s for s in range(low + 1, high) if s not in taken), None)
            if slot is None:
                return in_place
            taken.add(slot)
        out.append(slot)
        low = slot
    return out


def known_slots(before) -> list:
    """The ``slots`` entry of the ``VIEW_KEYS`` store, or every slot unknown when malformed."""
    slots = before.get("slots") if isinstance(before, dict) else None
    ok = isinstance(slots, list) and len(slots) == SLOTS
    if ok and all(s is None or (isinstance(s, list) and len(s) == 3) for s in slots):
        return slots
    return [["?", None, None]] * SLOTS  # matches no diagram: every slot is written


def slot_update(before, grid: list) -> tuple[list, list, list]:
    """Each slot's ``children`` and ``style`` outputs, and the slots' new keys.

    A slot whose diagram (digest) and place did not change gets ``no_update``;
    so does an empty slot that stays empty.
    """
    old = known_slots(before)
    keys = [graph_key(g) for g in grid][:SLOTS]
    where = assign_slots(old, keys)
    new: list = [None] * SLOTS
    children: list = [no_update] * SLOTS
    styles: list = [no_update] * SLOTS
    for order, (s, key, graph) in enumerate(zip(where, keys, grid, strict=False)):
        new[s] = [key, digest(graph), order]
        if old[s] is None or old[s][:2] != new[s][:2]:
            children[s] = [graph]
        if old[s] is None or old[s][2] != order:
            styles[s] = {"order": order}
    for s in range(SLOTS):
        if new[s] is None and old[s] is not None:
            children[s], styles[s] = [], EMPTY_SLOT
    return children, styles, new


def view_update(before, view: tuple) -> tuple[list, list, list, dict]:
    """The view's outputs with what the page already shows left out, and the new keys.

    Parameters
    ----------
    before : dict or None
        The ``VIEW_KEYS`` store as the page holds it.
    view : tuple
        :func:`app.callbacks.view.render`'s tuple.

    Returns
    -------
    children, styles : list
        Per slot (:func:`slot_update`).
    parts : list
        ``view[1:]``, ``no_update`` where the digest did not change.
    keys : dict
        The store's new value: ``{"slots": [...], "parts": {name: digest}}``.
    """
    children, styles, slots = slot_update(before, view[0])
    old = before.get("parts") if isinstance(before, dict) else None
    old = old if isinstance(old, dict) else {}
    digests = {name: digest(value) for name, value in zip(PART_NAMES, view[1:], strict=True)}
    parts = [
        no_update if old.get(name) == digests[name] else value
        for name, value in zip(PART_NAMES, view[1:], strict=True)
    ]
    return children, styles, parts, {"slots": slots, "parts": digests}


def grid_slots(prefix: str, view: tuple | None) -> tuple[list, dict]:
    """The grid's slot ``Div`` s for the page's first view, and the ``VIEW_KEYS`` store's data.

    ``view``: :func:`app.callbacks.view.render`'s tuple (None: no diagram).
    """
    children, styles, _parts, keys = view_update(None, view or ([], *[None] * len(PART_NAMES)))
    slots = [
        html.Div(
            children[s],
            id=slot_id(prefix, s),
            className="graph-slot",
            style=styles[s],
        )
        for s in range(SLOTS)
    ]
    return slots, keys
