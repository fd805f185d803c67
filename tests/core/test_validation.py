"""The argument checks shared by every module of the core (calibration_core.validation)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration_core import CalibrationInputError
from calibration_core.validation import (
    check_fraction,
    check_level,
    check_non_negative,
    check_seed,
    check_whole_number,
)


@pytest.mark.parametrize("level", [0.95, np.float32(0.95), np.float64(0.95), 0.5])
def test_level_accepts_every_real_number_type(level):
    assert check_level(level) == pytest.approx(float(level))


@pytest.mark.parametrize("level", [0, 1, 95, -0.1, 1.5, float("nan"), True, "0.95", None])
def test_level_outside_the_open_unit_interval_is_refused(level):
    with pytest.raises(CalibrationInputError, match="level must"):
        check_level(level)


@pytest.mark.parametrize("seed", [0, 7, np.int64(7), np.uint8(7)])
def test_int_seeds_give_the_stream_of_default_rng(seed):
    np.testing.assert_array_equal(
        check_seed(seed).random(3), np.random.default_rng(int(seed)).random(3)
    )


def test_generators_and_seed_sequences_are_used_as_given():
    gen = np.random.default_rng(3)
    assert check_seed(gen) is gen
    np.testing.assert_array_equal(
        check_seed(np.random.SeedSequence(3)).random(2), np.random.default_rng(3).random(2)
    )
    assert isinstance(check_seed(None), np.random.Generator)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "abc", [1, 2]])
def test_bad_seeds_are_input_errors(seed):
    with pytest.raises(CalibrationInputError, match="seed must be"):
        check_seed(seed)


@pytest.mark.parametrize(("value", "minimum"), [(1, 1), (np.int32(5), 2), (10, 3)])
def test_whole_numbers_are_returned_as_int(value, minimum):
    out = check_whole_number(value, "n", minimum)
    assert out == int(value) and type(out) is int


@pytest.mark.parametrize(
    ("value", "message"), [(0, "at least 1"), (2.0, "whole number"), (True, "whole number")]
)
def test_other_values_are_refused(value, message):
    with pytest.raises(CalibrationInputError, match=message):
        check_whole_number(value, "n_resamples")


def test_fractions_name_the_argument_and_the_hint():
    assert check_fraction(np.float32(0.25), "test_fraction") == 0.25
    with pytest.raises(
        CalibrationInputError, match=r"prior must lie strictly between 0 and 1 \(a rate\)"
    ):
        check_fraction(1.0, "prior", " (a rate)")
    with pytest.raises(CalibrationInputError, match="test_fraction must be a number"):
        check_fraction("0.2", "test_fraction")


@pytest.mark.parametrize("value", [0, 2.5, np.float32(1.0), np.int64(3)])
def test_non_negative_numbers_are_returned_as_float(value):
    assert check_non_negative(value, "cost") == float(value)


@pytest.mark.parametrize("value", [-1, float("inf"), float("nan"), True, "1", None])
def test_negative_or_non_finite_numbers_are_refused(value):
    with pytest.raises(CalibrationInputError, match="cost must be"):
        check_non_negative(value, "cost")
