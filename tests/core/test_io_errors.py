"""load_predictions on bad input: one CalibrationInputError saying what, where and how to fix."""

from __future__ import annotations

import gzip
import io
import pickle

import numpy as np
import pandas as pd
import pytest

from calibration_core import CalibrationInputError
from calibration_core.io import load_predictions

ROW2 = "data row 2 (1-based, after the header)"
GOOD = "label,p_a,p_b\na,0.5,0.5\nb,0.25,0.75\n"


def _error(data, file_name="preds.csv", **kwargs) -> str:
    if isinstance(data, str):
        data = data.encode()
    with pytest.raises(CalibrationInputError) as err:
        load_predictions(data, file_name=file_name, **kwargs)
    return str(err.value)


def _has(msg: str, *parts: str) -> None:
    for part in parts:
        assert part in msg, f"{part!r} not in message: {msg}"


# ------------------------------------------------------- values in columns
@pytest.mark.parametrize("cell", ["nan", "NaN", "", "NA"])
def test_missing_probability(cell):
    msg = _error(f"label,p_a,p_b\na,0.5,0.5\nb,{cell},0.75\n")
    _has(msg, "missing values", "column 'p_a'", "'preds.csv'", ROW2, "drop or fix those rows")


@pytest.mark.parametrize("cell", ["inf", "-inf", "Infinity"])
def test_infinite_probability(cell):
    msg = _error(f"label,p_a,p_b\na,0.5,0.5\nb,{cell},0.75\n")
    _has(msg, "NaN or infinite", "column 'p_a'", ROW2, "drop or fix")


def test_nan_in_npz_uses_array_indices(tmp_path):
    p = np.full((4, 2), 0.5)
    p[1, 1] = np.nan
    np.savez(tmp_path / "n.npz", probs=p, labels=[0, 1, 0, 1])
    msg = _error((tmp_path / "n.npz").read_bytes(), "n.npz")
    _has(msg, "NaN or infinite", "array 'probs'", "row 1 (0-based array indices)", "'n.npz'")


def test_probabilities_outside_unit_interval_hint_logits():
    msg = _error("label,p_a,p_b\na,0.5,0.5\nb,-1.3,2.4\n")
    _has(msg, "[0, 1]", "column 'p_a'", ROW2, "-1.3", "look like logits", "logit_<class>")


def test_rows_not_summing_to_one():
    msg = _error("label,p_a,p_b\na,0.5,0.5\nb,0.5,0.75\n")
    _has(msg, "must sum to 1", "1.25", ROW2, "renormalize=True")
    rounded = _error("label,p_a,p_b,p_c\na,0.333,0.333,0.333\nb,0.2,0.3,0.5\n")
    _has(rounded, "rounded", "data row 1 (1-based", "save more decimals", "renormalize=True")


def test_non_numeric_cells_and_decimal_commas():
    _has(_error("label,p_a,p_b\na,0.5,0.5\nb,abc,x\n"), "must hold numbers", "'abc'", ROW2)
    msg = _error("label;p_a;p_b\na;0,5;0,5\nb;0,25;0,75\n")
    _has(msg, "column 'p_a'", "'0,5'", "Decimal commas", "'.' as the decimal point")


def test_score_outside_unit_interval():
    msg = _error("label,score\n0,0.5\n1,3.2\n")
    _has(msg, "column 'score'", "[0, 1]", ROW2, "sigmoid")


# ------------------------------------------------------------------ labels
def test_label_outside_known_classes():
    msg = _error("label,p_a,p_b\na,0.5,0.5\nfish,0.25,0.75\n")
    _has(msg, "label column 'label'", "'fish'", ROW2, "'a', 'b'", "class name")
    msg = _error("label,p_0,p_1\n0,0.5,0.5\n5,0.25,0.75\n")
    _has(msg, "5", ROW2, "0..1")


def test_integer_labels_with_named_classes_are_not_guessed():
    msg = _error("label,p_cat,p_dog\n0,0.5,0.5\n1,0.25,0.75\n")
    _has(msg, "integer labels", "'cat', 'dog'", "p_0..p_1")


