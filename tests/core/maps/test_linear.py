"""Shared machinery of the multiclass linear maps, and the contract every
multiclass map (temperature, vector, matrix, Dirichlet) keeps."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.optimize import check_grad
from scipy.special import log_softmax, softmax
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from calibration_core import CalibrationInputError, Predictions
from calibration_core.errors import CalibrationFitWarning
from calibration_core.maps import (
    CalibrationMap,
    DirichletCalibration,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
    make_map,
)
from calibration_core.maps.linear import (
    SoftmaxLinearObjective,
    fit_linear_map,
    identity_parameters,
    minimize_objective,
    stratified_holdout,
    unpack,
)
from calibration_core.maps.linear import fit as linear_fit
from calibration_core.maps.linear import objective as linear_objective

MULTICLASS = (TemperatureScaling, VectorScaling, MatrixScaling, DirichletCalibration)


def overconfident(n: int, k: int, seed: int = 0, sharpen: float = 2.0):
    """Logits whose softmax is over-confident: labels follow softmax(z / sharpen)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=2.0, size=(n, k)) + rng.normal(size=k)
    p_true = softmax(z / sharpen, axis=1)
    labels = (p_true.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return z, labels


# ------------------------------------------------------------------ objective
@pytest.mark.parametrize("kind", ["vector", "full"])
@pytest.mark.parametrize("reg", [(0.0, 0.0), (0.7, 0.3)])
def test_gradient_matches_finite_differences(kind, reg):
    z, y = overconfident(300, 4, seed=1)
    obj = SoftmaxLinearObjective(z, y, kind, reg_lambda=reg[0], reg_mu=reg[1])
    rng = np.random.default_rng(2)
    for _ in range(3):
        theta = identity_parameters(kind, 4) + rng.normal(scale=0.5, size=obj.n_params)
        err = check_grad(lambda t: obj(t)[0], lambda t: obj(t)[1], theta)
        assert err < 1e-6 * max(1.0, np.linalg.norm(obj(theta)[1]))


@pytest.mark.parametrize("kind", ["vector", "full"])
def test_value_is_mean_log_loss_plus_penalty(kind):
    k = 3
    z, y = overconfident(200, k, seed=3)
    rng = np.random.default_rng(4)
    theta = identity_parameters(kind, k) + rng.normal(
        scale=0.3, size=2 * k if kind == "vector" else k * k + k
    )
    coef, b = unpack(theta, kind, k)
    out = z * coef + b if kind == "vector" else z @ coef.T + b
    nll = -np.mean(log_softmax(out, axis=1)[np.arange(len(y)), y])
    lam, mu = 2.0, 0.5
    if kind == "full":  # ODIR, scaled as in Kull et al. 2019
        off = coef[~np.eye(k, dtype=bool)]
        pen = lam / (k * (k - 1)) * np.sum(off**2) + mu / k * np.sum(b**2)
    else:
        pen = lam / k * np.sum((coef - coef.mean()) ** 2) + mu / k * np.sum(b**2)
    obj = SoftmaxLinearObjective(z, y, kind, reg_lambda=lam, reg_mu=mu)
    assert obj(theta)[0] == pytest.approx(nll + pen, rel=1e-12)
    assert obj.data_loss(theta) == pytest.approx(nll, rel=1e-12)


@pytest.mark.parametrize("kind", ["vector", "full"])
def test_hessian_diagonal_matches_finite_differences(kind):
    z, y = overconfident(150, 3, seed=5)
    obj = SoftmaxLinearObjective(z, y, kind, reg_lambda=0.4, reg_mu=0.2)
    theta = identity_parameters(kind, 3) + np.random.default_rng(6).normal(
        scale=0.2, size=obj.n_params
    )
    h = 1e-5
    fd = np.empty(obj.n_params)
    for i in range(obj.n_params):
        e = np.zeros(obj.n_params)
        e[i] = h
        fd[i] = (obj(theta + e)[1][i] - obj(theta - e)[1][i]) / (2 * h)
    np.testing.assert_allclose(obj.hessian_diagonal(theta), fd, rtol=1e-5, atol=1e-8)


def test_blocks_give_the_same_objective(monkeypatch):
    z, y = overconfident(1001, 5, seed=7)
    theta = identity_parameters("full", 5) + 0.1
    whole = SoftmaxLinearObjective(z, y, "full", reg_lambda=1.0, reg_mu=1.0)
    monkeypatch.setattr(linear_objective, "BLOCK_ELEMENTS", 64)  # 12 rows per block
    blocked = SoftmaxLinearObjective(z, y, "full", reg_lambda=1.0, reg_mu=1.0)
    assert len(blocked._blocks) > 50
    v1, g1 = whole(theta)
    v2, g2 = blocked(theta)
    assert v1 == pytest.approx(v2, rel=1e-13)
    np.testing.assert_allclose(g1, g2, rtol=1e-11, atol=1e-15)


def test_full_kind_without_penalty_matches_unpenalised_logistic_regression():
    """softmax(W x + b) is multinomial logistic regression on features x."""
    z, y = overconfident(3000, 4, seed=8)
    fit = fit_linear_map(z, y, "full", reg_lambda=0.0, reg_mu=0.0)
    assert fit.converged
    coef, b = unpack(fit.theta, "full", 4)
    ours = softmax(z @ coef.T + b, axis=1)
    ref = LogisticRegression(C=np.inf, tol=1e-10, max_iter=5000).fit(z, y)
    np.testing.assert_allclose(ours, ref.predict_proba(z), atol=2e-5)


def test_identity_parameters_are_the_identity_map():
    z, _y = overconfident(50, 4)
    for kind in ("vector", "full"):
        coef, b = unpack(identity_parameters(kind, 4), kind, 4)
        out = z * coef + b if kind == "vector" else z @ coef.T + b
        np.testing.assert_allclose(out, z)


def test_stratified_holdout_is_seeded_and_stratified():
    y = np.repeat(np.arange(4), [100, 50, 25, 500])
    a = stratified_holdout(y, 0.2, seed=3)
    assert np.array_equal(a, stratified_holdout(y, 0.2, seed=3))
    assert not np.array_equal(a, stratified_holdout(y, 0.2, seed=4))
    for c, n in enumerate([100, 50, 25, 500]):
        assert abs(a[y == c].sum() - n / 5) <= 1


def test_selection_picks_the_best_strength_on_the_path():
    z, y = overconfident(600, 6, seed=9)
    fit = fit_linear_map(z, y, "full", reg_lambda=None, reg_mu=None, reg_grid=(0.0, 0.1, 10.0, 1e3))
    losses = [p["val_loss"] for p in fit.path]
    assert [p["reg_lambda"] for p in fit.path] == [1e3, 10.0, 0.1, 0.0][: len(losses)]
    best = fit.path[int(np.argmin(losses))]
    scale = best["n_fit"] / len(y)  # same weight against the summed log-likelihood
    assert 0.75 < scale < 0.85
    assert fit.reg_lambda == pytest.approx(best["reg_lambda"] * scale, rel=1e-12)
    assert fit.reg_mu == pytest.approx(best["reg_mu"] * scale, rel=1e-12)
    # the path stops at the first strength that does not improve the held-out loss
    assert all(np.diff(losses)[:-1] < 0)
    # only the unset strength is searched
    fixed_mu = fit_linear_map(z, y, "full", reg_lambda=None, reg_mu=5.0, reg_grid=(0.1, 10.0))
    assert all(p["reg_mu"] == 5.0 for p in fixed_mu.path) and fixed_mu.reg_mu == 5.0


def test_subsample_start_reaches_the_same_minimum(monkeypatch):
    z, y = overconfident(3000, 4, seed=11)
    direct = fit_linear_map(z, y, "vector", reg_lambda=0.1, reg_mu=0.1)
    monkeypatch.setattr(linear_fit, "SUBSAMPLE_ROWS", 500)  # 3000 rows > 4 * 500: subsample first
    warm = fit_linear_map(z, y, "vector", reg_lambda=0.1, reg_mu=0.1)
    assert warm.converged
    np.testing.assert_allclose(warm.theta, direct.theta, atol=1e-4)
    assert warm.loss == pytest.approx(direct.loss, abs=1e-9)


def test_selection_on_a_subsample_rescales_the_strength(monkeypatch):
    z, y = overconfident(2000, 4, seed=13)
    monkeypatch.setattr(linear_fit, "SELECTION_ROWS", 400)  # 2000 rows > 2 * 400: subsample
    fit = fit_linear_map(z, y, "full", reg_lambda=None, reg_mu=None, reg_grid=(0.01, 1.0, 100.0))
    assert all(300 <= p["n_fit"] <= 340 for p in fit.path)  # 80 % of a 400-row subsample
    best = min(fit.path, key=lambda p: p["val_loss"])
    assert fit.reg_lambda == pytest.approx(best["reg_lambda"] * best["n_fit"] / 2000)
    assert fit.converged


def test_too_few_rows_to_hold_out_use_the_strongest_penalty():
    z, y = overconfident(3, 3, seed=12)
    paths = []
    for seed in range(4):  # seeds 0, 2 hold a row out, 1, 3 do not
        fit = fit_linear_map(
            z,
            y,
            "full",
            reg_lambda=None,
            reg_mu=2.0,
            reg_grid=(0.1, 10.0),
            random_state=seed,
            max_iter=20,  # 3 rows are separable: the diagonal scale grows without bound
        )
        assert np.all(np.isfinite(fit.theta))
        if not fit.path:
            assert (fit.reg_lambda, fit.reg_mu) == (10.0, 2.0)
        paths.append(len(fit.path))
    assert 0 in paths and max(paths) > 0  # both branches ran


def test_preconditioned_lbfgs_reaches_the_minimum():
    z, y = overconfident(2000, 5, seed=10)
    obj = SoftmaxLinearObjective(z, y, "full", reg_lambda=3.0, reg_mu=1.0)
    fit = minimize_objective(obj, identity_parameters("full", 5))
    assert fit.converged
    assert np.max(np.abs(obj(fit.theta)[1])) < 1e-6


# ------------------------------------------------------- multiclass contract
def small_problem(n=600, k=3, seed=0):
    z, y = overconfident(n, k, seed=seed)
    return z, softmax(z, axis=1), y


@pytest.mark.parametrize("cls", MULTICLASS)
def test_fit_returns_self_and_rows_are_on_the_simplex(cls):
    _z, p, y = small_problem()
    m = cls()
    assert m.fit(p, y) is m
    q = m.predict_proba(p)
    assert q.shape == p.shape and np.isfinite(q).all()
    assert q.min() >= 0 and q.max() <= 1
    np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-12)
    assert m.converged_ and m.n_iter_ >= 1
    assert np.array_equal(m.predict(p), q.argmax(axis=1))


