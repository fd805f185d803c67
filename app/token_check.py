"""Only holders of a random token reach the dashboard: :class:`TokenCheck` (the notebook's).

A notebook's dashboard (:func:`app.notebook.show`) has no password, so, as
Jupyter's own server, it answers only requests that carry a random token
(``secrets.token_urlsafe(32)``, 256 bits) in one of three places:

* the path: ``/t/<token>/...``. The IFrame opens ``/t/<token>/`` and Dash is
  built with ``requests_pathname_prefix="/t/<token>/"`` (its documented
  setting for an app behind a proxy that strips a prefix; the routes stay at
  ``/``), so the page's scripts, styles, layout and callbacks all ask under
  the prefix, and the page's own scripts take it from Dash's
  ``_dash-config`` (``assets/upload.js``) or use addresses relative to the
  page (exports, ``statistics``). This wrapper checks the token and strips
  the prefix (moving it to ``SCRIPT_NAME``), so it needs no cookie: it works
  where third-party cookies are blocked (a VS Code webview frames
  ``localhost`` from another site). The page's address keeps the prefix when
  its view is written into the query string (:mod:`app.view_url`);
* ``?token=<token>`` on any address, as Jupyter prints it: answered by a
  redirect to the same address under the path prefix, without the token in
  the query, which also sets the cookie;
* the cookie ``calibration_token_<id>`` (HttpOnly, ``SameSite=Lax``,
  ``Path=/``), so that an address typed without the token works in a browser
  that visited once. A cookie names no port, so each server's cookie has its
  own name (``<id>`` is derived from its token). ``SameSite=Lax`` is enough
  where it can help: a notebook on ``localhost:8888`` framing the dashboard
  on ``localhost:PORT`` is the same site (ports do not count), so the cookie
  is sent; a frame from another site (VS Code) gets no ``Lax`` cookie, and
  ``SameSite=None`` would need ``Secure`` (https) and is blocked there all the
  same, so such frames rely on the path.

Anything else, wrong tokens included, gets HTTP 403 (plain text, no cookie,
no data) before any hook of the app runs. Tokens are compared with
:func:`hmac.compare_digest` (constant time).
"""

from __future__ import annotations

import hashlib
import logging
from hmac import compare_digest
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, quote, urlencode

from flask import Flask
from werkzeug.http import dump_cookie

log = logging.getLogger("calibration_dashboard.security")

#: The path segment before the token: ``/t/<token>/``.
PATH_MARK = "/t/"
QUERY_PARAMETER = "token"
COOKIE_PREFIX = "calibration_token_"
#: How long a browser keeps the cookie (the server's own life is shorter).
COOKIE_SECONDS = 7 * 86_400


def token_prefix(token: str | None) -> str | None:
    """Dash's ``requests_pathname_prefix`` for ``token`` (``/t/<token>/``); None without one."""
    return None if token is None else f"{PATH_MARK}{token}/"


def forbidden(start_response) -> list[bytes]:
    """HTTP 403 for a request without the token: plain text, nothing cached."""
    body = (
        b"Forbidden: this notebook dashboard needs its token. Open the address that "
        b"app.notebook.show() printed or framed (it contains /t/<token>/).\n"
    )
    start_response(
        "403 Forbidden",
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
        ],
    )
    return [body]


class TokenCheck:
    """Answer only requests that carry ``token`` (see the module docstring).

    Parameters
    ----------
    token : str
        The secret; URL-safe characters (``secrets.token_urlsafe``).
    """

    def __init__(self, token: str) -> None:
        if not token or quote(token, safe="-_") != token:
            raise ValueError("the access token must be a non-empty URL-safe string.")
        self.token = token
        self.cookie_name = COOKIE_PREFIX + hashlib.sha256(token.encode()).hexdigest()[:12]

    def matches(self, candidate: str | None) -> bool:
        """Whether ``candidate`` is the token (constant-time comparison)."""
        return candidate is not None and compare_digest(candidate.encode(), self.token.encode())

    def strip_path(self, environ) -> bool:
        """Move a ``/t/<token>`` prefix of the path to ``SCRIPT_NAME``: whether it was there.

        Raises
        ------
        PermissionError
            The path has a ``/t/<something>`` prefix with another token.
        """
        path = environ.get("PATH_INFO", "")
        if not path.startswith(PATH_MARK):
            return False
        candidate, slash, rest = path[len(PATH_MARK) :].partition("/")
        if not self.matches(candidate):
            raise PermissionError("wrong token in the path")
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + PATH_MARK + candidate
        environ["PATH_INFO"] = slash + rest or "/"
        return True

    def query_token(self, environ) -> tuple[str | None, str]:
        """The ``token`` query parameter and the query string without it."""
        pairs = parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        tokens = [v for k, v in pairs if k == QUERY_PARAMETER]
        rest = urlencode([(k, v) for k, v in pairs if k != QUERY_PARAMETER])
        return (tokens[0] if len(tokens) == 1 else None), rest

    def cookie_token(self, environ) -> str | None:
        """This server's token cookie, if the request has one."""
        cookies = SimpleCookie()
        try:
            cookies.load(environ.get("HTTP_COOKIE", ""))
        except Exception:  # a malformed header carries no token
            return None
        morsel = cookies.get(self.cookie_name)
        return None if morsel is None else morsel.value

    def redirect(self, environ, start_response, rest: str) -> list[bytes]:
        """302 to the same address under the token path, without the query token; the cookie."""
        path = quote(environ.get("PATH_INFO", "") or "/")
        location = f"{token_prefix(self.token)}{path.lstrip('/')}" + (f"?{rest}" if rest else "")
        https = environ.get("wsgi.url_scheme") == "https"
        cookie = dump_cookie(
            self.cookie_name,
            self.token,
            max_age=COOKIE_SECONDS,
            path="/",
            httponly=True,
            samesite="Lax",
            secure=https,
        )
        start_response(
            "302 Found",
            [
                ("Location", location),
                ("Set-Cookie", cookie),
                ("Content-Length", "0"),
                ("Cache-Control", "no-store"),
            ],
        )
        return [b""]

    def install(self, server: Flask) -> None:
        """Wrap ``server.wsgi_app``; install it before :class:`app.host_check.HostCheck`,
        so that the ``Host`` check stays outermost."""
        inner = server.wsgi_app

        def wsgi_app(environ, start_response):
            try:
                if self.strip_path(environ):
                    return inner(environ, start_response)
            except PermissionError:
                return self.refuse(environ, start_response)
            query, rest = self.query_token(environ)
            if query is not None and self.matches(query):
                return self.redirect(environ, start_response, rest)
            if query is None and self.matches(self.cookie_token(environ)):
                return inner(environ, start_response)
            return self.refuse(environ, start_response)

        server.wsgi_app = wsgi_app

    def refuse(self, environ, start_response) -> list[bytes]:
        """Log and answer 403 (the path is logged without the token)."""
        path = environ.get("PATH_INFO", "")
        if path.startswith(PATH_MARK):
            path = PATH_MARK + "…/" + path[len(PATH_MARK) :].partition("/")[2]
        log.warning(
            "refused a request without the notebook's token (%s %s)",
            environ.get("REQUEST_METHOD", ""),
            path[:200],
        )
        return forbidden(start_response)
