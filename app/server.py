"""``serve(host, port, debug)``: run the dashboard with Flask's development server.

For a team deployment use gunicorn instead: ``gunicorn app.wsgi:server``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .config import AppConfig, ConfigError
from .factory import create_app, draw_first_page, finish_setup

#: Seconds between the server's start and the warm-up of the fitting libraries.
WARM_UP_DELAY = 2.0


def on_first_request(work, *args) -> Callable[[], None]:
    """A ``before_request`` hook that starts ``work(*args)`` on a thread, once.

    Started by the first request rather than before the server listens, the
    work does not hold the interpreter while the server binds its socket.
    """
    lock = threading.Lock()
    started = False

    def hook() -> None:
        nonlocal started
        if started:
            return
        with lock:
            if started:
                return
            started = True
        threading.Thread(target=work, args=args, name="calibration-first-page", daemon=True).start()

    return hook


def serve(host: str = "127.0.0.1", port: int = 8050, debug: bool = False) -> None:
    """Start the dashboard (blocking) on ``host:port``; it opens on the built-in demo."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        config = AppConfig.from_env()
    except ConfigError as exc:
        raise SystemExit(f"calibration-dashboard: configuration error: {exc}") from None
    app = create_app(config)
    ctx = app.server.extensions["calibration_dashboard"]
    # The demo's models are read (on a first start: built from the shipped outputs
    # and stored) and its view drawn while the browser loads the page's scripts;
    # a page requested before that waits for the same work (the store's lock).
    app.server.before_request(on_first_request(draw_first_page, app))
    # scikit-learn & co. load once the first page is (most likely) drawn; the
    # page does not need them, fits and uploads do (see app.warmup).
    ctx.warm_up.start(delay=WARM_UP_DELAY)
    finish_setup(app)  # before the server listens (plotly/dash#3971)
    app.run(host=host, port=port, debug=bool(debug or config.debug), use_reloader=False)
