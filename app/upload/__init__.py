"""``POST /api/upload``: multipart upload of prediction files, parsed once, kept server-side.

Request
    ``multipart/form-data`` with one or more parts named ``file`` (the
    browser script sends one file per request), and optionally the loading
    options ``renormalize`` (``"1"``: divide probability rows by their sums,
    the page's "renormalise rows" switch) and ``label_column`` (the column of
    true classes, the page's label-column picker). The session cookie decides
    where the models go; the browser never names a session.
Limits (checked before anything is parsed)
    A request whose ``Content-Length`` exceeds ``MAX_UPLOAD_MB`` (plus a
    little multipart overhead) is refused with HTTP 413 without reading its
    body; a body that turns out longer is cut off by Werkzeug with 413 too;
    each received file is checked against the limit before the loader sees it.
    Files are streamed to temporary files in ``CACHE_DIR/uploads``, never
    held in memory whole.
Response (JSON)
    ``200 {"models": [ModelInfo...], "files": [{"file", "models"}], "errors": [...]}``
    once the files were received: a file the loader rejects is listed in
    ``errors`` (``{"file", "error", "remedy", "columns"}``: the loader's
    message, phrased for the page, and the option that fixes it, if one does:
    ``"renormalize"``, or ``"label_column"`` with the file's ``columns``) and
    summarised in ``error``; ``notices`` lists the loader's notes on files
    it loaded (e.g. rows renormalised); ``413`` when too large, ``400`` for a request without files,
    ``507`` when the server's disk cannot take the file (full or read-only).
    Compressed content is bounded too (:mod:`app.upload.guard`): a file that
    expands past the limit, or whose decoded data would pass
    ``DECODED_FACTOR x MAX_UPLOAD_MB``, is listed in ``errors``; so is a model
    with more than ``MAX_CLASSES`` classes, and a file whose parse needs more
    than ``PARSE_MEMORY_LIMIT_MB`` of memory or ``PARSE_TIME_LIMIT_SECONDS``
    of CPU time (files are parsed in a child process, :mod:`app.upload.parser`).
    A file that fails never removes models already loaded.
Storage
    Each file's decoded data counts against the session's quota and its
    client's (:func:`client_key`: the signed-in user with basic auth, else the
    client address), see :mod:`app.store.budget`.
"""

from __future__ import annotations

import logging
import re
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from flask import Flask, Request, jsonify, request

from calibration_core import CalibrationInputError

from ..request_errors import request_id
from ..session import SessionManager
from ..store.data_store import DataStore
from ..store.disk import STORAGE_MESSAGE
from .parser import LoadOptions, UploadParser

UPLOAD_PATH = "/api/upload"
#: Room for multipart boundaries and part headers on top of the file limit.
MULTIPART_SLACK = 64 * 1024
MAX_FILES_PER_REQUEST = 10
MAX_NAME_LENGTH = 120

log = logging.getLogger("calibration_dashboard.upload")

#: How the page applies each remedy of a CalibrationInputError (its switch and picker).
PAGE_REMEDIES = {
    "renormalize": "To divide each row by its sum, tick 'renormalise rows' and upload the "
    "file again.",
    "label_column": "Or pick the label column below; the file is then sent again.",
}


def load_options(form) -> LoadOptions:
    """The loading options sent with an upload (form fields ``renormalize``, ``label_column``)."""
    column = str(form.get("label_column") or "").strip()[:MAX_NAME_LENGTH] or None
    return LoadOptions(renormalize=form.get("renormalize") == "1", label_column=column)


def refusal(name: str, exc: CalibrationInputError) -> dict:
    """A refused file's entry in ``errors``: the message phrased for the page, and its remedy."""
    entry = {"file": name, "error": f"{name}: {exc.phrased(PAGE_REMEDIES)}"}
    if exc.remedy in PAGE_REMEDIES:
        entry["remedy"] = exc.remedy
        entry["columns"] = list(exc.columns)
    return entry


def clean_file_name(raw) -> str:
    """A display name for an uploaded file: no path, no control or bidi characters.

    ``"../../etc/passwd"`` becomes ``"passwd"``; right-to-left overrides and
    other invisible formatting characters are dropped; the result is at most
    120 characters (keeping the extension) and never empty.
    """
    name = str(raw or "")
    name = re.split(r"[\\/]", name)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = re.sub(r"\s+", " ", name).strip().lstrip(".")
    if len(name) > MAX_NAME_LENGTH:
        _, dot, ext = name.rpartition(".")
        ext = ext if dot and len(ext) <= 10 else ""
        name = name[: MAX_NAME_LENGTH - len(ext) - 2] + "…" + ("." + ext if ext else "")
    return name or "upload"


def make_request_class(upload_dir: Path) -> type[Request]:
    """A Flask Request class that streams uploaded files to ``upload_dir``."""
    upload_dir.mkdir(parents=True, exist_ok=True)

    class UploadRequest(Request):
        def _get_file_stream(
            self, total_content_length, content_type, filename=None, content_length=None
        ):
            return tempfile.TemporaryFile(dir=upload_dir, prefix="upload-")

    return UploadRequest


def error_reply(message: str, status: int):
    """A refused request's JSON answer: the ``message``, and no models or file errors."""
    return jsonify({"error": message, "models": [], "errors": []}), status


