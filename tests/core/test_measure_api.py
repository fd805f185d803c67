"""The one measures API: signature, notions, the 1-D rule, the seed, the top-level exports."""

from __future__ import annotations

import importlib
import inspect
import typing
import warnings

import numpy as np
import pytest

import calibration_core as cc
from calibration_core import CalibrationInputError, Predictions
from calibration_core.maps import MAP_NAMES, get_map_class
from calibration_core.predictions import measure_inputs

#: The modules whose measures follow the one signature (the top-level rule).
MEASURE_MODULES = (
    "metrics",
    "bootstrap",
    *(
        f"measures.{name}"
        for name in (
            "canonical",
            "cumulative",
            "decomposition",
            "ece_variants",
            "goodness_of_fit",
            "hierarchy",
            "human_uncertainty",
            "sensitivity",
            "significance",
            "smooth",
            "summary",
        )
    ),
)
REFUSAL_NAMES = ("binary_ece(conf, correct)", "confidence_ece(np.column_stack([1 - p, p]), y)")


def _multiclass(n=600, k=4, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), n)
    y = np.array([rng.choice(k, p=row**2 / (row**2).sum()) for row in p])
    return p, y


def _binary(n=600, seed=1):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return s, (rng.random(n) < s**1.3).astype(int)


def _public_functions(module_name: str):
    module = importlib.import_module(f"calibration_core.{module_name}")
    for name, fn in vars(module).items():
        if inspect.isfunction(fn) and fn.__module__ == module.__name__ and name[0] != "_":
            yield name, fn


def _is_measure(fn) -> bool:
    """The rule's test: arguments start ``(probs, labels=None`` or ``(probs, human``."""
    params = list(inspect.signature(fn).parameters.values())
    if fn.__name__ == "bootstrap_ci":
        return True
    if len(params) < 2 or params[0].name != "probs":
        return False
    second = params[1]
    return second.name == "human" or (second.name == "labels" and second.default is None)


MEASURES = sorted(
    {name: fn for module in MEASURE_MODULES for name, fn in _public_functions(module)}.items()
)


# ------------------------------------------------------------ the 1-D rule
def _one_column_top_label_calls():
    """Every way to ask a measure for the top-label notion of an (N,) vector."""
    from calibration_core.measures import (
        calibration_hierarchy,
        cumulative_test,
        smooth_ece,
        smooth_reliability_curve,
        spiegelhalter_test,
    )
    from calibration_core.measures.ece_variants import adaptive_ece, debiased_ece
    from calibration_core.measures.sensitivity import ece_sensitivity

    top = {"notion": "confidence"}
    return {
        "confidence_ece": lambda c, y: cc.confidence_ece(c, y),
        "confidence_mce": lambda c, y: cc.confidence_mce(c, y),
        "confidence_statistics": lambda c, y: cc.confidence_statistics(c, y),
        "ece": lambda c, y: cc.ece(c, y, **top),
        "mce": lambda c, y: cc.mce(c, y, **top),
        "adaptive_ece": lambda c, y: adaptive_ece(c, y, **top),
        "debiased_ece": lambda c, y: debiased_ece(c, y, **top),
        "smooth_ece": lambda c, y: smooth_ece(c, y, **top),
        "smooth_reliability_curve": lambda c, y: smooth_reliability_curve(c, y, **top),
        "cumulative_test": lambda c, y: cumulative_test(c, y, **top),
        "spiegelhalter_test": lambda c, y: spiegelhalter_test(c, y, **top),
        "calibration_hierarchy": lambda c, y: calibration_hierarchy(c, y, **top),
        "ece_sensitivity": lambda c, y: ece_sensitivity(c, y, **top),
        "bootstrap_ci": lambda c, y: cc.bootstrap_ci("confidence_ece", c, y, n_resamples=5),
        "bootstrap_ci(callable)": lambda c, y: cc.bootstrap_ci(cc.confidence_ece, c, y),
        "calibration_test": lambda c, y: cc.calibration_test(c, y, n_resamples=5),
    }