@pytest.mark.parametrize("cls", MULTICLASS)
def test_registry_names(cls):
    assert isinstance(make_map(cls.name), cls)
    assert cls.family == "multiclass"


@pytest.mark.parametrize("cls", MULTICLASS)
def test_json_round_trip_gives_identical_predictions(cls):
    z, _p, y = small_problem(seed=1)
    m = cls(input="logits").fit(z, y)
    text = m.to_json()
    json.loads(text)  # plain JSON, no pickle
    back = CalibrationMap.from_json(text)
    assert type(back) is cls and back.get_params() == m.get_params()
    assert np.array_equal(back.predict_proba(z), m.predict_proba(z))


@pytest.mark.parametrize("cls", MULTICLASS)
def test_sklearn_clone_pipeline_and_grid_search(cls):
    _z, p, y = small_problem(n=450, seed=2)
    m = cls()
    c = clone(m)
    assert c.get_params() == m.get_params() and c is not m
    pipe = Pipeline([("identity", FunctionTransformer()), ("calibrate", cls())]).fit(p, y)
    np.testing.assert_allclose(pipe.predict_proba(p), cls().fit(p, y).predict_proba(p))
    grid = {
        TemperatureScaling: {"input": ["probs"]},
        VectorScaling: {"reg": [1e-3, 10.0]},
        MatrixScaling: {"reg_lambda": [0.1, 10.0], "reg_mu": [1.0]},
        DirichletCalibration: {"reg_lambda": [0.1, 10.0], "reg_mu": [1.0]},
    }[cls]
    search = GridSearchCV(cls(), grid, scoring="neg_log_loss", cv=3).fit(p, y)
    assert np.isfinite(search.best_score_) and search.best_score_ < 0
    assert search.predict_proba(p).shape == p.shape


