"""Security headers, the CSP, error hiding with request ids, basic auth and start-up checks."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import subprocess
import sys
import time
from urllib.parse import urlencode

import pytest
from werkzeug.security import generate_password_hash

import app.callbacks.diagnostics as diagnostics_callbacks
import app.callbacks.diagnostics.jobs as diagnostics_jobs
import app.callbacks.exports as exports_callbacks
import app.callbacks.models as models_callbacks
import app.callbacks.view as view_callbacks
from app.config import AppConfig, ConfigError
from app.factory import create_app
from app.security import BasicAuth, Verdict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEAKS = ("Traceback", 'File "', "site-packages", "/secret/", "RuntimeError", "ValueError")


@pytest.fixture(scope="module")
def dash_app(tmp_path_factory):
    config = AppConfig(
        cache_dir=tmp_path_factory.mktemp("security"), secret_key="security-secret-0123456789"
    )
    return create_app(config)


@pytest.fixture
def tab(dash_app, dash_tab):
    return dash_tab(flask_client=dash_app.server.test_client()).load()


def _csp(headers) -> dict[str, list[str]]:
    out = {}
    for part in headers["Content-Security-Policy"].split(";"):
        name, *values = part.split()
        out[name] = values
    return out


def _inline_scripts(page: str) -> list[str]:
    """Bodies of the inline scripts a browser would run (not JSON data, not in comments)."""
    page = re.sub(r"<!--.*?-->", "", page, flags=re.S)
    out = []
    for attrs, body in re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S):
        kind = re.search(r'type="([^"]+)"', attrs)
        if "src=" in attrs or not body.strip():
            continue
        if kind and kind.group(1) not in ("text/javascript", "application/javascript", "module"):
            continue
        out.append(body)
    return out


@pytest.mark.parametrize(
    "path",
    ["/", "/_dash-layout", "/_dash-dependencies", "/healthz", "/assets/style.css", "/nowhere"],
)
def test_every_response_carries_the_security_headers(tab, path):
    status, headers, _ = tab.get(path)
    assert status < 500
    csp = _csp(headers)
    assert csp["frame-ancestors"] == ["'none'"] and csp["object-src"] == ["'none'"]
    assert csp["default-src"] == ["'self'"] and csp["base-uri"] == ["'self'"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    # The page's address goes to this server only (its layout request reads the view).
    assert headers["Referrer-Policy"] == "same-origin"
    assert re.fullmatch(r"[0-9a-f]{12}", headers["X-Request-ID"])


def test_session_data_is_never_cached(tab):
    for method, path in [("GET", "/"), ("GET", "/_dash-layout"), ("POST", "/api/upload")]:
        _, headers, _ = tab.request(method, path)
        assert headers["Cache-Control"] == "no-store", path
    status, headers, _ = tab.call_raw("metrics-grid.rowData", ["n-bins.value"])
    assert status == 200 and headers["Cache-Control"] == "no-store"


def test_csp_allows_exactly_the_inline_scripts_dash_renders(tab, dash_app):
    _, headers, body = tab.get("/")
    script_src = _csp(headers)["script-src"]
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    inline = _inline_scripts(body.decode())
    assert inline, "Dash renders its renderer start-up inline"
    hashes = {
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in inline
    }
    assert hashes <= set(script_src)
    assert set(script_src) == {"'self'", *dash_app.csp_hashes()}
    # Every external script is same-origin (served locally, no CDN).
    for src in re.findall(r'<script[^>]*src="([^"]+)"', body.decode()):
        assert src.startswith("/"), src


def test_unexpected_errors_in_the_view_show_only_a_request_id(tab, monkeypatch, caplog):
    def boom(*args, **kwargs):
        raise RuntimeError("/secret/path/data.csv: exploded")

    monkeypatch.setattr(view_callbacks, "compute_view", boom)
    with caplog.at_level(logging.ERROR):
        status, _, body = tab.call_raw("metrics-grid.rowData", ["n-bins.value"])
    assert status == 200
    text = body.decode()
    (rid,) = re.findall(r"request id ([0-9a-f]{12})", text)
    for marker in LEAKS:
        assert marker not in text
    logged = [r for r in caplog.records if rid in r.getMessage()]
    assert logged and logged[0].exc_info and "exploded" in str(logged[0].exc_info[1])


def _shown_id(text: str) -> str:
    """The one request id a response shows (an upload's answer repeats it in its summary)."""
    (rid,) = set(re.findall(r"request id ([0-9a-f]{12})", text))
    return rid


def _logged_failures(caplog, marker: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.exc_info and marker in str(r.exc_info[1])]


def _upload_parser(dash_app):
    return dash_app.server.extensions["calibration_dashboard"].upload_parser


def test_the_request_id_a_user_sees_is_the_response_header_and_the_log_line(
    dash_app, tab, monkeypatch, caplog
):
    def boom(*args, **kwargs):
        raise RuntimeError("exploded on purpose")

    monkeypatch.setattr(view_callbacks, "compute_view", boom)
    monkeypatch.setattr(exports_callbacks, "small_export", boom)
    monkeypatch.setattr(_upload_parser(dash_app), "parse", boom)
    calls = {
        "view": lambda: tab.call_raw("metrics-grid.rowData", ["n-bins.value"]),
        "export": lambda: tab.call_raw("download.data", ["export-metrics-csv.n_clicks"]),
        "upload": lambda: tab.request(
            "POST", "/api/upload", files=[("x.csv", b"p_a,p_b,label\n0.5,0.5,a\n")]
        ),
    }
    for what, call in calls.items():
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            status, headers, body = call()
        assert status == 200, what
        shown = _shown_id(body.decode())
        assert shown == headers["X-Request-ID"], what
        (logged,) = _logged_failures(caplog, "exploded on purpose")
        assert shown in logged.getMessage(), what


def _fit_gate(tab) -> dict:
    """The Diagnostics fit gate's data for the page's first selected model (section open)."""
    fit_settings = {"maps": [], "heldout": "folds", "folds": 5, "fraction": 0.5}
    handle = tab.values["model-select.value"][0]
    return {"handle": handle, "settings": fit_settings, "fit_state": None}


def test_diagnostics_panels_read_the_gate_by_name_and_report_failures(tab, monkeypatch, caplog):
    gate = {"diag-fit-gate.data": _fit_gate(tab)}
    out = tab.call("diag-hl.children", ["diag-fit-gate.data"], gate)
    assert "Hosmer" in json.dumps(out) and "request id" not in json.dumps(out)

    def boom(*args, **kwargs):
        raise RuntimeError("exploded on purpose")

    monkeypatch.setattr(diagnostics_callbacks, "diag_target", boom)
    with caplog.at_level(logging.ERROR):
        status, headers, body = tab.call_raw("diag-hl.children", ["diag-fit-gate.data"], gate)
    assert status == 200
    shown = _shown_id(body.decode())
    assert shown == headers["X-Request-ID"]
    assert f"Something went wrong in the Hosmer-Lemeshow test (request id {shown})." in (
        body.decode()
    )
    (logged,) = _logged_failures(caplog, "exploded on purpose")
    assert shown in logged.getMessage()


def _background(tab, writes: str, changed: list[str], values: dict, timeout: float = 60):
    """Start a background callback and poll it: the answer with its result."""
    status, headers, body = tab.call_raw(writes, changed, values)
    assert status == 200, body[:300]
    handles = json.loads(body)
    if "response" in handles:
        return status, headers, body
    query = {"cacheKey": handles["cacheKey"], "job": handles["job"]}
    if tab.end_id:
        query["endId"] = tab.end_id
    payload = json.dumps(tab.payload(writes, changed, values))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.2)
        status, headers, body = tab.request(
            "POST",
            "/_dash-update-component?" + urlencode(query),
            data=payload,
            headers={"Content-Type": "application/json"},
        )
        if status != 200 or "response" in json.loads(body):
            return status, headers, body
    raise TimeoutError(writes)