@pytest.mark.parametrize("name", sorted(_one_column_top_label_calls()))
def test_top_label_on_a_one_column_vector_is_refused_naming_the_right_calls(name):
    p, y = _multiclass()
    conf, correct = cc.top_label(p, y)
    with pytest.raises(ValueError) as caught:
        _one_column_top_label_calls()[name](conf, correct)
    assert isinstance(caught.value, CalibrationInputError)
    for call in REFUSAL_NAMES:
        assert call in str(caught.value)


def test_binary_ece_of_confidences_and_correctness_is_the_top_label_ece():
    p, y = _multiclass(k=5)
    conf, correct = cc.top_label(p, y)
    assert cc.binary_ece(conf, correct) == pytest.approx(cc.confidence_ece(p, y), abs=1e-15)
    # the folded number the 1-D trap used to return is another quantity
    folded = cc.confidence_ece(np.column_stack([1 - conf, conf]), correct)
    assert abs(folded - cc.confidence_ece(p, y)) > 0.01


@pytest.mark.realdata
def test_lenet_cifar10_binary_ece_of_confidences_matches_the_top_label_ece(realdata):
    with np.load(realdata["lenet-5-cifar-10"]) as d:
        p, y = d["predictions"].astype(np.float64), d["ground_truth"]
    conf, correct = cc.top_label(p, y)
    top = cc.confidence_ece(p, y)
    assert top == pytest.approx(0.1079, abs=5e-5)
    assert cc.binary_ece(conf, correct) == pytest.approx(top, abs=1e-12)
    with pytest.raises(CalibrationInputError, match=r"binary_ece\(conf, correct\)"):
        cc.confidence_ece(conf, correct)
    # what the trap returned: the confidences folded as a binary problem
    folded = cc.confidence_ece(np.column_stack([1 - conf, conf]), correct)
    assert folded == pytest.approx(0.0557, abs=5e-5)


# --------------------------------------------------------- default notion
def test_default_notion_is_binary_for_one_column_and_confidence_for_rows():
    s, y = _binary()
    two = np.column_stack([1 - s, s])
    p, g = _multiclass()
    assert measure_inputs(s, y)[2] == "binary"
    assert measure_inputs(two, y)[2] == "confidence"
    assert measure_inputs(Predictions.from_scores(s, y))[2] == "binary"
    assert measure_inputs(Predictions.from_probs(two, y))[2] == "confidence"
    assert cc.ece(s, y) == cc.binary_ece(s, y) == cc.ece(two, y, notion="binary")
    assert cc.ece(p, g) == cc.confidence_ece(p, g)
    assert cc.smooth_ece(s, y).value == cc.smooth_ece(two, y, notion="binary").value
    assert cc.smooth_ece(p, g).value == cc.smooth_ece(p, g, notion="confidence").value


def test_generic_ece_and_mce_match_the_named_ones():
    p, y = _multiclass(k=3)
    for scheme in ("width", "frequency"):
        kw = {"n_bins": 10, "scheme": scheme}
        assert cc.ece(p, y, notion="classwise", **kw) == cc.classwise_ece(p, y, **kw)
        assert cc.mce(p, y, notion="classwise", **kw) == cc.classwise_mce(p, y, **kw)
        assert cc.mce(p, y, **kw) == cc.confidence_mce(p, y, **kw)
        one = cc.ece(p, y, notion="class", class_index=2, **kw)
        assert one == cc.binary_ece(p[:, 2], y == 2, **kw)


def test_missing_labels_and_unknown_notions_are_input_errors():
    p, y = _multiclass()
    with pytest.raises(CalibrationInputError, match="labels are missing in ece"):
        cc.ece(p)
    with pytest.raises(CalibrationInputError, match="unknown notion"):
        cc.ece(p, y, notion="top")
    with pytest.raises(CalibrationInputError, match="binary problem"):
        cc.binary_ece(p, y)