@pytest.mark.parametrize("cls", MULTICLASS)
def test_wrong_input_kind_says_which_was_expected(cls):
    z, p, y = small_problem()
    with pytest.raises(CalibrationInputError, match="input='logits'"):
        cls().fit(z, y)
    with pytest.raises(CalibrationInputError, match="look like probabilities"):
        cls(input="logits").fit(p, y)


@pytest.mark.parametrize("cls", MULTICLASS)
def test_predictions_with_logits_use_them(cls):
    z, _p, y = small_problem(seed=3)
    pred = Predictions.from_logits(z, y)
    a = cls().fit(pred, None).predict_proba(pred)
    b = cls(input="logits").fit(z, y).predict_proba(z)
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("cls", MULTICLASS)
def test_separable_data_gives_finite_outputs_and_a_warning(cls):
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 90)
    z = rng.normal(size=(90, 3))
    z[np.arange(90), y] += 8.0  # every row right by a wide margin
    with pytest.warns(CalibrationFitWarning):
        m = cls(input="logits").fit(z, y)
    q = m.predict_proba(z)
    assert np.isfinite(q).all()
    np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-12)
    assert np.isfinite(m.predict_proba(-z)).all()


@pytest.mark.parametrize("cls", (VectorScaling, MatrixScaling, DirichletCalibration))
def test_fewer_rows_than_parameters_warns(cls):
    _z, p, y = small_problem(n=8, k=5, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.warns(CalibrationFitWarning, match="parameters but only 8 rows"):
            cls().fit(p, y)


@pytest.mark.parametrize("cls", (VectorScaling, MatrixScaling, DirichletCalibration))
def test_iteration_limit_is_reported(cls):
    _z, p, y = small_problem(seed=6)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        m = cls(max_iter=1).fit(p, y)
    assert m.converged_ is False and m.n_iter_ == 1
    assert np.isfinite(m.predict_proba(p)).all()


def test_one_class_is_an_error():
    _z, p, y = small_problem()
    with pytest.raises(CalibrationInputError, match="at least two classes"):
        VectorScaling().fit(p, np.zeros_like(y))


@pytest.mark.parametrize("cls", MULTICLASS)
def test_column_count_must_match_the_fit(cls):
    z, _p, y = small_problem(seed=7)
    m = cls(input="logits").fit(z, y)
    with pytest.raises(CalibrationInputError, match="fitted on 3 classes but got 4"):
        m.predict_proba(np.hstack([z, z[:, :1]]))


@pytest.mark.parametrize("bad", [{"reg": -1.0}, {"reg": float("nan")}])
def test_bad_strength_is_an_error(bad):
    _z, p, y = small_problem()
    with pytest.raises(CalibrationInputError, match="non-negative"):
        VectorScaling(**bad).fit(p, y)
    with pytest.raises(CalibrationInputError, match="reg_grid"):
        DirichletCalibration(reg_grid=[]).fit(p, y)
