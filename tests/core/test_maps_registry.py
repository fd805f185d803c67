"""The map registry's error for an unknown name (its modules are imported on first use)."""

from __future__ import annotations

import subprocess
import sys

from calibration_core.maps.registry import available_maps


def test_an_unknown_map_names_every_map_even_before_any_is_loaded():
    # A fresh interpreter: no map module imported yet (they load lazily, on first use).
    code = (
        "from calibration_core.maps import make_map\n"
        "try:\n    make_map('platt')\n    make_map('nosuch')\n"
        "except Exception as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "unknown calibration map 'nosuch'" in out.stdout
    listed = out.stdout.split("choose from ")[1].strip().rstrip(".").split(", ")
    assert listed == list(available_maps()) and len(listed) == 8
