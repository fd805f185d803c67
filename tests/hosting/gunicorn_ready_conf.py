"""Test-only gunicorn configuration: every worker announces when it is ready to serve.

The hosting tests' :class:`conftest.Gunicorn` starts gunicorn with
``-c tests/hosting/gunicorn_ready_conf.py``. Gunicorn calls
:func:`post_worker_init` in each worker once it has loaded the application
(``app.wsgi``: the app built, the warm-up run, the first page drawn) and
right before the worker starts accepting connections. It writes
``ready-<pid>`` into the folder named by :data:`READY_DIR_VARIABLE`, so a
test can wait until *every* worker serves rather than hope that the others
have booted once the first one answers. Without that variable nothing is
written. Command-line options override nothing here: only the hook is set.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable naming the folder of the ``ready-<pid>`` marker files.
READY_DIR_VARIABLE = "GUNICORN_READY_DIR"


def post_worker_init(worker) -> None:
    """Write ``ready-<pid>`` (holding the pid) once this worker has loaded the app."""
    ready_dir = os.environ.get(READY_DIR_VARIABLE)
    if not ready_dir:
        return
    pid = os.getpid()
    partial = Path(ready_dir) / f".ready-{pid}"
    partial.write_text(str(pid))
    partial.replace(Path(ready_dir) / f"ready-{pid}")  # appears whole, never half-written
