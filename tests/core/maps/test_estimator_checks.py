"""scikit-learn's own estimator checks over all eight maps, with the expected failures listed once.

Every map runs with ``input="logits"``: the checks generate arbitrary real
features, which are valid logits but not probability rows. Matrix and
Dirichlet calibration run twice, with fixed strengths (every check that
applies passes, sample-weight equivalence included) and with the default
automatic strengths (chosen on a held-out split, see
:data:`AUTOMATIC_STRENGTH`). A listed check is a strict xfail: if it starts to
pass, the test fails, so the lists cannot go stale.

The checks come from scikit-learn's ``estimator_checks_generator`` (public since
1.6, the lower bound) and the strict marks are set here: ``parametrize_with_checks``
only takes ``xfail_strict`` from scikit-learn 1.8 on, and before that its xfail
marks follow pytest's ``xfail_strict`` option (off), which would let a listed
check pass unnoticed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial

import pytest
import sklearn
from packaging.version import Version
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import estimator_checks_generator

from calibration_core.maps import (
    BetaCalibration,
    DirichletCalibration,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)

_COLUMNS_ARE_CLASSES = (
    "a calibrator's input columns are the classes (one score per class), but this check "
    "fits {} and a map refuses labels that do not match the columns"
)

#: Checks that cannot apply to a calibrator (every map), with the reason.
NOT_APPLICABLE = {
    "check_estimators_overwrite_params": _COLUMNS_ARE_CLASSES.format("3 classes on 2 features"),
    "check_estimators_fit_returns_self": _COLUMNS_ARE_CLASSES.format("3 classes on 2 features"),
    "check_readonly_memmap_input": _COLUMNS_ARE_CLASSES.format("3 classes on 2 features"),
    "check_classifiers_classes": _COLUMNS_ARE_CLASSES.format("3 string classes on 2 features"),
    "check_classifiers_train": (
        "it fits make_blobs features (3 classes on 2 features; and for 2 classes it "
        "expects > 83% accuracy from blob coordinates read as logits, which carry no "
        "per-class score)"
    ),
}

#: Checks that scikit-learn before 1.7 runs on every estimator, with the reason they fail.
BEFORE_SCIKIT_LEARN_1_7 = {
    "check_sample_weight_equivalence_on_sparse_data": (
        "scikit-learn 1.6 runs it on estimators that refuse sparse input too (1.7 only on "
        "those tagged input_tags.sparse, scikit-learn#30608) and takes only a TypeError as "
        "the refusal; a map refuses sparse input with CalibrationInputError, a ValueError "
        "naming it, as check_estimator_sparse_array accepts"
    ),
}

#: Checks that fail only when matrix or Dirichlet calibration choose their strengths.
AUTOMATIC_STRENGTH = {
    "check_sample_weight_equivalence_on_dense_data": (
        "with reg_lambda or reg_mu None the strength is chosen on a stratified, seeded "
        "held-out split of the rows; repeating rows changes which rows are held out, "
        "so weighted and repeated fits may choose different strengths (with fixed "
        "strengths the check passes)"
    ),
}

#: Strong enough that the penalised optimum is well determined on the checks'
#: 15 rows and 30 classes (separable data): with weaker fixed strengths the
#: L-BFGS-B stopping point, not the weighting, leaves differences above 1e-7.
FIXED = {"reg_lambda": 100.0, "reg_mu": 100.0}

ESTIMATORS = [
    HistogramBinning(input="logits"),
    IsotonicCalibration(input="logits"),
    PlattScaling(input="logits"),
    BetaCalibration(input="logits"),
    TemperatureScaling(input="logits"),
    VectorScaling(input="logits"),
    MatrixScaling(input="logits", **FIXED),
    DirichletCalibration(input="logits", **FIXED),
    MatrixScaling(input="logits"),
    DirichletCalibration(input="logits"),
]


def expected_failed_checks(estimator) -> dict[str, str]:
    """The checks expected to fail for ``estimator``: check name -> reason."""
    expected = dict(NOT_APPLICABLE)
    if Version(sklearn.__version__) < Version("1.7"):
        expected.update(BEFORE_SCIKIT_LEARN_1_7)
    params = estimator.get_params()
    if params.get("reg_lambda", 0.0) is None or params.get("reg_mu", 0.0) is None:
        expected.update(AUTOMATIC_STRENGTH)
    return expected


def _check_name(check: partial) -> str:
    """The name of a check function, without its bound arguments."""
    return check.func.__name__


def _test_id(value: BaseEstimator | partial) -> str:
    """A pytest id as scikit-learn's own: the estimator's repr, the check and its keywords."""
    if not isinstance(value, partial):
        return re.sub(r"\s", "", repr(value))
    keywords = ",".join(f"{key}={arg}" for key, arg in value.keywords.items())
    return f"{_check_name(value)}({keywords})" if keywords else _check_name(value)


def checks_with_strict_xfails(estimators: list[BaseEstimator]) -> Iterator:
    """Every (estimator, check) pair, the expected failures marked as strict xfails."""
    for estimator in estimators:
        expected = expected_failed_checks(estimator)
        for instance, check in estimator_checks_generator(estimator, mark=None):
            reason = expected.get(_check_name(check))
            if reason is None:
                yield instance, check
            else:
                yield pytest.param(
                    instance, check, marks=pytest.mark.xfail(reason=reason, strict=True)
                )


@pytest.mark.parametrize(
    ("estimator", "check"), list(checks_with_strict_xfails(ESTIMATORS)), ids=_test_id
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
