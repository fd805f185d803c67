"""The notebook's dashboard answers only requests that carry its random token: in the
path (``/t/<token>/...``, what the IFrame opens, so it works without cookies), once in
``?token=`` (then a cookie), or in that cookie; anything else gets 403 and no data."""

from __future__ import annotations

import hmac
import json
import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from app import token_check
from app.callbacks.exports import EXPORT_PATH, export_url
from app.factory import create_app
from app.notebook.server import notebook_config
from app.statistics_page import statistics_link
from app.token_check import TokenCheck, token_prefix

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "example_predictions.csv"
BASE = "http://localhost:8050"
GUARDED = [
    ("GET", "/"),
    ("GET", "/_dash-layout"),
    ("GET", "/_dash-dependencies"),
    ("POST", "/_dash-update-component"),
    ("POST", "/api/upload"),
    ("GET", EXPORT_PATH + "x"),
    ("GET", "/statistics"),
    ("GET", "/assets/upload.js"),
    ("GET", "/healthz"),
]


@pytest.fixture(scope="module")
def notebook_app(tmp_path_factory):
    config = notebook_config(tmp_path_factory.mktemp("notebook"), "127.0.0.1", "localhost")
    return create_app(config)


@pytest.fixture
def token(notebook_app) -> str:
    return notebook_app.server.extensions["calibration_dashboard"].config.access_token


def _call(client, method: str, path: str, **kwargs):
    return client.open(path, method=method, base_url=BASE, **kwargs)


def _refused(response) -> bool:
    body = response.get_data()
    return (
        response.status_code == 403
        and response.mimetype == "text/plain"
        and "Set-Cookie" not in response.headers
        and b"demo" not in body
        and b"props" not in body
    )


def test_each_notebook_has_its_own_long_token(tmp_path):
    first = notebook_config(tmp_path, "127.0.0.1", "localhost").access_token
    second = notebook_config(tmp_path, "127.0.0.1", "localhost").access_token
    assert first and second and first != second and len(first) >= 43
    assert "access_token" not in repr(notebook_config(tmp_path, "127.0.0.1", "localhost"))


@pytest.mark.parametrize(("method", "path"), GUARDED)
def test_without_the_token_every_path_gets_403(notebook_app, method, path):
    response = _call(notebook_app.server.test_client(), method, path)
    assert _refused(response), (path, response.status_code)


@pytest.mark.parametrize(("method", "path"), GUARDED)
def test_a_wrong_token_gets_403_everywhere(notebook_app, token, method, path):
    client = notebook_app.server.test_client()
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    for attempt in (token_prefix(wrong).rstrip("/") + path, f"{path}?token={wrong}"):
        assert _refused(_call(client, method, attempt)), attempt
    client.set_cookie(TokenCheck(token).cookie_name, wrong, domain="localhost")
    assert _refused(_call(client, method, path))


def test_the_token_is_compared_in_constant_time(notebook_app, token, monkeypatch):
    compared = []

    def spy(a, b):
        compared.append((a, b))
        return hmac.compare_digest(a, b)

    monkeypatch.setattr(token_check, "compare_digest", spy)
    client = notebook_app.server.test_client()
    assert _call(client, "GET", token_prefix(token) + "_dash-layout").status_code == 200
    assert _call(client, "GET", "/t/guess/_dash-layout").status_code == 403
    assert [b for _a, b in compared] == [token.encode()] * 2


def test_under_the_token_path_the_page_and_dash_work_without_cookies(notebook_app, token):
    client = notebook_app.server.test_client(use_cookies=False)
    prefix = token_prefix(token)
    page = _call(client, "GET", prefix)
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    config = re.search(r'<script id="_dash-config"[^>]*>(.*?)</script>', html, re.S)
    assert json.loads(config[1])["requests_pathname_prefix"] == prefix
    assert f'src="{prefix}_dash-component-suites/' in html
    assert f"{prefix}assets/upload.js" in html
    assert _call(client, "GET", prefix + "_dash-layout").status_code == 200
    assert _call(client, "GET", prefix + "assets/upload.js").status_code == 200
    assert _call(client, "GET", prefix + "statistics").status_code == 200


def test_the_query_token_sets_a_cookie_then_the_cookie_alone_is_enough(notebook_app, token):
    client = notebook_app.server.test_client()
    first = _call(client, "GET", f"/?token={token}&models=demo-0")
    assert first.status_code == 302
    target = urlsplit(first.headers["Location"])
    assert target.path == token_prefix(token) and target.query == "models=demo-0"
    cookie = [c for c in first.headers.getlist("Set-Cookie") if c.startswith("calibration_token")]
    assert len(cookie) == 1 and token in cookie[0]
    assert "HttpOnly" in cookie[0] and "SameSite=Lax" in cookie[0] and "Path=/;" in cookie[0]
    assert _call(client, "GET", "/").status_code == 200
    assert _call(client, "GET", "/_dash-layout").status_code == 200


def test_two_notebooks_on_one_host_keep_their_cookies_apart(tmp_path):
    first = TokenCheck(notebook_config(tmp_path, "127.0.0.1", "localhost").access_token)
    second = TokenCheck(notebook_config(tmp_path, "127.0.0.1", "localhost").access_token)
    assert first.cookie_name != second.cookie_name  # cookies ignore ports


def test_the_token_check_runs_after_the_host_check(notebook_app, token):
    client = notebook_app.server.test_client()
    response = client.get(token_prefix(token), base_url="http://evil.example:8050")
    assert response.status_code == 400


def test_upload_export_and_statistics_links_work_under_the_token_path(notebook_app, token):
    client = notebook_app.server.test_client()
    page = BASE + token_prefix(token)
    assert client.get(page).status_code == 200  # the page gives the session
    data = {"file": [(EXAMPLE.open("rb"), "example.csv")]}
    upload = client.post(urljoin(page, "api/upload"), data=data)
    assert upload.status_code == 200 and upload.json["models"], upload.get_data(as_text=True)
    export = urljoin(page, export_url("unknown"))
    assert urlsplit(export).path.startswith(token_prefix(token))
    assert client.get(export).status_code == 404  # the export route, which knows no such export
    statistics = urljoin(page, statistics_link("hosmer-lemeshow"))
    assert urlsplit(statistics).path == token_prefix(token) + "statistics"
    assert client.get(statistics).status_code == 200


def test_the_scripts_take_their_addresses_from_the_page():
    upload_js = (EXAMPLE.parent / "upload.js").read_text()
    assert '"/api/upload"' not in upload_js and "requests_pathname_prefix" in upload_js
    assert '"/api/export/"' not in (EXAMPLE.parent / "downloads.js").read_text()
