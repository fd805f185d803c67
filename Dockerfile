# calibration-dashboard: one instance for a whole team.
#   docker build -t calibration-dashboard .
#   docker run -p 8050:8050 -e SECRET_KEY=... -e ALLOWED_HOSTS=dash.example.org \
#     calibration-dashboard
# ALLOWED_HOSTS has no default here: in production the operator names the public host
# names (the app refuses to start without them); the HEALTHCHECK below asks 127.0.0.1,
# a loopback Host the app always answers on /healthz.
# Run alone, the container starts gunicorn, a Celery job worker and a private Redis
# (app.supervisor); compose.yaml runs them as three services instead (REDIS_URL set).
# Configuration by environment variables: see README.md ("Hosting for a team").

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# ---- build stage: the locked dependencies and the project's wheel in a virtualenv
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# The app's dependencies with the hosting extra (gunicorn, Celery, Redis's client) at the
# versions the tests ran with, every file hash-checked (requirements/app.txt, written by
# scripts/lock.sh from pyproject.toml).
COPY requirements/app.txt ./requirements/app.txt
RUN pip install --no-cache-dir --require-hashes -r requirements/app.txt
# The project as a wheel (assets/ becomes app/assets inside it, docs/statistics.md
# app/docs/statistics.md, served at /statistics), installed like any package: the
# runtime stage has no source tree. Installed with its hosting extra and without an
# index: pip takes every requirement from the locked set above, and stops the build if
# that set no longer satisfies the wheel's metadata (nothing can be downloaded here).
# The one version it can install is the wheel built here, in /tmp/dist.
COPY pyproject.toml README.md ./
COPY calibration_core ./calibration_core
COPY app ./app
COPY assets ./assets
COPY docs/statistics.md ./docs/statistics.md
# hadolint ignore=DL3013
RUN pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /tmp/dist . \
    && pip install --no-cache-dir --no-index --find-links /tmp/dist \
        "calibration-dashboard[hosting]" \
    && python -I -c "import app.wsgi" \
    && find /opt/venv -name '__pycache__' -prune -exec rm -rf {} +

# ---- runtime stage: no compilers, no pip cache, a non-root user -------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    APP_ENV=production \
    PORT=8050 \
    WEB_CONCURRENCY=4 \
    THREADS=4 \
    JOB_WORKERS=2 \
    CACHE_DIR=/var/cache/calibration-dashboard \
    MPLCONFIGDIR=/tmp
# redis-server for the image run alone (app.supervisor starts it when REDIS_URL is unset);
# Debian's package, unpinned so that a rebuild takes the release's security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /srv/app --shell /usr/sbin/nologin app \
    && mkdir -p /var/cache/calibration-dashboard \
    && chown app:app /var/cache/calibration-dashboard
COPY --from=build /opt/venv /opt/venv
WORKDIR /srv/app
USER 10001:10001
# The demo's models are stored now, in the cache every worker reads at start (else each of
# the WEB_CONCURRENCY workers of a fresh container builds them from the outputs shipped with
# the package; a volume mounted at CACHE_DIR hides this copy, and its first start does it once).
RUN python -c "from app.demo_cache import prebuild_demo; print(prebuild_demo(), 'demo models')"
EXPOSE 8050
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8050'), timeout=4)"]
# gunicorn (app.wsgi:server, app.gunicorn_conf), the job worker and, without REDIS_URL, Redis.
CMD ["python", "-m", "app.supervisor"]
