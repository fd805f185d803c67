"""``compose.yaml``, checked without a container engine: parsed, and held to the design.

The stack itself runs natively in test_jobs.py (redis-server, the Celery worker and
gunicorn with the commands checked here) and test_proxy.py (Debian's nginx with the
proxy's configuration file, the one mounted here); ``podman-compose config`` parses
the file as the engine would (``.ci/run`` installs podman for it).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from app.config import MB, AppConfig
from app.supervisor import WORKER_ENV, web_command, worker_command
from app.upload import MULTIPART_SLACK

from ..external_tools import require_tool
from .conftest import NGINX_DEFAULTS

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "compose.yaml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def _dockerfile_env(name: str) -> str:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    return re.search(rf"\b{name}=(\S+)", text).group(1)


SERVICES = {"proxy", "web", "worker", "redis"}


def test_the_services_proxy_web_worker_and_redis(compose):
    services = compose["services"]
    assert set(services) == SERVICES
    # The same commands as the supervisor of the image run alone (python -m ...).
    assert services["web"]["command"][1:] == web_command()[1:]
    assert services["worker"]["command"][1:] == worker_command()[1:]
    assert services["web"]["command"][0] == services["worker"]["command"][0] == "python"
    assert "ports" not in services["web"]  # reachable through the proxy only
    assert re.fullmatch(r"redis:\d+\.\d+\.\d+-\w+", services["redis"]["image"])
    assert services["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_web_and_worker_share_the_store_and_redis(compose):
    cache_dir = _dockerfile_env("CACHE_DIR")
    services = compose["services"]
    for name in ("web", "worker"):
        service = services[name]
        env = service["environment"]
        assert service["build"] == "."
        assert env["APP_ENV"] == "production"
        assert env["CACHE_DIR"] == cache_dir
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert env["SECRET_KEY"].startswith("${SECRET_KEY:?")  # required, never a default
        assert env["ALLOWED_HOSTS"].startswith("${ALLOWED_HOSTS:?")  # required too
        assert service["volumes"] == [f"cache:{cache_dir}"]
        assert service["depends_on"]["redis"]["condition"] == "service_healthy"
    assert "cache" in compose["volumes"]
    assert services["worker"]["environment"]["JOB_WORKERS"] == "${JOB_WORKERS:-2}"
    for name, value in WORKER_ENV.items():  # as app.supervisor starts its worker
        assert services["worker"]["environment"][name] == value
    assert services["worker"]["healthcheck"] == {"disable": True}  # no web server in it


def test_the_proxy_runs_the_deploy_template_in_front_of_web(compose):
    proxy = compose["services"]["proxy"]
    assert proxy["ports"] == ["8050:8050"]  # the only published port
    assert re.fullmatch(r"nginx:1\.22\.\d+", proxy["image"])  # Debian bookworm's nginx
    assert proxy["volumes"] == [
        "./deploy/nginx.conf.template:/etc/nginx/templates/default.conf.template:ro"
    ]
    env = proxy["environment"]
    assert env["DASHBOARD_UPSTREAM"] == "web:8050" and env["PROXY_LISTEN"] == "8050"
    assert env["SERVER_NAME"].startswith("${SERVER_NAME:?")  # the public names, required
    assert "web" in proxy["depends_on"]
    # The image substitutes only variables it has: every one the template uses.
    template = (REPO / "deploy" / "nginx.conf.template").read_text(encoding="utf-8")
    assert set(re.findall(r"\$\{([A-Z_]+)\}", template)) == set(env)
    # Its defaults are the test fixture's (conftest.NGINX_DEFAULTS), so the tests run
    # the configuration compose runs.
    for name, value in NGINX_DEFAULTS.items():
        assert env[name] == f"${{{name}:-{value}}}", name


def test_the_proxy_body_limit_sits_just_above_the_app_limit(compose):
    app_mb = int(
        re.fullmatch(r"\$\{MAX_UPLOAD_MB:-(\d+)\}", compose["x-settings"]["MAX_UPLOAD_MB"])[1]
    )
    assert app_mb == AppConfig().max_upload_mb
    proxy_mb = re.fullmatch(
        r"\$\{CLIENT_MAX_BODY_SIZE:-(\d+)m\}",
        compose["services"]["proxy"]["environment"]["CLIENT_MAX_BODY_SIZE"],
    )[1]
    assert int(proxy_mb) * MB >= app_mb * MB + MULTIPART_SLACK  # the app's 413 message wins
    assert int(proxy_mb) <= app_mb + 1


def test_web_trusts_forwarded_headers_from_private_ranges_only(compose):
    web = compose["services"]["web"]["environment"]
    allowed = re.fullmatch(r"\$\{FORWARDED_ALLOW_IPS:-(.+)\}", web["FORWARDED_ALLOW_IPS"])[1]
    config = AppConfig.from_env({"FORWARDED_ALLOW_IPS": allowed})
    assert all(ipaddress.ip_network(n).is_private for n in config.forwarded_allow_ips)


def test_every_variable_has_a_default_or_is_required():
    text = COMPOSE.read_text(encoding="utf-8")
    for ref in re.findall(r"\$\{([^}]*)\}", text):
        assert re.fullmatch(r"[A-Z_]+(:-[^}]*|:\?.+)", ref), ref


def _podman_compose() -> str:
    """podman-compose (test extra) beside this interpreter or on PATH; it needs podman.

    Skipped without them, except under CI, whose ``.ci/run`` installs both.
    """
    require_tool("podman")
    scripts = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    tool = shutil.which("podman-compose", path=scripts)
    if tool is None:
        reason = "podman-compose config needs podman-compose (the test extra)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: .ci/run installs it.")
        pytest.skip(reason)
    return tool


def test_podman_compose_reads_it():
    done = subprocess.run(
        [_podman_compose(), "-f", str(COMPOSE), "config"],
        env={
            "PATH": "/usr/bin:/bin",
            "SECRET_KEY": "compose-test-secret-0123456789",
            "ALLOWED_HOSTS": "dash.example.org",
            "SERVER_NAME": "dash.example.org",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    config = yaml.safe_load(done.stdout)
    assert set(config["services"]) == SERVICES
