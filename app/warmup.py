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

Dash encodes every answer with plotly's JSON encoder, which uses pandas when it
finds it in ``sys.modules``, without importing it; a request served while
another thread is importing pandas would meet a half-initialised module (HTTP
500, "partially initialized module 'pandas'"). So a server imports
:data:`IMPORTED_BEFORE_SERVING` before it accepts connections
(:func:`import_before_serving`).
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("calibration_dashboard.warmup")

#: Imported by the warm-up.
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
    "calibration_core.measures.significance",
    "calibration_core.bootstrap",
    "calibration_core.decision",
    "calibration_core.measures.goodness_of_fit",
    "calibration_core.measures.human_uncertainty",
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


#: Modules that request code finds in ``sys.modules`` without importing them
#: (plotly's JSON encoder): imported before a server accepts connections.
IMPORTED_BEFORE_SERVING = ("pandas",)


def import_before_serving() -> None:
    """Import :data:`IMPORTED_BEFORE_SERVING` (see the module docstring)."""
    for name in IMPORTED_BEFORE_SERVING:
        importlib.import_module(name)


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
                        importlib.import_module(name)
                    except ImportError:  # an optional reader; its first use will say so
                        log.warning("warm-up: cannot import %s", name)
            finally:
                self.seconds = time.perf_counter() - start
                self._done.set()
        log.info("warm-up: libraries loaded in %.1f s", self.seconds)

    def start(self, delay: float = 0.0, then: Callable[[], None] | None = None) -> threading.Thread:
        """Run on a daemon thread after ``delay`` seconds (e.g. after the first page).

        ``then``, if given, is called on that thread afterwards (e.g. to start
        another process once the imports no longer compete with the first page).
        """

        def later() -> None:
            if not (delay > 0 and self._done.wait(delay)):
                self.run()
            if then is not None:
                then()

        thread = threading.Thread(target=later, name="calibration-warm-up", daemon=True)
        thread.start()
        return thread

    def wait(self, timeout: float | None = None) -> bool:
        """Block while a started warm-up runs; True when none runs any more."""
        if not self._started.is_set():
            return True
        return self._done.wait(timeout)
