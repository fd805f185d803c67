"""The page Dash writes: its scripts answer, and its layout holds every callback id."""

from __future__ import annotations

import re

from app.factory import create_app

from .conftest import make_config


def test_index_page_scripts_all_answer(tmp_path):
    app = create_app(make_config(tmp_path / "cache"))
    client = app.server.test_client()
    index = client.get("/").get_data(as_text=True)
    scripts = re.findall(r'<script src="([^"]+)"', index)
    for src in scripts:
        assert client.get(src).status_code == 200, src
    assert scripts


def _find(component, predicate, found=None):
    found = [] if found is None else found
    if predicate(component):
        found.append(component)
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if hasattr(child, "to_plotly_json"):
            _find(child, predicate, found)
    return found


def test_validation_layout_has_every_callback_id(tmp_path):
    app = create_app(make_config(tmp_path / "cache"))
    ids = {str(getattr(c, "id", None)) for c in _find(app.validation_layout, lambda c: True)}
    client = app.server.test_client()
    client.get("/")
    for dep in client.get("/_dash-dependencies").get_json():
        for item in [*dep["inputs"], *dep["state"]]:
            if not item["id"].startswith("{"):  # pattern ids are drawn per model
                assert item["id"] in ids, item
