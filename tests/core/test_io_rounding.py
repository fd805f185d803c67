"""Row sums of loaded files: the rounding tolerance, its notice and the structured refusals."""

from __future__ import annotations

import io
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from calibration_core import CalibrationInputError, RenormalisedRowsWarning
from calibration_core.io import load_predictions
from calibration_core.io.checks import row_sum_tolerance


def _csv(probs: np.ndarray, labels=None) -> bytes:
    k = probs.shape[1]
    df = pd.DataFrame(probs, columns=[f"p_{j}" for j in range(k)])
    df.insert(0, "label", np.arange(len(probs)) % k if labels is None else labels)
    return df.to_csv(index=False, float_format="%.17g").encode()


def _rows_off_by(k: int, dev: float) -> np.ndarray:
    """Two rows: one exact, one whose sum is ``1 + dev`` (values stay in [0, 1])."""
    base = np.full((2, k), 1.0 / k)
    base[1, 0] += dev
    return base


def _load(data: bytes, **kwargs):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        preds = load_predictions(data, file_name="r.csv", **kwargs)
    notes = [str(w.message) for w in seen if issubclass(w.category, RenormalisedRowsWarning)]
    return preds, notes


@pytest.mark.parametrize("k", [2, 10, 100])
def test_tolerance_is_four_decimal_rounding(k):
    assert row_sum_tolerance(k) == pytest.approx(k * 5e-5 + 1e-6)


@pytest.mark.parametrize("k", [10, 100])
def test_just_inside_the_tolerance_is_renormalised_with_a_notice(k):
    tol = row_sum_tolerance(k)
    (pred,), notes = _load(_csv(_rows_off_by(k, 0.99 * tol)))
    np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-12)
    assert len(notes) == 1
    assert "1 probability row(s) of 'r.csv'" in notes[0]
    assert f"largest deviation {0.99 * tol:.2g}" in notes[0]


@pytest.mark.parametrize("k", [10, 100])
def test_just_outside_the_tolerance_is_refused_with_the_remedy(k):
    tol = row_sum_tolerance(k)
    data = _csv(_rows_off_by(k, 1.01 * tol))
    with pytest.raises(CalibrationInputError) as err:
        load_predictions(data, file_name="r.csv")
    assert err.value.remedy == "renormalize"
    assert "renormalize=True" in str(err.value)
    assert "renormalize=True" not in err.value.detail
    (pred,), notes = _load(data, renormalize=True)
    np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-12)
    assert "renormalisation was asked for" in notes[0]


@pytest.mark.parametrize("k", [10, 100])
def test_rounded_real_looking_probabilities_load(k):
    rng = np.random.default_rng(k)
    logits = rng.normal(scale=3.0, size=(500, k))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    df = pd.DataFrame(probs, columns=[f"p_{j}" for j in range(k)]).round(4)
    df.insert(0, "label", rng.integers(0, k, 500))
    assert (np.abs(df.iloc[:, 1:].sum(axis=1) - 1) > 1e-5).any()  # really off, as reported
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    (pred,), notes = _load(buf.getvalue().encode())
    np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-12)
    assert len(notes) == 1 and "as if rounded when saved" in notes[0]


def test_float32_rounding_needs_no_notice():
    probs = np.full((3, 10), 0.1, dtype=np.float32).astype(np.float64)
    _, notes = _load(_csv(probs))
    assert notes == []


@pytest.mark.parametrize(
    ("text", "columns"),
    [
        ("cls,p_a,p_b\na,0.5,0.5\nb,0.5,0.5\n", ("cls", "p_a", "p_b")),
        ("label,y,p_a,p_b\na,a,0.5,0.5\nb,b,0.5,0.5\n", ("label", "y", "p_a", "p_b")),
    ],
)
def test_missing_or_ambiguous_label_column_names_the_choices(text, columns):
    with pytest.raises(CalibrationInputError) as err:
        load_predictions(text.encode(), file_name="l.csv")
    assert err.value.remedy == "label_column"
    assert err.value.columns == columns
    assert "label_column=" in str(err.value) and "label_column=" not in err.value.detail
    (pred,) = load_predictions(text.encode(), file_name="l.csv", label_column=columns[0])
    assert pred.n_classes == 2


def test_phrasing_and_pickling_keep_the_remedy():
    err = CalibrationInputError("bad rows.", remedy="renormalize")
    assert err.phrased({"renormalize": "Tick it."}) == "bad rows. Tick it."
    assert err.phrased({}) == "bad rows."
    back = pickle.loads(pickle.dumps(err))
    assert (back.detail, back.remedy, str(back)) == (err.detail, err.remedy, str(err))
