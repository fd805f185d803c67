"""``serve(host, port, debug)``: run the dashboard with Flask's development server.

For a team deployment use gunicorn instead: ``gunicorn app.wsgi:server``.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import replace

from .config import AppConfig, ConfigError, error_line
from .factory import create_app, finish_setup
from .host_check import LOOPBACK_HOSTS
from .warmup import import_before_serving

#: Seconds between the server's start and the warm-up of the fitting libraries.
WARM_UP_DELAY = 2.0


def with_bound_host(config: AppConfig, host: str) -> AppConfig:
    """``config`` whose default ``ALLOWED_HOSTS`` (unset: the loopback names) also
    holds the address ``serve`` binds, unless that is every interface."""
    if config.allowed_hosts or host in ("0.0.0.0", "::", ""):
        return config
    return replace(config, allowed_hosts=(*LOOPBACK_HOSTS, host))


def serve(host: str = "127.0.0.1", port: int = 8050, debug: bool = False) -> None:
    """Start the dashboard (blocking) on ``host:port``; it opens on the built-in demo."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        config = AppConfig.from_env()
    except ConfigError as exc:
        raise SystemExit(error_line(exc)) from None
    app = create_app(with_bound_host(config, host))
    ctx = app.server.extensions["calibration_dashboard"]
    import_before_serving()
    # scikit-learn & co. load once the first page is (most likely) drawn; the
    # page does not need them, fits and uploads do (see app.warmup); then the
    # forkserver whose children parse uploads (app.upload.parser).
    ctx.warm_up.start(delay=WARM_UP_DELAY, then=ctx.upload_parser.start)
    # Before the server listens (plotly/dash#3971); it also draws the demo's view once.
    finish_setup(app)
    # What start-up made lives as long as the server: out of the collector's sight
    # (also in the jobs forked from here), and the collector back on for requests.
    gc.freeze()
    gc.enable()
    # One request at a time: background jobs are forked from this process
    # (app.jobs.LocalJobManager), and a fork while another request thread is
    # inside SQLite hangs the job.
    app.run(
        host=host,
        port=port,
        debug=bool(debug or config.debug),
        use_reloader=False,
        threaded=False,
    )
