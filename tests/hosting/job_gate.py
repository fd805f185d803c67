"""A gate that holds a running job until a test opens it (:mod:`slow_jobs`, test_job_rules).

At the gate, the job writes ``running-<pid>`` into the gate folder (the id of
the process that runs it), then waits until the folder holds ``release`` (open
for every job) or ``release-<pid>`` (for this job only: the job consumes it,
so the next job of a reused process waits again). A job that passes the gate
removes its ``running-<pid>``. A test thus knows which processes hold a job
right now and holds each job as long as it needs (forever: until a server
limit stops it), without timing anything.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def wait_at_gate(gate: Path) -> None:
    """Mark this process as running a job, then wait for ``release`` or ``release-<pid>``."""
    running, own = gate / f"running-{os.getpid()}", gate / f"release-{os.getpid()}"
    running.touch()
    while not (gate / "release").exists():
        if own.exists():
            own.unlink()
            break
        time.sleep(0.05)
    running.unlink(missing_ok=True)
