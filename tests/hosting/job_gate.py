"""A gate that holds a running job until a test opens it (:mod:`slow_jobs`, test_job_rules).

At the gate, the job writes ``running-<pid>`` into the gate folder (the id of
the process that runs it), then waits until the folder holds ``release``. A
test thus knows which process runs a job and holds the job as long as it needs
(forever: until a server limit stops it), without timing anything.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def wait_at_gate(gate: Path) -> None:
    """Mark this process as running a job, then wait for ``gate / "release"``."""
    (gate / f"running-{os.getpid()}").touch()
    while not (gate / "release").exists():
        time.sleep(0.05)
