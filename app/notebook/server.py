"""The whole dashboard inline in a notebook: :func:`show` and :func:`stop`.

:func:`show` builds a dashboard (:func:`app.factory.create_app`) whose
shared models, in place of the built-in demo, are the notebook's, held in
memory; its store and jobs live in a temporary folder removed when it stops.
It serves the app with werkzeug's ``make_server`` on a thread of the kernel
(one request at a time: jobs are forked from this process by the local
diskcache manager, :class:`app.jobs.LocalJobManager`) and shows it in an
IFrame. It answers only requests for its own host names (``localhost``,
``127.0.0.1``, ``::1``, the bound address and the IFrame's host,
:mod:`app.host_check`), so a page that rebinds another name to this machine
gets HTTP 400, and only requests that carry its random token (in the path
``/t/<token>/`` the IFrame opens, in ``?token=`` once, then in a cookie;
:mod:`app.token_check`), so another page or user of this machine gets
403. The page may be framed only by the notebook front ends of
:data:`LOCAL_NOTEBOOKS` (JupyterLab and Notebook on this machine, VS Code's
webviews), or the origins given to :func:`show` or in ``FRAME_ANCESTORS``
(``frame-ancestors``, :mod:`app.security`); every other response header is
the hosted app's. :func:`stop` (or the kernel's exit) shuts the server down
through werkzeug's own ``shutdown``, frees the port and removes the folder.
"""

from __future__ import annotations

import atexit
import html
import os
import secrets
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from ..config import AppConfig, split_list
from ..factory import create_app, finish_setup
from ..host_check import LOOPBACK_HOSTS
from ..token_check import token_prefix
from ..warmup import import_before_serving
from .inputs import as_models

#: Frame ancestors by default: the notebook front ends that show the IFrame.
#: JupyterLab, Jupyter Notebook and nbclassic served from this machine (any port,
#: http or https), and VS Code's notebooks: their outputs are webviews, whose
#: origin is ``vscode-webview://<id>`` in the desktop app and
#: ``https://<id>.vscode-cdn.net`` in the browser (vscode.dev, Codespaces).
#: Override with :func:`show`'s ``notebook_origin`` or ``FRAME_ANCESTORS``.
LOCAL_NOTEBOOKS = (
    "http://localhost:*",
    "http://127.0.0.1:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "vscode-webview://*",
    "https://*.vscode-cdn.net",
)


@dataclass
class NotebookDashboard:
    """A dashboard served on a thread of the kernel (see :func:`show`)."""

    url: str
    server: BaseWSGIServer
    folder: tempfile.TemporaryDirectory
    height: int = 900
    thread: threading.Thread | None = None
    stopped: bool = field(default=False)

    @property
    def port(self) -> int:
        """The TCP port it listens on."""
        return self.server.server_port

    def serve(self) -> None:
        """Start answering requests on a daemon thread."""
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="calibration-notebook", daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        """Shut the server down, free its port and remove its folder (once)."""
        if self.stopped:
            return
        self.stopped = True
        if self.thread is not None:
            self.server.shutdown()
            self.thread.join()
        self.server.server_close()
        self.server.app.extensions["calibration_dashboard"].store.close()
        self.folder.cleanup()

    def iframe_html(self) -> str:
        """The ``<iframe>`` that shows the dashboard."""
        return (
            f'<iframe src="{html.escape(self.url)}" width="100%" height="{int(self.height)}" '
            'style="border: 1px solid #ddd" title="Calibration dashboard"></iframe>'
        )

    def __repr__(self) -> str:
        state = "stopped" if self.stopped else "running; stop() ends it"
        return f"<calibration dashboard at {self.url} ({state})>"


class QuietRequestHandler(WSGIRequestHandler):
    """werkzeug's handler without the access log (it would fill the notebook's output)."""

    def log_request(self, code="-", size="-") -> None:
        """Log nothing for a request answered (errors are still logged)."""


#: Dashboards started by this kernel and not stopped yet.
RUNNING: list[NotebookDashboard] = []


