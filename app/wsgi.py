"""WSGI entry point: ``gunicorn app.wsgi:server`` (configuration from environment variables).

A configuration error (e.g. ``APP_ENV=production`` without ``SECRET_KEY``)
prints one line naming the variable and exits with status 4, which gunicorn
treats as "App failed to load" and stops instead of restarting workers.
"""

from __future__ import annotations

import logging
import sys

from .config import ConfigError, error_line
from .factory import create_app, finish_setup

#: Exit status of a worker whose application cannot load (gunicorn's APP_LOAD_ERROR).
APP_LOAD_ERROR = 4

if not logging.getLogger().handlers:  # gunicorn configures only its own loggers
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s",
    )

try:
    app = create_app()
except ConfigError as exc:
    print(error_line(exc), file=sys.stderr, flush=True)
    raise SystemExit(APP_LOAD_ERROR) from None
server = app.server
# Dash's setup, before the worker accepts connections (plotly/dash#3971); it also
# draws the demo's view once.
finish_setup(app)
# A worker loads the fitting libraries before it answers, so that uploads, exports and,
# without REDIS_URL, the background jobs forked from it start with them (see app.warmup).
ctx = server.extensions["calibration_dashboard"]
ctx.warm_up.run()
# Uploads are parsed in children of a forkserver (app.upload.parser): started now, with
# pandas and pyarrow imported, so that the first upload does not wait for it.
ctx.upload_parser.start()