# ------------------------------------------- Predictions or arrays, alike
def _same_result(a, b) -> bool:
    if isinstance(a, float):
        return a == b or (np.isnan(a) and np.isnan(b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b, equal_nan=True)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_result(a[k], b[k]) for k in a)
    if hasattr(a, "to_dict"):
        return _same_result(a.to_dict(), b.to_dict())
    if hasattr(a, "__dataclass_fields__"):
        return all(_same_result(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return a == b


#: Arguments a measure needs beyond (probs, labels), to keep the test fast.
EXTRA = {
    "bootstrap_ci": {"n_resamples": 20},
    "calibration_test": {"n_resamples": 20},
    "hosmer_lemeshow": {"n_resamples": 20},
    "skce": {"n_resamples": 5, "max_rows": 200},
    "smooth_reliability_curve": {"n_resamples": 5},
    "ece_sensitivity": {"bins": range(2, 6)},
}


@pytest.mark.parametrize("name", [name for name, fn in MEASURES if _is_measure(fn)])
def test_every_measure_takes_predictions_or_arrays_alike(name):
    fn = dict(MEASURES)[name]
    p, y = _multiclass(n=500, k=2 if name.startswith("binary_") else 3)
    pred = Predictions.from_probs(p, y)
    kw = EXTRA.get(name, {})
    if name == "bootstrap_ci":
        args_arrays, args_pred = ("brier_score", p, y), ("brier_score", pred)
    elif "human" in inspect.signature(fn).parameters:
        human = np.random.default_rng(3).dirichlet(np.ones(3), p.shape[0])
        args_arrays, args_pred = (p, human), (pred, human)
    else:
        args_arrays, args_pred = (p, y), (pred,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cc.SmallSampleWarning)
        assert _same_result(fn(*args_arrays, **kw), fn(*args_pred, **kw))


# ------------------------------------------------------------------- seeds
def test_every_seeded_function_calls_it_seed_with_default_zero():
    seeded = []
    for module in (*MEASURE_MODULES, "bands", "compare.run"):
        for name, fn in _public_functions(module):
            params = inspect.signature(fn).parameters
            assert not {"random_state", "rng_seed"} & set(params), name
            if "seed" in params and params["seed"].default is not inspect.Parameter.empty:
                seeded.append(name)
                assert params["seed"].default == 0, name
    assert {"bootstrap_ci", "calibration_test", "skce", "compare_maps"} <= set(seeded)


# ------------------------------------------------------------- compare_maps
def test_compare_maps_takes_arrays_and_keeps_the_old_order_for_a_release():
    p, y = _multiclass(n=300, k=3)
    pred = Predictions.from_probs(p, y)
    expected = cc.compare_maps(pred, maps=["histogram"], folds=3).table
    from_arrays = cc.compare_maps(p, y, maps=["histogram"], folds=3).table
    assert from_arrays.drop(columns="fit_seconds").equals(expected.drop(columns="fit_seconds"))
    with pytest.warns(DeprecationWarning, match="maps="):
        old = cc.compare_maps(pred, ["histogram"], folds=3).table
    assert old.drop(columns="fit_seconds").equals(expected.drop(columns="fit_seconds"))
    s, t = _binary(n=300)
    assert cc.compare_maps(s, t, maps=[], folds=3).calibrated["uncalibrated"].score_column


# ------------------------------------------------------ top-level exports
def test_every_measure_and_its_result_class_is_exported_at_the_top():
    missing = []
    for name, fn in MEASURES:
        if not _is_measure(fn):
            continue
        if name not in cc.__all__ or getattr(cc, name) is not fn:
            missing.append(name)
        result = typing.get_type_hints(fn).get("return")
        if inspect.isclass(result) and result.__module__.startswith("calibration_core"):
            if result.__name__ not in cc.__all__:
                missing.append(result.__name__)
    assert not missing, f"not exported by calibration_core: {missing}"


def test_every_registered_map_and_every_export_is_reachable():
    for name in MAP_NAMES:
        cls = get_map_class(name)
        assert cls.__name__ in cc.__all__ and getattr(cc, cls.__name__) is cls
    for name in ("Predictions", "load_predictions", "compare_maps", "make_map"):
        assert name in cc.__all__
    for name in cc.__all__:
        getattr(cc, name)
    assert len(set(cc.__all__)) == len(cc.__all__)
