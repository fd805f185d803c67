"""Basic auth under attack (issue 13): the same work for every name, failures rate-limited.

Timing is not measured (the machines are noisy): the tests count the password
checks each request runs, through spies on the functions that do them.
"""

from __future__ import annotations

import base64

import pytest
from werkzeug.security import generate_password_hash

import app.security as security
from app.config import AppConfig, ConfigError
from app.factory import create_app
from app.security import BasicAuth, FailureLimiter, TrustedProxies, Verdict

SCRYPT = generate_password_hash("alice-pw")
PBKDF2 = generate_password_hash("bob-pw", method="pbkdf2:sha256:1000")
UNKNOWN = [f"user{i:02d}" for i in range(60)]


def _header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def checks(monkeypatch):
    """Every password check run: ``("hash", hash)`` or ``("plain", None)``."""
    seen: list[tuple[str, str | None]] = []
    real_hash, real_plain = security.check_password_hash, security.check_plain_password

    def hash_spy(hash_, password):
        seen.append(("hash", hash_))
        return real_hash(hash_, password)

    def plain_spy(secret, password):
        seen.append(("plain", None))
        return real_plain(secret, password)

    monkeypatch.setattr(security, "check_password_hash", hash_spy)
    monkeypatch.setattr(security, "check_plain_password", plain_spy)
    return seen


class Clock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --------------------------------------------------------- same work for every name
def test_an_unknown_name_runs_one_check_like_a_known_one(checks):
    auth = BasicAuth([("alice", SCRYPT), ("bob", PBKDF2)], failures_per_minute=1000)
    assert auth.check(_header("alice", "wrong"), "10.0.0.1") is Verdict.DENIED
    assert checks == [("hash", SCRYPT)]
    checks.clear()
    assert auth.check(_header("bob", "wrong"), "10.0.0.1") is Verdict.DENIED
    assert checks == [("hash", PBKDF2)]
    stand_ins = {}
    for name in UNKNOWN:
        checks.clear()
        assert auth.check(_header(name, "alice-pw"), "10.0.0.1") is Verdict.DENIED
        assert len(checks) == 1 and checks[0][1] in (SCRYPT, PBKDF2), checks
        stand_ins[name] = checks[0][1]
    # The same name is always checked against the same user's hash (a real user's
    # cost does not vary either), and unknown names get every kind of hash.
    for name in UNKNOWN[:10]:
        checks.clear()
        auth.check(_header(name, "again"), "10.0.0.1")
        assert checks == [("hash", stand_ins[name])]
    assert set(stand_ins.values()) == {SCRYPT, PBKDF2}


def test_unknown_names_mirror_a_mix_of_plain_and_hashed_passwords(checks):
    """The issue's case: a plain-password user cost 0.7 ms, an unknown name a scrypt hash."""
    auth = BasicAuth([("carol", "plain password"), ("alice", SCRYPT)], failures_per_minute=1000)
    assert auth.check(_header("carol", "wrong"), "10.0.0.1") is Verdict.DENIED
    assert checks == [("plain", None)]
    kinds = set()
    for name in UNKNOWN:
        checks.clear()
        auth.check(_header(name, "plain password"), "10.0.0.1")
        assert len(checks) == 1, checks
        kinds.add(checks[0][0])
    assert kinds == {"plain", "hash"}


def test_without_users_nothing_passes():
    assert BasicAuth([]).check(_header("anyone", "pw"), "10.0.0.1") is Verdict.DENIED


def test_verified_credentials_pass_without_a_check(checks):
    auth = BasicAuth([("alice", SCRYPT)])
    assert auth.check(_header("alice", "alice-pw"), "10.0.0.1") is Verdict.OK
    checks.clear()
    for _ in range(5):
        assert auth.check(_header("alice", "alice-pw"), "10.0.0.9") is Verdict.OK
    assert checks == []


def test_no_credentials_is_a_challenge_not_a_failure(checks):
    auth = BasicAuth([("alice", SCRYPT)], failures_per_minute=1)
    for header in (None, "", "Bearer x", "Basic !!!"):
        assert auth.check(header, "10.0.0.1") is Verdict.DENIED
    assert checks == []
    assert auth.failures.retry_after("10.0.0.1") == 0


# --------------------------------------------------------------------- rate limit
def test_failures_per_address_are_limited_without_running_a_hash(checks):
    clock = Clock()
    auth = BasicAuth([("alice", SCRYPT)], failures_per_minute=3, clock=clock)
    assert auth.check(_header("alice", "alice-pw"), "10.0.0.1") is Verdict.OK  # signed in
    for i in range(3):
        clock.now += 1
        assert auth.check(_header(f"guess{i}", "x"), "10.0.0.1") is Verdict.DENIED
    checks.clear()
    assert auth.check(_header("guess9", "x"), "10.0.0.1") is Verdict.LIMITED
    assert auth.check(_header("alice", "wrong"), "10.0.0.1") is Verdict.LIMITED
    assert checks == []  # refused before any hash
    # The signed-in user behind the same address keeps working; others are not limited.
    assert auth.check(_header("alice", "alice-pw"), "10.0.0.1") is Verdict.OK
    assert auth.check(_header("guess9", "x"), "10.0.0.2") is Verdict.DENIED
    # The oldest failure (at +1 s) leaves the window 60 s later.
    assert auth.failures.retry_after("10.0.0.1") == 58
    clock.now += 57.5
    assert auth.check(_header("guess9", "x"), "10.0.0.1") is Verdict.LIMITED
    clock.now += 0.5
    assert auth.check(_header("guess9", "x"), "10.0.0.1") is Verdict.DENIED


