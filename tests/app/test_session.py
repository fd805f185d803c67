"""Session ids: server-issued, signed, HttpOnly, SameSite=Lax; anything else starts afresh."""

from __future__ import annotations

import pytest
from flask import Flask, g

from app.session import COOKIE_NAME, SESSION_ID_PATTERN, SessionManager, new_session_id

from .conftest import SECRET


@pytest.fixture
def manager() -> SessionManager:
    return SessionManager(SECRET, ttl_seconds=3600)


def test_new_ids_are_random_and_well_formed():
    ids = {new_session_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(SESSION_ID_PATTERN.fullmatch(i) for i in ids)


def test_signed_cookie_round_trip(manager):
    sid = new_session_id()
    assert manager.verify(manager.sign(sid))[0] == sid
    assert manager.session_from_cookies({COOKIE_NAME: manager.sign(sid)}) == sid


@pytest.mark.parametrize(
    "value",
    [None, "", "not-a-token", "x" * 600, 12345, b"bytes", ["list"], "a.b.c", "../../etc/passwd"],
)
def test_malformed_cookies_are_rejected(manager, value):
    assert manager.verify(value) == (None, 0.0)


def test_forged_and_tampered_cookies_are_rejected(manager):
    sid = new_session_id()
    token = manager.sign(sid)
    other_key = SessionManager("another-secret-key-abcdefghijkl", 3600)
    assert other_key.verify(token)[0] is None
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert manager.verify(tampered)[0] is None
    # A validly signed value that is not a well-formed id is refused too.
    assert manager.verify(manager._serializer.dumps("short"))[0] is None
    assert manager.verify(manager._serializer.dumps({"sid": sid}))[0] is None


def test_expired_cookies_are_rejected(manager, monkeypatch):
    import itsdangerous.timed

    token = manager.sign(new_session_id())
    real_time = itsdangerous.timed.time.time
    monkeypatch.setattr(itsdangerous.timed.time, "time", lambda: real_time() + 7200)
    assert manager.verify(token)[0] is None


def _app(manager: SessionManager) -> Flask:
    app = Flask(__name__)
    manager.install(app)

    @app.get("/whoami")
    def whoami():
        return {"sid": g.session_id, "current": manager.current()}

    return app


def _set_cookie_header(response) -> str | None:
    headers = [h for h in response.headers.getlist("Set-Cookie") if h.startswith(COOKIE_NAME)]
    return headers[0] if headers else None


def test_cookie_is_issued_httponly_samesite_and_reused(manager):
    client = _app(manager).test_client()
    first = client.get("/whoami")
    header = _set_cookie_header(first)
    assert header is not None
    assert "HttpOnly" in header and "SameSite=Lax" in header and "Path=/" in header
    assert "Secure" not in header
    sid = first.json["sid"]
    assert first.json["current"] == sid
    second = client.get("/whoami")
    assert second.json["sid"] == sid
    assert _set_cookie_header(second) is None  # still fresh: not re-issued


def test_secure_flag_when_configured():
    manager = SessionManager(SECRET, 3600, secure=True)
    header = _set_cookie_header(_app(manager).test_client().get("/whoami"))
    assert "Secure" in header


def test_forged_cookie_gets_a_fresh_session(manager):
    client = _app(manager).test_client()
    victim = new_session_id()
    forger = SessionManager("attacker-key-0123456789abcdefgh", 3600)
    client.set_cookie(COOKIE_NAME, forger.sign(victim))
    response = client.get("/whoami")
    assert response.json["sid"] != victim
    assert _set_cookie_header(response) is not None
    client.set_cookie(COOKIE_NAME, victim)  # a raw id, unsigned
    assert client.get("/whoami").json["sid"] != victim


def test_old_cookie_is_renewed_after_half_its_lifetime(manager, monkeypatch):
    import itsdangerous.timed

    client = _app(manager).test_client()
    sid = client.get("/whoami").json["sid"]
    real_time = itsdangerous.timed.time.time
    monkeypatch.setattr(itsdangerous.timed.time, "time", lambda: real_time() - 2000)
    client.set_cookie(COOKIE_NAME, manager.sign(sid))  # signed 2000 s ago (TTL 3600)
    monkeypatch.undo()
    response = client.get("/whoami")
    assert response.json["sid"] == sid
    assert _set_cookie_header(response) is not None


def test_no_session_outside_requests_and_callbacks(manager):
    assert manager.current() is None


def test_the_health_check_gets_no_session_cookie(tmp_path):
    from app.factory import create_app

    from .conftest import make_config

    client = create_app(make_config(tmp_path)).server.test_client()
    health = client.get("/healthz")
    assert health.status_code == 200 and health.headers.getlist("Set-Cookie") == []
    assert _set_cookie_header(client.get("/_dash-dependencies")) is not None  # any other path
