"""The page's scripts, and the parts that wait for the diagrams (app.components.Deferred)."""

from __future__ import annotations

import re

from app.components import NAMESPACE, UNDRAWN_DIAGRAM, Deferred
from app.factory import create_app

from .conftest import make_config


def test_index_page_scripts_all_answer(tmp_path):
    app = create_app(make_config(tmp_path / "cache"))
    client = app.server.test_client()
    index = client.get("/").get_data(as_text=True)
    scripts = re.findall(r'<script src="([^"]+)"', index)
    for src in scripts:
        assert client.get(src).status_code == 200, src
    assert any(s.startswith("/assets/deferred.js") for s in scripts)


def _find(component, predicate, found=None):
    found = [] if found is None else found
    if predicate(component):
        found.append(component)
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if hasattr(child, "to_plotly_json"):
            _find(child, predicate, found)
    return found


def test_metrics_grid_waits_for_the_diagrams(tmp_path):
    app = create_app(make_config(tmp_path / "cache"))
    with app.server.test_request_context("/"):
        page = app.layout()
    slots = _find(page, lambda c: isinstance(c, Deferred) and c.children is not None)
    grid_slots = [s for s in slots if getattr(s.children, "id", None) == "metrics-grid"]
    assert len(grid_slots) == 1
    slot = grid_slots[0].to_plotly_json()
    assert slot["namespace"] == NAMESPACE and slot["type"] == "Deferred"
    assert slot["props"]["pending"] == UNDRAWN_DIAGRAM
    # The hidden Diagnostics body waits too.
    assert any(getattr(c, "id", None) == "diag-body" for c in _find(page, lambda c: True))
    # The diagrams themselves are plain graphs.
    grid = _find(page, lambda c: getattr(c, "id", None) == "reliability-grid")[0].children
    assert len(grid) == 2
    assert all(g.className == "reliability-graph" for g in grid)


def test_view_callback_answers_plain_graphs(tmp_path):
    """The view callback's answers are plain graphs too."""
    from app.callbacks.view import render
    from app.layout.page import default_settings

    app = create_app(make_config(tmp_path / "cache"))
    ctx = app.server.extensions["calibration_dashboard"]
    raw = default_settings(ctx.store.session_models(None))
    children = render(ctx, None, raw)[0]
    assert len(children) == 2 and not any(isinstance(c, Deferred) for c in children)


def test_validation_layout_has_every_callback_id(tmp_path):
    app = create_app(make_config(tmp_path / "cache"))
    ids = {str(getattr(c, "id", None)) for c in _find(app.validation_layout, lambda c: True)}
    client = app.server.test_client()
    client.get("/")
    for dep in client.get("/_dash-dependencies").get_json():
        for item in [*dep["inputs"], *dep["state"]]:
            if not item["id"].startswith("{"):  # pattern ids are drawn per model
                assert item["id"] in ids, item
