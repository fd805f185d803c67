"""The ``Host`` header must name this dashboard: :class:`HostCheck` (``ALLOWED_HOSTS``).

A page of another site can make a browser send requests to the dashboard
under that site's own name (DNS rebinding: ``evil.example`` first resolves
to the attacker, then to the dashboard's address). Such requests carry
``Host: evil.example`` and a matching ``Origin``, so the same-origin check
(:mod:`app.origin_check`) sees its own origin. The only thing that tells
them apart is the ``Host`` header, which a browser always sets to the name
it looked up and a page cannot change.

So every request whose ``Host`` is not one of ``ALLOWED_HOSTS`` gets HTTP
400 (plain text, no session cookie, no data) from a WSGI middleware that
wraps the whole Flask application: nothing else runs, neither the session
hook nor Dash. Entries, as Django's ``ALLOWED_HOSTS``:

* ``dash.example.org``: that name (case and a trailing dot ignored);
* ``.example.org``: that name and every sub-domain of it;
* ``*``: any name (only when set explicitly);
* IP addresses as they appear in ``Host`` (``10.0.0.5``, ``[::1]`` or ``::1``).

Ports are ignored in matching. Without ``ALLOWED_HOSTS`` (outside
production, where it is required) the loopback names
(:data:`LOOPBACK_HOSTS`) and the address the server binds are allowed.
``/healthz`` from a loopback ``Host`` is always answered (the container's
health check asks ``http://127.0.0.1:PORT/healthz``).

The ``Host`` read is the one the client sent: ``X-Forwarded-Host`` is not
believed (:class:`app.security.TrustedProxies` applies ``ProxyFix`` to the
address and the scheme only), and the reverse proxy passes the client's
``Host`` on (deploy/nginx.conf.template).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from flask import Flask

log = logging.getLogger("calibration_dashboard.security")

#: Names of this machine that no other site can hold.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: Paths answered to loopback ``Host``\\ s whatever ``ALLOWED_HOSTS`` says.
HEALTH_PATHS = ("/healthz",)
#: A host name or IPv4 address, or an IPv6 address in brackets, then an optional port.
HOST_HEADER = re.compile(r"^(?P<name>[a-z0-9.\-_]+|\[[a-f0-9:.]+\])(:[0-9]{1,5})?$")


def host_name(header: str | None) -> str | None:
    """The name of a ``Host`` header, lower-case, without port, brackets or final dot;
    None when it is not a well-formed host.

    >>> host_name("Dash.Example.org.:8050"), host_name("[::1]:80"), host_name("a b")
    ('dash.example.org', '::1', None)
    """
    if not header:
        return None
    match = HOST_HEADER.match(header.strip().lower())
    if match is None:
        return None
    return match["name"].strip("[]").rstrip(".") or None


def host_allowed(name: str, allowed: Iterable[str]) -> bool:
    """Whether the host ``name`` (from :func:`host_name`) matches an entry of ``allowed``."""
    for entry in allowed:
        if entry == "*" or entry == name:
            return True
        if entry.startswith(".") and (name == entry[1:] or name.endswith(entry)):
            return True
    return False


def refusal(start_response, header: str | None) -> list[bytes]:
    """HTTP 400 for a request to a foreign ``Host``: plain text, nothing cached."""
    shown = (header or "(none)")[:100]
    body = (
        f"Bad request: this server does not answer to the host name {shown!r}. If that is "
        "the dashboard's public name, the operator adds it to ALLOWED_HOSTS.\n"
    ).encode()
    start_response(
        "400 Bad Request",
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
        ],
    )
    return [body]


class HostCheck:
    """Answer only requests whose ``Host`` is allowed (see the module docstring).

    Parameters
    ----------
    allowed_hosts : iterable of str
        ``ALLOWED_HOSTS`` entries (as :func:`app.config.allowed_hosts` gives them);
        empty: :data:`LOOPBACK_HOSTS` only.
    """

    def __init__(self, allowed_hosts: Iterable[str] = ()) -> None:
        self.allowed = tuple(allowed_hosts) or LOOPBACK_HOSTS

    def permits(self, header: str | None, path: str) -> bool:
        """Whether a request with this ``Host`` header for ``path`` may be answered."""
        name = host_name(header)
        if name is None:
            return False
        if path in HEALTH_PATHS and name in LOOPBACK_HOSTS:
            return True
        return host_allowed(name, self.allowed)

    def install(self, server: Flask) -> None:
        """Wrap ``server.wsgi_app``, outermost: install it after every other WSGI wrapper."""
        inner = server.wsgi_app

        def wsgi_app(environ, start_response):
            header = environ.get("HTTP_HOST") or environ.get("SERVER_NAME")
            if self.permits(header, environ.get("PATH_INFO", "")):
                return inner(environ, start_response)
            log.warning(
                "refused a request for host %r (%s %s)",
                (header or "")[:100],
                environ.get("REQUEST_METHOD", ""),
                environ.get("PATH_INFO", "")[:200],
            )
            return refusal(start_response, header)

        server.wsgi_app = wsgi_app
