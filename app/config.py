"""Configuration of the dashboard from environment variables.

============================  ============================================  ===================
Variable                      Meaning                                       Default
============================  ============================================  ===================
``APP_ENV``                   ``development`` or ``production``             ``development``
``SECRET_KEY``                Signs session cookies and background-job      required in
                              handles; share it between all workers.        production; else a
                                                                            random key kept in
                                                                            ``CACHE_DIR``
``MAX_UPLOAD_MB``             Largest accepted upload, per file (HTTP 413   200
                              above it, before anything is parsed); the
                              data a file decodes to is bounded by 8x it.
``MAX_CLASSES``               Most classes of an uploaded model (a file     1000
                              with more is refused with a message).
``PARSE_MEMORY_LIMIT_MB``     Memory one upload's parse may take: each      8 x
                              file is parsed in a child process under       ``MAX_UPLOAD_MB``
                              ``RLIMIT_AS``, this much address space on     + 256
                              top of the parser's baseline (a file that
                              needs more is refused with a message).
``PARSE_TIME_LIMIT_SECONDS``  Time one upload's parse may take: CPU time    60
                              (``RLIMIT_CPU``) and wall-clock time (the
                              server stops waiting); keep it below
                              gunicorn's ``TIMEOUT``.
``PARSE_CONCURRENCY``         Parses one web worker runs at once; more      2
                              uploads wait for a slot (at most the parse
                              time limit, then a "try again" message).
``CACHE_DIR``                 Disk store shared by all workers: parsed      ``<tmp>/calibration-
                              uploads, fitted maps, background jobs.        dashboard``
``CACHE_SIZE_LIMIT_MB``       Hard size bound of the disk store: uploads    4096
                              fill at most 80 % of it, fitted maps the
                              rest; beyond, only idle sessions' data is
                              evicted, else the write is refused.
``MEMORY_CACHE_MB``           Memory the whole instance keeps parsed        1024
                              predictions in (with their sorted scores):
                              each process takes an equal share,
                              ``MEMORY_CACHE_MB / (WEB_CONCURRENCY +
                              JOB_WORKERS)`` (``JOB_WORKERS`` only with
                              ``REDIS_URL``).
``WEB_CONCURRENCY``           gunicorn's worker processes (its config sets  1
                              it for the workers when unset), for the
                              share above.
``SESSION_TTL_SECONDS``       Idle time after which a session's uploads     86400
                              expire.
``MAX_MODELS_PER_SESSION``    Uploaded models kept per session.             20
``SESSION_QUOTA_MB``          Data one session may keep in the disk store:  1024
                              parsed uploads (arrays, sorted scores, soft
                              labels) and fitted maps.
``CLIENT_QUOTA_MB``           Data one client may keep over all its         2 x
                              sessions: the signed-in user with basic       ``SESSION_QUOTA_MB``
                              auth, else the client address (from a proxy
                              of ``FORWARDED_ALLOW_IPS``); never more than
                              the uploads' share less the reserve below.
``STORE_RESERVE_PERCENT``     Share of the uploads' room no single client   25
                              may take (kept for other users); when the
                              store is full, a client over its fair share
                              (the room divided by the clients storing
                              data) loses its least recently used
                              sessions to make room for one under it.
``IDLE_EVICTION_SECONDS``     Idle time after which a session's data may    3600
                              be evicted when the store is full (its page
                              then says so).
``ALLOWED_ORIGINS``           Extra origins (``https://host[:port]``,       (none)
                              comma-separated) allowed to send POSTs, for
                              a proxy that rewrites the Host header; the
                              app's own origin is always allowed.
``ALLOWED_HOSTS``             Host names the dashboard answers to (comma-    required in
                              separated; ``.example.org``: it and its sub-  production; else
                              domains; ``*``: any); other ``Host`` headers  the loopback names
                              get HTTP 400 (DNS rebinding, app.host_check). and the bound
                                                                            address
``FRAME_ANCESTORS``           Origins (comma-separated, a port may be       (none: no framing)
                              ``*``) whose pages may show the dashboard in
                              a frame, e.g. a notebook's
                              (:func:`app.notebook.show` sets it); none:
                              no page may frame it.
``BASIC_AUTH_USERS``          Optional HTTP basic auth: comma-separated      (off)
                              ``user:hash`` entries, hashes from
                              ``werkzeug.security.generate_password_hash``.
``BASIC_AUTH_USER``,          Optional single user; the password may be      (off)
``BASIC_AUTH_PASSWORD``       plain text or such a hash.
``AUTH_RATE_LIMIT``           Failed basic-auth sign-ins one client address  10
                              may make per minute (counted per worker
                              process); more get HTTP 429.
``FORWARDED_ALLOW_IPS``       Proxies (addresses or networks, comma-        ``127.0.0.1,::1``
                              separated, ``*``: any) whose
                              ``X-Forwarded-For``/``-Proto`` are believed;
                              gunicorn reads the same variable.
``SESSION_COOKIE_SECURE``     Send the session cookie over HTTPS only.      1 in production
``DEBUG``                     Dash debug mode (never in production).        0
``REDIS_URL``                 Team hosting: background jobs go to a pool of (off: diskcache,
                              Celery workers through this Redis             jobs forked by
                              (``redis://host:6379/0``); see app.jobs.      the server)
                              Needs the ``hosting`` extra (Celery, redis).
``JOB_WORKERS``               Jobs one Celery worker runs at once (more     2
                              wait in the queue).
``JOB_TIME_LIMIT_SECONDS``    Longest run of one background job (fit,       300
                              test, bootstrap); it then stops with a
                              message in the page.
``JOB_MEMORY_LIMIT_MB``       Memory one job may allocate beyond its        4096
                              process's own (address space).
``MAX_JOBS_PER_SESSION``      Jobs one session may have submitted (running  2
                              or queued); more wait their turn (as many
                              again; beyond, refused with a message).
``MAX_JOBS``                  Jobs of all sessions submitted; more wait     16
                              (as many again; beyond, "the server is
                              busy").
``MAX_MAP_PARAMETERS``        Largest map the server fits: a map with more  50000
                              parameters (matrix, Dirichlet: K(K+1)) is
                              refused up front, with a suggestion.
``DATASETS_DIR``              Server-side Parquet datasets users may pick   (off)
                              instead of uploading (needs the ``dask``
                              extra): each sub-folder holding
                              ``*.parquet`` files is a dataset named after
                              the folder, each ``*.parquet`` file directly
                              in it one named after the file's stem
                              (app.datasets).
``DASK_SCHEDULER_ADDRESS``    The Dask scheduler that computes a picked     (none: the
                              dataset (``tcp://host:8786``); its workers'   datasets are
                              own limits bound the run. Without it, a       streamed in the
                              dataset is streamed in the job's process      job's process)
                              (the streaming engine, no Dask), under
                              ``JOB_TIME_LIMIT_SECONDS`` and
                              ``JOB_MEMORY_LIMIT_MB``.
============================  ============================================  ===================
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

ENVIRONMENTS = ("development", "production")
MB = 1024 * 1024
#: Most of the uploads' room ``STORE_RESERVE_PERCENT`` may keep from any one client.
MAX_RESERVE_PERCENT = 90
T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message says which variables and why.

    Parameters
    ----------
    *problems : str
        One message per setting to fix, each naming its variable and the fix; kept
        in :attr:`problems`, numbered in the error's text when there are several.
    """

    def __init__(self, *problems: str) -> None:
        self.problems = problems
        if len(problems) == 1:
            super().__init__(problems[0])
        else:
            numbered = (f"({number}) {text}" for number, text in enumerate(problems, 1))
            super().__init__(f"{len(problems)} problems: {' '.join(numbered)}")


