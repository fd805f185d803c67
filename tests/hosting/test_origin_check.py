"""Cross-site request forgery: state-changing requests must come from the app's own pages.

The Flask test client's requests go to ``http://localhost``; a page on
another port of the same host (same-site, so ``SameSite=Lax`` lets the
cookie through) and a page of another site must both be refused, before a
session is created or replaced.
"""

from __future__ import annotations

import json

import pytest

from app.config import AppConfig, ConfigError
from app.factory import create_app
from app.origin_check import normalize_origin, own_origins

OWN = "http://localhost"
OTHER_PORT = "http://localhost:8081"
OTHER_SITE = "https://attacker.example"


@pytest.fixture
def dash_app(hosting_config):
    return create_app(hosting_config(allowed_origins=("https://dash.example.org",)))


def _victim(dash_app, dash_tab, make_csv):
    """A tab with one uploaded model: ``(tab, cookie, model handle)``."""
    tab = dash_tab(flask_client=dash_app.server.test_client()).load()
    status, body = tab.upload("mine.csv", make_csv(n=300, model="mine"))
    assert status == 200 and body["models"], body
    return tab, tab.cookie(), body["models"][0]["handle"]


def _post_upload(tab, make_csv, headers):
    """POST a file to ``/api/upload`` with these headers: ``(status, headers, JSON)``."""
    status, response_headers, body = tab.request(
        "POST",
        "/api/upload",
        files=[("planted.csv", make_csv(n=300, seed=5, model="planted"))],
        headers=headers,
    )
    return status, response_headers, json.loads(body)


def _models(tab) -> list[str]:
    status, _, body = tab.get("/_dash-layout")
    assert status == 200
    return [m for m in ("mine", "planted") if f'"{m}"' in body.decode()]


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": OTHER_PORT},
        {"Origin": OTHER_SITE},
        {"Origin": "null"},
        {"Referer": OTHER_PORT + "/attack.html"},
        {"Origin": OTHER_SITE, "Referer": OWN + "/"},  # Origin decides when present
    ],
    ids=["other-port", "other-site", "null", "referer-only", "origin-first"],
)
def test_a_cross_origin_upload_is_refused_and_changes_nothing(
    dash_app, dash_tab, make_csv, headers
):
    tab, cookie, _ = _victim(dash_app, dash_tab, make_csv)
    status, response_headers, body = _post_upload(tab, make_csv, headers)
    assert status == 403
    assert "not by this dashboard" in body["error"] and "ALLOWED_ORIGINS" in body["error"]
    assert "Set-Cookie" not in response_headers
    assert tab.cookie() == cookie
    assert _models(tab) == ["mine"]


def test_a_cross_site_post_without_a_cookie_creates_no_session(dash_app, dash_tab, make_csv):
    # A form posted from another site carries no cookie (SameSite=Lax): before the
    # check, the app made a new session for it and replaced the victim's cookie.
    stranger = dash_tab(flask_client=dash_app.server.test_client())
    status, response_headers, _ = _post_upload(stranger, make_csv, {"Origin": OTHER_SITE})
    assert status == 403
    assert "Set-Cookie" not in response_headers and stranger.cookie() is None


def test_a_cross_origin_callback_is_refused_in_plain_text(dash_app, dash_tab, make_csv):
    tab, cookie, _ = _victim(dash_app, dash_tab, make_csv)
    body = json.dumps(tab.payload("metrics-grid.rowData", ["model-select.value"], {}))
    status, headers, answer = tab.request(
        "POST",
        "/_dash-update-component",
        data=body,
        headers={"Content-Type": "application/json", "Origin": OTHER_PORT},
    )
    assert status == 403 and headers["Content-Type"].startswith("text/plain")
    assert b"not by this dashboard" in answer
    assert "Set-Cookie" not in headers and tab.cookie() == cookie


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": OWN},
        {"Origin": "https://localhost"},  # a TLS proxy that does not forward the scheme
        {"Referer": OWN + "/?x=1"},
        {"Origin": "https://dash.example.org"},  # ALLOWED_ORIGINS
        {},  # not a browser: curl, scripts (no victim's cookie to abuse)
    ],
    ids=["own-origin", "own-host-https", "own-referer", "allow-listed", "no-headers"],
)
def test_same_origin_and_allow_listed_uploads_go_through(dash_app, dash_tab, make_csv, headers):
    tab, _, _ = _victim(dash_app, dash_tab, make_csv)
    status, _, body = _post_upload(tab, make_csv, headers)
    assert status == 200 and body["models"], body
    assert _models(tab) == ["mine", "planted"]


def test_reads_are_not_checked(dash_app, dash_tab):
    tab = dash_tab(flask_client=dash_app.server.test_client())
    status, _, _ = tab.request("GET", "/", headers={"Origin": OTHER_SITE})
    assert status == 200


def test_origins_are_compared_normalized():
    assert normalize_origin("HTTPS://Dash.Example.org:443/x?y") == "https://dash.example.org"
    assert normalize_origin("http://[::1]:8050") == "http://[::1]:8050"
    assert normalize_origin("null") is None and normalize_origin("ftp://x") is None
    assert own_origins("http", "localhost:8050") == {
        "http://localhost:8050",
        "https://localhost:8050",
    }
    assert own_origins("https", "example.org") == {"https://example.org"}


def test_allowed_origins_from_the_environment():
    config = AppConfig.from_env(
        {"ALLOWED_ORIGINS": " https://A.example.org/ ,http://10.0.0.5:8050"}
    )
    assert config.allowed_origins == ("https://a.example.org", "http://10.0.0.5:8050")
    with pytest.raises(ConfigError, match="ALLOWED_ORIGINS"):
        AppConfig.from_env({"ALLOWED_ORIGINS": "https://example.org/path"})