def _too_large(limit_mb: int, what: str = "the upload"):
    return error_reply(
        f"{what} is larger than the {limit_mb} MB limit; "
        "split it into smaller files or ask the operator to raise MAX_UPLOAD_MB.",
        413,
    )


def _file_size(stream) -> int:
    stream.seek(0, 2)
    size = stream.tell()
    stream.seek(0)
    return size


def file_count_problem(files: list) -> str | None:
    """Why a request's number of files is refused (none, or too many), or None."""
    if not files:
        return "no file received: send the file in a form field named 'file'."
    if len(files) > MAX_FILES_PER_REQUEST:
        return f"send at most {MAX_FILES_PER_REQUEST} files per request."
    return None


def unexpected_failure(name: str) -> dict:
    """The ``errors`` entry of a file whose load failed unexpectedly (logged with a request id).

    Call it while handling the exception, so that the log holds its traceback.
    """
    rid = request_id()
    log.exception("upload of %r failed (request id %s)", name, rid)
    return {
        "file": name,
        "error": f"{name}: could not be read as predictions (unexpected error; request id {rid}).",
    }


@dataclass
class UploadAnswer:
    """What an upload request loaded and refused, file by file: the response's body."""

    loaded: list = field(default_factory=list)
    per_file: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    notices: list = field(default_factory=list)

    def add(self, name: str, infos: list, notes) -> None:
        """Record the models of file ``name`` and the loader's ``notes`` on it."""
        self.per_file.append({"file": name, "models": [i.handle for i in infos]})
        self.notices.extend(f"{name}: {note}" for note in notes)
        self.loaded.extend(i.to_json() for i in infos)

    def body(self) -> dict:
        """The JSON body; ``error`` sums up the refused files, if any."""
        body = {
            "models": self.loaded,
            "files": self.per_file,
            "errors": self.errors,
            "notices": self.notices,
        }
        if self.errors:
            body["error"] = " ".join(e["error"] for e in self.errors)
        return body


def client_key(per_user: bool) -> str:
    """Who sends the running request, for the quota per client.

    ``user:<name>`` when basic auth is on (``per_user``: the header was
    verified before the route ran), else ``addr:<address>``: ``remote_addr``,
    which is the ``X-Forwarded-For`` client only from a trusted proxy
    (:class:`app.security.TrustedProxies`).
    """
    auth = request.authorization
    if per_user and auth is not None and auth.username:
        return f"user:{auth.username}"
    return f"addr:{request.remote_addr or 'unknown'}"


def load_files(
    files: list,
    sid,
    *,
    store: DataStore,
    parser: UploadParser,
    max_upload_mb: int,
    client: str | None = None,
):
    """Parse and store each received file; the route's response.

    A file the loader rejects (or that fails unexpectedly) is listed in
    ``errors`` and the next file is loaded; a file over the size limit ends
    the request with 413.
    """
    limit = max_upload_mb * 1024 * 1024
    answer = UploadAnswer()
    options = load_options(request.form)
    for part in files:
        name = clean_file_name(part.filename)
        try:
            if _file_size(part.stream) > limit:
                return _too_large(max_upload_mb, f"{name}")
            parsed = parser.parse(part.stream, name, options)
            infos = store.add_models(
                sid, parsed.predictions, source=name, soft=parsed.soft_labels, client=client
            )
        except CalibrationInputError as exc:
            answer.errors.append(refusal(name, exc))
            continue
        except Exception:
            answer.errors.append(unexpected_failure(name))
            continue
        finally:
            part.close()
        answer.add(name, infos, parsed.notices)
    # File-level problems are answers, not failed requests: 200 with the messages.
    return jsonify(answer.body()), 200


def register_upload_route(
    server: Flask,
    *,
    store: DataStore,
    sessions: SessionManager,
    parser: UploadParser,
    max_upload_mb: int,
    per_user: bool = False,
) -> None:
    """Add ``POST /api/upload`` (and a JSON 413 handler for ``/api/``) to the Flask server.

    Each received file is parsed by ``parser``, in a child process (:mod:`app.upload.parser`).
    ``per_user``: basic auth is on, so the quota per client is per signed-in user
    (:func:`client_key`).
    """
    limit = max_upload_mb * 1024 * 1024
    server.config["MAX_CONTENT_LENGTH"] = limit + MULTIPART_SLACK

    def handle_413(exc):
        if request.path.startswith("/api/"):
            return _too_large(max_upload_mb)
        return exc

    server.register_error_handler(413, handle_413)

    @server.post(UPLOAD_PATH)
    def upload_predictions():
        length = request.content_length
        if length is not None and length > limit + MULTIPART_SLACK:
            return _too_large(max_upload_mb)
        sid = sessions.current()
        try:
            files = request.files.getlist("file")  # streamed to CACHE_DIR/uploads
        except OSError as exc:  # disk full or read-only: the file cannot even be received
            log.error("receiving an upload failed: %s", exc)
            store.storage_failed(exc)
            return error_reply(STORAGE_MESSAGE, 507)
        problem = file_count_problem(files)
        if problem is not None:
            return error_reply(problem, 400)
        return load_files(
            files,
            sid,
            store=store,
            parser=parser,
            max_upload_mb=max_upload_mb,
            client=client_key(per_user),
        )
