"""The calibration hierarchy against R's rms::val.prob and independent fits."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from calibration_core import CalibrationInputError, Predictions
from calibration_core.measures import calibration_hierarchy, integrated_calibration_index
from calibration_core.measures.lowess import lowess

#: ../shared/references/rms-val-prob.md (rms 6.5-0): (problem) -> quantity -> value
RMS_REFERENCE = {
    "wrn_cifar10_class3": {
        "intercept": -0.8857400, "slope": 0.3965684, "emax": 0.2360523,
        "e90": 0.1354364, "eavg": 0.02313403, "z": 31.98963,
    },
    "densenet_cifar100_confidence": {
        "intercept": -0.70612954, "slope": 0.45841102, "emax": 0.31489056,
        "e90": 0.30242125, "eavg": 0.13767264, "z": 79.29952,
    },
}  # fmt: skip


def _binary(n, seed, slope=1.0, intercept=0.0):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    truth = 1 / (1 + np.exp(-(intercept + slope * np.log(s / (1 - s)))))
    return s, (rng.random(n) < truth).astype(int)


def _check_reference(h, ref, tol=1e-6):
    assert h.recalibration.intercept.value == pytest.approx(ref["intercept"], abs=tol)
    assert h.recalibration.slope.value == pytest.approx(ref["slope"], abs=tol)
    assert h.curve.emax == pytest.approx(ref["emax"], abs=tol)
    assert h.curve.e90 == pytest.approx(ref["e90"], abs=tol)
    assert h.curve.ici == pytest.approx(ref["eavg"], abs=tol)
    assert h.spiegelhalter.z == pytest.approx(ref["z"], abs=1e-4)


@pytest.mark.realdata
def test_cifar_problems_match_rms_val_prob(realdata):
    with np.load(realdata["wideresnet-16-4-cifar-10"]) as d:
        p, g = d["predictions"].astype(np.float64), d["ground_truth"]
    h = calibration_hierarchy(p, g, notion="class", class_index=3)
    _check_reference(h, RMS_REFERENCE["wrn_cifar10_class3"])
    assert h.recalibration.slope.upper < 1 and "over-confident" in h.recalibration.reading
    with np.load(realdata["densenet-bc-100-cifar-100"]) as d:
        p, g = d["predictions"].astype(np.float64), d["ground_truth"]
    h = calibration_hierarchy(p, g, notion="confidence")
    _check_reference(h, RMS_REFERENCE["densenet_cifar100_confidence"])
    assert h.in_the_large.observed_rate < h.in_the_large.expected_rate  # 0.754 < 0.896


def test_logistic_fits_match_a_general_optimiser():
    from scipy.optimize import minimize

    s, y = _binary(800, 1, slope=0.6, intercept=0.3)
    logit = np.log(s / (1 - s))

    def nll(beta, offset):
        eta = beta[0] + (beta[1] * logit if len(beta) > 1 else 0) + offset
        return np.sum(np.logaddexp(0, eta) - y * eta)

    joint = minimize(nll, [0.0, 1.0], args=(0.0,), method="BFGS", options={"gtol": 1e-10}).x
    citl = minimize(nll, [0.0], args=(logit,), method="BFGS", options={"gtol": 1e-10}).x
    h = calibration_hierarchy(Predictions.from_scores(s, y))
    assert h.recalibration.intercept.value == pytest.approx(joint[0], abs=1e-5)
    assert h.recalibration.slope.value == pytest.approx(joint[1], abs=1e-5)
    assert h.in_the_large.intercept.value == pytest.approx(citl[0], abs=1e-5)
    assert h.recalibration.converged
    # Wald interval from the inverse information at the optimum
    x = np.column_stack([np.ones_like(logit), logit])
    mu = 1 / (1 + np.exp(-(x @ joint)))
    se = np.sqrt(np.diag(np.linalg.inv(x.T @ (x * (mu * (1 - mu))[:, None]))))
    slope = h.recalibration.slope
    assert slope.upper - slope.value == pytest.approx(1.959963984540054 * se[1], rel=1e-4)


def test_in_the_large_counts_and_ratio_interval():
    s = np.array([0.2, 0.4, 0.6, 0.8, 0.5])
    y = np.array([0, 1, 1, 1, 0])
    h = calibration_hierarchy(Predictions.from_scores(s, y), level=0.9)
    itl = h.in_the_large
    assert (itl.observed, itl.expected, itl.n_samples) == (3.0, pytest.approx(2.5), 5)
    se = np.sqrt(1 / 3 - 1 / 5)
    assert itl.ratio.value == pytest.approx(1.2)
    assert itl.ratio.lower == pytest.approx(1.2 * np.exp(-1.6448536269514722 * se))


def test_well_calibrated_data_have_slope_one_and_small_ici():
    s, y = _binary(20_000, 2)
    h = calibration_hierarchy(Predictions.from_scores(s, y))
    assert h.recalibration.slope.lower < 1 < h.recalibration.slope.upper
    assert h.in_the_large.ratio.lower < 1 < h.in_the_large.ratio.upper
    assert h.curve.ici < 0.01 and h.curve.e50 <= h.curve.e90 <= h.curve.emax
    assert np.all(h.curve.lower <= np.clip(h.curve.observed, 0, 1) + 1e-12)
    assert np.mean((h.curve.lower <= h.curve.score) & (h.curve.score <= h.curve.upper)) > 0.8
    assert len(h.curve.thinned(100).score) <= 100
    ici = integrated_calibration_index(Predictions.from_scores(s, y))
    assert ici == h.curve.ici


def test_one_outcome_only_is_refused():
    with pytest.raises(CalibrationInputError, match="both"):
        calibration_hierarchy(Predictions.from_scores(np.array([0.2, 0.7]), np.array([1, 1])))
    with pytest.raises(CalibrationInputError, match="one score column"):
        calibration_hierarchy(np.full((2, 3), 1 / 3), [0, 1], notion="classwise")


#: R with rms (r-cran-rms), probed once per session (tests/external_tools.py).
needs_rms = pytest.mark.requires_tool("R")

R_SCRIPT = """
suppressMessages(library(rms))
d <- read.csv("{path}")
v <- val.prob(d$p, d$y, pl = FALSE)
s <- lowess(d$p, d$y, iter = 0)
write.csv(data.frame(name = names(v), value = unname(v)), "{path}.stats", row.names = FALSE)
write.csv(data.frame(x = s$x, y = s$y), "{path}.lowess", row.names = FALSE)
"""


def _run_r(tmp_path, p, y):
    import pandas as pd

    path = tmp_path / "in.csv"
    pd.DataFrame({"p": p, "y": y}).to_csv(path, index=False, float_format="%.17g")
    subprocess.run(
        ["Rscript", "-e", R_SCRIPT.format(path=path)], check=True, capture_output=True, timeout=300
    )
    stats = pd.read_csv(f"{path}.stats").set_index("name")["value"]
    return stats, pd.read_csv(f"{path}.lowess")


@needs_rms
@pytest.mark.parametrize("slope", [0.5, 1.0, 1.6])
def test_live_r_val_prob_and_lowess(tmp_path, slope):
    s, y = _binary(1500, int(slope * 10), slope=slope, intercept=0.2)
    s = np.round(s, 3).clip(0.001, 0.999)  # ties, as in real scores
    stats, smooth = _run_r(tmp_path, s, y)
    h = calibration_hierarchy(Predictions.from_scores(s, y))
    ref = {k: stats[v] for k, v in [("intercept", "Intercept"), ("slope", "Slope"),
           ("emax", "Emax"), ("e90", "E90"), ("eavg", "Eavg"), ("z", "S:z")]}  # fmt: skip
    _check_reference(h, ref, tol=1e-6)
    x, fitted, _, _ = lowess(s, y)
    np.testing.assert_allclose(x, smooth["x"], atol=0)
    np.testing.assert_allclose(fitted, smooth["y"], atol=1e-10)


@needs_rms
def test_live_r_lowess_with_a_short_span_and_heavy_ties(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(5)
    x = rng.integers(0, 40, 700) / 40
    y = (rng.random(700) < x).astype(float)
    path = tmp_path / "t.csv"
    pd.DataFrame({"x": x, "y": y}).to_csv(path, index=False)
    script = (
        f'd <- read.csv("{path}"); s <- lowess(d$x, d$y, f = 0.2, iter = 0); '
        f'write.csv(data.frame(x = s$x, y = s$y), "{path}.out", row.names = FALSE)'
    )
    subprocess.run(["Rscript", "-e", script], check=True, capture_output=True, timeout=120)
    ref = pd.read_csv(f"{path}.out")
    _, fitted, _, _ = lowess(x, y, span=0.2)
    np.testing.assert_allclose(fitted, ref["y"], atol=1e-10)


def test_block_moments_equal_the_direct_sums(monkeypatch):
    import calibration_core.measures.lowess as lowess_module

    rng = np.random.default_rng(8)
    x = np.round(rng.beta(4, 1, 120_000), 4)  # ties, a skewed density
    y = (rng.random(120_000) < x**2).astype(float)
    fast = lowess(x, y)
    monkeypatch.setattr(lowess_module, "MOMENT_WINDOW", 10**12)  # every fit summed directly
    slow = lowess(x, y)
    np.testing.assert_allclose(fast[1], slow[1], atol=1e-11)
    np.testing.assert_allclose(fast[2], slow[2], rtol=1e-9)


@needs_rms
def test_live_r_lowess_on_the_block_moment_path(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(9)
    x = rng.random(60_000)
    y = (rng.random(60_000) < x).astype(float)
    path = tmp_path / "big.csv"
    pd.DataFrame({"x": x, "y": y}).to_csv(path, index=False, float_format="%.17g")
    script = (
        f'd <- read.csv("{path}"); s <- lowess(d$x, d$y, iter = 0); '
        f'write.csv(data.frame(y = s$y), "{path}.out", row.names = FALSE)'
    )
    subprocess.run(["Rscript", "-e", script], check=True, capture_output=True, timeout=300)
    np.testing.assert_allclose(lowess(x, y)[1], pd.read_csv(f"{path}.out")["y"], atol=1e-10)