def test_a_failing_background_job_reports_the_request_id_of_its_answer(tab, monkeypatch, caplog):
    def boom(*args, **kwargs):
        raise RuntimeError("exploded on purpose")

    monkeypatch.setattr(diagnostics_jobs, "diag_target", boom)  # inherited by the forked job
    with caplog.at_level(logging.ERROR):
        status, headers, body = _background(
            tab, "diag-test-done.data", ["diag-test-run.n_clicks"], {"diag-test-run.n_clicks": 1}
        )
    assert status == 200
    record = json.loads(body)["response"]["diag-test-done"]["data"]
    shown = _shown_id(record["error"])
    assert shown == headers["X-Request-ID"]
    assert record["error"] == f"Something went wrong in the resampling test (request id {shown})."
    for marker in LEAKS:
        assert marker not in body.decode()
    (logged,) = _logged_failures(caplog, "exploded on purpose")
    assert shown in logged.getMessage()


def test_unhandled_callback_errors_answer_500_with_a_request_id(tab, monkeypatch, caplog):
    def boom(*args, **kwargs):
        raise ValueError("/secret/key=abc")

    monkeypatch.setattr(models_callbacks, "class_choices", boom)
    with caplog.at_level(logging.ERROR):
        status, headers, body = tab.call_raw("class-select.options", ["notion.value"])
    assert status == 500
    answer = json.loads(body)
    rid = headers["X-Request-ID"]
    assert answer == {
        "error": f"Something went wrong (request id {rid}). Try again; if it persists, "
        "report the id.",
        "request_id": rid,
    }
    assert any(rid in r.getMessage() and r.exc_info for r in caplog.records)


