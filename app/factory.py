"""``create_app(config) -> dash.Dash``: the whole dashboard, with no module-level state.

Each call builds its own disk store, session manager, background-callback
manager (:mod:`app.jobs`), Flask routes and callbacks, so tests can create
isolated apps, and gunicorn workers and Celery job workers that share
``CACHE_DIR`` (and ``REDIS_URL``) share uploads, fits and jobs.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from dash import Dash
from flask import jsonify

from .analysis import opening_class
from .callback_failures import CallbackFailures
from .callbacks import register_callbacks
from .callbacks.exports import register_export_route
from .callbacks.groups.columns import opening_group
from .callbacks.view import render
from .config import MB, AppConfig, ConfigError
from .context import AppContext
from .datasets import Datasets
from .delivery import Delivery
from .groups.time import TimeSettings
from .host_check import HostCheck
from .jobs import background_manager
from .layout.page import build_layout, default_settings
from .origin_check import OriginCheck
from .request_errors import install_error_handlers
from .security import BasicAuth, SecurityHeaders, TrustedProxies
from .services.fit import plan_fits
from .session import SessionManager
from .settings import RawSettings
from .statistics_page import register_statistics_route
from .store.data_store import DataStore
from .store.disk import StorageBusy
from .store.records import ModelInfo
from .token_check import TokenCheck, token_prefix
from .upload import make_request_class, register_upload_route
from .upload.parser import ParseLimits, UploadParser, default_memory_limit_mb
from .view_url import decode_time, decode_view, page_query
from .warmup import WarmUp


def _assets_dir() -> Path:
    """The folder of CSS and scripts Dash serves.

    The project keeps it at the top level (``assets/``); building the wheel or
    the sdist maps it into the package as ``app/assets`` (``pyproject.toml``),
    so an installed copy needs no source tree. A source checkout, used
    editable or through ``PYTHONPATH``, has only the top-level folder.
    """
    package_dir = Path(__file__).resolve().parent
    installed = package_dir / "assets"
    return installed if installed.is_dir() else package_dir.parent / "assets"


#: The assets folder Dash serves (see :func:`_assets_dir`).
ASSETS_DIR = _assets_dir()
TITLE = "Calibration dashboard"
#: Dash's page template with the document's language on ``<html>`` (screen
#: readers pick their voice from it; axe-core's ``html-has-lang`` rule).
INDEX_STRING = """<!DOCTYPE html>
<html lang="en">
    <head>
        {%metas%}
        <title>{%title%}</title>
        {%favicon%}
        {%css%}
    </head>
    <body>
        {%app_entry%}
        <footer>
            {%config%}
            {%scripts%}
            {%renderer%}
        </footer>
    </body>
