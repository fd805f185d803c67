"""Same-origin checks on state-changing requests (cross-site request forgery): :class:`OriginCheck`.

Every ``POST``, ``PUT``, ``PATCH`` and ``DELETE`` (the upload route, Dash's
``/_dash-update-component``, any route added later) must come from a page of
the dashboard itself:

1. When the request has an ``Origin`` header, it must be the app's own
   origin or one listed in ``ALLOWED_ORIGINS``; ``Origin: null`` (sandboxed
   frames, some redirects, ``file:`` pages) is refused.
2. Else its ``Referer``'s origin must be, by the same rule.
3. A request with neither is let through. Current browsers send ``Origin``
   with every ``POST`` (fetch and XHR in any mode, ``no-cors`` included, and
   form submissions), same-origin ones included; a request without either
   comes from a non-browser client (curl, a script), which holds no victim's
   cookie, and forging a request needs the victim's browser.

The app's own origin is the request's scheme and ``Host``, as the WSGI
server reports them (``request.host_url``; behind a trusted proxy, the
forwarded ones, see docs/hosting.md). When the app sees plain ``http``,
``https`` on the same host and port is its own origin too: that is how a
TLS-terminating proxy that does not forward the scheme looks, and no other
page can hold that origin.

A refused request gets HTTP 403 (JSON under ``/api/``, plain text elsewhere)
before the session is resolved, so a cross-site request never creates or
replaces a session cookie. The session cookie stays ``SameSite=Lax``:
``Strict`` would leave it out of a link followed from another site (chat,
e-mail) and the page would start a new, empty session; ``Lax`` keeps it out
of cross-site ``POST``\\s, and this check covers what ``SameSite`` does not:
pages on another port of the same host, which are "same-site".
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

from flask import Flask, Response, jsonify, request

log = logging.getLogger("calibration_dashboard.security")

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origin(url: str | None) -> str | None:
    """``scheme://host[:port]`` of a URL, lower-case, default port dropped; None if not http(s).

    >>> normalize_origin("HTTPS://Example.org:443/page?x=1")
    'https://example.org'
    """
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), parts.hostname
    if scheme not in DEFAULT_PORTS or not host:
        return None
    if ":" in host:  # IPv6
        host = f"[{host}]"
    if port is None or port == DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def own_origins(scheme: str, host: str) -> set[str]:
    """The origins of the app itself, for the request's scheme and ``Host``."""
    schemes = ("http", "https") if scheme == "http" else (scheme,)
    return {o for s in schemes if (o := normalize_origin(f"{s}://{host}")) is not None}


class OriginCheck:
    """Refuse state-changing requests that come from another origin (see the module docstring).

    Parameters
    ----------
    allowed_origins : iterable of str
        ``ALLOWED_ORIGINS``: origins besides the app's own that may send them.
    """

    def __init__(self, allowed_origins: Iterable[str] = ()) -> None:
        self.allowed = frozenset(filter(None, map(normalize_origin, allowed_origins)))

    def sender(self, headers, scheme: str, host: str) -> str | None:
        """The foreign origin a request comes from, or None when it may go through."""
        origin = headers.get("Origin")
        if origin is not None:
            claimed = normalize_origin(origin) or origin.strip() or "null"
        else:
            referer = headers.get("Referer")
            if not referer:
                return None  # not a browser (see the module docstring)
            claimed = normalize_origin(referer) or "an unreadable Referer"
        if claimed in self.allowed or claimed in own_origins(scheme, host):
            return None
        return claimed

    def install(self, server: Flask) -> None:
        """Check each request before the session hook runs (install it before the sessions)."""

        @server.before_request
        def _check_origin() -> Response | tuple | None:
            if request.method not in STATE_CHANGING:
                return None
            foreign = self.sender(request.headers, request.scheme, request.host)
            if foreign is None:
                return None
            log.warning(
                "refused a cross-origin %s %s from %s (host %s)",
                request.method,
                request.path,
                foreign[:200],
                request.host[:200],
            )
            return refusal(foreign)


def refusal(foreign: str):
    """HTTP 403 for a cross-origin request: JSON under ``/api/``, plain text elsewhere."""
    message = (
        f"Refused: this request was sent by a page of {foreign[:200]}, not by this dashboard. "
        "If the dashboard is reached through a proxy that changes its address, the operator "
        "can list the public address in ALLOWED_ORIGINS."
    )
    if request.path.startswith("/api/"):
        return jsonify({"error": message, "models": [], "errors": []}), 403
    return Response(message, status=403, mimetype="text/plain")
