"""``n_parameters_`` of every map: parametric counts, fitted steps and bins, JSON round trip."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from calibration_core import Predictions
from calibration_core.maps import make_map
from calibration_core.maps.base import CalibrationMap


def _predictions(k: int, n: int = 600, seed: int = 0) -> Predictions:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(k, p=row) for row in probs])
    return Predictions.from_probs(probs, labels)


@pytest.mark.parametrize(
    ("name", "k", "expected"),
    [
        ("temperature", 4, 1),
        ("platt", 2, 2),  # one column: the positive class
        ("platt", 4, 8),  # one-vs-rest: 2 per class
        ("beta", 2, 3),
        ("beta", 4, 12),
        ("histogram", 4, 40),  # 10 bins x 4 columns
        ("vector", 4, 8),
        ("matrix", 4, 20),
        ("dirichlet", 4, 20),
    ],
)
def test_parametric_counts(name, k, expected):
    pred = _predictions(k)
    assert make_map(name).fit(pred, pred.labels).n_parameters_ == expected


def test_beta_two_parameter_variants_count_two_per_column():
    pred = _predictions(3)
    for variant in ("ab", "am"):
        assert make_map("beta", parameters=variant).fit(pred, pred.labels).n_parameters_ == 6


def test_isotonic_counts_distinct_fitted_levels_per_column():
    pred = _predictions(3)
    fitted = make_map("isotonic").fit(pred, pred.labels)
    offsets = fitted.offsets_
    levels = sum(len(set(fitted.y_thresholds_[lo:hi].tolist())) for lo, hi in pairwise(offsets))
    assert fitted.n_parameters_ == levels
    assert 3 <= levels < fitted.y_thresholds_.size  # interpolation points repeat each level


def test_count_survives_the_json_round_trip():
    pred = _predictions(3)
    for name in ("isotonic", "histogram", "matrix"):
        fitted = make_map(name).fit(pred, pred.labels)
        assert CalibrationMap.from_dict(fitted.to_dict()).n_parameters_ == fitted.n_parameters_


def test_unfitted_map_has_no_count():
    with pytest.raises(NotFittedError):
        _ = make_map("temperature").n_parameters_


@pytest.mark.parametrize("k", [2, 3, 7])
def test_planned_parameters_are_what_the_fit_reports(k):
    """A front end's budget counts a map before fitting it: the same count, or None."""
    from calibration_core.maps import available_maps
    from calibration_core.maps.counts import planned_parameters

    pred = _predictions(k, seed=k)
    for name in available_maps():
        planned = make_map(name).planned_parameters(k)
        assert planned_parameters(name, k) == planned, name  # the light, by-name count
        fitted = make_map(name).fit(pred, pred.labels)
        if name == "isotonic":
            assert planned is None  # its fitted steps depend on the data
        else:
            assert planned == fitted.n_parameters_, name
    assert make_map("histogram", n_bins=4).planned_parameters(5) == 20
    assert make_map("beta", parameters="ab").planned_parameters(2) == 2


def test_counts_by_name_load_no_map_module():
    import subprocess
    import sys

    code = (
        "import sys; from calibration_core.maps.counts import planned_parameters; "
        "assert planned_parameters('matrix', 100) == 10_100; "
        "assert planned_parameters('uncalibrated', 3) is None; "
        "print(sorted(m for m in ('sklearn', 'calibration_core.maps.base') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
