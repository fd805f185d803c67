"""Request ids and the last line of defence: no traceback, path or exception text leaves the server.

Every request gets a short random id when it arrives, sent back as the
``X-Request-ID`` header; :func:`request_id` is the one source of it, so the
id a message shows a user is the id of the log line and of the header. An
exception that nothing else handled is logged with the id and the full
traceback, and the client receives only "Something went wrong (request id
...)" with HTTP 500: JSON for ``/api/`` routes and Dash callbacks, plain
text elsewhere. HTTP errors (404, 405, 413, ...) keep their status and get
the same short treatment, so even werkzeug's default pages carry no detail.
A passing condition (``retry_later``: the disk store locked past a read's
retries) is answered HTTP 503 with its own message and ``Retry-After``.
"""

from __future__ import annotations

import logging
import uuid

from flask import Flask, g, has_request_context, jsonify, request
from werkzeug.exceptions import HTTPException

log = logging.getLogger("calibration_dashboard.errors")
HEADER = "X-Request-ID"
_JSON_PREFIXES = ("/api/", "/_dash-")


def _new_request_id() -> str:
    return uuid.uuid4().hex[:12]


def request_id() -> str:
    """The id of the running request: its ``X-Request-ID`` (a fresh id outside requests)."""
    if has_request_context():
        rid = g.get("request_id")
        if rid is None:
            rid = g.request_id = _new_request_id()
        return rid
    return _new_request_id()


def failure_message(rid: str) -> str:
    """What a client is told about an unexpected failure."""
    return f"Something went wrong (request id {rid}). Try again; if it persists, report the id."


#: Seconds a client is asked to wait before repeating a request answered 503.
RETRY_AFTER_SECONDS = 5


def install_error_handlers(
    server: Flask, *, hide_errors: bool = True, retry_later: tuple[type[Exception], ...] = ()
) -> None:
    """Assign request ids; with ``hide_errors``, answer failures without any detail.

    ``hide_errors=False`` (``DEBUG=1`` in development) leaves Dash's debug
    pages alone. Exceptions of the ``retry_later`` types are answered HTTP
    503 with their message (written for users) and ``Retry-After`` whatever
    ``hide_errors``.
    """

    @server.before_request
    def _assign_request_id() -> None:
        g.request_id = _new_request_id()

    @server.after_request
    def _send_request_id(response):
        response.headers[HEADER] = request_id()
        return response

    def reply(status: int, message: str):
        if request.path.startswith(_JSON_PREFIXES):
            response = jsonify({"error": message, "request_id": request_id()})
        else:
            response = server.response_class(message + "\n", mimetype="text/plain")
        response.status_code = status
        return response

    def _retry_later(exc: Exception):
        log.warning("answered 503 (request id %s): %s", request_id(), exc)
        response = reply(503, str(exc))
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response

    for kind in retry_later:
        server.register_error_handler(kind, _retry_later)
    if not hide_errors:
        return

    @server.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        if exc.code is None or exc.code < 400:
            return exc
        return reply(exc.code, f"{exc.code} {exc.name}.")

    @server.errorhandler(Exception)
    def _unexpected(exc: Exception):
        rid = request_id()
        log.error(
            "unhandled error (request id %s) on %s %s",
            rid,
            request.method,
            request.path,
            exc_info=exc,
        )
        return reply(500, failure_message(rid))
