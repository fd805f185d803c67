"""Held-out comparison of calibration maps (`compare_maps`).

Private test-only maps (registered under ``test-*`` names, removed after the
module) check the engine itself; the real maps are checked when registered.
"""

from __future__ import annotations

import json
import warnings
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

from calibration_core import (
    CalibrationInputError,
    Predictions,
    accuracy,
    brier_score,
    classwise_ece,
    classwise_mce,
    confidence_ece,
    confidence_mce,
    log_loss,
)
from calibration_core.compare import (
    METRIC_COLUMNS,
    TABLE_COLUMNS,
    Comparison,
    ComparisonCancelled,
    compare_maps,
)
from calibration_core.maps import available_maps, registry
from calibration_core.maps.base import CalibrationMap


# ------------------------------------------------------------ private maps
class IdentityMap(CalibrationMap):
    """Returns its input probabilities."""

    name = "test-identity"

    def _fit(self, probs, logits, labels):
        pass

    def _predict_proba(self, probs, logits):
        return probs.copy()

    def _fitted_state(self):
        return {}

    def _load_fitted_state(self, state):
        pass


class PriorMap(CalibrationMap):
    """Predicts the class frequencies of its training labels for every row."""

    name = "test-prior"

    def _fit(self, probs, logits, labels):
        self.prior_ = np.bincount(labels, minlength=probs.shape[1]) / labels.shape[0]

    def _predict_proba(self, probs, logits):
        return np.tile(self.prior_, (probs.shape[0], 1))

    def _fitted_state(self):
        return {"prior": self.prior_.tolist()}

    def _load_fitted_state(self, state):
        self.prior_ = np.asarray(state["prior"])


class SpyMap(IdentityMap):
    """An identity map that logs the probability rows it fits and predicts on."""

    name = "test-spy"
    log: ClassVar[list] = []  # (event, probs); class-level because clone copies parameters

    def _fit(self, probs, logits, labels):
        SpyMap.log.append(("fit", probs.copy()))

    def _predict_proba(self, probs, logits):
        SpyMap.log.append(("predict", probs.copy()))
        return probs.copy()


class FailingMap(IdentityMap):
    name = "test-fail"

    def _fit(self, probs, logits, labels):
        raise RuntimeError("deliberate failure in fit")


class NaNMap(IdentityMap):
    name = "test-nan"

    def _predict_proba(self, probs, logits):
        out = probs.copy()
        out[0] = np.nan
        return out


class LazyMap(IdentityMap):
    """Reports a failed optimisation and warns, but still returns probabilities."""

    name = "test-lazy"

    def _fit(self, probs, logits, labels):
        warnings.warn("optimiser stopped early", RuntimeWarning, stacklevel=2)
        self.converged_ = False


TEST_MAPS = (IdentityMap, PriorMap, SpyMap, FailingMap, NaNMap, LazyMap)


@pytest.fixture(scope="module", autouse=True)
def _registered_test_maps():
    for cls in TEST_MAPS:
        registry.register(cls)
    yield
    for cls in TEST_MAPS:
        registry._REGISTRY.pop(cls.name, None)


