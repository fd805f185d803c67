"""Load the libraries that fits, uploads and exports need, once per server process.

The page itself needs only dash, numpy and ``scipy.special`` (the first paint
of the demo waits for nothing else); scikit-learn, pandas, pyarrow and
``scipy.stats`` are imported here instead, so that

* background jobs start with them loaded (a job would otherwise import
  scikit-learn itself, 1-2 s per fit): the jobs that Dash's diskcache manager
  forks from ``calibration-dashboard serve``, and the processes of a Celery
  job worker's pool (:mod:`app.worker` warms up before the pool forks);
* the first upload, fit and export do not pay for the imports.

``calibration-dashboard serve`` starts the warm-up on a thread shortly after
the server listens; gunicorn workers run it before they answer (:mod:`app.wsgi`).
:class:`app.jobs.LocalJobManager` waits for a running warm-up before it forks
a job: a fork while another thread holds an import lock could leave the child
waiting for a lock nobody releases.

pandas and the import gate
--------------------------
Dash encodes every answer with plotly's JSON encoder, which uses pandas when it
finds it in ``sys.modules``, without importing it; a request served while
another thread is importing pandas meets a half-initialised module and fails
(HTTP 500, "partially initialized module 'pandas'"). So pandas is imported
only through :data:`IMPORT_GATE` (by the warm-up, and by the upload and export
routes should they come first): the gate lets the requests in progress finish,
holds new ones for the import (about 0.3 s, once per process) and lets them in
again. Every request passes the gate (:func:`install_import_gate`). The jobs
of :class:`app.jobs.LocalJobManager` are forked through the same gate: a fork
during another request's SQLite call would leave the job hanging on SQLite's
mutex.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType

log = logging.getLogger("calibration_dashboard.warmup")

#: Imported by the warm-up, in this order: pandas first, through the import gate
#: (scikit-learn imports it too, and would do so outside the gate).
HEAVY_MODULES = (
    "pandas",
    "sklearn.base",
    "sklearn.model_selection",
    "pyarrow.parquet",
    "scipy.special",
    "scipy.sparse",
    "scipy.stats",
    "calibration_core.compare",
    "calibration_core.io",
    "calibration_core.significance",
    "calibration_core.bootstrap",
    "calibration_core.decision",
    "calibration_core.goodness_of_fit",
    "calibration_core.human_uncertainty",
    "calibration_core.maps.histogram",
    "calibration_core.maps.isotonic",
    "calibration_core.maps.platt",
    "calibration_core.maps.beta",
    "calibration_core.maps.temperature",
    "calibration_core.maps.vector",
    "calibration_core.maps.matrix",
    "calibration_core.maps.dirichlet",
    "plotly.io",
)


#: Modules that request code finds through ``sys.modules`` without importing
#: them (plotly's JSON encoder): imported only through :data:`IMPORT_GATE`.
GATED_MODULES = frozenset({"pandas"})


def _initialising(module: ModuleType | None) -> bool:
    return module is None or bool(getattr(getattr(module, "__spec__", None), "_initializing", 0))


class ImportGate:
    """Requests pass freely, except during an exclusive section.

    Two things must happen with no other request in progress: importing a
    gated module (see the module docstring) and forking a background job. A
    fork copies the process with whatever locks other threads hold at that
    moment; a request thread inside SQLite (diskcache) leaves SQLite's mutex
    locked in the child, whose first store access then hangs for ever (seen
    with Dash's in-process threaded server). :meth:`exclusive` lets the
    requests in progress finish, holds new ones, runs the section and lets
    them in again.

    Parameters
    ----------
    drain_timeout : float
        Seconds a section waits for the requests in progress to finish; after
        that it goes ahead (and logs a warning) rather than stall the server.
    """

    def __init__(self, drain_timeout: float = 5.0) -> None:
        self.drain_timeout = drain_timeout
        self.reset()

    def reset(self) -> None:
        """Start afresh: no request inside, no exclusive section (a forked job's gate)."""
        self._cond = threading.Condition()
        self._inside: dict[int, int] = {}  # thread id -> nesting depth
        self._exclusive = False

    def enter(self) -> None:
        """A request starts (waits while an exclusive section runs)."""
        me = threading.get_ident()
        with self._cond:
            if me not in self._inside:
                while self._exclusive:
                    self._cond.wait()
            self._inside[me] = self._inside.get(me, 0) + 1

    def leave(self) -> None:
        """A request ends (harmless for a thread that did not enter)."""
        me = threading.get_ident()
        with self._cond:
            depth = self._inside.pop(me, 0) - 1
            if depth > 0:
                self._inside[me] = depth
            self._cond.notify_all()

    @contextmanager
    def exclusive(self, what: str, skip: Callable[[], bool] | None = None) -> Iterator[bool]:
        """Run the ``with`` body with no other request in progress.

        Yields False (and waits for nothing) when ``skip()`` says, once the
        section's turn has come, that there is nothing to do; True otherwise.
        """
        me = threading.get_ident()
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            if skip is not None and skip():
                run = False
            else:
                run = True
                self._exclusive = True
                deadline = time.monotonic() + self.drain_timeout
                while any(thread != me for thread in self._inside):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        log.warning("request gate: requests still running; %s anyway", what)
                        break
                    self._cond.wait(remaining)
        if not run:
            yield False
            return
        try:
            yield True
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()

    def import_module(self, name: str) -> ModuleType:
        """Import ``name`` with no other request in progress (at most once)."""
        module = sys.modules.get(name)
        if not _initialising(module):
            return module
        with self.exclusive(f"importing {name}", lambda: not _initialising(sys.modules.get(name))):
            return importlib.import_module(name)


#: One gate per process: ``sys.modules`` is per process, and so is the race it closes.
IMPORT_GATE = ImportGate()


def install_import_gate(server, gate: ImportGate = IMPORT_GATE) -> None:
    """Make every request of a Flask ``server`` pass ``gate`` (first before-request hook)."""
    server.before_request_funcs.setdefault(None, []).insert(0, gate.enter)

    @server.teardown_request
    def _leave_gate(_exc=None) -> None:
        gate.leave()


def import_pandas() -> ModuleType:
    """pandas, imported through :data:`IMPORT_GATE` if it is not loaded yet."""
    return IMPORT_GATE.import_module("pandas")


class WarmUp:
    """Imports :data:`HEAVY_MODULES` once, now (:meth:`run`) or on a thread (:meth:`start`)."""

    def __init__(self, modules: tuple[str, ...] = HEAVY_MODULES) -> None:
        self.modules = modules
        self._started = threading.Event()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.seconds: float | None = None

    @property
    def done(self) -> bool:
        """Whether every module has been imported (or the warm-up gave up on one)."""
        return self._done.is_set()

    def run(self) -> None:
        """Import the modules in this thread (at most once per instance)."""
        with self._lock:
            if self._done.is_set():
                return
            self._started.set()
            start = time.perf_counter()
            try:
                for name in self.modules:
                    try:
                        if name.split(".")[0] in GATED_MODULES:
                            IMPORT_GATE.import_module(name.split(".")[0])
                        importlib.import_module(name)
                    except ImportError:  # an optional reader; its first use will say so
                        log.warning("warm-up: cannot import %s", name)
            finally:
                self.seconds = time.perf_counter() - start
                self._done.set()
        log.info("warm-up: libraries loaded in %.1f s", self.seconds)

    def start(self, delay: float = 0.0) -> threading.Thread:
        """Run on a daemon thread after ``delay`` seconds (e.g. after the first page)."""

        def later() -> None:
            if delay > 0 and self._done.wait(delay):
                return
            self.run()

        thread = threading.Thread(target=later, name="calibration-warm-up", daemon=True)
        thread.start()
        return thread

    def wait(self, timeout: float | None = None) -> bool:
        """Block while a started warm-up runs; True when none runs any more."""
        if not self._started.is_set():
            return True
        return self._done.wait(timeout)
