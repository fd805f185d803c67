"""A script that calls :func:`app.notebook.show` at top level, without an
``if __name__ == "__main__":`` guard, can upload a file to its dashboard: the
upload is not parsed in a forkserver child, which would import the script again
(multiprocessing's spawn preparation) and run ``show()`` a second time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "assets" / "example_predictions.csv"

SCRIPT = """
import json, sys
import numpy as np
import requests
from app.notebook import show, stop

print("script started", file=sys.stderr)
rng = np.random.default_rng(0)
probs = rng.dirichlet(np.ones(3), 200)
dashboard = show({"m": (probs, probs.argmax(1))}, display=False)
session = requests.Session()
assert session.get(dashboard.url, timeout=60).status_code == 200
with open(EXAMPLE, "rb") as f:
    reply = session.post(dashboard.url + "api/upload", files={"file": ("example.csv", f)},
                         timeout=120)
print(json.dumps({"status": reply.status_code, "body": reply.json()}))
stop()
"""


def test_an_upload_from_a_script_without_a_main_guard_loads(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(f"EXAMPLE = {str(EXAMPLE)!r}\n" + textwrap.dedent(SCRIPT))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    assert reply["status"] == 200, reply
    assert reply["body"]["errors"] == [] and reply["body"]["models"], reply
    assert done.stderr.count("script started") == 1, done.stderr[-3000:]