# -------------------------------------------------------------------- data
def overconfident(n=600, k=4, sharpen=3.0, seed=1, *, logits=False) -> Predictions:
    """Predictions whose logits are ``sharpen`` times the true ones (over-confident)."""
    rng = np.random.default_rng(seed)
    true_logits = rng.normal(0.0, 1.0, size=(n, k))
    p_true = np.exp(true_logits) / np.exp(true_logits).sum(axis=1, keepdims=True)
    y = (p_true.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    z = sharpen * true_logits
    names = [f"c{j}" for j in range(k)]
    if logits:
        return Predictions.from_logits(z, y, class_names=names, name="net")
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return Predictions.from_probs(p, y, class_names=names, name="net")


@pytest.fixture(scope="module")
def preds() -> Predictions:
    return overconfident()


def row_index(preds: Predictions) -> dict[bytes, int]:
    index = {row.tobytes(): i for i, row in enumerate(preds.probs)}
    assert len(index) == preds.n_samples  # rows are unique, so a row identifies itself
    return index


def expected_metrics(p, y, n_bins=15, scheme="width") -> dict[str, float]:
    kw = {"n_bins": n_bins, "scheme": scheme}
    return {
        "accuracy": accuracy(p, y),
        "confidence_ece": confidence_ece(p, y, **kw),
        "confidence_mce": confidence_mce(p, y, **kw),
        "classwise_ece": classwise_ece(p, y, **kw),
        "classwise_mce": classwise_mce(p, y, **kw),
        "brier_score": brier_score(p, y),
        "log_loss": log_loss(p, y),
    }


def assert_row_matches(table: pd.DataFrame, name: str, expected: dict[str, float]) -> None:
    for col, value in expected.items():
        assert table.loc[name, col] == pytest.approx(value, rel=1e-12, abs=1e-12), col


# ------------------------------------------------------------------- table
def test_table_layout_and_uncalibrated_row(preds):
    result = compare_maps(preds, maps=("test-identity", "test-prior"), folds=4)
    assert isinstance(result, Comparison)
    table = result.table
    assert list(table.index) == ["uncalibrated", "test-identity", "test-prior"]
    assert table.index.name == "map"
    assert list(table.columns) == list(TABLE_COLUMNS)
    assert set(METRIC_COLUMNS) <= set(table.columns)
    assert_row_matches(table, "uncalibrated", expected_metrics(preds.probs, preds.labels))
    assert table.loc["uncalibrated", "fit_seconds"] == 0.0
    assert table["error"].isna().all()
    assert table.loc["test-prior", "converged"]


def test_identity_map_reproduces_uncalibrated_metrics(preds):
    result = compare_maps(preds, maps=["test-identity"], folds=3)
    cal = result.calibrated["test-identity"]
    np.testing.assert_array_equal(cal.probs, preds.probs)
    np.testing.assert_array_equal(cal.labels, preds.labels)
    assert cal.class_names == preds.class_names
    assert cal.name == "net + test-identity"
    for col in METRIC_COLUMNS:
        assert result.table.loc["test-identity", col] == result.table.loc["uncalibrated", col]


def test_out_of_fold_assembly_uses_only_other_folds(preds):
    # The prior map's output for a row is the class frequency of the *other* folds.
    result = compare_maps(preds, maps=["test-prior"], folds=5, seed=3)
    folds = result.fold_ids
    assert sorted(set(folds.tolist())) == [0, 1, 2, 3, 4]
    cal = result.calibrated["test-prior"].probs
    k = preds.n_classes
    for f in range(5):
        other = preds.labels[folds != f]
        expected = np.bincount(other, minlength=k) / other.size
        np.testing.assert_allclose(cal[folds == f], np.tile(expected, ((folds == f).sum(), 1)))
    # and the scoring is that of the assembled matrix, by the core functions
    assert_row_matches(result.table, "test-prior", expected_metrics(cal, preds.labels))
    assert len(result.fitted["test-prior"]) == 5


def test_never_scores_a_map_on_rows_it_was_fitted_on(preds):
    SpyMap.log.clear()
    index = row_index(preds)
    result = compare_maps(preds, maps=["test-spy"], folds=5)
    events = list(SpyMap.log)
    # Each fold: fit, predict the held-out rows (scored), predict the training rows (only
    # for the in-sample loss of the verdict's effective parameters, never scored).
    assert [e for e, _ in events] == ["fit", "predict", "predict"] * 5
    predicted_count = np.zeros(preds.n_samples, dtype=int)
    for (_, fit_p), (_, pred_p), (_, train_p) in zip(
        events[::3], events[1::3], events[2::3], strict=True
    ):
        fit_rows = {index[r.tobytes()] for r in fit_p}
        pred_rows = {index[r.tobytes()] for r in pred_p}
        assert fit_rows.isdisjoint(pred_rows)
        assert fit_rows | pred_rows == set(range(preds.n_samples))
        assert {index[r.tobytes()] for r in train_p} == fit_rows
        predicted_count[list(pred_rows)] += 1
    np.testing.assert_array_equal(predicted_count, 1)  # each row scored exactly once
    np.testing.assert_array_equal(result.calibrated["test-spy"].probs, preds.probs)


def test_folds_are_stratified_seeded_and_shared_by_maps(preds):
    a = compare_maps(preds, maps=["test-identity"], folds=5, seed=0)
    b = compare_maps(preds, maps=["test-prior"], folds=5, seed=0)
    c = compare_maps(preds, maps=["test-identity"], folds=5, seed=1)
    np.testing.assert_array_equal(a.fold_ids, b.fold_ids)
    assert not np.array_equal(a.fold_ids, c.fold_ids)
    counts = np.array([np.bincount(preds.labels[a.fold_ids == f], minlength=4) for f in range(5)])
    assert (counts.max(axis=0) - counts.min(axis=0)).max() <= 1
    assert a.settings["splitter"] == "StratifiedKFold"
    assert not a.warnings


def test_rare_class_falls_back_to_kfold_with_warning():
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(40, int), np.ones(38, int), np.full(2, 2)]
    p = rng.dirichlet(np.ones(3), size=y.size)
    result = compare_maps(Predictions.from_probs(p, y), maps=["test-prior"], folds=5)
    assert result.settings["splitter"] == "KFold"
    assert any("KFold" in w for w in result.warnings)
    assert result.table.loc["test-prior", "error"] is None