def test_unexpected_upload_errors_show_only_a_request_id(dash_app, tab, monkeypatch, caplog):
    def boom(*args, **kwargs):
        raise ValueError("/secret/tmp/upload-123 is weird")

    monkeypatch.setattr(_upload_parser(dash_app), "parse", boom)
    with caplog.at_level(logging.ERROR):
        status, body = tab.upload("x.csv", b"p_a,p_b,label\n0.5,0.5,a\n")
    assert status == 200
    (error,) = body["errors"]
    (rid,) = re.findall(r"request id ([0-9a-f]{12})", error["error"])
    for marker in LEAKS:
        assert marker not in json.dumps(body)
    assert any(rid in r.getMessage() and r.exc_info for r in caplog.records)


def test_http_errors_are_short(tab):
    status, _, body = tab.request("DELETE", "/api/upload")
    assert status == 405 and json.loads(body)["error"] == "405 Method Not Allowed."
    status, _, body = tab.get("/api/export/" + "x" * 80)
    assert status == 404 and b"Traceback" not in body


def test_debug_mode_keeps_dash_error_pages(tmp_path):
    app = create_app(AppConfig(cache_dir=tmp_path, secret_key="x" * 20, debug=True))
    assert Exception not in app.server.error_handler_spec[None][None]


# -------------------------------------------------------------------- basic auth
def _basic(user: str, password: str) -> dict:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture(scope="module")
def auth_app(tmp_path_factory):
    users = (("alice", generate_password_hash("correct horse")), ("bob", "plain:pass word"))
    config = AppConfig(
        cache_dir=tmp_path_factory.mktemp("auth"),
        secret_key="auth-secret-0123456789abcdef",
        basic_auth=users,
    )
    return create_app(config)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        _basic("alice", "wrong"),
        _basic("alice", ""),
        _basic("mallory", "correct horse"),
        _basic("bob", "plain:pass"),
        {"Authorization": "Basic !!!not-base64"},
        {"Authorization": "Bearer abc"},
        {"Authorization": "Basic " + base64.b64encode(b"no-colon").decode()},
    ],
)
def test_basic_auth_refuses_bad_credentials(auth_app, headers):
    client = auth_app.server.test_client()
    for path in ("/_dash-layout", "/assets/style.css"):
        r = client.get(path, headers=headers)
        assert r.status_code == 401, path
        assert r.headers["WWW-Authenticate"].startswith('Basic realm="Calibration dashboard"')
        assert "Set-Cookie" not in r.headers  # no session before credentials
        assert b"dash" not in r.data.lower()


@pytest.mark.parametrize(
    ("user", "password"), [("alice", "correct horse"), ("bob", "plain:pass word")]
)
def test_basic_auth_lets_team_members_in(auth_app, user, password):
    client = auth_app.server.test_client()
    r = client.get("/", headers=_basic(user, password))
    assert r.status_code == 200 and "calibration_session" in r.headers["Set-Cookie"]
    r = client.get("/_dash-layout", headers=_basic(user, password))
    assert r.status_code == 200


