"""The Celery job worker of team hosting (``REDIS_URL``; see :mod:`app.jobs`).

``celery -A app.worker:celery_app worker`` (``JOB_WORKERS`` processes, from
the same environment as the web workers: ``REDIS_URL``, ``CACHE_DIR``,
``SECRET_KEY``, ...). As Dash's ``CeleryManager`` requires, the worker builds
the same Dash app as the web workers, which registers every background
callback as a Celery task; the jobs then read and write the shared disk store.
The fitting libraries are loaded before the pool's processes are forked, so no
job imports them itself.
"""

from __future__ import annotations

import sys

from .config import AppConfig, ConfigError
from .factory import create_app

#: Exit status of a worker whose application cannot load (as app.wsgi's).
APP_LOAD_ERROR = 4

try:
    config = AppConfig.from_env()
    if not config.redis_url:
        raise ConfigError(
            "REDIS_URL is required by the job worker (e.g. redis://127.0.0.1:6379/0)."
        )
    dash_app = create_app(config)
except ConfigError as exc:
    print(f"calibration-dashboard worker: configuration error: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(APP_LOAD_ERROR) from None
ctx = dash_app.server.extensions["calibration_dashboard"]
#: The Celery application of Dash's ``CeleryManager``, with a task per background callback.
celery_app = ctx.jobs.handle
ctx.warm_up.run()