# ----------------------------------------------------------------- failures
def test_failing_map_does_not_stop_the_others(preds):
    result = compare_maps(preds, maps=["test-fail", "test-nan", "test-prior"], folds=3)
    table = result.table
    assert "deliberate failure in fit" in table.loc["test-fail", "error"]
    assert table.loc["test-fail", "error"].startswith("fold 1 of 3")
    assert "NaN" in table.loc["test-nan", "error"]
    for name in ("test-fail", "test-nan"):
        assert table.loc[name, list(METRIC_COLUMNS)].isna().all()
        assert pd.isna(table.loc[name, "converged"])
        assert name not in result.calibrated and name not in result.fitted
    assert table.loc["test-prior", "error"] is None
    assert np.isfinite(table.loc["test-prior", list(METRIC_COLUMNS)].astype(float)).all()
    assert result.errors.keys() == {"test-fail", "test-nan"}


def test_convergence_failures_are_flagged(preds):
    result = compare_maps(preds, maps=["test-lazy", "test-identity"], folds=3)
    assert not result.table.loc["test-lazy", "converged"]
    assert result.table.loc["test-identity", "converged"]
    assert any(w.startswith("test-lazy:") and "did not converge" in w for w in result.warnings)
    assert any("optimiser stopped early" in w for w in result.warnings)


# ------------------------------------------------------- progress, cancel
def test_progress_reports_every_fit(preds):
    calls = []
    compare_maps(
        preds,
        maps=["test-identity", "test-fail", "test-prior"],
        folds=4,
        progress=lambda d, t, label: calls.append((d, t, label)),
    )
    assert calls[0][:2] == (0, 12)
    assert {t for _, t, _ in calls} == {12}
    dones = [d for d, _, _ in calls]
    assert dones == sorted(dones) and dones[-1] == 12
    assert any("test-fail" in label and "failed" in label for _, _, label in calls)


def test_cancel_stops_between_fits(preds):
    SpyMap.log.clear()
    polls = []

    def cancel():
        polls.append(1)
        return len(polls) > 3  # the start, then fits 1 and 2 go ahead

    with pytest.raises(ComparisonCancelled):
        compare_maps(preds, maps=["test-spy", "test-identity"], folds=5, cancel=cancel)
    assert [e for e, _ in SpyMap.log].count("fit") == 2


# --------------------------------------------------------------- train/test
def test_user_split_fits_on_train_and_scores_on_test(preds):
    SpyMap.log.clear()
    index = row_index(preds)
    rng = np.random.default_rng(5)
    split = rng.random(preds.n_samples) < 0.3
    result = compare_maps(preds, maps=["test-spy", "test-prior"], split=split)
    fit_rows = {index[r.tobytes()] for r in SpyMap.log[0][1]}
    pred_rows = {index[r.tobytes()] for r in SpyMap.log[1][1]}
    assert fit_rows == set(np.flatnonzero(~split))
    assert pred_rows == set(np.flatnonzero(split))
    np.testing.assert_array_equal(result.scored_rows, np.flatnonzero(split))
    test_p, test_y = preds.probs[split], preds.labels[split]
    assert_row_matches(result.table, "uncalibrated", expected_metrics(test_p, test_y))
    assert result.calibrated["uncalibrated"].n_samples == split.sum()
    prior = np.bincount(preds.labels[~split], minlength=4) / (~split).sum()
    np.testing.assert_allclose(result.calibrated["test-prior"].probs[0], prior)
    assert result.settings["mode"] == "train_test"
    assert len(result.fitted["test-prior"]) == 1


