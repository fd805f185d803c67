"""One-vs-rest machinery of the binary maps: columns, renormalisation, vectorised fits."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, softmax
from sklearn.isotonic import IsotonicRegression

from calibration_core import CalibrationInputError
from calibration_core.errors import CalibrationFitWarning
from calibration_core.maps import (
    BetaCalibration,
    HistogramBinning,
    IsotonicCalibration,
    PlattScaling,
)
from calibration_core.maps.binary_columns import BinaryColumns, assemble_rows, column_scores
from calibration_core.maps.isotonic_columns import fit_isotonic_columns
from calibration_core.maps.logistic_columns import (
    WARM_START_FACTOR,
    WARM_START_ROWS,
    fit_logistic_columns,
)

BINARY_MAPS = [HistogramBinning, IsotonicCalibration, PlattScaling, BetaCalibration]


def softmax_data(n, k, seed=0, sharpness=1.5):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), labels] += 1.5
    return softmax(sharpness * z, axis=1), labels


# ------------------------------------------------------------------ columns
def test_columns_binary_uses_only_the_positive_class():
    probs = np.array([[0.9, 0.1], [0.3, 0.7], [0.4, 0.6]])
    labels = np.array([0, 1, 1])
    cols = BinaryColumns(probs, labels)
    assert cols.n_columns == 1
    np.testing.assert_array_equal(cols.scores, [[0.1, 0.7, 0.6]])
    np.testing.assert_array_equal(cols.positive, [-1, 0, 0])
    np.testing.assert_array_equal(cols.n_positive, [2])
    np.testing.assert_array_equal(cols.classes, [1])


def test_columns_multiclass_one_per_class():
    probs, labels = softmax_data(50, 4)
    cols = BinaryColumns(probs, labels)
    assert cols.n_columns == 4
    np.testing.assert_array_equal(cols.scores, probs.T)
    np.testing.assert_array_equal(cols.n_positive, np.bincount(labels, minlength=4))
    for k in range(4):
        np.testing.assert_array_equal(cols.targets(k), labels == k)


# ---------------------------------------------------------- renormalisation
def test_assemble_binary_is_one_minus_g_and_g_clipped():
    g = np.array([[0.0, 0.25, 1.0]])
    out = assemble_rows(g, 2, eps=1e-3)
    np.testing.assert_allclose(out, [[0.999, 0.001], [0.75, 0.25], [0.001, 0.999]])


def test_assemble_multiclass_divides_by_the_row_sum():
    # Three classes, two rows: calibrated columns (C, N).
    g = np.array([[0.2, 0.5], [0.6, 0.5], [0.2, 0.0]])
    out = assemble_rows(g, 3, eps=1e-12)
    # Row 0 sums to 1.0 already; row 1 sums to 1.0 + 1e-12 after the clip of 0.
    np.testing.assert_allclose(out[0], [0.2, 0.6, 0.2])
    np.testing.assert_allclose(out[1], [0.5, 0.5, 0.0], atol=1e-11)
    assert out[1, 2] > 0
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-15)
    g2 = np.array([[0.1], [0.1], [0.3]])  # sums to 0.5: every entry doubles
    np.testing.assert_allclose(assemble_rows(g2, 3)[0], [0.2, 0.2, 0.6])


def test_assemble_zero_row_falls_back_to_uniform():
    g = np.array([[0.0, 0.5], [0.0, 0.25], [0.0, 0.25]])
    out = assemble_rows(g, 3, eps=0.0)
    np.testing.assert_allclose(out[0], [1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(out[1], [0.5, 0.25, 0.25])


# ------------------------------------------------------ vectorised logistic
def _scipy_logistic(x_list, t, init, active=None):
    """Reference: one independent L-BFGS-B fit of one column (mean log-loss)."""
    X = np.column_stack([*x_list, np.ones_like(x_list[0])])
    free = np.ones(X.shape[1], bool) if active is None else active
    theta0 = np.asarray(init, float)

    def f(v):
        th = theta0.copy()
        th[free] = v
        z = X @ th
        loss = np.mean(np.logaddexp(0, z) - t * z)
        grad = X.T @ (expit(z) - t) / len(t)
        return loss, grad[free]

    res = minimize(f, theta0[free], jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 0})
    th = theta0.copy()
    th[free] = res.x
    return th


def test_joint_logistic_fit_equals_independent_fits_per_column():
    rng = np.random.default_rng(3)
    c, n = 5, 400
    x1 = rng.normal(size=(c, n))
    x2 = rng.normal(size=(c, n))
    truth = rng.normal(size=(c, 3))
    p = expit(truth[:, 0:1] * x1 + truth[:, 1:2] * x2 + truth[:, 2:3])
    # One-vs-rest targets: each row is a positive of at most one column.
    positive = rng.integers(-1, c, n)
    # Make each column's targets follow its own model where possible.
    draw = rng.random((c, n)) < p
    positive = np.where(draw[np.clip(positive, 0, c - 1), np.arange(n)], positive, -1)
    init = np.tile([0.0, 0.0, 0.0], (c, 1))
    # A tiny block forces several column blocks: results must not depend on blocking.
    joint = fit_logistic_columns([x1, x2], positive, init, block_elements=2 * n)
    whole = fit_logistic_columns([x1, x2], positive, init)
    np.testing.assert_allclose(joint.params, whole.params, rtol=0, atol=1e-12)
    assert joint.converged.all()
    for k in range(c):
        t = (positive == k).astype(float)
        ref = _scipy_logistic([x1[k], x2[k]], t, init[k])
        np.testing.assert_allclose(joint.params[k], ref, atol=1e-6)
        alone = fit_logistic_columns(
            [x1[k : k + 1], x2[k : k + 1]], np.where(positive == k, 0, -1), init[k : k + 1]
        )
        np.testing.assert_allclose(joint.params[k], alone.params[0], atol=1e-10)


def test_logistic_fit_with_fixed_parameters_and_smoothed_targets():
    rng = np.random.default_rng(4)
    n = 500
    x1 = rng.normal(size=(2, n))
    x2 = rng.normal(size=(2, n))
    positive = np.where(
        rng.random(n) < expit(x1[0] - x2[0]), 0, np.where(rng.random(n) < 0.3, 1, -1)
    )
    active = np.array([[True, False, True], [True, True, False]])
    init = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    t_pos = np.array([0.9, 0.95])
    t_neg = np.array([0.05, 0.1])
    fit = fit_logistic_columns([x1, x2], positive, init, t_pos=t_pos, t_neg=t_neg, active=active)
    for k in range(2):
        assert fit.params[k][~active[k]] == pytest.approx(init[k][~active[k]])
        t = np.where(positive == k, t_pos[k], t_neg[k])
        ref = _scipy_logistic([x1[k], x2[k]], t, init[k], active[k])
        np.testing.assert_allclose(fit.params[k], ref, atol=1e-6)


def test_logistic_fit_reports_non_convergence():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1, 300))
    positive = np.where(rng.random(300) < expit(3 * x[0]), 0, -1)
    fit = fit_logistic_columns([x], positive, np.zeros((1, 2)), max_iter=1)
    assert not fit.converged[0]
    assert fit.n_iter[0] == 1
    full = fit_logistic_columns([x], positive, np.zeros((1, 2)))
    assert full.converged[0]
    assert 1 < full.n_iter[0] < 20


def test_warm_started_logistic_fit_reaches_the_cold_start_optimum():
    """The subsample warm start changes the starting point, not the optimum."""
    rng = np.random.default_rng(7)
    c, n = 4, 40_000  # above WARM_START_FACTOR * WARM_START_ROWS
    assert n > WARM_START_FACTOR * WARM_START_ROWS
    x1 = rng.normal(size=(c, n))
    x2 = rng.normal(size=(c, n))
    positive = np.full(n, -1)
    for k in range(3):
        on = (rng.random(n) < expit(1.5 * x1[k] - 0.5 * x2[k] + 0.3 * k)) & (positive < 0)
        positive[on] = k
    # Column 3 separates perfectly on x1: its subsample fit must not be reused blindly.
    positive[x1[3] > 1.0] = 3
    init = np.tile([1.0, 0.0, 0.0], (c, 1))
    t_pos = np.array([0.99, 1.0, 0.97, 1.0])
    t_neg = np.array([0.01, 0.0, 0.02, 0.0])
    active = np.ones((c, 3), bool)
    active[2, 1] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm = fit_logistic_columns(
            [x1, x2], positive, init, t_pos=t_pos, t_neg=t_neg, active=active
        )
        cold = fit_logistic_columns(
            [x1, x2], positive, init, t_pos=t_pos, t_neg=t_neg, active=active, warm_start_rows=None
        )
    assert warm.converged.all() and cold.converged.all()
    np.testing.assert_allclose(warm.params[:3], cold.params[:3], rtol=0, atol=1e-9)
    np.testing.assert_allclose(warm.loss[:3], cold.loss[:3], rtol=0, atol=1e-12)
    assert warm.params[2, 1] == init[2, 1]
    # Fewer full-data Newton iterations on the regular columns.
    assert (warm.n_iter[:3] < cold.n_iter[:3]).all()
    # The separable column: a huge weight and a loss near 0 either way (a flat
    # optimum held by the tiny ridge, so only the loss is compared closely).
    assert warm.params[3, 0] > 10 and cold.params[3, 0] > 10
    assert warm.loss[3] < 1e-3
    assert warm.loss[3] == pytest.approx(cold.loss[3], rel=1e-4)
    for k in range(3):
        t = np.where(positive == k, t_pos[k], t_neg[k])
        ref = _scipy_logistic([x1[k], x2[k]], t, init[k], active[k])
        np.testing.assert_allclose(warm.params[k], ref, atol=1e-6)


# ------------------------------------------------------ vectorised isotonic
def test_isotonic_columns_match_sklearn_per_column_with_ties():
    rng = np.random.default_rng(6)
    c, n = 4, 600
    scores = np.round(rng.random((c, n)), 2)  # many ties
    positive = rng.integers(-1, c, n)
    fit = fit_isotonic_columns(scores, positive)
    test = np.concatenate([np.linspace(-0.1, 1.1, 200), scores[0, :50]])
    pred = fit.predict(np.tile(test, (c, 1)))
    for k in range(c):
        ir = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)
        ir.fit(scores[k], (positive == k).astype(float))
        part = slice(fit.offsets[k], fit.offsets[k + 1])
        # Equal up to the last mantissa bit, which the vectorised sort uses.
        np.testing.assert_allclose(fit.x[part], ir.X_thresholds_, rtol=2.3e-16, atol=0)
        np.testing.assert_allclose(fit.y[part], ir.y_thresholds_, atol=1e-12)
        np.testing.assert_allclose(pred[k], ir.predict(test), atol=1e-12)


def test_isotonic_columns_never_pool_across_columns():
    # Column 0 ends with positives, column 1 starts with positives at its lowest
    # scores: concatenated without the lift, PAVA would pool across the boundary.
    scores = np.array([[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4]])
    positive = np.array([1, 1, 0, 0])  # rows 0-1 positive for column 1, rows 2-3 for 0
    fit = fit_isotonic_columns(scores, positive)
    pred = fit.predict(scores)
    np.testing.assert_allclose(pred[0], [0, 0, 1, 1])
    np.testing.assert_allclose(pred[1], [0.5, 0.5, 0.5, 0.5])


# ------------------------------------------------------------- the maps
@pytest.mark.parametrize("klass", BINARY_MAPS)
def test_multiclass_rows_sum_to_one(klass):
    probs, labels = softmax_data(3000, 5, seed=1)
    out = klass().fit(probs[:1500], labels[:1500]).predict_proba(probs[1500:])
    assert out.shape == (1500, 5)
    assert np.isfinite(out).all()
    assert (out > 0).all() and (out < 1).all()
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("klass", BINARY_MAPS)
def test_multiclass_is_renormalised_one_vs_rest(klass):
    """Column k of a K-class fit is the binary fit on (p_k, y == k), renormalised."""
    probs, labels = softmax_data(2000, 3, seed=2)
    fitted = klass().fit(probs, labels)
    test = softmax_data(300, 3, seed=9)[0]
    g = np.empty((3, 300))
    for k in range(3):
        pk = probs[:, k]
        binary = klass().fit(np.column_stack([1 - pk, pk]), (labels == k).astype(int))
        g[k] = binary.predict_proba(np.column_stack([1 - test[:, k], test[:, k]]))[:, 1]
    expected = g / g.sum(axis=0)
    np.testing.assert_allclose(fitted.predict_proba(test), expected.T, atol=1e-9)


@pytest.mark.parametrize("klass", BINARY_MAPS)
def test_binary_output_is_one_minus_g_and_g(klass):
    probs, labels = softmax_data(1000, 2, seed=3)
    out = klass().fit(probs, labels).predict_proba(probs)
    np.testing.assert_allclose(out[:, 0], 1 - out[:, 1], atol=1e-15)
    # A 1-D positive-class score is the same input as its two-column form.
    same = klass().fit(probs[:, 1], labels).predict_proba(probs[:, 1])
    np.testing.assert_array_equal(same, out)


@pytest.mark.parametrize("klass", BINARY_MAPS)
def test_absent_class_warns_and_stays_finite(klass):
    probs, labels = softmax_data(600, 4, seed=4)
    labels = np.where(labels == 3, 0, labels)  # class 3 never occurs
    with pytest.warns(CalibrationFitWarning, match="never"):
        m = klass().fit(probs, labels)
    out = m.predict_proba(probs)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    assert out[:, 3].max() < 0.05


@pytest.mark.parametrize("klass", BINARY_MAPS)
def test_logits_input_is_the_softmax(klass):
    rng = np.random.default_rng(7)
    z = rng.normal(size=(800, 3)) * 2
    labels = rng.integers(0, 3, 800)
    from_logits = klass(input="logits").fit(z, labels).predict_proba(z)
    from_probs = klass().fit(softmax(z, axis=1), labels).predict_proba(softmax(z, axis=1))
    np.testing.assert_allclose(from_logits, from_probs, atol=1e-10)


# ------------------------------------------------------------ real data
@pytest.mark.realdata
@pytest.mark.parametrize("klass", BINARY_MAPS)
def test_real_data_gives_valid_probability_rows(realdata, klass):
    for name in ("wideresnet-16-4-cifar-10", "lenet-5-cifar-10", "densenet-bc-100-cifar-100"):
        with np.load(realdata[name]) as data:
            probs = data["predictions"].astype(np.float64)
            labels = data["ground_truth"]
        probs /= probs.sum(axis=1, keepdims=True)
        half = probs.shape[0] // 2
        with warnings.catch_warnings():
            # Some CIFAR-100 classes are perfectly separated by their score
            # on 5000 rows; the maps warn about that, and must stay finite.
            warnings.simplefilter("ignore", CalibrationFitWarning)
            m = klass().fit(probs[:half], labels[:half])
        out = m.predict_proba(probs[half:])
        assert out.shape == probs[half:].shape, name
        assert np.isfinite(out).all(), name
        assert (out > 0).all() and (out < 1).all(), name
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12, err_msg=name)


def test_column_scores_shape():
    probs, _ = softmax_data(10, 2)
    assert column_scores(probs).shape == (1, 10)
    probs, _ = softmax_data(10, 4)
    assert column_scores(probs).shape == (4, 10)


@pytest.mark.parametrize("klass", BINARY_MAPS)
def test_one_class_raises(klass):
    probs, _ = softmax_data(20, 3)
    with pytest.raises(CalibrationInputError, match="at least two classes"):
        klass().fit(probs, np.full(20, 2))
