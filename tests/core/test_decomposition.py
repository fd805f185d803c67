"""Brier and log-loss = calibration + refinement (+ binning residual), survey §3.1."""

from __future__ import annotations

import bisect
import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration_core import (
    CalibrationInputError,
    Decomposition,
    brier_decomposition,
    brier_score,
    log_loss,
    log_loss_decomposition,
)


def _naive_c(probs: np.ndarray, labels: np.ndarray, n_bins: int, scheme: str) -> np.ndarray:
    """c_ij = frequency of class j in the bin of s_ij, by plain Python grouping."""
    n, k = probs.shape

    def bin_of(column):
        if scheme == "width":
            return [min(int(v * n_bins), n_bins - 1) for v in column]
        ordered = sorted(column)
        interior = [ordered[(m * n) // n_bins] for m in range(1, n_bins)]
        return [bisect.bisect_right(interior, v) for v in column]

    c = np.zeros((n, k))
    for j in [1] if k == 2 else range(k):
        bins = bin_of(list(probs[:, j]))
        for i in range(n):
            members = [r for r in range(n) if bins[r] == bins[i]]
            c[i, j] = sum(labels[r] == j for r in members) / len(members)
    if k == 2:
        c[:, 0] = 1.0 - c[:, 1]
    return c


def _naive_terms(probs, labels, n_bins, scheme):
    n, k = probs.shape
    c = _naive_c(probs, labels, n_bins, scheme)
    brier = [0.0, 0.0, 0.0]
    logl = [0.0, 0.0, 0.0]
    for i in range(n):
        s, ci = probs[i], c[i]
        y = np.zeros(k)
        y[labels[i]] = 1.0
        brier[0] += sum((s[j] - ci[j]) ** 2 for j in range(k)) / n
        brier[1] += sum((ci[j] - y[j]) ** 2 for j in range(k)) / n
        brier[2] += 2 * sum((s[j] - ci[j]) * (ci[j] - y[j]) for j in range(k)) / n
        cn = ci / ci.sum()
        kl = sum(cn[j] * math.log(cn[j] / max(s[j], 1e-15)) for j in range(k) if cn[j] > 0)
        logl[0] += kl / n
        logl[1] += -math.log(cn[labels[i]]) / n
        logl[2] += (
            sum((y[j] - cn[j]) * math.log(cn[j] / max(s[j], 1e-15)) for j in range(k) if cn[j] > 0)
            / n
        )
    return brier, logl


# ----------------------------------------------------------- worked examples
def test_hand_worked_pure_bins():
    # Scores of class 1: 0.2, 0.2, 0.8, 0.8; labels 0, 1, 1, 1; two width bins.
    # Bin [0, .5) holds rows 0-1 (one positive): c = (.5, .5); bin [.5, 1] rows 2-3: c = (0, 1).
    # Brier per row: .08, 1.28, .08, .08 -> total .38.
    # calibration: ||(.8,.2)-(.5,.5)||^2 = .18 (x2), ||(.2,.8)-(0,1)||^2 = .08 (x2) -> .13.
    # refinement: ||(.5,.5)-y||^2 = .5 (x2), 0 (x2) -> .25.  Residual 0 (pure bins).
    s = np.array([0.2, 0.2, 0.8, 0.8])
    y = np.array([0, 1, 1, 1])
    d = brier_decomposition(s, y, n_bins=2)
    assert d.total == pytest.approx(0.38, abs=1e-15)
    assert d.calibration == pytest.approx(0.13, abs=1e-15)
    assert d.refinement == pytest.approx(0.25, abs=1e-15)
    assert d.residual == pytest.approx(0.0, abs=1e-15)
    # Log-loss: KL((.5,.5) || (.8,.2)) = .5 ln(.25/.16) = ln 1.25 and
    # KL((0,1) || (.2,.8)) = ln 1.25, so calibration = ln 1.25; refinement
    # = (2 ln 2 + 0)/4 = ln(2)/2; total (3 ln 1.25 + ln 5)/4 = ln 1.25 + ln(4)/4.
    d = log_loss_decomposition(s, y, n_bins=2)
    assert d.total == pytest.approx((3 * math.log(1.25) + math.log(5)) / 4, abs=1e-15)
    assert d.calibration == pytest.approx(math.log(1.25), abs=1e-15)
    assert d.refinement == pytest.approx(math.log(2) / 2, abs=1e-15)
    assert d.residual == pytest.approx(0.0, abs=1e-15)


def test_hand_worked_mixed_bin_has_a_residual():
    # Scores .1 and .3 share bin [0, .5), labels 0 and 1: c = (.5, .5) for both rows.
    # Brier: rows .02 and .98 -> total .5; calibration (.32 + .08)/2 = .2;
    # refinement .5; residual 2 * mean((.4,-.4).(-.5,.5), (.2,-.2).(.5,-.5)) = 2 * (-.1) = -.2.
    s = np.array([0.1, 0.3])
    y = np.array([0, 1])
    d = brier_decomposition(s, y, n_bins=2)
    assert (d.total, d.calibration, d.refinement, d.residual) == pytest.approx(
        (0.5, 0.2, 0.5, -0.2), abs=1e-15
    )
    # Log-loss: KL((.5,.5)||(.9,.1)) = ln(5/3), KL((.5,.5)||(.7,.3)) = .5 ln(25/21);
    # refinement ln 2; residual mean of sum_j (y_j - c_j) ln(c_j/s_j) =
    # (.5 ln(.1/.9) + .5 ln(.7/.3)) / 2 = ln(7/27) / 4.
    d = log_loss_decomposition(s, y, n_bins=2)
    assert d.total == pytest.approx(-(math.log(0.9) + math.log(0.3)) / 2, abs=1e-15)
    assert d.calibration == pytest.approx(
        (math.log(5 / 3) + 0.5 * math.log(25 / 21)) / 2, abs=1e-15
    )
    assert d.refinement == pytest.approx(math.log(2), abs=1e-15)
    assert d.residual == pytest.approx(math.log(7 / 27) / 4, abs=1e-14)


def test_multiclass_renormalisation_hand_worked():
    # K = 3, one width bin: c_ij = overall frequency of class j, the same for every row:
    # labels 0, 0, 1, 2 -> c = (.5, .25, .25), already a distribution.
    probs = np.array([[0.6, 0.3, 0.1], [0.5, 0.25, 0.25], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]])
    y = np.array([0, 0, 1, 2])
    c = np.array([0.5, 0.25, 0.25])
    d = log_loss_decomposition(probs, y, n_bins=1)
    kl = np.mean([np.sum(c * np.log(c / p)) for p in probs])
    ref = -np.mean(np.log(c[y]))
    assert d.calibration == pytest.approx(kl, abs=1e-15)
    assert d.refinement == pytest.approx(ref, abs=1e-15)
    # Two width bins: in column 0 the scores .6, .5 (rows 0, 1) are in the top bin, both
    # class 0 -> c_00 = c_10 = 1; rows 2, 3 -> 0.  Column 1: rows 2 (.6) alone above,
    # c_21 = 1, others 0.  Column 2: row 3 (.8) alone above, c_32 = 1, others 0.
    # Rows of c: (1,0,0), (1,0,0), (0,1,0), (0,0,1): pure, refinement 0.
    d = log_loss_decomposition(probs, y, n_bins=2)
    assert d.refinement == pytest.approx(0.0, abs=1e-15)
    assert d.calibration == pytest.approx(d.total, abs=1e-15)


def test_multiclass_rows_of_c_are_renormalised():
    # One-vs-rest frequencies of a row need not sum to 1 for K > 2; the log-loss terms
    # use c_i / sum_j c_ij, so they match the naive oracle, which renormalises.
    rng = np.random.default_rng(8)
    probs = rng.dirichlet([2, 2, 2], 120)
    y = np.array([rng.choice(3, p=p) for p in probs])
    c = _naive_c(probs, y, 4, "width")
    assert np.abs(c.sum(axis=1) - 1).max() > 0.05
    _, logl = _naive_terms(probs, y, 4, "width")
    d = log_loss_decomposition(probs, y, n_bins=4)
    assert (d.calibration, d.refinement, d.residual) == pytest.approx(tuple(logl), abs=1e-12)


# --------------------------------------------------------------- the oracle
@pytest.mark.parametrize("scheme", ["width", "frequency"])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_agrees_with_naive_oracle(scheme, k):
    rng = np.random.default_rng(k)
    probs = rng.dirichlet(np.full(k, 0.7), 150)
    probs[:10] = np.round(probs[:10], 1)  # some scores on bin edges
    probs[:10] /= probs[:10].sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=p) for p in probs])
    brier, logl = _naive_terms(probs, y, 6, scheme)
    b = brier_decomposition(probs, y, n_bins=6, scheme=scheme)
    ll = log_loss_decomposition(probs, y, n_bins=6, scheme=scheme)
    assert (b.calibration, b.refinement, b.residual) == pytest.approx(tuple(brier), abs=1e-12)
    assert (ll.calibration, ll.refinement, ll.residual) == pytest.approx(tuple(logl), abs=1e-12)


