"""Security headers (a CSP built from Dash's own script hashes) and optional HTTP basic auth.

Content-Security-Policy
    ``script-src 'self'`` plus the SHA-256 hashes Dash reports for the inline
    scripts it renders (:meth:`dash.Dash.csp_hashes`: the renderer start-up
    script and any inline clientside callback), so no other inline script
    and no ``eval`` can run. Styles allow ``'unsafe-inline'`` because Plotly
    and the Dash components set ``style`` attributes and inject style sheets
    at run time. Images, fonts and workers may come from ``data:``/``blob:``
    (Plotly's modebar icons and image export). ``frame-ancestors 'none'``
    (and ``X-Frame-Options: DENY``) forbids framing, unless ``FRAME_ANCESTORS``
    names the origins that may frame the page (a notebook's, :mod:`app.notebook`):
    then ``frame-ancestors`` lists exactly those and ``X-Frame-Options``, which
    cannot name an origin, is left out. Forms and ``<base>`` stay on this
    origin; plugins are off.
Other headers
    ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: same-origin``
    (requests to this server carry the page's address, from which the layout
    request reads the view, :mod:`app.view_url`; other sites never get it),
    ``Cross-Origin-Opener-Policy: same-origin``, a restrictive
    ``Permissions-Policy``, and ``Cache-Control: no-store`` on every response
    that carries a session's data (callbacks, uploads, exports, the page).
Basic auth (optional)
    With ``BASIC_AUTH_USERS`` / ``BASIC_AUTH_USER`` set, every route except
    ``/healthz`` needs valid credentials (401 with a ``WWW-Authenticate``
    challenge otherwise). Passwords are compared in constant time
    (:func:`hmac.compare_digest`, or werkzeug's hash check, which uses it).
    Every check that is not already known to succeed runs exactly one
    password check of a configured user: a known name its own, an unknown
    name the check of a configured user picked by a keyed hash of the name
    (always the same one for a name). So an unknown name costs what a known
    one costs, whatever mix of scrypt, pbkdf2 and plain passwords is
    configured, and timing does not tell which names exist. Verified
    credentials are remembered per process (as an HMAC of the header, never
    the password), so the dozens of requests of one page view do not each
    pay for a scrypt hash. A faster path for wrong passwords (a cached
    verifier per user) would make a wrong password for a user who signed in
    cheaper than one for anybody else, which tells the names again; the slow
    hash is instead bounded by the rate limit.
Rate limit of failed sign-ins
    After ``AUTH_RATE_LIMIT`` failed checks within a minute, a client address
    gets 429 with ``Retry-After`` and no hash runs until the oldest failure is
    a minute old (credentials already verified still pass). The address is the
    peer's, or the ``X-Forwarded-For`` set by a proxy listed in
    ``FORWARDED_ALLOW_IPS`` (:class:`TrustedProxies`, werkzeug's ``ProxyFix``
    applied to those peers only). The counts live in each worker process: with
    ``WEB_CONCURRENCY`` workers an address gets at most that many times the
    limit.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import ipaddress
import math
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable

from flask import Flask, Response, request
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.security import check_password_hash

from .config import PASSWORD_HASH

#: Paths that never need credentials (the container health check).
AUTH_EXEMPT = ("/healthz",)
REALM = "Calibration dashboard"
#: Dash routes and our API: responses hold a session's data, never cache them.
NO_STORE_PREFIXES = ("/_dash-update-component", "/_dash-layout", "/api/")


def content_security_policy(
    script_hashes: Iterable[str], frame_ancestors: tuple[str, ...] = ()
) -> str:
    """The CSP header value, allowing exactly the given inline-script hashes.

    Parameters
    ----------
    script_hashes : iterable of str
        CSP source expressions such as ``'sha256-...'`` (from
        :meth:`dash.Dash.csp_hashes`).
    frame_ancestors : tuple of str
        Origins that may frame the page; empty: none.

    Returns
    -------
    str
    """
    directives = {
        "default-src": ["'self'"],
        "script-src": ["'self'", *script_hashes],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": list(frame_ancestors) or ["'none'"],
    }
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


def static_headers(framed: bool = False) -> dict[str, str]:
    """Headers every response carries (besides the CSP); ``framed``: without ``X-Frame-Options``."""
    headers = {
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
    }
    if framed:
        del headers["X-Frame-Options"]
    return headers


class SecurityHeaders:
    """Adds the security headers to every response of a Flask server.

    The CSP is set with :meth:`set_script_hashes` once every callback is
    registered (Dash hashes inline clientside callbacks too); until then no
    inline script is allowed. ``frame_ancestors``: the origins that may frame
    the page (none by default).
    """

    def __init__(self, frame_ancestors: tuple[str, ...] = ()) -> None:
        self.frame_ancestors = tuple(frame_ancestors)
        self.csp = content_security_policy((), self.frame_ancestors)
        self._static = static_headers(framed=bool(self.frame_ancestors))

    def set_script_hashes(self, hashes: Iterable[str]) -> None:
        """Allow exactly these inline-script hashes."""
        self.csp = content_security_policy(hashes, self.frame_ancestors)

    def install(self, server: Flask) -> None:
        """Register the ``after_request`` hook."""

        @server.after_request
        def _add_headers(response: Response) -> Response:
            response.headers["Content-Security-Policy"] = self.csp
            for name, value in self._static.items():
                response.headers.setdefault(name, value)
            path = request.path
            if path == "/" or path.startswith(NO_STORE_PREFIXES):
                response.headers["Cache-Control"] = "no-store"
            return response


def check_plain_password(secret: str, password: str) -> bool:
    """Whether ``password`` is the plain-text ``secret`` (digests compared in constant time)."""
    return hmac.compare_digest(
        hashlib.sha256(password.encode()).digest(), hashlib.sha256(secret.encode()).digest()
    )


class TrustedProxies:
    """Believe ``X-Forwarded-For``/``-Proto`` only from the proxies of ``FORWARDED_ALLOW_IPS``.

    Requests whose peer is one of them go through werkzeug's ``ProxyFix``
    (one proxy: the last ``X-Forwarded-For`` entry, the one the proxy wrote,
    becomes ``request.remote_addr``); any other request keeps its peer address,
    whatever headers it carries. gunicorn applies the same variable to the scheme.

    Parameters
    ----------
    allowed : iterable of str
        Addresses or networks (``10.0.0.0/8``), or ``*`` for any peer.
    """

    def __init__(self, allowed: Iterable[str]) -> None:
        allowed = tuple(allowed)
        self._any = "*" in allowed
        self._networks = [ipaddress.ip_network(a, strict=False) for a in allowed if a != "*"]

    def trusts(self, address: str | None) -> bool:
        """Whether a peer at ``address`` is one of the configured proxies."""
        if self._any:
            return True
        try:
            ip = ipaddress.ip_address(address or "")
        except ValueError:  # a Unix socket or no address
            return False
        return any(ip in network for network in self._networks)

    def install(self, server: Flask) -> None:
        """Wrap ``server.wsgi_app`` (Flask's documented place for ``ProxyFix``)."""
        direct = server.wsgi_app
        proxied = ProxyFix(direct, x_for=1, x_proto=1)

        def wsgi_app(environ, start_response):
            trusted = self.trusts(environ.get("REMOTE_ADDR"))
            return (proxied if trusted else direct)(environ, start_response)

        server.wsgi_app = wsgi_app


class FailureLimiter:
    """Failed sign-ins per client address in a sliding window (per process).

    Parameters
    ----------
    limit : int
        Failures allowed per address within ``window`` seconds.
    window : float
    clock : callable
        Monotonic seconds (tests pass their own).
    max_addresses : int
        Addresses remembered; past that, those whose failures expired are dropped,
        then the oldest ones.
    """

    def __init__(
        self,
        limit: int,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        max_addresses: int = 10_000,
    ) -> None:
        self.limit, self.window, self._clock = limit, window, clock
        self._max_addresses = max_addresses
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def addresses(self) -> list[str]:
        """The addresses with failures remembered, oldest first."""
        with self._lock:
            return list(self._failures)

    def retry_after(self, address: str) -> int:
        """Seconds until ``address`` may try again; 0 when it may now."""
        now = self._clock()
        with self._lock:
            times = self._failures.get(address)
            if times is None:
                return 0
            self._expire(times, now)
            if len(times) < self.limit:
                return 0
            return max(1, math.ceil(times[0] + self.window - now))

    def record(self, address: str) -> None:
        """Count one failure of ``address`` now."""
        now = self._clock()
        with self._lock:
            # More than ``limit`` never count (checks stop at the limit; a few
            # concurrent ones may pass it together).
            times = self._failures.setdefault(address, deque(maxlen=self.limit))
            self._failures.move_to_end(address)
            self._expire(times, now)
            times.append(now)
            if len(self._failures) > self._max_addresses:
                self._prune(now)

    def _expire(self, times: deque[float], now: float) -> None:
        while times and times[0] <= now - self.window:
            times.popleft()

    def _prune(self, now: float) -> None:
        for address in [a for a, t in self._failures.items() if t[-1] <= now - self.window]:
            del self._failures[address]
        while len(self._failures) > self._max_addresses:
            self._failures.popitem(last=False)


class Verdict(enum.Enum):
    """What :meth:`BasicAuth.check` decided."""

    OK = "ok"
    DENIED = "denied"  # 401 and a challenge
    LIMITED = "limited"  # 429: too many failures from this address


class BasicAuth:
    """HTTP basic auth for a team (see the module docstring).

    Parameters
    ----------
    users : iterable of (user, secret)
        ``secret`` is a werkzeug password hash or, for ``BASIC_AUTH_USER``, a
        plain password.
    failures_per_minute : int
        Failed checks per client address and minute before 429 (``AUTH_RATE_LIMIT``).
    cache_size : int
        Verified credentials remembered per process.
    clock : callable
        Monotonic seconds for the rate limit (tests pass their own).
    """

    def __init__(
        self,
        users: Iterable[tuple[str, str]],
        failures_per_minute: int = 10,
        cache_size: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._users = dict(users)
        # Sorted: the stand-in a name gets does not depend on the order of the settings.
        self._secrets = sorted(self._users.values())
        self._key = secrets.token_bytes(32)
        self._verified: OrderedDict[bytes, None] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.failures = FailureLimiter(failures_per_minute, clock=clock)

    @property
    def enabled(self) -> bool:
        """Whether any user is configured."""
        return bool(self._users)

    @staticmethod
    def _parse(header: str | None) -> tuple[str, str] | None:
        if not header or len(header) > 4096:
            return None
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        user, sep, password = decoded.partition(":")
        return (user, password) if sep else None

    def _tag(self, header: str) -> bytes:
        return hmac.new(self._key, header.encode(), hashlib.sha256).digest()

    def _stand_in(self, user: str) -> str:
        """The configured secret an unknown ``user`` is checked against (fixed per name)."""
        digest = hmac.new(self._key, user.encode(), hashlib.sha256).digest()
        return self._secrets[int.from_bytes(digest[:8], "big") % len(self._secrets)]

    @staticmethod
    def _matches(secret: str, password: str) -> bool:
        """One password check: werkzeug's for a hash, constant-time digests for plain text."""
        if PASSWORD_HASH.match(secret):
            return check_password_hash(secret, password)
        return check_plain_password(secret, password)

    def _verify(self, user: str, password: str) -> bool:
        """Exactly one password check, of the user's secret or of its stand-in."""
        secret = self._users.get(user)
        if secret is None:
            if self._secrets:  # with no user configured there is nobody to stand in
                self._matches(self._stand_in(user), password)
            return False
        return self._matches(secret, password)

    def _remember(self, tag: bytes) -> None:
        with self._lock:
            self._verified[tag] = None
            while len(self._verified) > self._cache_size:
                self._verified.popitem(last=False)

    def _known(self, tag: bytes) -> bool:
        with self._lock:
            if tag in self._verified:
                self._verified.move_to_end(tag)
                return True
        return False

    def check(self, header: str | None, client: str = "") -> Verdict:
        """Whether an ``Authorization`` header from ``client`` (an address) may pass.

        No credentials: :attr:`Verdict.DENIED` (nothing counted, as a browser's first
        request). Credentials verified before pass without a hash; otherwise a
        client over its failure limit gets :attr:`Verdict.LIMITED` without one, and
        the others one password check (a failure counts against ``client``).
        """
        parsed = self._parse(header)
        if parsed is None:
            return Verdict.DENIED
        tag = self._tag(header)
        if self._known(tag):
            return Verdict.OK
        if self.failures.retry_after(client):
            return Verdict.LIMITED
        if self._verify(*parsed):
            self._remember(tag)
            return Verdict.OK
        self.failures.record(client)
        return Verdict.DENIED

    def install(self, server: Flask) -> None:
        """Require credentials on every route but :data:`AUTH_EXEMPT` (register it first)."""
        if not self.enabled:
            return

        @server.before_request
        def _require_auth():
            if request.path in AUTH_EXEMPT:
                return None
            client = request.remote_addr or ""
            verdict = self.check(request.headers.get("Authorization"), client)
            if verdict is Verdict.OK:
                return None
            if verdict is Verdict.LIMITED:
                wait = self.failures.retry_after(client)
                return Response(
                    f"Too many failed sign-ins from your address: try again in {wait} s.\n",
                    status=429,
                    mimetype="text/plain",
                    headers={"Retry-After": str(wait)},
                )
            return Response(
                "Authentication required.\n",
                status=401,
                mimetype="text/plain",
                headers={"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'},
            )
