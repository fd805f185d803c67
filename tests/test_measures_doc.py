"""docs/measures.md quotes the output of scripts/measures_pathologies.py: keep them equal."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "measures_pathologies", REPO / "scripts" / "measures_pathologies.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_guide_quotes_the_scripts_tables():
    script = _script()
    doc = (REPO / "docs" / "measures.md").read_text(encoding="utf-8")
    from calibration_core.demo import demo_predictions

    models = {p.name: p for p in demo_predictions()}
    for table in (script.useless_model(models), script.bin_counts(models), script.notions(models)):
        assert table in doc
    # the first pathology: the base-rate "model" scores 0 on every calibration measure
    useless = script.useless_model(models).splitlines()[4]
    assert useless.startswith("| base rate for every row | 0.0000 | 0.0000 | 0.0000 |")