# ------------------------------------------------------------------ identity
@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 200),
    k=st.integers(2, 6),
    n_bins=st.integers(1, 30),
    scheme=st.sampled_from(["width", "frequency"]),
    seed=st.integers(0, 2**32 - 1),
    concentration=st.sampled_from([0.05, 0.5, 5.0]),
)
def test_identity_and_totals(n, k, n_bins, scheme, seed, concentration):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, concentration), n)
    y = rng.integers(0, k, n)
    b = brier_decomposition(probs, y, n_bins=n_bins, scheme=scheme)
    ll = log_loss_decomposition(probs, y, n_bins=n_bins, scheme=scheme)
    assert b.total == brier_score(probs, y)
    assert ll.total == log_loss(probs, y)
    assert b.calibration + b.refinement + b.residual == pytest.approx(b.total, abs=1e-12)
    assert ll.calibration + ll.refinement + ll.residual == pytest.approx(
        ll.total, abs=1e-12 * max(1.0, ll.total)
    )
    assert b.calibration >= 0 and b.refinement >= 0
    assert ll.refinement >= 0
    assert ll.calibration >= -1e-12  # a KL divergence (scores clipped at eps)
    assert all(math.isfinite(v) for v in dataclasses.astuple(ll))


def test_binary_vector_equals_two_columns():
    rng = np.random.default_rng(1)
    s = rng.random(500)
    y = (rng.random(500) < s).astype(int)
    for fn in (brier_decomposition, log_loss_decomposition):
        assert fn(s, y, n_bins=7) == fn(np.column_stack([1 - s, s]), y, n_bins=7)