def test_test_fraction_is_stratified_and_seeded(preds):
    a = compare_maps(preds, maps=["test-identity"], test_fraction=0.25, seed=2)
    b = compare_maps(preds, maps=["test-identity"], test_fraction=0.25, seed=2)
    np.testing.assert_array_equal(a.scored_rows, b.scored_rows)
    assert a.settings["n_scored"] == 150
    test_share = np.bincount(preds.labels[a.scored_rows], minlength=4) / np.bincount(preds.labels)
    np.testing.assert_allclose(test_share, 0.25, atol=0.02)
    assert a.settings["splitter"] == "StratifiedShuffleSplit"


# -------------------------------------------------------- settings, inputs
def test_binning_settings_reach_the_metrics(preds):
    result = compare_maps(preds, maps=["test-prior"], n_bins=7, scheme="frequency", folds=3)
    cal = result.calibrated["test-prior"].probs
    assert_row_matches(
        result.table, "test-prior", expected_metrics(cal, preds.labels, 7, "frequency")
    )
    assert_row_matches(
        result.table, "uncalibrated", expected_metrics(preds.probs, preds.labels, 7, "frequency")
    )
    assert result.settings["n_bins"] == 7 and result.settings["scheme"] == "frequency"


def test_map_instances_are_cloned_and_labelled(preds):
    template = PriorMap()
    result = compare_maps(preds, maps=[template, PriorMap(), IdentityMap()], folds=3)
    assert list(result.table.index) == [
        "uncalibrated",
        "test-prior",
        "test-prior #2",
        "test-identity",
    ]
    assert not hasattr(template, "classes_")  # the caller's instance stays unfitted
    fold_maps = result.fitted["test-prior"]
    assert len({id(m) for m in fold_maps}) == 3
    custom = compare_maps(preds, maps={"mine": PriorMap(), "id": "test-identity"}, folds=3)
    assert list(custom.table.index) == ["uncalibrated", "mine", "id"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"maps": ["no-such-map"]}, "unknown calibration map"),
        ({"maps": [42]}, "registry names"),
        ({"maps": {"uncalibrated": "test-prior"}}, "reserved"),
        ({"folds": 1}, "folds"),
        ({"folds": 10_000}, "folds"),
        ({"n_bins": 0}, "n_bins"),
        ({"scheme": "quantile"}, "scheme"),
        ({"split": np.zeros(600, bool)}, "non-empty"),
        ({"split": np.ones(5, bool)}, "one entry per row"),
        ({"split": np.full(600, "x")}, "boolean"),
        ({"test_fraction": 1.5}, "between 0 and 1"),
        ({"split": np.r_[True, np.zeros(599, bool)], "test_fraction": 0.2}, "not both"),
    ],
)
def test_bad_settings_raise_input_errors(preds, kwargs, message):
    kwargs = {"maps": ["test-prior"], **kwargs}
    with pytest.raises(CalibrationInputError, match=message):
        compare_maps(preds, **kwargs)


def test_arrays_need_labels():
    with pytest.raises(CalibrationInputError, match="labels are missing in compare_maps"):
        compare_maps(np.eye(3), maps=["test-prior"])


def test_to_dict_is_strict_json(preds):
    result = compare_maps(preds, maps=["test-prior", "test-fail"], folds=3)
    data = result.to_dict(include_maps=True)
    text = json.dumps(data, allow_nan=False)  # NaN metrics of the failed map become null
    back = json.loads(text)
    assert [r["map"] for r in back["rows"]] == ["uncalibrated", "test-prior", "test-fail"]
    assert back["rows"][2]["log_loss"] is None and back["rows"][2]["error"]
    assert back["rows"][0]["converged"] is None
    assert back["settings"]["folds"] == 3 and back["model"] == "net"
    assert len(back["maps"]["test-prior"]) == 3
    assert back["maps"]["test-prior"][0]["map"] == "test-prior"
    assert set(back["rows"][1]) == {"map", *TABLE_COLUMNS}


def test_all_means_every_available_map(preds, monkeypatch):
    import calibration_core.compare.run as compare_module

    monkeypatch.setattr(compare_module, "available_maps", lambda: ("test-prior", "test-identity"))
    result = compare_maps(preds, maps="all", folds=2)
    assert list(result.table.index) == ["uncalibrated", "test-prior", "test-identity"]


# ------------------------------------------------------------- real maps
def real_maps() -> list[str]:
    return list(available_maps())