def error_line(error: ConfigError) -> str:
    """``error`` as the one line a server prints before it exits (whitespace collapsed)."""
    return "calibration-dashboard: configuration error: " + " ".join(str(error).split())


def collect_problem(
    problems: list[str], read: Callable[..., T], *args, fallback: T | None = None
) -> T | None:
    """``read(*args)``; on a :class:`ConfigError`, its new problems added to ``problems``
    (a variable read by two readers, e.g. ``WEB_CONCURRENCY``, is named once).

    Parameters
    ----------
    problems : list of str
        Where the problems of every setting read are gathered.
    read : callable
        Reads or checks one setting; raises ConfigError when it cannot be used.
    *args
        Passed to ``read``.
    fallback : optional
        Returned instead when ``read`` raised, so that the other settings are still read.
    """
    try:
        return read(*args)
    except ConfigError as exc:
        problems.extend(p for p in exc.problems if p not in problems)
        return fallback


#: A werkzeug password hash: ``method$salt$hash`` (e.g. ``scrypt:32768:8:1$...$...``).
PASSWORD_HASH = re.compile(r"^(scrypt|pbkdf2)(:[0-9a-z:]+)?\$[^$\s]+\$[0-9a-f]+$")


def _basic_auth_env(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``((user, password or hash), ...)`` from ``BASIC_AUTH_USERS`` / ``BASIC_AUTH_USER``."""
    users: list[tuple[str, str]] = []
    raw = env.get("BASIC_AUTH_USERS", "").strip()
    for entry in filter(None, (e.strip() for e in raw.split(","))):
        user, sep, secret = entry.partition(":")
        if not sep or not user or not PASSWORD_HASH.match(secret):
            raise ConfigError(
                "BASIC_AUTH_USERS must be comma-separated user:hash entries, the hashes made "
                'with python -c "from werkzeug.security import generate_password_hash; '
                f"print(generate_password_hash('the password'))\"; entry {user[:40]!r} is not."
            )
        users.append((user, secret))
    user = env.get("BASIC_AUTH_USER", "").strip()
    password = env.get("BASIC_AUTH_PASSWORD", "")
    if bool(user) != bool(password):
        raise ConfigError("set both BASIC_AUTH_USER and BASIC_AUTH_PASSWORD, or neither.")
    if user:
        if ":" in user:
            raise ConfigError("BASIC_AUTH_USER must not contain ':'.")
        users.append((user, password))
    names = [u for u, _ in users]
    if len(set(names)) != len(names):
        raise ConfigError("a user is listed twice in BASIC_AUTH_USERS / BASIC_AUTH_USER.")
    return tuple(users)


#: An origin as browsers send it: scheme, host, optional port, nothing else.
ORIGIN = re.compile(r"^https?://[A-Za-z0-9.\-\[\]:]+/?$")


def _origins_env(env: Mapping[str, str]) -> tuple[str, ...]:
    """``ALLOWED_ORIGINS``: comma-separated ``scheme://host[:port]`` entries, lower-cased."""
    origins = []
    for entry in filter(None, (e.strip() for e in env.get("ALLOWED_ORIGINS", "").split(","))):
        if not ORIGIN.match(entry):
            raise ConfigError(
                "ALLOWED_ORIGINS must be comma-separated origins like https://dash.example.org "
                f"or http://10.0.0.5:8050 (scheme, host, optional port; no path); got {entry!r}."
            )
        origins.append(entry.lower().rstrip("/"))
    return tuple(origins)


#: An ``ALLOWED_HOSTS`` entry: ``*``, a name (``.`` first: and its sub-domains), an IP address.
HOST_ENTRY = re.compile(r"^(\*|\.?[a-z0-9\-_]+(\.[a-z0-9\-_]+)*\.?|\[?[a-f0-9:.]+\]?)$")


def allowed_hosts(entries) -> tuple[str, ...]:
    """Validated ``ALLOWED_HOSTS`` entries, lower-case, without brackets or final dot.

    Raises
    ------
    ConfigError
        An entry that is not a host name, ``.domain``, an IP address or ``*``
        (a URL, a port, a path).
    """
    hosts = []
    for entry in entries:
        value = entry.strip().lower() if isinstance(entry, str) else ""
        if not HOST_ENTRY.match(value):
            raise ConfigError(
                "ALLOWED_HOSTS must be comma-separated host names like dash.example.org, "
                ".example.org (and its sub-domains), IP addresses or *, without scheme, "
                f"port or path; got {str(entry)[:80]!r}."
            )
        hosts.append(value if value == "*" else value.strip("[]").rstrip("."))
    return tuple(hosts)


def split_list(raw: str | None) -> tuple[str, ...]:
    """The non-blank entries of a comma-separated variable."""
    return tuple(filter(None, (e.strip() for e in (raw or "").split(","))))


#: A frame ancestor: an origin whose port may be ``*`` (any port of that host) and whose
#: host may start with ``*.`` (any sub-domain); or VS Code's webviews, ``vscode-webview://*``.
FRAME_ORIGIN = re.compile(
    r"^(https?://(\*\.)?[A-Za-z0-9.\-\[\]]+(:([0-9]+|\*))?/?|vscode-webview://[A-Za-z0-9\-*]+)$"
)


def frame_ancestors(entries) -> tuple[str, ...]:
    """Validated frame ancestors (``scheme://host[:port or *]``), lower-cased.

    Raises
    ------
    ConfigError
        An entry that is not such an origin (a path, a bare host, a wildcard host).
    """
    origins = []
    for entry in entries:
        if not isinstance(entry, str) or not FRAME_ORIGIN.match(entry):
            raise ConfigError(
                "FRAME_ANCESTORS must be comma-separated origins like http://localhost:8888, "
                "http://localhost:* or https://*.vscode-cdn.net (scheme, host, optional port "
                f"or *; no path), or vscode-webview://*; got {entry!r}."
            )
        origins.append(entry.lower().rstrip("/"))
    return tuple(origins)


#: gunicorn's default for ``FORWARDED_ALLOW_IPS`` (and so this app's).
DEFAULT_FORWARDED_ALLOW_IPS = ("127.0.0.1", "::1")


def _forwarded_allow_ips_env(env: Mapping[str, str]) -> tuple[str, ...]:
    """``FORWARDED_ALLOW_IPS`` as gunicorn reads it: addresses, networks or ``*``."""
    raw = env.get("FORWARDED_ALLOW_IPS")
    if raw is None:
        return DEFAULT_FORWARDED_ALLOW_IPS
    entries = tuple(filter(None, (e.strip() for e in raw.split(","))))
    for entry in entries:
        if entry == "*":
            continue
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ConfigError(
                "FORWARDED_ALLOW_IPS must be comma-separated IP addresses or networks "
                f"(e.g. 127.0.0.1,172.16.0.0/12) or *, and {entry[:60]!r} is neither."
            ) from None
    return entries


def int_env(env: Mapping[str, str], name: str, default: int | None, minimum: int = 1) -> int | None:
    """Whole number ``name`` of ``env`` (``default`` when unset or blank), at least ``minimum``."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}.") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}.")
    return value


def _bool_env(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be 1/0, true/false, yes/no or on/off, got {raw!r}.")


#: A Dask scheduler address: ``tcp://`` or ``tls://``, a host, a port.
SCHEDULER_ADDRESS = re.compile(r"^(tcp|tls)://[A-Za-z0-9.\-\[\]:]+:[0-9]+$")


def _datasets_env(env: Mapping[str, str]) -> tuple[Path | None, str | None]:
    """``(DATASETS_DIR, DASK_SCHEDULER_ADDRESS)``, each None when not set."""
    raw_dir = env.get("DATASETS_DIR", "").strip()
    address = env.get("DASK_SCHEDULER_ADDRESS", "").strip() or None
    return (Path(raw_dir) if raw_dir else None), address


def check_datasets(datasets_dir: Path | None, address: str | None) -> None:
    """Refuse a datasets setting that cannot work, saying which variable and why."""
    if address is not None and not SCHEDULER_ADDRESS.match(address):
        raise ConfigError(
            "DASK_SCHEDULER_ADDRESS must be a Dask scheduler address like tcp://10.0.0.5:8786 "
            f"(tcp:// or tls://, host, port), got {address[:80]!r}."
        )
    if datasets_dir is not None and not datasets_dir.is_dir():
        raise ConfigError(
            f"DATASETS_DIR {str(datasets_dir)!r} is not a directory; point it at the folder "
            "holding the server's Parquet datasets (one sub-folder or .parquet file each)."
        )


#: How to install the optional dependencies of team hosting (pyproject.toml's extra).
INSTALL_HOSTING = 'pip install "calibration-dashboard[hosting]"'
#: The modules of the ``hosting`` extra: the web server, the job queue and its Redis client.
HOSTING_MODULES = ("gunicorn", "celery", "redis")


def missing_modules(*names: str) -> list[str]:
    """Those of the top-level modules ``names`` that cannot be imported (not installed).

    Nothing is imported: :func:`importlib.util.find_spec` only looks them up.
    """
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # an import hook refused it; a spec-less module
            found = False
        if not found:
            missing.append(name)
    return missing


def require_hosting(what: str, *modules: str, otherwise: str = "") -> None:
    """Refuse ``what`` (a setting or a command) when a module of the hosting extra it
    needs is not installed: the message names the modules, the install command and,
    if given, the ``otherwise`` clause (what to do instead)."""
    missing = missing_modules(*modules)
    if missing:
        names = " and ".join(filter(None, [", ".join(missing[:-1]), missing[-1]]))
        raise ConfigError(
            f"{what} needs {names}, from the optional 'hosting' extra: "
            f"{INSTALL_HOSTING}{otherwise}."
        )


def check_job_queue(redis_url: str | None) -> None:
    """Refuse ``REDIS_URL`` when Celery or Redis's client is not installed (app.jobs)."""
    if redis_url is not None:
        require_hosting(
            "REDIS_URL (background jobs in Celery workers)",
            "celery",
            "redis",
            otherwise="; or unset REDIS_URL: jobs are then forked by the server",
        )


def check_environment(app_env: str) -> None:
    """Refuse an ``APP_ENV`` that is not one of :data:`ENVIRONMENTS`."""
    if app_env not in ENVIRONMENTS:
        raise ConfigError(f"APP_ENV must be one of {', '.join(ENVIRONMENTS)}, got {app_env!r}.")


def production_problems(
    production: bool, secret_key: str | None, debug: bool, hosts: tuple[str, ...] = ("*",)
) -> list[str]:
    """What ``SECRET_KEY``, ``DEBUG`` and ``ALLOWED_HOSTS`` lack for ``APP_ENV`` (an
    empty list: nothing)."""
    problems = []
    if production and not hosts:
        problems.append(
            "ALLOWED_HOSTS is required when APP_ENV=production: set it to the dashboard's "
            "public host name(s), comma-separated (e.g. ALLOWED_HOSTS=dash.example.org); "
            "requests for any other Host get HTTP 400."
        )
    if production and not secret_key:
        problems.append(
            "SECRET_KEY is required when APP_ENV=production: set it to a long random "
            "string shared by all workers (e.g. python -c 'import secrets; "
            "print(secrets.token_hex(32))')."
        )
    if production and debug:
        problems.append("DEBUG must be off when APP_ENV=production.")
    if secret_key is not None and len(secret_key) < 16:
        problems.append("SECRET_KEY must be at least 16 characters long.")
    return problems


def _settings_from_env(env: Mapping[str, str], problems: list[str]) -> dict[str, object]:
    """:class:`AppConfig`'s fields read from ``env``; each unusable one added to ``problems``
    (and its default used meanwhile, so that the others are read and checked too)."""

    def number(name: str, default: int | None, minimum: int = 1) -> int | None:
        return collect_problem(problems, int_env, env, name, default, minimum, fallback=default)

    def flag(name: str) -> bool:
        return collect_problem(problems, _bool_env, env, name, False, fallback=False)

    def parsed(read: Callable[[Mapping[str, str]], T], fallback: T) -> T:
        return collect_problem(problems, read, env, fallback=fallback)

    cache_dir = env.get("CACHE_DIR", "").strip()
    secure = env.get("SESSION_COOKIE_SECURE")
    datasets_dir, scheduler = _datasets_env(env)
    return {
        "app_env": env.get("APP_ENV", "development").strip().lower() or "development",
        "secret_key": env.get("SECRET_KEY") or None,
        "max_upload_mb": number("MAX_UPLOAD_MB", 200),
        "max_classes": number("MAX_CLASSES", 1000, minimum=2),
        "parse_memory_limit_mb": number("PARSE_MEMORY_LIMIT_MB", None, minimum=64),
        "parse_time_limit_seconds": number("PARSE_TIME_LIMIT_SECONDS", 60),
        "parse_concurrency": number("PARSE_CONCURRENCY", 2),
        "cache_dir": Path(cache_dir) if cache_dir else default_cache_dir(),
        "cache_size_limit_mb": number("CACHE_SIZE_LIMIT_MB", 4096),
        "memory_cache_mb": number("MEMORY_CACHE_MB", 1024, minimum=0),
        "web_workers": number("WEB_CONCURRENCY", 1),
        "session_ttl_seconds": number("SESSION_TTL_SECONDS", 86_400, minimum=60),
        "max_models_per_session": number("MAX_MODELS_PER_SESSION", 20),
        "session_quota_mb": number("SESSION_QUOTA_MB", 1024),
        "client_quota_mb": number("CLIENT_QUOTA_MB", None),
        "store_reserve_percent": number("STORE_RESERVE_PERCENT", 25, minimum=0),
        "idle_eviction_seconds": number("IDLE_EVICTION_SECONDS", 3600, minimum=60),
        "allowed_origins": parsed(_origins_env, ()),
        "allowed_hosts": split_list(env.get("ALLOWED_HOSTS")),
        "frame_ancestors": split_list(env.get("FRAME_ANCESTORS")),
        "session_cookie_secure": None
        if secure is None or not secure.strip()
        else flag("SESSION_COOKIE_SECURE"),
        "debug": flag("DEBUG"),
        "basic_auth": parsed(_basic_auth_env, ()),
        "redis_url": env.get("REDIS_URL", "").strip() or None,
        "job_workers": number("JOB_WORKERS", 2),
        "auth_failures_per_minute": number("AUTH_RATE_LIMIT", 10),
        "forwarded_allow_ips": parsed(_forwarded_allow_ips_env, DEFAULT_FORWARDED_ALLOW_IPS),
        "job_time_limit_seconds": number("JOB_TIME_LIMIT_SECONDS", 300),
        "job_memory_limit_mb": number("JOB_MEMORY_LIMIT_MB", 4096, minimum=64),
        "max_jobs_per_session": number("MAX_JOBS_PER_SESSION", 2),
        "max_jobs": number("MAX_JOBS", 16),
        "max_map_parameters": number("MAX_MAP_PARAMETERS", 50_000),
        "datasets_dir": datasets_dir,
        "dask_scheduler_address": scheduler,
    }


def default_cache_dir() -> Path:
    """``<system temp dir>/calibration-dashboard``."""
    return Path(tempfile.gettempdir()) / "calibration-dashboard"


@dataclass(frozen=True)
class AppConfig:
    """Settings of one dashboard instance (see the module docstring for the variables).

    Build it with :meth:`from_env`, or directly in tests.
    """

    app_env: str = "development"
    secret_key: str | None = field(default=None, repr=False)
    max_upload_mb: int = 200
    max_classes: int = 1000
    #: Address space of one upload's parse (MB); None: 8 x ``max_upload_mb`` + 256.
    parse_memory_limit_mb: int | None = None
    #: CPU and wall-clock seconds of one upload's parse.
    parse_time_limit_seconds: int = 60
    #: Parses one web worker runs at once (more wait for a slot).
    parse_concurrency: int = 2
    #: Parse uploads in this process, not in a forkserver's child (the notebook's
    #: dashboard: a child would import the notebook's script again, app.upload.parser).
    parse_in_process: bool = False
    cache_dir: Path = field(default_factory=default_cache_dir)
    cache_size_limit_mb: int = 4096
    #: The instance's bound of parsed predictions in memory (shared by its processes).
    memory_cache_mb: int = 1024
    #: gunicorn's worker processes (``WEB_CONCURRENCY``), each of which has a memory cache.
    web_workers: int = 1
    session_ttl_seconds: int = 86_400
    max_models_per_session: int = 20
    session_quota_mb: int = 1024
    #: Data one client (signed-in user, else address) may keep; None: 2 x ``session_quota_mb``.
    client_quota_mb: int | None = None
    #: Percent of the uploads' room no single client may take (app.store.budget).
    store_reserve_percent: int = 25
    # Store admission and cross-site request checks (app.store.budget, app.origin_check).
    idle_eviction_seconds: int = 3600
    #: Origins (``scheme://host[:port]``) besides the app's own that may send POSTs.
    allowed_origins: tuple[str, ...] = ()
    #: Host names the app answers to (app.host_check); empty: loopback names only
    #: (and the address ``serve`` binds); required in production.
    allowed_hosts: tuple[str, ...] = ()
    #: Origins whose pages may frame the dashboard (a notebook's); empty: none may.
    frame_ancestors: tuple[str, ...] = ()
    #: A token every request must carry (app.token_check; a notebook's); None: none.
    access_token: str | None = field(default=None, repr=False)
    session_cookie_secure: bool | None = None
    debug: bool = False
    #: ``(user, password or werkzeug hash)`` pairs; empty: no basic auth.
    basic_auth: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: Redis for Celery (broker and results); None: Dash's diskcache manager.
    redis_url: str | None = field(default=None, repr=False)
    job_workers: int = 2
    #: Failed basic-auth checks per client address and minute before 429.
    auth_failures_per_minute: int = 10
    #: Proxies whose ``X-Forwarded-For`` names the client (addresses, networks, ``*``).
    forwarded_allow_ips: tuple[str, ...] = DEFAULT_FORWARDED_ALLOW_IPS
    # Background jobs: limits, caps and the largest map fitted (app.jobs, app.job_limits).
    job_time_limit_seconds: int = 300
    job_memory_limit_mb: int = 4096
    max_jobs_per_session: int = 2
    max_jobs: int = 16
    max_map_parameters: int = 50_000
    #: Server-side Parquet datasets (app.datasets); None: the page offers none.
    datasets_dir: Path | None = None
    #: The Dask scheduler computing them (``tcp://host:port``); None: they are streamed.
    dask_scheduler_address: str | None = None

    def __post_init__(self) -> None:
        problems: list[str] = []
        collect_problem(problems, check_environment, self.app_env)
        object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        ancestors = collect_problem(problems, frame_ancestors, self.frame_ancestors, fallback=())
        object.__setattr__(self, "frame_ancestors", ancestors)
        hosts = collect_problem(problems, allowed_hosts, self.allowed_hosts, fallback=("*",))
        object.__setattr__(self, "allowed_hosts", hosts)
        problems.extend(production_problems(self.production, self.secret_key, self.debug, hosts))
        if self.datasets_dir is not None:
            object.__setattr__(self, "datasets_dir", Path(self.datasets_dir))
        collect_problem(problems, check_datasets, self.datasets_dir, self.dask_scheduler_address)
        collect_problem(problems, check_job_queue, self.redis_url)
        if not 0 <= self.store_reserve_percent <= MAX_RESERVE_PERCENT:
            problems.append(
                f"STORE_RESERVE_PERCENT must be between 0 and {MAX_RESERVE_PERCENT}, got "
                f"{self.store_reserve_percent}."
            )
        if problems:
            raise ConfigError(*problems)

    @property
    def client_quota_bytes(self) -> int:
        """``CLIENT_QUOTA_MB`` in bytes (2 x ``SESSION_QUOTA_MB`` when unset)."""
        quota = self.client_quota_mb or 2 * self.session_quota_mb
        return quota * MB

    @property
    def memory_processes(self) -> int:
        """Processes that keep a memory cache: the web workers, and the Celery job pool's."""
        return self.web_workers + (self.job_workers if self.redis_url else 0)

    @property
    def memory_cache_bytes(self) -> int:
        """One process's share of ``MEMORY_CACHE_MB`` (bytes)."""
        return self.memory_cache_mb * MB // self.memory_processes

    @property
    def production(self) -> bool:
        """True when ``APP_ENV=production``."""
        return self.app_env == "production"

    @property
    def cookie_secure(self) -> bool:
        """Whether the session cookie carries the ``Secure`` flag."""
        if self.session_cookie_secure is None:
            return self.production
        return self.session_cookie_secure

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AppConfig:
        """Read the configuration from ``env`` (default: ``os.environ``).

        Raises
        ------
        ConfigError
            Naming every missing or invalid setting at once, not only the first.
        """
        env = os.environ if env is None else env
        problems: list[str] = []
        settings = _settings_from_env(env, problems)
        try:
            config = cls(**settings)
        except ConfigError as exc:
            raise ConfigError(*problems, *exc.problems) from None
        if problems:
            raise ConfigError(*problems)
        return config

    def resolved_secret_key(self) -> str:
        """The secret key; in development without one, a random key kept in ``cache_dir``.

        The generated key is written once (a 0600 file hard-linked into place) so
        that every worker sharing ``cache_dir`` signs with the same key.
        """
        if self.secret_key:
            return self.secret_key
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        path = self.cache_dir / "dev-secret-key"
        if not path.exists():
            # Write a complete file, then link it into place: readers never see half a key.
            fd, tmp = tempfile.mkstemp(dir=self.cache_dir, prefix=".key-")
            try:
                with os.fdopen(fd, "w") as fh:
                    fh.write(secrets.token_hex(32))
                os.link(tmp, path)
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        return path.read_text().strip()
