"""Security headers (a CSP built from Dash's own script hashes) and optional HTTP basic auth.

Content-Security-Policy
    ``script-src 'self'`` plus the SHA-256 hashes Dash reports for the inline
    scripts it renders (:meth:`dash.Dash.csp_hashes`: the renderer start-up
    script and any inline clientside callback), so no other inline script
    and no ``eval`` can run. Styles allow ``'unsafe-inline'`` because Plotly
    and the Dash components set ``style`` attributes and inject style sheets
    at run time. Images, fonts and workers may come from ``data:``/``blob:``
    (Plotly's modebar icons and image export). ``frame-ancestors 'none'``
    (and ``X-Frame-Options: DENY``) forbids framing; forms and ``<base>`` stay
    on this origin; plugins are off.
Other headers
    ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``,
    ``Cross-Origin-Opener-Policy: same-origin``, a restrictive
    ``Permissions-Policy``, and ``Cache-Control: no-store`` on every response
    that carries a session's data (callbacks, uploads, exports, the page).
Basic auth (optional)
    With ``BASIC_AUTH_USERS`` / ``BASIC_AUTH_USER`` set, every route except
    ``/healthz`` needs valid credentials (401 with a ``WWW-Authenticate``
    challenge otherwise). Passwords are compared in constant time
    (:func:`hmac.compare_digest`, or werkzeug's hash check, which uses it);
    an unknown user costs the same hash check as a known one. Verified
    credentials are remembered per process (as an HMAC of the header, never
    the password) so that the dozens of requests of one page view do not
    each pay for a scrypt hash.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterable

from flask import Flask, Response, request
from werkzeug.security import check_password_hash, generate_password_hash

from .config import PASSWORD_HASH

#: Paths that never need credentials (the container health check).
AUTH_EXEMPT = ("/healthz",)
REALM = "Calibration dashboard"
#: Dash routes and our API: responses hold a session's data, never cache them.
NO_STORE_PREFIXES = ("/_dash-update-component", "/_dash-layout", "/api/")


def content_security_policy(script_hashes: Iterable[str]) -> str:
    """The CSP header value, allowing exactly the given inline-script hashes.

    Parameters
    ----------
    script_hashes : iterable of str
        CSP source expressions such as ``'sha256-...'`` (from
        :meth:`dash.Dash.csp_hashes`).

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
        "frame-ancestors": ["'none'"],
    }
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


def static_headers() -> dict[str, str]:
    """Headers every response carries (besides the CSP)."""
    return {
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
    }


class SecurityHeaders:
    """Adds the security headers to every response of a Flask server.

    The CSP is set with :meth:`set_script_hashes` once every callback is
    registered (Dash hashes inline clientside callbacks too); until then no
    inline script is allowed.
    """

    def __init__(self) -> None:
        self.csp = content_security_policy(())
        self._static = static_headers()

    def set_script_hashes(self, hashes: Iterable[str]) -> None:
        """Allow exactly these inline-script hashes."""
        self.csp = content_security_policy(hashes)

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


class BasicAuth:
    """HTTP basic auth for a team (see the module docstring).

    Parameters
    ----------
    users : iterable of (user, secret)
        ``secret`` is a werkzeug password hash or, for ``BASIC_AUTH_USER``, a
        plain password.
    cache_size : int
        Verified credentials remembered per process.
    """

    def __init__(self, users: Iterable[tuple[str, str]], cache_size: int = 256) -> None:
        self._users = dict(users)
        self._key = secrets.token_bytes(32)
        self._verified: OrderedDict[bytes, None] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        # An unknown user is checked against this, so it takes as long as a known
        # one (hashed only when auth is on: a scrypt hash slows the start).
        self._dummy = generate_password_hash(secrets.token_hex(16)) if self._users else ""

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

    def check(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header holds valid credentials."""
        parsed = self._parse(header)
        if parsed is None:
            return False
        tag = hmac.new(self._key, header.encode(), hashlib.sha256).digest()
        with self._lock:
            if tag in self._verified:
                self._verified.move_to_end(tag)
                return True
        user, password = parsed
        secret = self._users.get(user)
        if secret is None:
            if self._dummy:
                check_password_hash(self._dummy, password)
            return False
        if PASSWORD_HASH.match(secret):
            ok = check_password_hash(secret, password)
        else:
            ok = hmac.compare_digest(
                hashlib.sha256(password.encode()).digest(), hashlib.sha256(secret.encode()).digest()
            )
        if ok:
            with self._lock:
                self._verified[tag] = None
                while len(self._verified) > self._cache_size:
                    self._verified.popitem(last=False)
        return ok

    def install(self, server: Flask) -> None:
        """Require credentials on every route but :data:`AUTH_EXEMPT` (register it first)."""
        if not self.enabled:
            return

        @server.before_request
        def _require_auth():
            if request.path in AUTH_EXEMPT:
                return None
            if self.check(request.headers.get("Authorization")):
                return None
            return Response(
                "Authentication required.\n",
                status=401,
                mimetype="text/plain",
                headers={"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'},
            )