def test_binary_brier_is_twice_the_classical_binned_decomposition():
    # K = 2: one grouping (the positive column's), both columns contribute equally, so
    # calibration = 2 sum_b n_b/N [(sbar_b - ybar_b)^2 + var_b(s)] and
    # refinement = 2 sum_b n_b/N ybar_b (1 - ybar_b).
    rng = np.random.default_rng(2)
    s = rng.random(1000)
    y = (rng.random(1000) < s**2).astype(int)
    idx = np.minimum((s * 8).astype(int), 7)
    cal = ref = 0.0
    for b in range(8):
        sb, yb = s[idx == b], y[idx == b]
        w = sb.size / s.size
        cal += w * ((sb.mean() - yb.mean()) ** 2 + sb.var())
        ref += w * yb.mean() * (1 - yb.mean())
    d = brier_decomposition(s, y, n_bins=8)
    assert d.calibration == pytest.approx(2 * cal, abs=1e-12)
    assert d.refinement == pytest.approx(2 * ref, abs=1e-12)


def test_zero_scores_give_finite_terms():
    # A confident mistake (true-class score 0) is clipped at eps everywhere.
    probs = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    y = np.array([1, 1, 0])
    d = log_loss_decomposition(probs, y, n_bins=3)
    assert all(math.isfinite(v) for v in dataclasses.astuple(d))
    assert d.total == log_loss(probs, y)
    assert d.calibration + d.refinement + d.residual == pytest.approx(d.total, abs=1e-12)


# --------------------------------------------------- calibrated forecasters
VALUES = np.array([0.1, 0.35, 0.6, 0.85])


def _calibrated_binary(n, rng, miscalibrate=False):
    s = VALUES[rng.integers(0, VALUES.size, n)]
    truth = s**2 if miscalibrate else s
    return s, (rng.random(n) < truth).astype(int)


