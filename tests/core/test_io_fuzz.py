"""Fuzzing load_predictions: any input loads or raises CalibrationInputError, nothing else."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibration_core import CalibrationInputError, Predictions
from calibration_core.io import load_predictions

NAMES = [None, "f.csv", "f.tsv", "f.txt", "f.csv.gz", "f.parquet", "f.npz", "f.bin"]
COLUMNS = ["label", "y", "model", "p_a", "p_b", "p_c", "prob_a", "logit_a", "logit_b", "score"]
COLUMNS += ["h_a", "id", "Label", "p_"]
CELLS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.floats(min_value=0, max_value=1),
    st.integers(-3, 5),
    st.booleans(),
    st.sampled_from(["", "nan", "NA", "a", "b", "c", "0", "1", "true", "0,5", "é", " "]),
    st.text(max_size=4),
)
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _outcome(data, file_name):
    """Load, check the invariants of what loaded, or accept CalibrationInputError."""
    try:
        preds = load_predictions(data, file_name=file_name)
    except CalibrationInputError as exc:
        assert str(exc)  # a message, never an empty error
        return "error"
    assert preds and all(isinstance(p, Predictions) for p in preds)
    for p in preds:
        assert np.all(np.abs(p.probs.sum(axis=1) - 1) < 1e-9)
        assert p.labels.min() >= 0 and p.labels.max() < p.n_classes
        assert len(np.unique(p.labels)) > 1
    return "loaded"


@FAST
@given(data=st.binary(max_size=300), file_name=st.sampled_from(NAMES))
def test_random_bytes(data, file_name):
    _outcome(data, file_name)


@FAST
@given(
    data=st.binary(max_size=200),
    magic=st.sampled_from([b"PAR1", b"PK\x03\x04", b"\x1f\x8b\x08\x00", b"\xef\xbb\xbf", b""]),
    file_name=st.sampled_from(NAMES),
)
def test_random_bytes_behind_magic_numbers(data, magic, file_name):
    _outcome(magic + data, file_name)


@FAST
@given(
    columns=st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=5),
    cells=st.lists(CELLS, max_size=30),
    sep=st.sampled_from([",", "\t", ";"]),
    compress=st.booleans(),
)
def test_random_small_tables(columns, cells, sep, compress):
    k = len(columns)
    rows = len(cells) // k
    body = np.array(cells[: rows * k], dtype=object).reshape(rows, k)
    text = pd.DataFrame(body, columns=columns).to_csv(index=False, sep=sep).encode()
    _outcome(gzip.compress(text) if compress else text, "t.csv.gz" if compress else "t.csv")


@FAST
@given(
    header=st.sampled_from(
        ["label,p_a,p_b", "y,logit_a,logit_b", "target,score", "model,label,p_a,p_b"]
    ),
    probs=st.lists(st.floats(0, 1), min_size=4, max_size=8),
    edit=st.tuples(st.integers(0, 7), st.integers(0, 3), CELLS),
    change=st.booleans(),
)
def test_nearly_valid_tables_with_one_cell_changed(header, probs, edit, change):
    names = header.split(",")
    rows = []
    for i, p in enumerate(probs):
        y = ("a", "b")[i % 2] if "score" not in names else i % 2
        cells = {"label": y, "y": y, "target": y, "model": "m", "score": p}
        cells.update({"p_a": p, "p_b": 1 - p, "logit_a": 0.0, "logit_b": 4 * p - 2})
        rows.append([cells[n] for n in names])
    frame = pd.DataFrame(rows, columns=names, dtype=object)
    row, col, value = edit
    if change:
        frame.iat[row % len(frame), col % len(names)] = value
    outcome = _outcome(frame.to_csv(index=False).encode(), "t.csv")
    assert change or outcome == "loaded"


@FAST
@given(
    probs=st.lists(st.floats(-1, 2), min_size=2, max_size=12),
    labels=st.lists(st.integers(-1, 3), min_size=1, max_size=6),
    key=st.sampled_from(["probs", "logits", "scores", "predictions"]),
)
def test_random_npz(tmp_path_factory, probs, labels, key):
    arr = np.array(probs)
    arr = arr.reshape(-1, 2) if len(arr) % 2 == 0 and key != "scores" else arr
    path = tmp_path_factory.mktemp("npz") / "r.npz"
    np.savez(path, **{key: arr, "labels": np.array(labels)})
    _outcome(path.read_bytes(), "r.npz")


def test_a_known_good_table_loads_so_the_fuzz_can_tell_the_difference():
    frame = pd.DataFrame({"label": ["a", "b"], "p_a": [0.3, 0.6], "p_b": [0.7, 0.4]})
    assert _outcome(frame.to_csv(index=False).encode(), "t.csv") == "loaded"
    assert _outcome(b"label,p_a\n", "t.csv") == "error"