def test_healthz_needs_no_credentials(auth_app):
    r = auth_app.server.test_client().get("/healthz")
    assert r.status_code == 200 and r.json == {"status": "ok"}


def test_passwords_are_compared_in_constant_time(monkeypatch):
    import app.security as security

    calls = []
    real = security.hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    checked = []
    real_check = security.check_password_hash

    def check_spy(hash_, password):
        checked.append(hash_)
        return real_check(hash_, password)

    monkeypatch.setattr(security, "check_password_hash", check_spy)
    auth = BasicAuth([("bob", "secret-pw"), ("alice", generate_password_hash("pw"))])
    assert auth.check(_basic("bob", "secret-px")["Authorization"]) is Verdict.DENIED
    assert calls and all(len(a) == len(b) == 32 for a, b in calls)  # digests, not raw text
    assert auth.check(_basic("bob", "secret-pw")["Authorization"]) is Verdict.OK
    # Verified credentials are remembered: no second scrypt check for the same header.
    assert auth.check(_basic("alice", "pw")["Authorization"]) is Verdict.OK
    checked.clear()
    assert auth.check(_basic("alice", "pw")["Authorization"]) is Verdict.OK
    assert checked == []


# ------------------------------------------------------------------- configuration
def test_configuration_from_the_environment(tmp_path):
    hashed = generate_password_hash("pw")
    config = AppConfig.from_env(
        {
            "APP_ENV": "production",
            "ALLOWED_HOSTS": "dash.example.org",
            "SECRET_KEY": "k" * 40,
            "MAX_UPLOAD_MB": "50",
            "CACHE_DIR": str(tmp_path),
            "CACHE_SIZE_LIMIT_MB": "512",
            "SESSION_TTL_SECONDS": "600",
            "SESSION_QUOTA_MB": "64",
            "MAX_MODELS_PER_SESSION": "5",
            "BASIC_AUTH_USERS": f"alice:{hashed}, carol:{hashed}",
            "BASIC_AUTH_USER": "bob",
            "BASIC_AUTH_PASSWORD": "plain",
        }
    )
    assert config.production and config.cookie_secure and not config.debug
    assert (config.max_upload_mb, config.cache_size_limit_mb) == (50, 512)
    assert (config.session_ttl_seconds, config.session_quota_mb) == (600, 64)
    assert config.cache_dir == tmp_path and config.max_models_per_session == 5
    assert [u for u, _ in config.basic_auth] == ["alice", "carol", "bob"]
    assert "k" * 40 not in repr(config) and hashed not in repr(config)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"APP_ENV": "production"}, "SECRET_KEY is required"),
        (
            {"APP_ENV": "production", "SECRET_KEY": "k" * 40, "DEBUG": "1", "ALLOWED_HOSTS": "*"},
            "DEBUG must be off",
        ),
        ({"SECRET_KEY": "short"}, "at least 16"),
        ({"MAX_UPLOAD_MB": "lots"}, "MAX_UPLOAD_MB must be a whole number"),
        ({"SESSION_TTL_SECONDS": "5"}, "SESSION_TTL_SECONDS must be at least 60"),
        ({"BASIC_AUTH_USERS": "alice:plaintext"}, "user:hash"),
        ({"BASIC_AUTH_USER": "bob"}, "both BASIC_AUTH_USER and BASIC_AUTH_PASSWORD"),
        ({"BASIC_AUTH_USER": "b:ob", "BASIC_AUTH_PASSWORD": "x"}, "must not contain ':'"),
    ],
)
def test_bad_configuration_is_refused_with_the_variable_named(env, needle):
    with pytest.raises(ConfigError, match=re.escape(needle)):
        AppConfig.from_env(env)


def test_the_wsgi_entry_point_refuses_to_start_without_a_secret_in_production(tmp_path):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": REPO,
        "APP_ENV": "production",
        "ALLOWED_HOSTS": "dash.example.org",
        "CACHE_DIR": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "-c", "import app.wsgi"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 4  # gunicorn's "App failed to load": the master stops
    assert "configuration error: SECRET_KEY is required when APP_ENV=production" in proc.stderr
    assert "Traceback" not in proc.stderr
