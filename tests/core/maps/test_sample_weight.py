"""Sample weights in every map's fit: integer weights = repeated rows, weight 0 = removed rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.isotonic import IsotonicRegression

from calibration_core import CalibrationInputError
from calibration_core.maps import MAP_NAMES, IsotonicCalibration, make_map
from calibration_core.maps.linear import SoftmaxLinearObjective
from calibration_core.maps.logistic_columns import fit_logistic_columns
from calibration_core.maps.temperature import TemperatureObjective

#: Fixed strengths: chosen ones depend on the held-out split (see test_estimator_checks).
FIXED = {
    "matrix": {"reg_lambda": 1.0, "reg_mu": 1.0},
    "dirichlet": {"reg_lambda": 1.0, "reg_mu": 1.0},
}
#: Variants whose weighted fits take their own code path.
VARIANTS = [
    ("histogram", {"scheme": "frequency", "n_bins": 7}),
    ("platt", {"platt_targets": True, "input_transform": "raw"}),
    ("beta", {"parameters": "ab"}),
    ("beta", {"parameters": "am"}),
]
CASES = [(name, FIXED.get(name, {})) for name in MAP_NAMES] + VARIANTS
IDS = [f"{name}{'-' + '-'.join(map(str, p.values())) if p else ''}" for name, p in CASES]


def data(n=400, k=3, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = 1.5 * (rng.normal(size=(n, k)) + 1.2 * np.eye(k)[labels])
    return logits, softmax(logits, axis=1), labels


def fit(name, params, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_map(name, **params, **kw["make"]).fit(X, y, sample_weight=kw.get("sw"))


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("inp", ["probs", "logits"])
@pytest.mark.parametrize("name, params", CASES, ids=IDS)
def test_integer_weights_equal_repeated_rows_and_zero_weights_removed_rows(name, params, inp, k):
    logits, probs, labels = data(k=k)
    X = probs if inp == "probs" else logits
    sw = np.random.default_rng(1).integers(0, 4, labels.shape[0])
    assert (sw == 0).any() and (sw > 1).any()
    make = {"input": inp}
    repeated = fit(name, params, X.repeat(sw, axis=0), labels.repeat(sw), make=make)
    weighted = fit(name, params, X, labels, make=make, sw=sw)
    np.testing.assert_allclose(
        weighted.predict_proba(X), repeated.predict_proba(X), rtol=1e-6, atol=1e-9
    )


@pytest.mark.parametrize("name, params", CASES[:8], ids=IDS[:8])
def test_weights_change_the_fit_and_unit_weights_do_not(name, params):
    logits, _probs, labels = data(k=3)
    make = {"input": "logits"}
    plain = fit(name, params, logits, labels, make=make)
    ones = fit(name, params, logits, labels, make=make, sw=np.ones(labels.shape[0]))
    np.testing.assert_allclose(ones.predict_proba(logits), plain.predict_proba(logits), atol=1e-8)
    # Up-weighting one class's rows must move the fit (the weights are really used).
    sw = np.where(labels == 0, 5.0, 1.0)
    skewed = fit(name, params, logits, labels, make=make, sw=sw)
    assert np.abs(skewed.predict_proba(logits) - plain.predict_proba(logits)).max() > 1e-3


def test_weighted_isotonic_equals_scikit_learn():
    rng = np.random.default_rng(3)
    s = rng.random(500)
    y = (rng.random(500) < s**2).astype(int)
    sw = rng.random(500) * 3
    ours = IsotonicCalibration(eps=0.0).fit(s, y, sample_weight=sw)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(s, y, sample_weight=sw)
    grid = np.linspace(0, 1, 301)
    np.testing.assert_allclose(ours.predict_proba(grid)[:, 1], ref.predict(grid), atol=1e-12)


def test_weighted_objectives_equal_repeated_rows():
    """The weighted losses and gradients of the fits are those of repeated rows, to rounding."""
    logits, probs, labels = data(n=200, k=4)
    sw = np.random.default_rng(2).integers(1, 4, 200)
    x_rep, y_rep = logits.repeat(sw, axis=0), labels.repeat(sw)
    theta = np.random.default_rng(4).normal(size=20)
    for kind, n_par in (("vector", 8), ("full", 20)):
        w = SoftmaxLinearObjective(logits, labels, kind, reg_lambda=0.3, weights=sw.astype(float))
        r = SoftmaxLinearObjective(x_rep, y_rep, kind, reg_lambda=0.3)
        (vw, gw), (vr, gr) = w(theta[:n_par]), r(theta[:n_par])
        assert vw == pytest.approx(vr, rel=1e-12)
        np.testing.assert_allclose(gw, gr, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(
            w.hessian_diagonal(theta[:n_par]), r.hessian_diagonal(theta[:n_par]), rtol=1e-10
        )
    tw = TemperatureObjective(logits, labels, sw.astype(float))
    tr = TemperatureObjective(x_rep, y_rep)
    assert tw.loss(0.3) == pytest.approx(tr.loss(0.3), rel=1e-12)
    np.testing.assert_allclose(tw.derivatives(0.3), tr.derivatives(0.3), rtol=1e-10)
    cols = probs.T.copy()
    fw = fit_logistic_columns([cols], labels, np.tile([1.0, 0.0], (4, 1)), weights=sw * 1.0)
    fr = fit_logistic_columns([cols.repeat(sw, axis=1)], y_rep, np.tile([1.0, 0.0], (4, 1)))
    np.testing.assert_allclose(fw.params, fr.params, rtol=1e-8)
    np.testing.assert_allclose(fw.loss, fr.loss, rtol=1e-10)


def test_weighted_logistic_fit_with_a_warm_start_subsample():
    """Many rows: the weighted Newton fit starts from a weighted subsample fit, same optimum."""
    rng = np.random.default_rng(5)
    n = 40_000
    s = rng.random(n)
    y = (rng.random(n) < s).astype(np.intp)
    sw = rng.integers(1, 3, n).astype(float)
    feats = [s[None, :].copy()]
    warm = fit_logistic_columns(feats, np.where(y == 1, 0, -1), np.array([[1.0, 0.0]]), weights=sw)
    cold = fit_logistic_columns(
        feats, np.where(y == 1, 0, -1), np.array([[1.0, 0.0]]), weights=sw, warm_start_rows=None
    )
    np.testing.assert_allclose(warm.params, cold.params, rtol=1e-8)


@pytest.mark.parametrize(
    "sw, match",
    [
        (np.r_[1.0, -1.0, np.ones(398)], "finite and >= 0; row 1 hold -1.0"),
        (np.r_[np.nan, np.ones(399)], "finite and >= 0; row 0"),
        (np.r_[np.inf, np.ones(399)], "finite and >= 0"),
        (np.ones(5), "shape \\(5,\\) but there are 400 rows"),
        (np.zeros(400), "sample_weight is all zero"),
        (np.array(["a"] * 400), "must be numbers"),
    ],
)
def test_bad_weights_are_clear_errors(sw, match):
    _logits, probs, labels = data()
    with pytest.raises(CalibrationInputError, match=match):
        make_map("temperature").fit(probs, labels, sample_weight=sw)


def test_a_scalar_weight_is_every_row_s_weight_and_weights_are_not_changed():
    _logits, probs, labels = data()
    a = make_map("platt").fit(probs, labels, sample_weight=2.5)
    b = make_map("platt").fit(probs, labels)
    np.testing.assert_allclose(a.predict_proba(probs), b.predict_proba(probs), atol=1e-8)
    sw = np.r_[0.0, np.ones(399)]
    make_map("isotonic").fit(probs, labels, sample_weight=sw)
    assert sw[0] == 0.0 and sw.shape == (400,)


def test_weights_leaving_one_class_are_refused():
    _logits, probs, labels = data()
    with pytest.raises(CalibrationInputError, match="got one class"):
        make_map("temperature").fit(probs, labels, sample_weight=(labels == 1).astype(float))
