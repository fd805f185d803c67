"""The example file offered under the page's drop zone (``assets/example_predictions.csv``)."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

from calibration_core import load_predictions

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "assets" / "example_predictions.csv"


def test_the_example_loads_as_two_three_class_models():
    preds = load_predictions(EXAMPLE)
    assert [p.name for p in preds] == ["sharp", "cautious"]
    for p in preds:
        assert p.n_samples == 24 and p.class_names == ("cat", "dog", "bird")
        assert set(np.unique(p.labels)) == {0, 1, 2}
        np.testing.assert_allclose(p.probs.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(preds[0].labels, preds[1].labels)
    # the two models differ the way their names say: one is more confident
    assert preds[0].probs.max(axis=1).mean() > preds[1].probs.max(axis=1).mean() + 0.1


def test_the_script_rewrites_the_committed_example_byte_for_byte():
    script = runpy.run_path(str(REPO / "scripts" / "example_predictions.py"))
    assert script["example_csv"]().encode() == EXAMPLE.read_bytes()
