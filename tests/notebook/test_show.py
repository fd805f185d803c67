"""app.notebook.show() in a real kernel: it serves the page on the notebook's models,
frees its port on stop(), and its folder goes with the kernel; framing headers."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import pytest

from app.config import AppConfig, ConfigError
from app.factory import create_app

NOTEBOOK = "http://127.0.0.1:8888"

START = """
import json
import numpy as np
from app.notebook import show, stop
rng = np.random.default_rng(0)
P = rng.dirichlet(np.ones(3), size=600)
y = np.array([rng.choice(3, p=row) for row in P])
sharp = P ** 2 / (P ** 2).sum(1, keepdims=True)
dashboard = show({{"alpha model": (P, y), "beta model": (sharp, y)}},
                 notebook_origin={origin!r}, url_host="127.0.0.1")
print(json.dumps({{"url": dashboard.url, "port": dashboard.port,
                  "folder": dashboard.folder.name}}))
"""


def start(kernel, origin: str = NOTEBOOK) -> tuple[dict, list[dict]]:
    """Run show() in the kernel: (its url, port and folder; the cell's outputs)."""
    outputs = kernel.run(START.format(origin=origin))
    printed = "".join(o.get("text", "") for o in outputs if o["type"] == "stream")
    line = [x for x in printed.splitlines() if x.startswith("{")][-1]
    return json.loads(line), outputs


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_show_serves_the_models_in_an_iframe_and_stop_frees_the_port(kernel):
    info, outputs = start(kernel)
    frames = [o["data"]["text/html"] for o in outputs if o["type"] == "display_data"]
    assert len(frames) == 1 and f'src="{info["url"]}"' in frames[0]
    with urllib.request.urlopen(info["url"], timeout=60) as response:
        assert response.status == 200
        headers = response.headers
    assert headers["Content-Security-Policy"].endswith(f"frame-ancestors {NOTEBOOK}")
    assert "X-Frame-Options" not in headers
    with urllib.request.urlopen(info["url"] + "_dash-layout", timeout=60) as response:
        layout = response.read().decode()
    assert "alpha model" in layout and "beta model" in layout
    assert "digits" not in layout  # the notebook's models replace the demo
    assert not port_is_free(info["port"])
    kernel.run("stop()")
    assert port_is_free(info["port"])
    assert not Path(info["folder"]).exists()
    assert "stopped" in kernel.text("print(repr(dashboard))")


def test_the_kernels_exit_stops_the_server_and_removes_its_folder(kernel):
    info, _outputs = start(kernel)
    assert Path(info["folder"]).is_dir()
    kernel.shutdown()
    assert not Path(info["folder"]).exists()
    assert port_is_free(info["port"])


def test_bad_models_get_a_message_and_start_nothing(kernel):
    printed = kernel.text(
        "from app.notebook import show\n"
        "from app.notebook.server import RUNNING\n"
        "try:\n"
        "    show({'m': ([[0.5, 0.7]], [0])})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "print('running', len(RUNNING))\n"
    )
    assert "CalibrationInputError" in printed and "running 0" in printed


@pytest.mark.parametrize("ancestors", [(), ("http://localhost:8888", "http://127.0.0.1:*")])
def test_framing_headers_allow_only_the_configured_origins(tmp_path, ancestors):
    config = AppConfig(cache_dir=tmp_path, secret_key="s" * 32, frame_ancestors=ancestors)
    response = create_app(config).server.test_client().get("/healthz")
    csp = response.headers["Content-Security-Policy"]
    frame = [d.strip() for d in csp.split(";") if d.strip().startswith("frame-ancestors")]
    if ancestors:
        assert frame == ["frame-ancestors " + " ".join(ancestors)]
        assert "X-Frame-Options" not in response.headers
    else:
        assert frame == ["frame-ancestors 'none'"]
        assert response.headers["X-Frame-Options"] == "DENY"


def test_frame_ancestors_are_read_from_the_environment_and_checked():
    env = {"FRAME_ANCESTORS": "http://localhost:8888, https://hub.example.org"}
    assert AppConfig.from_env(env).frame_ancestors == (
        "http://localhost:8888",
        "https://hub.example.org",
    )
    assert AppConfig.from_env({}).frame_ancestors == ()
    for bad in ("localhost:8888", "http://*", "http://host/path", "'none'", "file://*"):
        with pytest.raises(ConfigError, match="FRAME_ANCESTORS"):
            AppConfig.from_env({"FRAME_ANCESTORS": bad})