def notebook_config(
    folder: Path, host: str, url_host: str, notebook_origin: str | tuple[str, ...] | None = None
) -> AppConfig:
    """The settings of a notebook's dashboard (see :func:`show` for the arguments).

    Its host names are the loopback ones, ``host`` and ``url_host``; the
    origins that may frame it ``notebook_origin``, else ``FRAME_ANCESTORS``
    from the environment, else :data:`LOCAL_NOTEBOOKS`.
    """
    if isinstance(notebook_origin, str):
        notebook_origin = (notebook_origin,)
    origins = notebook_origin or split_list(os.environ.get("FRAME_ANCESTORS"))
    return AppConfig(
        cache_dir=folder,
        secret_key=secrets.token_hex(32),
        allowed_hosts=tuple(dict.fromkeys((*LOOPBACK_HOSTS, host, url_host))),
        frame_ancestors=tuple(origins or LOCAL_NOTEBOOKS),
        access_token=secrets.token_urlsafe(32),
        parse_in_process=True,
    )


def build_server(preds, config: AppConfig, host: str, port: int):
    """The WSGI server of a dashboard sharing ``preds`` (set up, not serving yet)."""
    app = create_app(config, shared=preds)
    ctx = app.server.extensions["calibration_dashboard"]
    import_before_serving()
    ctx.warm_up.run()  # no import may run on another thread when a job is forked
    finish_setup(app)
    return make_server(host, port, app.server, threaded=False, request_handler=QuietRequestHandler)


def show(
    models,
    data=None,
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    url_host: str = "localhost",
    notebook_origin: str | tuple[str, ...] | None = None,
    height: int = 900,
    display: bool = True,
) -> NotebookDashboard:
    """Open the whole dashboard inline, on the given models.

    Parameters
    ----------
    models : dict, list or one model
        ``{name: (probs, labels)}``, ``{name: Predictions}``, ``{name:
        fitted classifier}`` (scored on ``data``), or a list of these
        (:mod:`app.notebook.inputs`); at most 8 are selected when it opens.
    data : (X, y), optional
        Where classifiers are scored.
    port : int
        0: a free port.
    host : str
        The address it listens on (this machine only by default).
    url_host : str
        The host name in the IFrame's address: the notebook page's own host
        name, so that the frame's session cookie is same-site.
    notebook_origin : str or tuple of str, optional
        The origin(s) of the notebook page, the only pages that may frame
        it; default ``FRAME_ANCESTORS`` from the environment, else
        :data:`LOCAL_NOTEBOOKS` (JupyterLab, Notebook, VS Code).
    height : int
        Height of the IFrame in pixels.
    display : bool
        Show the IFrame now (in IPython); else only return the dashboard.

    Returns
    -------
    NotebookDashboard
        ``.url`` (with the token: ``http://HOST:PORT/t/<token>/``), ``.port``
        and ``.stop()``.

    Raises
    ------
    CalibrationInputError
        A model that cannot be read (nothing is started).
    """
    preds = as_models(models, data)
    folder = tempfile.TemporaryDirectory(prefix="calibration-notebook-")
    try:
        config = notebook_config(Path(folder.name), host, url_host, notebook_origin)
        server = build_server(preds, config, host, port)
    except BaseException:
        folder.cleanup()
        raise
    dashboard = NotebookDashboard(
        f"http://{url_host}:{server.server_port}{token_prefix(config.access_token)}",
        server,
        folder,
        height=height,
    )
    dashboard.serve()
    RUNNING.append(dashboard)
    if display:
        show_frame(dashboard)
    return dashboard


def show_frame(dashboard: NotebookDashboard) -> None:
    """Display the IFrame in IPython, or print the address elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import display as ipython_display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(f"The calibration dashboard is at {dashboard.url}")
        return
    bundle = {"text/html": dashboard.iframe_html(), "text/plain": repr(dashboard)}
    ipython_display(bundle, raw=True)


def stop(dashboard: NotebookDashboard | None = None) -> None:
    """Stop ``dashboard``, or every dashboard this kernel started (the kernel's exit does too)."""
    chosen = [dashboard] if dashboard is not None else list(RUNNING)
    for each in chosen:
        each.stop()
        if each in RUNNING:
            RUNNING.remove(each)


atexit.register(stop)
