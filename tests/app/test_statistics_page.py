"""/statistics: docs/statistics.md served by the app and linked from every diagnostic."""

from __future__ import annotations

import re

from app.factory import create_app
from app.layout.diagnostics import diagnostics_section
from app.statistics_page import (
    STATISTICS_PATH,
    markdown_html,
    statistics_link,
    statistics_source,
)

from .conftest import make_config


def _links(component) -> list[str]:
    """Every href under a Dash component tree."""
    found = []
    href = getattr(component, "href", None)
    if isinstance(href, str):
        found.append(href)
    children = getattr(component, "children", None)
    if not isinstance(children, (list, tuple)):
        children = [children]
    for child in children:
        if hasattr(child, "to_plotly_json"):
            found += _links(child)
    return found


def test_markdown_subset_is_rendered_and_escaped():
    text = (
        "# Title\n\nA **bold** `x < y` and [link](https://e.x).\n\n- one\n- two <b>\n\n"
        "| a | b |\n|---|---|\n| 1 | <i>2</i> |\n"
    )
    out = markdown_html(text)
    assert '<h1 id="title">Title</h1>' in out
    assert "<strong>bold</strong> <code>x &lt; y</code>" in out
    assert '<a href="https://e.x">link</a>' in out
    assert "<li>two &lt;b&gt;</li>" in out
    assert "<td>&lt;i&gt;2&lt;/i&gt;</td>" in out and "---" not in out
    assert markdown_html("#no-space heading\n") == "<p>#no-space heading</p>"  # no endless loop
    bold_code = markdown_html("**Default (`a<b`):** text")
    assert bold_code == "<p><strong>Default (<code>a&lt;b</code>):</strong> text</p>"


def test_route_serves_the_doc_and_every_card_link_has_its_anchor(tmp_path):
    client = create_app(make_config(tmp_path)).server.test_client()
    response = client.get(STATISTICS_PATH)
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    assert statistics_source().name == "statistics.md"
    assert "What the statistics promise" in page and "<table>" in page
    anchors = set(re.findall(r'id="([^"]+)"', page))
    links = [h for h in _links(diagnostics_section([], [])) if h.startswith(statistics_link())]
    assert len(links) >= 7  # one per diagnostic card
    for href in links:
        anchor = href.partition("#")[2]
        assert anchor in anchors, href
