"""Gunicorn settings from environment variables (used by the Docker image).

``gunicorn --config python:app.gunicorn_conf app.wsgi:server``

=======================  =========================================  ==============
Variable                 Meaning                                    Default
=======================  =========================================  ==============
``PORT``                 Port to listen on (all interfaces)         8050
``BIND``                 Full bind address, overrides ``PORT``      -
``WEB_CONCURRENCY``      Worker processes                           4
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


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = int(raw)
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


bind = os.environ.get("BIND") or f"0.0.0.0:{_int('PORT', 8050)}"
workers = _int("WEB_CONCURRENCY", 4)
# With REDIS_URL background jobs run in Celery job workers and nothing forks from a web
# worker, so threads are safe: gthread with 4 threads answered more changes per second
# with lower latencies than sync under benchmarks/load_test.py (docs/hosting.md).
# Without it Dash's DiskcacheManager forks each job from the worker, and a fork while
# another thread holds SQLite's (diskcache's) mutex hangs the job: one thread (sync).
_jobs_in_celery = bool(os.environ.get("REDIS_URL", "").strip())
threads = _int("THREADS", 4 if _jobs_in_celery else 1)
if threads > 1 and not _jobs_in_celery:
    raise ValueError(
        f"THREADS={threads} needs REDIS_URL: without it background jobs are forked from the "
        "web worker, and a fork from a threaded worker can hang the job. Set REDIS_URL (jobs "
        "then run in Celery) or THREADS=1."
    )
worker_class = "gthread" if threads > 1 else "sync"
timeout = _int("TIMEOUT", 120)
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
