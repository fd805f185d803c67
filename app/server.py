"""``serve(host, port, debug)``: run the dashboard with Flask's development server.

For a team deployment use gunicorn instead: ``gunicorn app.wsgi:server``.
"""

from __future__ import annotations

import logging

from .config import AppConfig, ConfigError
from .factory import create_app


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
    # Compute (or read) the demo before the first request, so the first page is quick.
    app.server.extensions["calibration_dashboard"].store.demo_models()
    app.run(host=host, port=port, debug=bool(debug or config.debug), use_reloader=False)
