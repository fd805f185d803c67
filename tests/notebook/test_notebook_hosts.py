"""The notebook's dashboard answers only its own host names and is framed only by the
notebook front ends: JupyterLab, Jupyter Notebook, VS Code (desktop and web)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from app.factory import create_app
from app.notebook.server import LOCAL_NOTEBOOKS, notebook_config
from app.token_check import token_prefix

#: Each front end: the origin of the page that holds the IFrame.
FRONT_ENDS = {
    "JupyterLab": "http://localhost:8888",
    "Jupyter Notebook": "http://127.0.0.1:8889",
    "JupyterLab over https": "https://localhost:9443",
    "VS Code desktop": "vscode-webview://1h2v8f0q3kd7mdjo2dp7gb9bumqehi2u3hqtsbn3smr1bmk9cm5m",
    "VS Code web": "https://0a1b2c3d4e5f.vscode-cdn.net",
}


def source_matches(source: str, origin: str) -> bool:
    """Whether a CSP source ``scheme://host[:port]`` (``*`` host, ``*.`` sub-domains,
    ``*`` port) matches ``origin``."""
    scheme, _, rest = source.partition("://")
    url = urlsplit(origin)
    host, _, port = rest.partition(":")
    name = url.hostname or ""
    host_ok = host in ("*", name) or (host.startswith("*.") and name.endswith(host[1:]))
    port_ok = port == "*" or port == ("" if url.port is None else str(url.port))
    return scheme == url.scheme and host_ok and port_ok


@pytest.fixture(scope="module")
def notebook_app(tmp_path_factory):
    config = notebook_config(tmp_path_factory.mktemp("notebook"), "127.0.0.1", "localhost")
    return create_app(config)


@pytest.fixture(scope="module")
def prefix(notebook_app) -> str:
    """The path every request carries: the notebook's token (app.token_check)."""
    return token_prefix(notebook_app.server.extensions["calibration_dashboard"].config.access_token)


def _frame_ancestors(response) -> list[str]:
    csp = response.headers["Content-Security-Policy"]
    directive = [d.split()[1:] for d in csp.split(";") if d.split()[:1] == ["frame-ancestors"]]
    return directive[0]


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_each_notebook_front_end_may_frame_the_page(notebook_app, prefix, front_end):
    origin = FRONT_ENDS[front_end]
    response = notebook_app.server.test_client().get(
        prefix, base_url="http://localhost:8050", headers={"Referer": origin + "/lab"}
    )
    assert response.status_code == 200 and b"_dash-config" in response.data
    assert "X-Frame-Options" not in response.headers
    sources = _frame_ancestors(response)
    assert any(source_matches(s, origin) for s in sources), (origin, sources)


def test_other_sites_may_not_frame_the_page(notebook_app, prefix):
    sources = _frame_ancestors(notebook_app.server.test_client().get(prefix + "healthz"))
    assert sources == list(LOCAL_NOTEBOOKS)
    for origin in (
        "https://evil.example",
        "http://evil.example:8888",
        "https://vscode-cdn.net.evil.example",
    ):
        assert not any(source_matches(s, origin) for s in sources), origin


def test_the_framing_list_is_overridden_by_the_argument_then_the_environment(tmp_path, monkeypatch):
    config = notebook_config(tmp_path, "127.0.0.1", "localhost", "http://localhost:8888")
    assert config.frame_ancestors == ("http://localhost:8888",)
    monkeypatch.setenv("FRAME_ANCESTORS", "https://hub.example.org, http://localhost:*")
    config = notebook_config(tmp_path, "127.0.0.1", "localhost")
    assert config.frame_ancestors == ("https://hub.example.org", "http://localhost:*")


@pytest.mark.parametrize("host", ["evil.example:8050", "evil.example", "10.0.0.7:8050"])
def test_a_rebinding_page_gets_400_and_no_models_or_numbers(notebook_app, prefix, host):
    client = notebook_app.server.test_client()
    origin = f"http://{host}"
    for path in ("", "_dash-layout", "_dash-dependencies"):  # even with the token
        response = client.get(prefix + path, base_url=origin, headers={"Origin": origin})
        assert response.status_code == 400, path
        assert "Set-Cookie" not in response.headers
        assert b"demo" not in response.data and b"props" not in response.data
    response = client.post(
        prefix + "_dash-update-component", base_url=origin, headers={"Origin": origin}, json={}
    )
    assert response.status_code == 400


@pytest.mark.parametrize("host", ["localhost:8050", "127.0.0.1:8050", "[::1]:8050"])
def test_its_own_host_names_are_served(notebook_app, prefix, host):
    response = notebook_app.server.test_client().get(
        prefix + "_dash-layout", base_url=f"http://{host}"
    )
    assert response.status_code == 200


def test_the_bound_and_iframe_host_names_are_allowed(tmp_path):
    config = notebook_config(tmp_path, "10.0.0.5", "my-box.local")
    assert config.allowed_hosts == ("localhost", "127.0.0.1", "::1", "10.0.0.5", "my-box.local")
