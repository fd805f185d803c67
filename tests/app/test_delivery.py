"""Compressed responses and browser caching of static files (``app/delivery.py``, issue 30).

Every script and style sheet the page references comes compressed when the
request asks for gzip or brotli and decompresses to the bytes sent plain;
versioned static addresses are cached for a year, others revalidated; the
compressed static files are kept once per file and algorithm; streamed
responses (the exports) are neither compressed nor buffered.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re

import brotli
import pytest

import app.callbacks.exports as export_route
from app.delivery import UNVERSIONED, VERSIONED, CompressedFiles
from app.factory import create_app, finish_setup

from .conftest import make_config

DECOMPRESS = {"gzip": gzip.decompress, "br": brotli.decompress}


@pytest.fixture(scope="module")
def dash_app(tmp_path_factory):
    dash_app = create_app(make_config(tmp_path_factory.mktemp("delivery")))
    finish_setup(dash_app)
    return dash_app


def get(dash_app, path: str, encoding: str = "identity", **headers):
    return dash_app.server.test_client().get(path, headers={"Accept-Encoding": encoding, **headers})


def page_files(dash_app) -> list[str]:
    """The addresses of the scripts and style sheets the page's HTML references."""
    html = get(dash_app, "/").get_data(as_text=True)
    scripts = re.findall(r'<script src="([^"]+)"', html)
    sheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', html)
    assert len(scripts) > 10 and len(sheets) >= 2, html[:1000]
    return scripts + sheets


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_every_script_and_style_sheet_of_the_page_comes_compressed(dash_app, encoding):
    for path in page_files(dash_app):
        plain = get(dash_app, path)
        sent = get(dash_app, path, encoding)
        assert plain.status_code == sent.status_code == 200, path
        assert "Content-Encoding" not in plain.headers, path
        assert sent.headers["Content-Encoding"] == encoding, path
        assert "Accept-Encoding" in sent.headers["Vary"], path
        assert int(sent.headers["Content-Length"]) == len(sent.data) < len(plain.data), path
        assert DECOMPRESS[encoding](sent.data) == plain.data, path


def test_the_page_the_layout_and_the_preferred_algorithm(dash_app):
    # Each answer is a new session's (ids differ): it decompresses to a page and a layout.
    page = get(dash_app, "/", "gzip")
    assert page.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(page.data).startswith(b"<!DOCTYPE html>")
    layout = get(dash_app, "/_dash-layout", "gzip")
    assert layout.headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(layout.data))["type"] == "Div"
    # Chromium's header: brotli is preferred on a tie; a quality factor decides otherwise.
    script = page_files(dash_app)[0]
    assert get(dash_app, script, "gzip, deflate, br, zstd").headers["Content-Encoding"] == "br"
    assert get(dash_app, script, "br;q=0.5, gzip").headers["Content-Encoding"] == "gzip"
    assert "Content-Encoding" not in get(dash_app, "/healthz", "gzip").headers  # too short


def test_the_page_keeps_its_csp_hashes_of_the_inline_scripts(dash_app):
    sent = get(dash_app, "/", "br")
    html = brotli.decompress(sent.data).decode()
    inline = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert inline
    for script in inline:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in sent.headers["Content-Security-Policy"]


def test_versioned_static_files_are_cached_for_a_year_others_revalidated(dash_app):
    files = page_files(dash_app)
    for path in files:  # fingerprinted bundles and /assets/...?m=
        assert get(dash_app, path).headers["Cache-Control"] == VERSIONED, path
    (plotly,) = [p for p in files if "/assets/vendor/plotly-basic.min.js?m=" in p]
    assert get(dash_app, plotly, "br").headers["Cache-Control"] == VERSIONED
    unversioned = [
        plotly.split("?")[0],
        "/assets/style.css",
        "/_dash-component-suites/dash/dcc/async-graph.js",  # a chunk loaded on demand
        "/_dash-component-suites/dash_ag_grid/async-community.js",
    ]
    for path in unversioned:
        sent = get(dash_app, path, "gzip")
        assert sent.status_code == 200 and sent.headers["Content-Encoding"] == "gzip", path
        assert sent.headers["Cache-Control"] == UNVERSIONED, path
    # The page itself and the layout hold a session's data: never stored.
    assert get(dash_app, "/").headers["Cache-Control"] == "no-store"
    assert get(dash_app, "/_dash-layout").headers["Cache-Control"] == "no-store"


def test_compressed_static_files_are_kept_once_per_file_and_algorithm(dash_app):
    cache = dash_app.server.config["COMPRESS_CACHE_BACKEND"]()
    assert isinstance(cache, CompressedFiles)
    plotly = next(p for p in page_files(dash_app) if "plotly-basic" in p)
    before = len(cache)
    first = get(dash_app, plotly, "br").data
    kept = len(cache)
    assert kept <= before + 1
    # Again, under other versions of its address, and the layout: nothing more is kept.
    for path in (plotly, plotly.split("?")[0], plotly.split("?")[0] + "?m=1"):
        assert get(dash_app, path, "br").data == first
    get(dash_app, "/_dash-layout", "br")
    assert len(cache) == kept
    get(dash_app, plotly, "gzip")
    assert len(cache) <= kept + 1


def test_the_cache_keeps_static_files_only():
    cache = CompressedFiles()
    cache.set("br;", b"a page")  # a response that is not a static file: no identity
    cache.set("br;0123abcd", b"a file")
    assert len(cache) == 1
    assert cache.get("br;0123abcd") == b"a file" and cache.get("gzip;0123abcd") is None


# A stream of each type the exports send, and one of a type compressed when not streamed.
@pytest.mark.parametrize("mimetype", ["text/csv", "application/zip", "application/json"])
def test_a_streamed_export_streams_uncompressed(dash_app, monkeypatch, mimetype):
    made: list[int] = []

    def chunks():
        for i in range(3):
            made.append(i)
            yield f"chunk {i}\n".encode() * 200

    def fake_export(ctx, sid, token):
        return "calibrated.csv", mimetype, chunks()

    monkeypatch.setattr(export_route, "export_stream", fake_export)
    client = dash_app.server.test_client()
    response = client.get("/api/export/token", headers={"Accept-Encoding": "gzip, br"},
                          buffered=False)  # fmt: skip
    try:
        assert response.status_code == 200
        assert response.is_streamed and "Content-Length" not in response.headers
        assert "Content-Encoding" not in response.headers
        parts = iter(response.response)
        assert next(parts) == b"chunk 0\n" * 200
        assert made == [0]  # the first chunk left before the next one was made
        assert b"".join(parts) == b"chunk 1\n" * 200 + b"chunk 2\n" * 200
    finally:
        response.close()
