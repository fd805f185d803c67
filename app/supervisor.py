"""``python -m app.supervisor``: the image's command; gunicorn and a job worker side by side.

Team hosting runs three services (``compose.yaml``): gunicorn (:func:`web_command`),
a pool of Celery job workers (:func:`worker_command`) and Redis. The image run
alone (``docker run``) starts the same processes itself: when ``REDIS_URL`` is
unset, a private ``redis-server`` on a Unix socket (no TCP port, nothing written
to disk) in a fresh temporary folder, then one Celery worker with
``JOB_WORKERS`` processes, then gunicorn. A signal (SIGTERM, SIGINT) is passed
on to each of them, web first and Redis last (the job worker's SIGTERM is
Celery's cold shutdown, :data:`WORKER_ENV`: its running jobs stop with it); when
one exits, the others are stopped and the supervisor exits with the first one's
status, so the container stops instead of serving with half its processes.

The configuration (the app's, the job worker's and gunicorn's settings) is checked
once before any process starts: a missing or invalid setting stops the supervisor
with one line on stderr naming every such setting and exit status 2
(:data:`CONFIG_ERROR`), instead of each web worker failing on its own.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from .config import (
    HOSTING_MODULES,
    AppConfig,
    ConfigError,
    collect_problem,
    error_line,
    require_hosting,
)
from .web_settings import web_settings

#: Exit status of the supervisor when the configuration cannot be used (nothing started).
CONFIG_ERROR = 2


def web_command() -> list[str]:
    """gunicorn with :mod:`app.gunicorn_conf` (settings from the environment)."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        "python:app.gunicorn_conf",
        "app.wsgi:server",
    ]


#: Environment of the job worker: SIGTERM (``docker stop``, the supervisor stopping)
#: is Celery's cold shutdown, which stops the running jobs at once, instead of its
#: warm shutdown, which waits for them (up to ``JOB_TIME_LIMIT_SECONDS``) while the
#: stack is stopping. Read by billiard when it is imported, so set before the start.
WORKER_ENV = {"REMAP_SIGTERM": "SIGQUIT"}


def worker_command() -> list[str]:
    """One Celery worker of :mod:`app.worker` (``JOB_WORKERS`` processes)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "--app",
        "app.worker:celery_app",
        "worker",
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
    ]


def redis_command(port: int, directory: Path, unix_socket: Path | None = None) -> list[str]:
    """A memory-only ``redis-server`` on 127.0.0.1:``port`` (0: none) or ``unix_socket``."""
    socket_args = [] if unix_socket is None else ["--unixsocket", str(unix_socket)]
    return [
        "redis-server",
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(directory),
        "--save",
        "",
        "--appendonly",
        "no",
        *socket_args,
    ]


def wait_for_redis(url: str, timeout: float = 30.0) -> None:
    """Return once Redis at ``url`` answers PING (RuntimeError after ``timeout`` seconds)."""
    import redis

    # redis-py spells Celery's redis+socket:///path as unix:///path.
    client = redis.Redis.from_url(
        url.replace("redis+socket://", "unix://"), socket_connect_timeout=1
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.ping()
            return
        except redis.RedisError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"Redis at {url} did not answer in {timeout:.0f} s") from None
            time.sleep(0.1)


def check_configuration(env: Mapping[str, str]) -> None:
    """Check the settings of every process the supervisor would start.

    Parameters
    ----------
    env : mapping of str to str
        The supervisor's environment; without ``REDIS_URL``, the private Redis's
        URL is assumed, as the processes will get it.

    Raises
    ------
    ConfigError
        Naming every missing or invalid setting (app, job worker, gunicorn); or, alone,
        the modules of the ``hosting`` extra that are not installed (nothing could start).
    """
    require_hosting("python -m app.supervisor (gunicorn and a Celery job worker)", *HOSTING_MODULES)
    served = dict(env)
    if not served.get("REDIS_URL", "").strip():
        served["REDIS_URL"] = "redis+socket:///private/redis.sock"
    problems: list[str] = []
    collect_problem(problems, AppConfig.from_env, served)
    collect_problem(problems, web_settings, served)
    if problems:
        raise ConfigError(*problems)


def main() -> int:
    """Check the configuration, start the processes; stop them all (web first, Redis
    last) when one exits or on a signal."""
    try:
        check_configuration(os.environ)
    except ConfigError as exc:
        print(error_line(exc), file=sys.stderr, flush=True)
        return CONFIG_ERROR
    received: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: received.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _frame: received.append(signum))
    env = dict(os.environ)
    children: list[subprocess.Popen] = []
    directory = None
    if not env.get("REDIS_URL", "").strip():
        directory = Path(tempfile.mkdtemp(prefix="calibration-redis-"))
        unix_socket = directory / "redis.sock"
        children.append(subprocess.Popen(redis_command(0, directory, unix_socket)))
        env["REDIS_URL"] = f"redis+socket://{unix_socket}"
        wait_for_redis(env["REDIS_URL"])
    children.append(subprocess.Popen(worker_command(), env={**env, **WORKER_ENV}))
    children.append(subprocess.Popen(web_command(), env=env))
    status = 0
    while not received:
        exited = [child for child in children if child.poll() is not None]
        if exited:
            status = exited[0].returncode
            break
        time.sleep(0.2)
    for child in reversed(children):
        if child.poll() is None:
            child.send_signal(received[0] if received else signal.SIGTERM)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
