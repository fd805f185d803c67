"""The page Dash writes, lightened for the first diagram (app.page_template, app.components)."""

from __future__ import annotations

import re

from app.components import DIAGRAM_SLOT, NAMESPACE, UNDRAWN_DIAGRAM, UNDRAWN_DIAGRAMS, Deferred
from app.factory import create_app
from app.page_template import DEFERRED_LIBRARIES, with_deferred_libraries

from .conftest import make_config

REACT = '<script src="/_dash-component-suites/dash/deps/react@18.v4_4_1m17.3.1.min.js"></script>'
GRID = '<script src="/_dash-component-suites/dash_ag_grid/dash_ag_grid.v35_3_0m17.min.js"></script>'
GRID_CHUNK = '<script src="/_dash-component-suites/dash_ag_grid/async-community.js"></script>'


def test_library_bundle_becomes_a_marked_prefetch_link():
    out = with_deferred_libraries(REACT + GRID + GRID_CHUNK, ("dash_ag_grid",))
    href = "/_dash-component-suites/dash_ag_grid/dash_ag_grid.v35_3_0m17.min.js"
    link = f'<link rel="prefetch" as="script" href="{href}" data-deferred-library="dash_ag_grid">'
    assert out == REACT + link + GRID_CHUNK  # only the main bundle, not its chunks
    # A library that is not on the page changes nothing.
    assert with_deferred_libraries(REACT, ("dash_ag_grid",)) == REACT


def test_index_page_scripts(tmp_path):
    app = create_app(make_config(tmp_path / "cache"))
    client = app.server.test_client()
    index = client.get("/").get_data(as_text=True)
    scripts = re.findall(r'<script src="([^"]+)"', index)
    # dash-ag-grid's bundle is downloaded (prefetch) but not a script of the page.
    assert not [s for s in scripts if "dash_ag_grid.v" in s]
    deferred = re.findall(
        r'<link rel="prefetch" as="script" href="([^"]+)" data-deferred-library="(\w+)">', index
    )
    assert [name for _, name in deferred] == list(DEFERRED_LIBRARIES)
    # Every script, the deferred bundle and our components answer.
    for src in [*scripts, *(href for href, _ in deferred)]:
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


def test_metrics_grid_waits_for_the_diagrams_and_its_library(tmp_path):
    app = create_app(make_config(tmp_path / "cache"))
    with app.server.test_request_context("/"):
        page = app.layout()
    slots = _find(page, lambda c: isinstance(c, Deferred) and c.children is not None)
    grid_slots = [s for s in slots if getattr(s.children, "id", None) == "metrics-grid"]
    assert len(grid_slots) == 1
    slot = grid_slots[0].to_plotly_json()
    assert slot["namespace"] == NAMESPACE and slot["type"] == "Deferred"
    assert slot["props"]["pending"] == UNDRAWN_DIAGRAMS
    assert slot["props"]["libraries"] == ["dash_ag_grid"]
    # The hidden Diagnostics body waits too.
    assert any(getattr(c, "id", None) == "diag-body" for c in _find(page, lambda c: True))
    # The first diagram is drawn alone; the second waits for it in a slot.
    grid = _find(page, lambda c: getattr(c, "id", None) == "reliability-grid")[0].children
    assert len(grid) == 2
    assert grid[0].className == "reliability-graph"
    assert isinstance(grid[1], Deferred) and grid[1].className == DIAGRAM_SLOT
    assert grid[1].pending == UNDRAWN_DIAGRAM
    assert grid[1].children.className == "reliability-graph"


def test_view_callback_answers_plain_graphs(tmp_path):
    """Only the page's first drawing holds diagrams back; callback answers do not."""
    from app.callbacks.view import render
    from app.layout.page import default_settings
    from app.layout.results import first_diagram_first

    app = create_app(make_config(tmp_path / "cache"))
    ctx = app.server.extensions["calibration_dashboard"]
    raw = default_settings(ctx.store.session_models(None))
    children = render(ctx, None, raw)[0]
    assert len(children) == 2 and not any(isinstance(c, Deferred) for c in children)
    assert first_diagram_first(children[:1]) == children[:1]


def test_validation_layout_has_every_callback_id(tmp_path):
    app = create_app(make_config(tmp_path / "cache"))
    ids = {str(getattr(c, "id", None)) for c in _find(app.validation_layout, lambda c: True)}
    client = app.server.test_client()
    client.get("/")
    for dep in client.get("/_dash-dependencies").get_json():
        for item in [*dep["inputs"], *dep["state"]]:
            if not item["id"].startswith("{"):  # pattern ids are drawn per model
                assert item["id"] in ids, item
