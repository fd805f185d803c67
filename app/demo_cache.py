"""The built-in demo stored ahead of time in a cache directory (the image does it at build).

``python -c "from app.demo_cache import prebuild_demo; prebuild_demo()"`` with
``CACHE_DIR`` set: every dashboard worker started on that cache then reads the
demo from it. (The models' outputs ship with the package, so nothing is trained
unless that file is missing; see :mod:`calibration_core.demo`.)
"""

from __future__ import annotations

import os
from pathlib import Path

from .store.data_store import DataStore


def prebuild_demo(cache_dir: str | Path | None = None) -> int:
    """Store the built-in demo's models in ``CACHE_DIR/store`` ahead of time.

    The image runs this at build time, so that every worker of a fresh
    container reads the demo from the cache instead of building it itself.
    Only the store is created: no secret or session is written.

    Parameters
    ----------
    cache_dir : str or Path, optional
        The dashboard's ``CACHE_DIR`` (the environment variable by default).

    Returns
    -------
    int
        Number of demo models now in the cache.
    """
    if cache_dir is None:
        cache_dir = os.environ.get("CACHE_DIR")
        if not cache_dir:
            raise SystemExit("prebuild_demo: set CACHE_DIR (the dashboard's cache directory).")
    store = DataStore(Path(cache_dir) / "store")
    try:
        return len(store.demo_models())
    finally:
        store.close()