def test_missing_and_fractional_labels():
    _has(_error("label,p_a,p_b\na,0.5,0.5\n,0.25,0.75\n"), "label column 'label'", ROW2, "empty")
    _has(_error("label,p_0,p_1\n0,0.5,0.5\n,0.25,0.75\n"), "missing values", ROW2, "a label")
    _has(_error("label,p_0,p_1\n0,0.5,0.5\n0.5,0.25,0.75\n"), "whole numbers", ROW2, "0.5")


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ("-1,1", ["{-1, 1}", "recode the negative class -1 as 0"]),
        ("1,2", ["{1, 2}", "recode the positive class", "as 1 and the other as 0"]),
        ("yes,no", ["{'no', 'yes'}", "recode the positive class"]),
    ],
)
def test_binary_score_labels_must_be_zero_one(labels, expected):
    a, b = labels.split(",")
    msg = _error(f"label,score\n{a},0.2\n{b},0.7\n")
    _has(msg, "label column 'label'", "0/1 (or false/true)", "does not guess", *expected)


def test_one_class_only():
    msg = _error("label,p_a,p_b\na,0.5,0.5\na,0.25,0.75\n")
    _has(msg, "every label", "'preds.csv'", "class 'a'", "more than one class")
    msg = _error("model,label,score\nm1,0,0.2\nm1,1,0.4\nm2,1,0.3\nm2,1,0.9\n")
    _has(msg, "model 'm2'", "class '1'")


# ---------------------------------------------------------------- columns
def test_missing_label_column():
    msg = _error("truth,p_a,p_b\na,0.5,0.5\nb,0.25,0.75\n")
    _has(msg, "no label column", "label, y, target, true, ground_truth", "'truth'", "label_column")
    msg = _error(GOOD, label_column="klass")
    _has(msg, "no column named 'klass'", "'label', 'p_a', 'p_b'")


@pytest.mark.parametrize(
    "header", ["label,y,p_a,p_b", "label,LABEL,p_a,p_b", "label,label,p_a,p_b"]
)
def test_duplicated_label_column(header):
    msg = _error(f"{header}\na,a,0.5,0.5\nb,b,0.25,0.75\n")
    _has(msg, "more than one label column", "ambiguous", "label_column")


def test_duplicated_named_label_column():
    msg = _error("label,label,p_a,p_b\na,a,0.5,0.5\nb,b,0.25,0.75\n", label_column="label")
    _has(msg, "2 columns named 'label'", "keep one")


def test_no_prediction_columns():
    msg = _error("label,h_a,h_b\na,0.5,0.5\nb,0.25,0.75\n")
    _has(msg, "no prediction columns", "soft labels", "p_<class>", "logit_<class>", "`score`")


def test_mixed_and_malformed_prediction_columns():
    _has(_error("label,p_a,logit_b\na,0.5,0.5\nb,0.25,0.75\n"), "mixes", "'p_a'", "'logit_b'")
    _has(_error("label,p_a,prob_b\na,0.5,0.5\nb,0.25,0.75\n"), "mixes", "single prefix")
    _has(_error("label,p_a,p_a\na,0.5,0.5\nb,0.25,0.75\n"), "duplicated", "'a'", "one column per")
    _has(_error("label,p_a\na,0.5\nb,0.25\n"), "single prediction column 'p_a'", "`score`")
    _has(_error("label,score,p_a,p_b\n0,0.5,0.5,0.5\n"), "mixes", "'score'")


def test_missing_model_names():
    msg = _error("model,label,score\nm1,0,0.2\n,1,0.4\n")
    _has(msg, "model column 'model'", ROW2, "name the model of every row")


# ----------------------------------------------------------- file shapes
def test_empty_and_header_only_files():
    _has(_error(b""), "'preds.csv' is empty (0 bytes)")
    _has(_error(b"\n\n"), "'preds.csv' is empty", "header line")
    _has(_error("label,p_a,p_b\n"), "header but no data rows")
    _has(_error("label,p_a,p_b\n", file_name="p.tsv"), "header but no data rows")


def test_ragged_rows():
    msg = _error("label,p_a,p_b\na,0.5,0.5\nb,0.25,0.75,9\n")
    _has(msg, ROW2, "4 fields but the header has 3", "'b,0.25,0.75,9'", "quote values")


def test_npz_mismatched_lengths_and_shapes(tmp_path):
    np.savez(tmp_path / "m.npz", probs=np.full((5, 2), 0.5), labels=[0, 1, 0, 1])
    _has(_error((tmp_path / "m.npz").read_bytes(), "m.npz"), "5 prediction rows", "4 labels")
    np.savez(tmp_path / "h.npz", probs=np.full((4, 2), 0.5), labels=np.eye(2)[[0, 1, 0, 1]])
    _has(_error((tmp_path / "h.npz").read_bytes(), "h.npz"), "one-hot", "argmax")
    np.savez(tmp_path / "s.npz", probs=np.full((4, 2), 0.5), labels=np.array(["a", "b"] * 2))
    _has(_error((tmp_path / "s.npz").read_bytes(), "s.npz"), "strings", "class_names")