def test_the_limiter_forgets_expired_addresses():
    clock = Clock()
    limiter = FailureLimiter(2, window=60, clock=clock, max_addresses=3)
    for i in range(3):
        limiter.record(f"10.0.0.{i}")
    clock.now += 61
    limiter.record("10.0.1.1")
    limiter.record("10.0.1.1")
    assert limiter.retry_after("10.0.1.1") == 60
    assert limiter.addresses == ["10.0.1.1"]  # the expired ones were dropped
    for i in range(5):
        limiter.record(f"10.0.2.{i}")
    assert len(limiter.addresses) == 3  # the oldest ones went first


# ---------------------------------------------------------- trusted proxies, in the app
def test_trusted_proxies():
    default = TrustedProxies(AppConfig().forwarded_allow_ips)
    assert default.trusts("127.0.0.1") and default.trusts("::1")
    assert not default.trusts("10.1.2.3") and not default.trusts(None)
    private = TrustedProxies(["10.0.0.0/8", "192.168.1.7"])
    assert private.trusts("10.200.0.1") and private.trusts("192.168.1.7")
    assert not private.trusts("192.168.1.8") and not private.trusts("unix:/run/x")
    assert TrustedProxies(["*"]).trusts("203.0.113.9")
    assert not TrustedProxies([]).trusts("127.0.0.1")


@pytest.fixture(scope="module")
def limited_app(tmp_path_factory):
    config = AppConfig(
        cache_dir=tmp_path_factory.mktemp("auth-limit"),
        secret_key="auth-limit-secret-0123456789",
        basic_auth=(("alice", "alice plain pw"),),
        auth_failures_per_minute=2,
        forwarded_allow_ips=("127.0.0.1", "10.9.0.0/16"),
    )
    return create_app(config)


def _get(app, peer: str, forwarded: str | None = None, password: str = "wrong"):
    headers = {"Authorization": _header("alice", password)}
    if forwarded:
        headers["X-Forwarded-For"] = forwarded
    client = app.server.test_client()
    return client.get("/_dash-layout", headers=headers, environ_base={"REMOTE_ADDR": peer})


def test_the_app_answers_429_with_retry_after(limited_app):
    assert _get(limited_app, "203.0.113.1").status_code == 401
    assert _get(limited_app, "203.0.113.1").status_code == 401
    r = _get(limited_app, "203.0.113.1")
    assert r.status_code == 429
    assert 1 <= int(r.headers["Retry-After"]) <= 60
    assert b"Too many failed sign-ins" in r.data and "WWW-Authenticate" not in r.headers
    assert _get(limited_app, "203.0.113.1", password="alice plain pw").status_code == 429
    assert _get(limited_app, "203.0.113.2", password="alice plain pw").status_code == 200
    assert limited_app.server.test_client().get("/healthz").status_code == 200


def test_x_forwarded_for_counts_only_from_a_trusted_proxy(limited_app):
    # An untrusted peer cannot dodge the limit by naming other clients.
    for i in range(2):
        assert _get(limited_app, "198.51.100.7", f"192.0.2.{i}").status_code == 401
    assert _get(limited_app, "198.51.100.7", "192.0.2.99").status_code == 429
    # Behind a trusted proxy, the address the proxy wrote (the last entry) is the client.
    for _ in range(2):
        assert _get(limited_app, "10.9.0.5", "192.0.2.50").status_code == 401
    assert _get(limited_app, "10.9.0.5", "192.0.2.50").status_code == 429
    assert _get(limited_app, "10.9.0.5", "192.0.2.50, 192.0.2.51").status_code == 401
    assert _get(limited_app, "127.0.0.1", "192.0.2.52").status_code == 401


# ------------------------------------------------------------------ configuration
def test_configuration_of_the_limit_and_the_proxies():
    config = AppConfig.from_env(
        {"AUTH_RATE_LIMIT": "5", "FORWARDED_ALLOW_IPS": " 10.0.0.0/8 , 172.16.0.1,::1"}
    )
    assert config.auth_failures_per_minute == 5
    assert config.forwarded_allow_ips == ("10.0.0.0/8", "172.16.0.1", "::1")
    default = AppConfig.from_env({})
    assert default.auth_failures_per_minute == 10
    assert default.forwarded_allow_ips == ("127.0.0.1", "::1")  # gunicorn's default
    assert AppConfig.from_env({"FORWARDED_ALLOW_IPS": "*"}).forwarded_allow_ips == ("*",)
    assert AppConfig.from_env({"FORWARDED_ALLOW_IPS": ""}).forwarded_allow_ips == ()


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"FORWARDED_ALLOW_IPS": "proxy.example"}, "FORWARDED_ALLOW_IPS must be"),
        ({"AUTH_RATE_LIMIT": "0"}, "AUTH_RATE_LIMIT must be at least 1"),
        ({"AUTH_RATE_LIMIT": "many"}, "AUTH_RATE_LIMIT must be a whole number"),
    ],
)
def test_bad_settings_are_named(env, needle):
    with pytest.raises(ConfigError, match=needle):
        AppConfig.from_env(env)
