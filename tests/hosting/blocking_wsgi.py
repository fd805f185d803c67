"""Test-only WSGI entry point: ``app.wsgi:server`` with one view setting that never returns.

``gunicorn blocking_wsgi:server`` (``tests/hosting`` on ``PYTHONPATH``, see
:class:`conftest.Gunicorn`) serves the real application, unchanged but for
one thing: a view callback asked for :data:`BLOCKING_N_BINS` bins first
writes a marker file ``entered-<pid>`` into the folder named by the
environment variable :data:`MARKER_DIR_VARIABLE`, then blocks until the
worker is killed. A test can so kill a worker while it is, for certain, in
the middle of a callback (``test_gunicorn.py``), on any machine, however
fast: no hoping that some callback is slow enough.

The hook wraps :func:`app.callbacks.view.render`, which the registered view
callback (``update_view`` in :func:`app.callbacks.view.register`) looks up
as a module global each time it runs; replacing the module attribute is
therefore enough. Every other setting is drawn by the real function.
Without :data:`MARKER_DIR_VARIABLE` in the environment nothing blocks.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import app.callbacks.view as view
from app.wsgi import server

__all__ = ["BLOCKING_N_BINS", "MARKER_DIR_VARIABLE", "server"]

#: The bin count whose view blocks (a valid count, 2..100, that no other test asks for).
BLOCKING_N_BINS = 97
#: Environment variable naming the folder of the ``entered-<pid>`` marker files.
MARKER_DIR_VARIABLE = "BLOCKING_WSGI_MARKER_DIR"

_real_render = view.render


def _enter_and_block(marker_dir: Path) -> None:
    """Announce this worker (``entered-<pid>``, holding the pid) and block until killed."""
    pid = os.getpid()
    partial = marker_dir / f".entering-{pid}"
    partial.write_text(str(pid))
    partial.replace(marker_dir / f"entered-{pid}")  # appears whole, never half-written
    while True:
        time.sleep(1)


def render(ctx, sid, raw, fit_state=None, fmt="png"):
    """:func:`app.callbacks.view.render`, except that :data:`BLOCKING_N_BINS` bins block."""
    marker_dir = os.environ.get(MARKER_DIR_VARIABLE)
    if marker_dir and raw.n_bins == BLOCKING_N_BINS:
        _enter_and_block(Path(marker_dir))
    return _real_render(ctx, sid, raw, fit_state, fmt)


view.render = render
