"""Gunicorn settings from environment variables (used by the Docker image).

``gunicorn --config python:app.gunicorn_conf app.wsgi:server``

=======================  =========================================  ==============
Variable                 Meaning                                    Default
=======================  =========================================  ==============
``PORT``                 Port to listen on (all interfaces)         8050
``BIND``                 Full bind address, overrides ``PORT``      -
``WEB_CONCURRENCY``      Worker processes (set for the workers,     4
                         which share ``MEMORY_CACHE_MB``)
``THREADS``              Threads per worker (> 1: gthread worker)   4 with
                                                                    ``REDIS_URL``,
                                                                    else 1
``TIMEOUT``              Seconds before a silent worker is killed   120
``LOG_LEVEL``            Gunicorn log level                         info
``FORWARDED_ALLOW_IPS``  Proxies whose ``X-Forwarded-Proto`` is     127.0.0.1,::1
                         believed (gunicorn reads it itself; the
                         app, for ``X-Forwarded-For``)
=======================  =========================================  ==============

Slow clients: a worker thread reads the request body, so a client trickling its
upload holds a thread; serve a team behind the buffering proxy of ``compose.yaml``
(``deploy/nginx.conf.template``, docs/hosting.md "Reverse proxy").
"""

from __future__ import annotations

import os

from app.web_settings import web_settings

# Read (and checked) in app.web_settings: an invalid value stops gunicorn with a
# ConfigError naming every bad setting; app.supervisor checks them before it starts.
_settings = web_settings(os.environ)
bind = _settings.bind
workers = _settings.workers
# The workers' app divides MEMORY_CACHE_MB between them (app.config): tell it how many.
os.environ.setdefault("WEB_CONCURRENCY", str(workers))
# With REDIS_URL jobs run in Celery job workers: gthread, 4 threads by default. Without
# it they are forked from the web worker: one thread (sync), more are refused.
threads = _settings.threads
worker_class = _settings.worker_class
timeout = _settings.timeout
graceful_timeout = 30
loglevel = os.environ.get("LOG_LEVEL", "info")
accesslog = "-"
errorlog = "-"
# Each worker builds its own app (and its own in-process caches); all of them
# share the disk store in CACHE_DIR. Preloading would share one import of the
# app across forks, which the background-callback manager does not need.
preload_app = False
# Limit request-line and header sizes (uploads stream through the body).
limit_request_line = 8190
limit_request_fields = 100
# Gunicorn >= 25.1 opens a control socket under $HOME by default; the image's
# user has a read-only home and several instances on one host would clash.
control_socket_disable = True