def test_calibrated_binary_forecaster_pure_bins():
    # Every value (and 1 - value) sits in its own one of 20 width bins: pure bins, so the
    # residual is zero and the calibration term is sampling noise only.  Its expectation:
    # Brier, 2 sum_b (n_b/N) v_b (1 - v_b) / n_b = 2 sum_b v_b (1 - v_b) / N;
    # log-loss, KL ~ chi^2 / 2 with one degree of freedom per bin: 4 / (2 N).
    rng = np.random.default_rng(12)
    for n in (2_000, 200_000):
        s, y = _calibrated_binary(n, rng)
        b = brier_decomposition(s, y, n_bins=20)
        ll = log_loss_decomposition(s, y, n_bins=20)
        assert abs(b.residual) < 1e-13 and abs(ll.residual) < 1e-13
        assert b.calibration < 6 * 2 * np.sum(VALUES * (1 - VALUES)) / n
        assert ll.calibration < 6 * VALUES.size / (2 * n)
        # Refinement: 2 mean v(1 - v) for Brier, the mean binary entropy for log-loss.
        assert b.refinement == pytest.approx(2 * np.mean(VALUES * (1 - VALUES)), abs=0.02)
        entropy = -np.mean(VALUES * np.log(VALUES) + (1 - VALUES) * np.log(1 - VALUES))
        assert ll.refinement == pytest.approx(entropy, abs=0.03)


def test_miscalibrated_binary_forecaster_shows_its_calibration_loss():
    # Labels ~ Bernoulli(v^2) for score v: the calibration loss converges to
    # Brier 2 mean (v - v^2)^2 and log-loss mean KL(Ber(v^2) || Ber(v)).
    rng = np.random.default_rng(13)
    s, y = _calibrated_binary(200_000, rng, miscalibrate=True)
    q = VALUES**2
    brier_cal = 2 * np.mean((VALUES - q) ** 2)
    kl = np.mean(q * np.log(q / VALUES) + (1 - q) * np.log((1 - q) / (1 - VALUES)))
    assert brier_decomposition(s, y, n_bins=20).calibration == pytest.approx(brier_cal, rel=0.03)
    assert log_loss_decomposition(s, y, n_bins=20).calibration == pytest.approx(kl, rel=0.03)


def test_calibrated_multiclass_forecaster():
    # Three score vectors whose entries differ within every column (distinct bins of 20):
    # c_i is the empirical class distribution of the row's vector, so both residuals are 0.
    vectors = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6]])
    rng = np.random.default_rng(14)
    which = rng.integers(0, 3, 60_000)
    probs = vectors[which]
    y = (rng.random(60_000)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    b = brier_decomposition(probs, y, n_bins=20)
    ll = log_loss_decomposition(probs, y, n_bins=20)
    assert abs(b.residual) < 1e-13 and abs(ll.residual) < 1e-13
    assert b.calibration < 1e-3 and ll.calibration < 1e-3
    assert b.refinement == pytest.approx(np.mean(1 - np.sum(vectors**2, axis=1)), abs=0.01)


def test_residual_shrinks_as_bins_get_finer():
    # Continuous scores: the within-bin covariance vanishes as the bins narrow.
    rng = np.random.default_rng(15)
    s = rng.random(100_000)
    y = (rng.random(100_000) < s).astype(int)
    residuals = [abs(brier_decomposition(s, y, n_bins=m).residual) for m in (2, 10, 100)]
    assert residuals[0] > 3 * residuals[1] > 9 * residuals[2]
    # The calibration term of a calibrated forecaster also shrinks towards 0.
    cal = [brier_decomposition(s, y, n_bins=m).calibration for m in (2, 10, 100)]
    assert cal[0] > cal[1] > cal[2] and cal[2] < 1e-3


# ------------------------------------------------------------------ API bits
def test_decomposition_is_frozen():
    d = brier_decomposition([0.2, 0.7], [0, 1], n_bins=2)
    assert isinstance(d, Decomposition)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.total = 0.0  # type: ignore[misc]


@pytest.mark.parametrize("fn", [brier_decomposition, log_loss_decomposition])
def test_bad_input(fn):
    with pytest.raises(CalibrationInputError, match="labels"):
        fn([[0.2, 0.8]], [2])
    with pytest.raises(CalibrationInputError, match="sum to 1"):
        fn([[0.2, 0.7]], [1])
    with pytest.raises(CalibrationInputError, match="n_bins"):
        fn([0.2, 0.7], [0, 1], n_bins=0)
    with pytest.raises(CalibrationInputError, match="scheme"):
        fn([0.2, 0.7], [0, 1], scheme="kmeans")