def test_npz_keys(tmp_path):
    np.savez(tmp_path / "k.npz", probs=np.full((4, 2), 0.5), truth=[0, 1, 0, 1])
    _has(_error((tmp_path / "k.npz").read_bytes(), "k.npz"), "no labels", "'truth'", "label_column")
    np.savez(tmp_path / "a.npz", probs=np.full((4, 2), 0.5), labels=[0, 1, 0, 1], y=[0, 1, 1, 1])
    _has(_error((tmp_path / "a.npz").read_bytes(), "a.npz"), "several label arrays", "ambiguous")
    np.savez(tmp_path / "b.npz", x=np.full((4, 2), 0.5), labels=[0, 1, 0, 1])
    _has(_error((tmp_path / "b.npz").read_bytes(), "b.npz"), "no predictions", "'x'")
    z = np.array([[0.0, 3.0], [1.0, 0.0]])
    np.savez(tmp_path / "z.npz", logits=z, probs=np.full((2, 2), 0.5), labels=[0, 1])
    _has(_error((tmp_path / "z.npz").read_bytes(), "z.npz"), "disagree", "keep only")


def test_npz_object_arrays_and_pickles_are_refused(tmp_path):
    labels = np.array([0, 1, "x", None], dtype=object)
    np.savez(tmp_path / "o.npz", probs=np.full((4, 2), 0.5), labels=labels)
    _has(_error((tmp_path / "o.npz").read_bytes(), "o.npz"), "array 'labels'", "Python objects")
    blob = pickle.dumps({"probs": np.full((4, 2), 0.5)})
    _has(_error(blob, "p.npz"), "pickle", "never loaded")
    _has(_error(blob, None), "pickle")


# --------------------------------------------------- encodings and formats
def test_binary_garbage_named_csv():
    _has(_error(bytes(range(256)) * 8), "not a text file", "NUL bytes", "CSV (UTF-8)")
    _has(_error(b"\xff\xd8\xff\xe0 jpeg \xfe\x99 data"), "not valid UTF-8", "line 1")


def test_utf16_without_bom_and_latin1():
    _has(_error(GOOD.encode("utf-16-le")), "NUL bytes", "UTF-16")
    msg = _error("label,p_a,p_b\ncafé,0.5,0.5\nb,0.25,0.75\n".encode("latin-1"))
    _has(msg, "not valid UTF-8", "0xe9", "line 2", "CSV UTF-8", "encoding='latin-1'")
    _has(_error(GOOD, encoding="klingon"), "unknown encoding 'klingon'")


def test_formats_and_extensions(tmp_path):
    _has(_error(GOOD, "preds.dat"), "unknown extension '.dat'", ".csv, .tsv", "rename")
    _has(_error(b"PK\x03\x04junk", "book.xlsx"), "Excel", "CSV UTF-8")
    _has(_error(GOOD, "preds.parquet"), "not a Parquet file", "rename it")
    _has(_error(GOOD, "preds.npz"), "not a .npz", "rename it")
    _has(_error(GOOD, "preds.csv.gz"), "not gzip-compressed", "without .gz")
    _has(_error(gzip.compress(GOOD.encode())[:20], "preds.csv.gz"), "corrupt or truncated")
    _has(_error(b"PAR1 not really parquet PAR1", "t.parquet"), "cannot be read as Parquet")
    _has(_error(b"PK\x03\x04 not a zip", "t.npz"), "cannot be read as an .npz")
    with pytest.raises(CalibrationInputError, match="not found"):
        load_predictions(tmp_path / "nope.csv")
    with pytest.raises(CalibrationInputError, match="a folder"):
        load_predictions(tmp_path)
    with pytest.raises(CalibrationInputError, match="binary mode"):
        load_predictions(io.StringIO(GOOD))
    with pytest.raises(CalibrationInputError, match="cannot read predictions from a int"):
        load_predictions(3)


def test_excel_workbook_saved_as_npz_name(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "w.npz", "w") as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
    _has(_error((tmp_path / "w.npz").read_bytes(), "w.npz"), "Office document", "CSV UTF-8")


def test_parquet_with_nulls_and_nan(tmp_path):
    df = pd.DataFrame({"label": ["a", "b", "a"], "p_a": [0.5, None, 0.2], "p_b": [0.5, 0.5, 0.8]})
    df.to_parquet(tmp_path / "n.parquet")
    msg = _error((tmp_path / "n.parquet").read_bytes(), "n.parquet")
    _has(msg, "column 'p_a'", "'n.parquet'", "row 2 (1-based)")