</html>"""

log = logging.getLogger("calibration_dashboard")


def _upload_parser(config: AppConfig) -> UploadParser:
    """The parser of uploads, with the limits of ``config`` (see :mod:`app.upload.parser`)."""
    memory_mb = config.parse_memory_limit_mb or default_memory_limit_mb(config.max_upload_mb)
    limits = ParseLimits(
        upload_bytes=config.max_upload_mb * MB,
        max_classes=config.max_classes,
        memory_mb=memory_mb,
        cpu_seconds=config.parse_time_limit_seconds,
        concurrency=config.parse_concurrency,
    )
    return UploadParser(limits, in_process=config.parse_in_process)


def _open_store(config: AppConfig, cache_dir: Path, shared=None) -> DataStore:
    """The disk store in ``CACHE_DIR/store``; ConfigError when the directory cannot hold it.

    ``shared``: the models every session sees instead of the demo (a notebook's).
    """
    try:
        return DataStore(
            cache_dir / "store",
            size_limit_bytes=config.cache_size_limit_mb * MB,
            ttl_seconds=config.session_ttl_seconds,
            idle_eviction_seconds=config.idle_eviction_seconds,
            memory_bytes=config.memory_cache_bytes,
            max_models_per_session=config.max_models_per_session,
            max_session_bytes=config.session_quota_mb * MB,
            max_client_bytes=config.client_quota_bytes,
            store_reserve=config.store_reserve_percent / 100,
            shared=shared,
        )
    except Exception as exc:  # sqlite3 / OS errors of an unusable directory
        raise ConfigError(
            f"CACHE_DIR {str(cache_dir)!r} cannot hold the disk store ({exc}); point CACHE_DIR "
            "at a writable directory with free space."
        ) from None


def _build_context(config: AppConfig, secret_key: str, cache_dir: Path, shared) -> AppContext:
    """The app's shared objects: store, sessions, warm-up, failures, jobs, upload parser."""
    sessions = SessionManager(secret_key, config.session_ttl_seconds, secure=config.cookie_secure)
    warm_up = WarmUp()
    failures = CallbackFailures()
    return AppContext(
        config=config,
        store=_open_store(config, cache_dir, shared),
        sessions=sessions,
        warm_up=warm_up,
        failures=failures,
        jobs=background_manager(config, cache_dir, warm_up, sessions.current, failures),
        upload_parser=_upload_parser(config),
        datasets=_datasets(config, cache_dir),
    )


def _datasets(config: AppConfig, cache_dir: Path) -> Datasets | None:
    """The server-side datasets of ``DATASETS_DIR`` (None when it is not set)."""
    if config.datasets_dir is None:
        return None
    return Datasets(
        config.datasets_dir,
        config.dask_scheduler_address,
        cache_dir / "datasets",
        config.session_ttl_seconds,
    )


def _install_server(
    app: Dash, ctx: AppContext, secret_key: str, cache_dir: Path
) -> SecurityHeaders:
    """Request hooks and routes of the Flask server; the security headers (for the CSP).

    Order matters: the ``Host`` check wraps everything (a request for a foreign
    host name gets 400 before any hook runs); then, in a notebook, the token
    check (403 without the token, :mod:`app.token_check`); then request id, credentials, the
    same-origin check, then the session cookie (a refused cross-site request never gets or
    replaces a session). The compression's hook is registered first, so it
    runs after every other ``after_request`` hook (Flask runs them in reverse).
    """
    config = ctx.config
    server = app.server
    Delivery(app).install(server)
    server.secret_key = secret_key
    server.request_class = make_request_class(cache_dir / "uploads")
    server.extensions["calibration_dashboard"] = ctx
    install_error_handlers(server, hide_errors=not config.debug, retry_later=(StorageBusy,))
    security_headers = SecurityHeaders(config.frame_ancestors)
    security_headers.install(server)
    TrustedProxies(config.forwarded_allow_ips).install(server)
    if config.access_token is not None:
        TokenCheck(config.access_token).install(server)
    HostCheck(config.allowed_hosts).install(server)  # outermost WSGI wrapper: first to run
    BasicAuth(config.basic_auth, config.auth_failures_per_minute).install(server)
    OriginCheck(config.allowed_origins).install(server)
    ctx.sessions.install(server)
    register_upload_route(
        server,
        store=ctx.store,
        sessions=ctx.sessions,
        parser=ctx.upload_parser,
        max_upload_mb=config.max_upload_mb,
        per_user=bool(config.basic_auth),
    )
    register_export_route(server, ctx)
    register_statistics_route(server)

    @server.get("/healthz")
    def healthz():
        return jsonify({"status": "ok"})

    return security_headers


def _page_settings(infos: list[ModelInfo]) -> tuple[RawSettings, list[str]]:
    """The settings in the page's address (defaults where it has none) and a notice.

    The address is untrusted: :func:`~app.view_url.decode_view` drops what it
    cannot use; should it fail all the same, the page loads with the defaults.
    """
    default = default_settings(infos)
    try:
        return decode_view(page_query(), infos, default)
    except Exception:
        log.exception("reading the view from the page address failed")
        return default, []


def _page_time():
    """The "Over time" settings in the page's address (defaults where it has none) and a notice."""
    try:
        return decode_time(page_query())
    except Exception:
        log.exception("reading the over-time settings from the page address failed")
        return TimeSettings(), []


def _opening_class(ctx: AppContext, sid, raw: RawSettings) -> tuple[RawSettings, str | None]:
    """One class vs rest without a class (none or an invalid one in the address) opens on
    the first model's worst class, which the page then treats as its own pick."""
    if raw.notion != "class" or raw.class_value is not None:
        return raw, None
    handles = raw.handles if isinstance(raw.handles, list) else []
    worst = opening_class(ctx.store, sid, handles, raw.scheme, raw.n_bins)
    return (raw, None) if worst is None else (replace(raw, class_value=worst), worst)


def _session_models(ctx: AppContext, sid) -> tuple[list[ModelInfo], list[str]]:
    """The session's models and no notice; the shared models alone, with a notice saying
    why, while the disk store stays locked past a read's retries."""
    try:
        return ctx.store.session_models(sid), []
    except StorageBusy as exc:
        return ctx.store.demo_models(), [str(exc)]


def _layout_function(ctx: AppContext):
    """The page of the requesting session, its first view drawn (Dash's layout function)."""

    def serve_layout():
        sid = ctx.sessions.current()
        infos, busy = _session_models(ctx, sid)
        raw, notices = _page_settings(infos)
        try:
            raw, class_auto = _opening_class(ctx, sid, raw)
            group_options, raw = opening_group(ctx, sid, raw)
            state, _request = plan_fits(
                ctx, sid, raw.handles, raw.maps, raw.heldout, raw.folds, raw.fraction
            )
            view = render(ctx, sid, raw, state)  # with the fit status of its panels
        except Exception:  # the page must load; the controls can redraw the view
            log.exception("drawing the initial view failed")
            view, class_auto, group_options = None, None, None
        if view is not None:
            ctx.sessions.told()  # the view's messages carried the lost-session notice, if any
        time, time_notices = _page_time()
        return build_layout(
            infos, max_upload_mb=ctx.config.max_upload_mb, raw=raw, view=view,
            address_notices=busy + notices + time_notices, class_auto=class_auto,
            time=time, datasets=ctx.dataset_names(), group_options=group_options,
        )  # fmt: skip

    return serve_layout


def create_app(config: AppConfig | None = None, shared: list | None = None) -> Dash:
    """Build a dashboard instance.

    Parameters
    ----------
    config : AppConfig, optional
        Default: :meth:`AppConfig.from_env`.
    shared : list of Predictions, optional
        Models every session sees in place of the built-in demo, selected
        when the page opens (:func:`app.notebook.show`).

    Returns
    -------
    dash.Dash
        ``app.server`` is the Flask (WSGI) application. The app's shared
        objects are at ``app.server.extensions["calibration_dashboard"]``
        (an :class:`~app.context.AppContext`).
    """
    config = AppConfig.from_env() if config is None else config
    secret_key = config.resolved_secret_key()
    cache_dir = Path(config.cache_dir)
    ctx = _build_context(config, secret_key, cache_dir, shared)
    app = Dash(
        __name__,
        title=TITLE,
        index_string=INDEX_STRING,
        assets_folder=str(ASSETS_DIR),
        background_callback_manager=ctx.jobs,
        on_error=ctx.failures,
        suppress_callback_exceptions=False,
        serve_locally=True,
        update_title=None,
        requests_pathname_prefix=token_prefix(config.access_token),
        routes_pathname_prefix="/",
    )
    security_headers = _install_server(app, ctx, secret_key, cache_dir)
    # Dash calls a layout function once here, to check the callbacks' ids
    # against it. The page without diagrams has the same ids and is built
    # without drawing the demo's view.
    app.validation_layout = build_layout(
        [], max_upload_mb=config.max_upload_mb, datasets=ctx.dataset_names()
    )
    app.layout = _layout_function(ctx)
    register_callbacks(app, ctx)
    # After every callback: Dash hashes its inline scripts (renderer, inline clientside).
    security_headers.set_script_hashes(app.csp_hashes())
    return app


def finish_setup(app: Dash) -> None:
    """Run Dash's once-per-process server setup now, through one request of ``test_client()``.

    Dash sets its app up in a ``before_request`` hook of the first request and
    marks that done *before* it registers the component bundles, so the
    parallel bundle requests of a threaded server's first page could fail with
    HTTP 500 ("... is not a registered library", plotly/dash#3971). A server
    calls this before it accepts connections: ``serve`` before it listens,
    each gunicorn worker when it loads :mod:`app.wsgi`. The setup also draws
    the page once (Dash checks the layout), which leaves the demo's view in
    the stores' memory for the first visitor.
    """
    response = app.server.test_client().get("/healthz")
    if response.status_code != 200:
        log.warning("the set-up request answered HTTP %s", response.status_code)