@pytest.mark.parametrize(
    "name",
    ["histogram", "isotonic", "platt", "beta", "temperature", "vector", "matrix", "dirichlet"],
)
def test_real_map_gives_valid_held_out_rows(name):
    if name not in real_maps():
        pytest.skip(f"map {name!r} is not registered yet")
    preds = overconfident(n=600, k=3, logits=name in {"temperature", "vector", "matrix"})
    result = compare_maps(preds, maps=[name], folds=3)
    assert result.table.loc[name, "error"] is None, result.table.loc[name, "error"]
    p = result.calibrated[name].probs
    assert np.isfinite(p).all() and (p >= 0).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    # an over-confident model: a fitted map must beat it on held-out log-loss
    assert result.table.loc[name, "log_loss"] < result.table.loc["uncalibrated", "log_loss"]


def test_real_temperature_scaling_fixes_overconfidence_keeping_accuracy():
    if "temperature" not in real_maps():
        pytest.skip("temperature scaling is not registered yet")
    preds = overconfident(n=3000, k=5, sharpen=2.5, logits=True)
    table = compare_maps(preds, maps=["temperature"], folds=5).table
    assert table.loc["temperature", "accuracy"] == table.loc["uncalibrated", "accuracy"]
    assert (
        table.loc["temperature", "confidence_ece"]
        < 0.5 * table.loc["uncalibrated", "confidence_ece"]
    )


@pytest.mark.realdata
def test_densenet_cifar100_temperature_crossfit(realdata):
    if "temperature" not in real_maps():
        pytest.skip("temperature scaling is not registered yet")
    with np.load(realdata["densenet-bc-100-cifar-100"], allow_pickle=False) as data:
        preds = Predictions.from_probs(
            data["predictions"], data["ground_truth"], renormalize=True, name="densenet"
        )
    result = compare_maps(preds, maps=["temperature"], folds=5, n_bins=15, scheme="width")
    table = result.table
    assert table.loc["uncalibrated", "confidence_ece"] == pytest.approx(0.142, abs=0.01)
    assert table.loc["temperature", "confidence_ece"] < 0.02
    assert table.loc["temperature", "accuracy"] == table.loc["uncalibrated", "accuracy"]
    assert table.loc["temperature", "log_loss"] < table.loc["uncalibrated", "log_loss"]
    assert bool(table.loc["temperature", "converged"])


def test_matrix_and_dirichlet_are_fitted_once_on_probabilities(preds, monkeypatch):
    from calibration_core.maps import DirichletCalibration, MatrixScaling

    fits = []
    real_fit = CalibrationMap.fit

    def counting(self, *args, **kwargs):
        fits.append(self.name)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(CalibrationMap, "fit", counting)
    result = compare_maps(preds, maps=["matrix", "dirichlet"], folds=3)
    assert fits == ["matrix"] * 3  # three folds of one model
    table = result.table
    for column in METRIC_COLUMNS:
        assert table.loc["dirichlet", column] == table.loc["matrix", column]
    assert table.loc["dirichlet", "fit_seconds"] == 0.0
    assert np.array_equal(result.calibrated["dirichlet"].probs, result.calibrated["matrix"].probs)
    assert all(isinstance(m, DirichletCalibration) for m in result.fitted["dirichlet"])
    assert any(w.startswith("dirichlet: the same model as matrix") for w in result.warnings)
    # Each reused fold map predicts as the fitted one does.
    for reused, fitted in zip(result.fitted["dirichlet"], result.fitted["matrix"], strict=True):
        assert np.array_equal(reused.predict_proba(preds.probs), fitted.predict_proba(preds.probs))
    # Other parameters are another model: both are fitted.
    fits.clear()
    compare_maps(
        preds, maps={"m": MatrixScaling(), "d": DirichletCalibration(reg_lambda=1.0)}, folds=2
    )
    assert fits == ["matrix", "matrix", "dirichlet", "dirichlet"]


def test_matrix_and_dirichlet_are_both_fitted_on_logits(monkeypatch):
    fits = []
    real_fit = CalibrationMap.fit

    def counting(self, *args, **kwargs):
        fits.append(self.name)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(CalibrationMap, "fit", counting)
    result = compare_maps(overconfident(logits=True), maps=["matrix", "dirichlet"], folds=2)
    assert fits == ["matrix", "matrix", "dirichlet", "dirichlet"]
    assert not any("same model" in w for w in result.warnings)
