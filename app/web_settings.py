"""The web server's settings read from environment variables, without side effects.

:mod:`app.gunicorn_conf` (loaded by gunicorn) applies them; :mod:`app.supervisor`
checks them with the app's own settings before it starts any process. The
variables are described in :mod:`app.gunicorn_conf`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .config import ConfigError, collect_problem, int_env


@dataclass(frozen=True)
class WebSettings:
    """What gunicorn is told: address, processes, threads, worker class, timeout."""

    bind: str
    workers: int
    threads: int
    worker_class: str
    timeout: int


def check_threads(threads: int, jobs_in_celery: bool) -> None:
    """Refuse threaded web workers when background jobs are forked from them.

    With ``REDIS_URL`` jobs run in Celery job workers and nothing forks from a web
    worker, so threads are safe. Without it Dash's DiskcacheManager forks each job
    from the worker, and a fork while another thread holds SQLite's (diskcache's)
    mutex hangs the job.
    """
    if threads > 1 and not jobs_in_celery:
        raise ConfigError(
            f"THREADS={threads} needs REDIS_URL: without it background jobs are forked from "
            "the web worker, and a fork from a threaded worker can hang the job. Set "
            "REDIS_URL (jobs then run in Celery) or THREADS=1."
        )


def web_settings(env: Mapping[str, str]) -> WebSettings:
    """gunicorn's settings from ``env``.

    Parameters
    ----------
    env : mapping of str to str
        The environment (``PORT``, ``BIND``, ``WEB_CONCURRENCY``, ``THREADS``,
        ``TIMEOUT``, ``REDIS_URL``).

    Returns
    -------
    WebSettings

    Raises
    ------
    ConfigError
        Naming every invalid setting at once.
    """
    problems: list[str] = []

    def number(name: str, default: int) -> int:
        return collect_problem(problems, int_env, env, name, default, fallback=default)

    port = number("PORT", 8050)
    workers = number("WEB_CONCURRENCY", 4)
    # gthread with 4 threads answered more changes per second with lower latencies
    # than sync under benchmarks/load_test.py (docs/hosting.md).
    jobs_in_celery = bool(env.get("REDIS_URL", "").strip())
    threads = number("THREADS", 4 if jobs_in_celery else 1)
    collect_problem(problems, check_threads, threads, jobs_in_celery)
    timeout = number("TIMEOUT", 120)
    if problems:
        raise ConfigError(*problems)
    return WebSettings(
        bind=env.get("BIND") or f"0.0.0.0:{port}",
        workers=workers,
        threads=threads,
        worker_class="gthread" if threads > 1 else "sync",
        timeout=timeout,
    )
