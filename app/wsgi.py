"""WSGI entry point: ``gunicorn app.wsgi:server`` (configuration from environment variables)."""

from __future__ import annotations

from .factory import create_app

app = create_app()
server = app.server
