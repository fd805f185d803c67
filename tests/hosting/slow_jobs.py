""":mod:`app.worker` with every fit step made slow on purpose, or held at a gate.

The tests of running jobs (progress, cancel, a web worker killed meanwhile, the
queue) need jobs that are still running when they look; this worker sleeps at
each progress report of :func:`calibration_core.compare.compare_maps` instead of
hoping the machine is slow:

* ``SLOW_FIT_SECONDS``: seconds slept at each step;
* ``SLOW_FIT_GATE`` (a folder): at its first step the job waits at this gate
  (:func:`job_gate.wait_at_gate`).

Started as ``celery --app slow_jobs:celery_app worker`` with this folder on
``PYTHONPATH``; everything else is app.worker's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from job_gate import wait_at_gate

import calibration_core.compare as compare

_compare_maps = compare.compare_maps
DELAY = float(os.environ.get("SLOW_FIT_SECONDS", "0"))
GATE = os.environ.get("SLOW_FIT_GATE")


def slow_compare_maps(*args, progress=None, **kwargs):
    gated = []

    def slow_progress(done, total, label):
        time.sleep(DELAY)
        if GATE and not gated:  # once per job: a release lets the whole job through
            gated.append(True)
            wait_at_gate(Path(GATE))
        if progress is not None:
            progress(done, total, label)

    return _compare_maps(*args, progress=slow_progress, **kwargs)


compare.compare_maps = slow_compare_maps

from app.worker import celery_app  # noqa: E402  (after the patch: jobs look it up per call)

__all__ = ["celery_app"]
