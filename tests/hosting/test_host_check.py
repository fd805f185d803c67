"""DNS rebinding: requests whose ``Host`` is not in ``ALLOWED_HOSTS`` get 400 and nothing else.

A rebinding page sends ``Host: evil.example`` and a matching ``Origin``
(its own), which the same-origin check alone takes for the app's own.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from app.config import AppConfig, ConfigError
from app.factory import create_app
from app.host_check import HostCheck, host_allowed, host_name
from app.server import with_bound_host

from .conftest import REPO, SECRET

EVIL = "http://evil.example:8050"
PUBLIC = "https://dash.example.org"


@pytest.fixture
def dash_app(hosting_config):
    return create_app(hosting_config(app_env="production", allowed_hosts=("dash.example.org",)))


def _open(client, method: str, path: str, base_url: str, **kwargs):
    origin = base_url.rsplit(":", 1)[0] if base_url.count(":") > 1 else base_url
    headers = {"Origin": origin, **kwargs.pop("headers", {})}
    return client.open(path, method=method, base_url=base_url, headers=headers, **kwargs)


def _callback_body(dash_app) -> str:
    """A view callback request as the page sends it (from the app's own dependencies)."""
    deps = dash_app.server.test_client().get("/_dash-dependencies", base_url=PUBLIC).get_json()
    dep = next(d for d in deps if "metrics-grid.rowData" in d["output"])
    fill = [{**i, "value": None} for i in dep["inputs"]]
    return json.dumps(
        {"output": dep["output"], "outputs": [], "inputs": fill, "changedPropIds": []}
    )


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/"),
        ("GET", "/_dash-layout"),
        ("POST", "/_dash-update-component"),
        ("POST", "/api/upload"),
        ("GET", "/healthz"),
    ],
)
def test_a_foreign_host_gets_400_and_no_session_or_data(dash_app, make_csv, method, path):
    client = dash_app.server.test_client()
    kwargs = {}
    if path == "/api/upload":
        kwargs = {"data": {"file": [(io.BytesIO(make_csv(n=50)), "m.csv")]}}
    elif method == "POST":
        kwargs = {"data": _callback_body(dash_app), "content_type": "application/json"}
    response = _open(client, method, path, EVIL, **kwargs)
    assert response.status_code == 400
    assert "Set-Cookie" not in response.headers
    assert response.mimetype == "text/plain"
    body = response.get_data(as_text=True)
    assert "evil.example" in body and "ALLOWED_HOSTS" in body
    assert "demo" not in body and "models" not in body


def test_an_allowed_host_is_served_and_its_sub_domains_only_when_listed(hosting_config):
    app = create_app(hosting_config(allowed_hosts=("dash.example.org", ".team.example")))
    client = app.server.test_client()
    for base in (PUBLIC, "http://DASH.example.org.:8050", "http://a.team.example"):
        response = _open(client, "GET", "/_dash-layout", base)
        assert response.status_code == 200, base
        assert "calibration_session" in response.headers.get("Set-Cookie", "")
    for base in ("http://example.org", "http://xdash.example.org", "http://team.example.evil"):
        assert _open(client, "GET", "/_dash-layout", base).status_code == 400, base


def test_loopback_hosts_are_answered_on_healthz_only_in_production(dash_app):
    client = dash_app.server.test_client()
    for base in ("http://127.0.0.1:8050", "http://localhost", "http://[::1]:8050"):
        response = client.get("/healthz", base_url=base)
        assert response.status_code == 200 and response.get_json() == {"status": "ok"}
        assert client.get("/_dash-layout", base_url=base).status_code == 400


def test_a_forwarded_host_is_not_believed(dash_app):
    client = dash_app.server.test_client()
    response = client.get(
        "/_dash-layout", base_url=EVIL, headers={"X-Forwarded-Host": "dash.example.org"}
    )
    assert response.status_code == 400


def test_outside_production_the_loopback_names_and_the_bound_address_are_the_default(
    hosting_config,
):
    config = hosting_config()
    assert config.allowed_hosts == ()
    client = create_app(with_bound_host(config, "10.1.2.3")).server.test_client()
    for base in ("http://localhost", "http://127.0.0.1:8050", "http://10.1.2.3:8050"):
        assert client.get("/_dash-layout", base_url=base).status_code == 200, base
    assert client.get("/_dash-layout", base_url=EVIL).status_code == 400
    assert with_bound_host(config, "0.0.0.0").allowed_hosts == ()


def test_host_names_are_read_and_matched_as_django_does():
    assert host_name("Dash.Example.org.:443") == "dash.example.org"
    assert host_name("[::1]:8050") == "::1"
    for bad in ("", None, "a b", "evil.example/x", "user@host", "host:port"):
        assert host_name(bad) is None
    assert host_allowed("a.b.example", (".example",)) and host_allowed("example", (".example",))
    assert not host_allowed("badexample", (".example",))
    assert host_allowed("anything.at.all", ("*",))
    assert not HostCheck().permits("evil.example", "/")
    assert HostCheck().permits("localhost:8050", "/")
    assert not HostCheck(("x.org",)).permits(None, "/healthz")


def test_allowed_hosts_is_read_checked_and_required_in_production():
    env = {"ALLOWED_HOSTS": " Dash.Example.org , .team.example,[::1], 10.0.0.5 "}
    assert AppConfig.from_env(env).allowed_hosts == (
        "dash.example.org",
        ".team.example",
        "::1",
        "10.0.0.5",
    )
    for bad in ("https://dash.example.org", "dash.example.org:8050", "host/path", "*.example"):
        with pytest.raises(ConfigError, match="ALLOWED_HOSTS must be"):
            AppConfig.from_env({"ALLOWED_HOSTS": bad})
    production = {"APP_ENV": "production", "SECRET_KEY": SECRET}
    with pytest.raises(ConfigError, match="ALLOWED_HOSTS is required when APP_ENV=production"):
        AppConfig.from_env(production)
    assert AppConfig.from_env({**production, "ALLOWED_HOSTS": "*"}).allowed_hosts == ("*",)


def test_the_supervisor_reports_a_missing_allowed_hosts_in_one_line_and_exits_2(tmp_path):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(REPO),
        "APP_ENV": "production",
        "SECRET_KEY": SECRET,
        "CACHE_DIR": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "app.supervisor"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "configuration error: ALLOWED_HOSTS is required" in lines[0]
