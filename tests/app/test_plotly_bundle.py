"""The page loads plotly.js's "basic" partial bundle (assets/vendor/plotly-basic.min.js).

dcc.Graph uses ``window.Plotly`` when a script has defined it, instead of
loading the full 4.8 MB plotly.min.js, whose evaluation took 1.7 s of the
first paint in headless Chromium on the 2-core machine (0.27 s for the basic
bundle). The basic bundle draws only scatter, bar and pie traces, so every
figure the dashboard builds must stay within them, and the bundle must be
the plotly.js version the Python plotly package targets.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import plotly

from app.factory import ASSETS_DIR, create_app

from .conftest import make_config

BUNDLE = ASSETS_DIR / "vendor" / "plotly-basic.min.js"
BASIC_TRACES = {"scatter", "bar", "pie"}
APP_DIR = Path(__file__).resolve().parents[2] / "app"


def _version(head: str) -> str:
    match = re.search(r"plotly\.js(?: \([^)]*\))? v(\d+\.\d+\.\d+)", head)
    assert match, head[:200]
    return match.group(1)


def test_bundle_is_the_plotly_js_version_of_the_python_package():
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    ours = _version(BUNDLE.read_text(encoding="utf-8")[:400])
    theirs = _version(full.read_text(encoding="utf-8")[:400])
    assert ours == theirs, (
        f"assets/vendor/plotly-basic.min.js is plotly.js {ours} but the installed plotly "
        f"package targets {theirs}: replace it with plotly.js-basic-dist-min@{theirs} "
        "(see docs/dashboard.md)."
    )
    assert "(basic - minified)" in BUNDLE.read_text(encoding="utf-8")[:200]


def _layout_traces(node, found: set[str]) -> None:
    if isinstance(node, dict):
        if node.get("type") == "Graph" and isinstance(node.get("props"), dict):
            figure = node["props"].get("figure") or {}
            for trace in figure.get("data") or []:
                found.add(trace.get("type", "scatter"))
        for value in node.values():
            _layout_traces(value, found)
    elif isinstance(node, list):
        for value in node:
            _layout_traces(value, found)


def test_page_loads_the_bundle_and_its_figures_use_only_basic_traces(tmp_path):
    app = create_app(make_config(tmp_path))
    client = app.server.test_client()
    index = client.get("/").get_data(as_text=True)
    assert re.search(r'<script src="/assets/vendor/plotly-basic\.min\.js\?m=[\d.]+"', index)
    layout = client.get("/_dash-layout").get_json()
    found: set[str] = set()
    _layout_traces(layout, found)
    assert found, "the demo page should arrive with its reliability diagrams drawn"
    assert found <= BASIC_TRACES, found - BASIC_TRACES


def test_figure_builders_use_only_basic_trace_types():
    """Every trace-like dict literal in app/ (keys x or y and a constant type)."""
    used: dict[str, list[str]] = {}
    for path in APP_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Dict):
                continue
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if "type" not in keys or not keys & {"x", "y"} or "x0" in keys:
                continue  # not a trace (shapes have x0/x1)
            value = node.values[[getattr(k, "value", None) for k in node.keys].index("type")]
            if isinstance(value, ast.Constant):
                used.setdefault(value.value, []).append(f"{path.name}:{node.lineno}")
    assert {"scatter", "bar"} <= set(used), used  # the scan does see the builders
    outside = {t: where for t, where in used.items() if t not in BASIC_TRACES}
    assert not outside, f"trace types the basic plotly.js bundle cannot draw: {outside}"
