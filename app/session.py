"""Server-issued session ids in a signed, HttpOnly, SameSite=Lax cookie.

The browser never chooses its session: on every request the cookie is
verified (signature and age, with :mod:`itsdangerous`); a missing, forged,
malformed or expired cookie gets a fresh, empty session and a new cookie.
The id itself is never readable by scripts in the page (HttpOnly), and all
uploaded data is looked up server-side by it (see :mod:`app.store.data_store`).

The cookie is re-signed when half of its lifetime has passed, so an active
session does not expire while an idle one does after ``SESSION_TTL_SECONDS``.

A lost session is said so: a cookie that fails verification (expired, or
signed with a key that has since changed) marks the request
(:meth:`SessionManager.lost`) and leaves a short-lived notice cookie, so the
fresh page that follows shows :data:`SESSION_LOST_MESSAGE` once. The browser
keeps the session cookie for twice the TTL, so that an expired cookie still
reaches the server and can be told apart from a first visit; the server
accepts it only within the TTL.

Requests to :data:`SESSIONLESS_PATHS` (the health check) neither read nor
issue a session: a probe every few seconds leaves no cookie and no session.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping

from flask import Flask, Response, g, has_request_context, request
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

COOKIE_NAME = "calibration_session"
#: Set for a few minutes after a session was lost, until the next page has said so.
NOTICE_COOKIE = "calibration_session_lost"
NOTICE_SECONDS = 600
SESSION_LOST_MESSAGE = (
    "Your previous session could not be restored (it expired, or the server's key changed), "
    "so its uploaded models are no longer available here: upload your files again."
)
SALT = "calibration-dashboard/session-id/v1"
#: ``secrets.token_urlsafe(24)``: 32 characters of [A-Za-z0-9_-].
SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{32}$")
#: Paths answered without a session (no cookie read, none issued).
SESSIONLESS_PATHS = frozenset({"/healthz"})


def new_session_id() -> str:
    """A fresh random session id (192 bits)."""
    return secrets.token_urlsafe(24)


class SessionManager:
    """Issue and verify session cookies for one app.

    Parameters
    ----------
    secret_key : str
        Signing key (shared by all workers).
    ttl_seconds : int
        Maximum age of a cookie signature; older cookies start a new session.
    secure : bool
        Add the ``Secure`` flag (HTTPS only).
    """

    def __init__(self, secret_key: str, ttl_seconds: int, *, secure: bool = False) -> None:
        self._serializer = URLSafeTimedSerializer(secret_key, salt=SALT)
        self.ttl_seconds = int(ttl_seconds)
        self.secure = bool(secure)

    # ------------------------------------------------------------ tokens
    def sign(self, session_id: str) -> str:
        """The cookie value for ``session_id``."""
        return self._serializer.dumps(session_id)

    def verify(self, cookie_value) -> tuple[str | None, float]:
        """``(session id, signing time)`` of a cookie, or ``(None, 0)`` if it is not valid.

        Anything that is not a string we signed, within the TTL, holding a
        well-formed id, is rejected.
        """
        if not isinstance(cookie_value, str) or not cookie_value or len(cookie_value) > 512:
            return None, 0.0
        try:
            value, signed_at = self._serializer.loads(
                cookie_value, max_age=self.ttl_seconds, return_timestamp=True
            )
        except (BadSignature, SignatureExpired, ValueError, TypeError):
            return None, 0.0
        if not isinstance(value, str) or not SESSION_ID_PATTERN.fullmatch(value):
            return None, 0.0
        return value, signed_at.timestamp()

    def session_from_cookies(self, cookies: Mapping[str, str]) -> str | None:
        """The verified session id in a cookie mapping, or None."""
        return self.verify(cookies.get(COOKIE_NAME))[0]

    # ------------------------------------------------------------- Flask
    def install(self, server: Flask) -> None:
        """Resolve the session before each request and (re)issue the cookie after it.

        Requests to :data:`SESSIONLESS_PATHS` get neither.
        """

        @server.before_request
        def _resolve_session() -> None:
            if request.path in SESSIONLESS_PATHS:
                return
            cookie = request.cookies.get(COOKIE_NAME)
            sid, signed_at = self.verify(cookie)
            if sid is None:
                g.session_id = new_session_id()
                g.session_cookie_needed = True
                g.session_lost = bool(cookie)
            else:
                g.session_id = sid
                g.session_cookie_needed = time.time() - signed_at > self.ttl_seconds / 2

        @server.after_request
        def _issue_cookie(response: Response) -> Response:
            if g.get("session_cookie_needed") and g.get("session_id"):
                self._set_cookie(
                    response, COOKIE_NAME, self.sign(g.session_id), 2 * self.ttl_seconds
                )
            if g.get("session_lost") and not g.get("session_loss_told"):
                self._set_cookie(response, NOTICE_COOKIE, "1", NOTICE_SECONDS)
            elif g.get("session_loss_told") and request.cookies.get(NOTICE_COOKIE):
                response.delete_cookie(NOTICE_COOKIE, path="/")
            return response

    def _set_cookie(self, response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            httponly=True,
            samesite="Lax",
            secure=self.secure,
            path="/",
        )

    def lost(self) -> bool:
        """Whether this request's session replaced one that could not be restored.

        True on the request that carried the bad cookie, and on later ones
        while the notice cookie lasts. Call :meth:`told` once the page shows it.
        """
        if not has_request_context():
            return False
        return bool(g.get("session_lost") or request.cookies.get(NOTICE_COOKIE))

    def told(self) -> None:
        """The page has shown the lost-session notice: drop the notice cookie."""
        if has_request_context():
            g.session_loss_told = True

    def current(self) -> str | None:
        """The session of the running request or callback.

        In a request (uploads, foreground callbacks) it is the id resolved by
        :meth:`install` (a new one if the cookie was invalid). In a background
        callback, which runs in another process, it is read from the cookies
        Dash hands to the job; an invalid cookie there gives None (no data).
        """
        if has_request_context():
            sid = g.get("session_id")
            if sid:
                return sid
            return self.session_from_cookies(request.cookies)
        from dash import callback_context

        try:
            cookies = callback_context.cookies
        except Exception:  # outside any callback
            return None
        return self.session_from_cookies(cookies or {})
