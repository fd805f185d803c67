"""How responses travel: compressed when the browser asks, static files cached by version.

Compression
    Every response whose type is text (HTML, CSS, JavaScript, JSON: the
    default types of flask-compress) and that is at least
    :data:`MIN_SIZE` bytes long goes out brotli- or gzip-compressed,
    whichever the request's ``Accept-Encoding`` prefers (brotli on a tie:
    10-20 % smaller scripts than gzip); without either, as it is.
    Streamed responses (the calibrated exports of ``/api/export/``) are never
    compressed: they leave as they are made, never buffered whole.
Static files
    Dash's scripts and style sheets come from two routes:
    ``/_dash-component-suites/`` (component libraries' bundles) and
    ``/assets/`` (the project's own files, served by Flask's ``send_file`` as
    a stream from disk). A file of ``/assets/`` of a compressible type is read
    whole before it is compressed (the largest, the vendored plotly.js, is
    1.2 MB). Static files do not change while a process runs, so their
    compressed bodies are kept in memory (:class:`CompressedFiles`, keyed by
    algorithm and a digest of the body: at most one entry per file and
    algorithm, whatever addresses are requested); other responses are
    compressed on each request.
Browser caching
    A *versioned* address of a static file changes whenever its content does:
    Dash's fingerprinted bundles (``dash_renderer.v4_4_1m1796661138.min.js``)
    and the ``?m=<modification time>`` Dash appends to every ``/assets/``
    address in the page. Those are cached for a year and never revalidated
    (``Cache-Control: public, max-age=31536000, immutable``). Every other
    static address (an unversioned ``/assets/`` file, the chunks that bundles
    load on demand, such as ``dash_ag_grid/async-community.js``) is
    ``no-cache``: kept, but revalidated with its ``ETag`` on each use.
"""

from __future__ import annotations

import hashlib

from dash import Dash
from dash.fingerprint import check_fingerprint
from flask import Flask, Response, g, request
from flask_compress import Compress

#: Algorithms, preferred first when a request accepts several equally.
ALGORITHMS = ["br", "gzip"]
#: Brotli's quality: 6 makes scripts 8-10 % smaller than 4 for about 1.6x its time
#: (30-40 ms for a 1.2 MB script, once per process thanks to :class:`CompressedFiles`).
BROTLI_QUALITY = 6
#: Responses shorter than this (bytes) are sent as they are.
MIN_SIZE = 500
#: ``Cache-Control`` of a versioned static address: a year, never revalidated.
VERSIONED = "public, max-age=31536000, immutable"
#: ``Cache-Control`` of any other static address: revalidated on each use.
UNVERSIONED = "no-cache"
COMPONENT_SUITES = "_dash-component-suites/"


class CompressedFiles:
    """flask-compress's cache of compressed static files, by algorithm and content digest.

    flask-compress asks with the key ``"<algorithm>;<identity>"``; the identity
    is :func:`content_identity` of the response, empty for a response that is
    not a static file: those are never kept.
    """

    def __init__(self) -> None:
        self._bodies: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        return self._bodies.get(key)

    def set(self, key: str, value: bytes) -> None:
        _algorithm, _, identity = key.partition(";")
        if identity:
            self._bodies[key] = value

    def __len__(self) -> int:
        return len(self._bodies)


def content_identity(_request=None) -> str:
    """The digest of the static file being sent (set by :class:`Delivery`), else ``""``.

    flask-compress's cache key function; it is called with the request.
    """
    return g.get("static_digest", "")


class Delivery:
    """Compression of responses and cache headers of static files for a Dash app.

    Parameters
    ----------
    app : dash.Dash
        Its routes prefix and assets address say which requests are static files.
    """

    def __init__(self, app: Dash) -> None:
        prefix = app.config.routes_pathname_prefix
        self.suites_prefix = prefix + COMPONENT_SUITES
        self.assets_prefix = prefix + app.config.assets_url_path.strip("/") + "/"
        self.cache = CompressedFiles()
        self._compress = Compress()
        self._compressible: frozenset[str] = frozenset()

    def install(self, server: Flask) -> None:
        """Configure flask-compress on ``server`` and register the ``after_request`` hook.

        Flask runs ``after_request`` hooks in the reverse order of their
        registration: install this before any hook that changes a response's
        body or headers, so that the compression comes last.
        """
        server.config.update(
            COMPRESS_REGISTER=False,  # the hook below calls it
            COMPRESS_ALGORITHM=ALGORITHMS,
            COMPRESS_BR_LEVEL=BROTLI_QUALITY,
            COMPRESS_MIN_SIZE=MIN_SIZE,
            COMPRESS_STREAMS=False,
            COMPRESS_CACHE_BACKEND=lambda: self.cache,
            COMPRESS_CACHE_KEY=content_identity,
        )
        self._compress.init_app(server)
        self._compressible = frozenset(server.config["COMPRESS_MIMETYPES"])

        @server.after_request
        def _deliver(response: Response) -> Response:
            if self.is_static(request.path):
                self._prepare_static(response)
            return self._compress.after_request(response)

    def is_static(self, path: str) -> bool:
        """Whether ``path`` is a static file's (a component library's bundle or an asset)."""
        return path.startswith((self.suites_prefix, self.assets_prefix))

    def is_versioned(self, path: str, query: dict) -> bool:
        """Whether a static file's address changes with its content (fingerprint or ``?m=``)."""
        if path.startswith(self.suites_prefix):
            return check_fingerprint(path[len(self.suites_prefix) :])[1]
        return "m" in query

    def _prepare_static(self, response: Response) -> None:
        """Cache headers; the body of a compressible file read whole, and its digest noted."""
        if response.status_code != 200:
            return
        versioned = self.is_versioned(request.path, request.args)
        response.headers["Cache-Control"] = VERSIONED if versioned else UNVERSIONED
        if response.mimetype not in self._compressible:
            return
        if response.is_streamed:  # send_file's stream of a file of /assets/
            response.direct_passthrough = False
            response.make_sequence()
        g.static_digest = hashlib.blake2b(response.get_data(), digest_size=16).hexdigest()
