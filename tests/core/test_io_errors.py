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


UPLOAD_FORMATS = "upload CSV, TSV (optionally .gz), Parquet or NPZ"


@pytest.mark.parametrize(
    ("name", "content", "ext", "hint"),
    [
        ("x.txt", GOOD.encode(), "'.txt'", "rename it to .csv or .tsv"),
        ("notes.txt", b"meeting notes, not a table\n", "'.txt'", "rename it to .csv or .tsv"),
        ("x.json", b'{"label": [0, 1]}', "'.json'", "JSON is not read"),
        ("x.xlsx", b"not even a zip", "'.xlsx'", "save the sheet as 'CSV UTF-8'"),
        ("x.npy", b"\x93NUMPY\x01\x00", "'.npy'", "numpy.savez"),
        ("x.docx", GOOD.encode(), "'.docx'", None),
        ("predictions", GOOD.encode(), "(no extension)", "rename it to .csv or .tsv"),
        ("x.txt.gz", gzip.compress(GOOD.encode()), "'.txt.gz'", None),
    ],
)
def test_unsupported_file_types_say_so_not_no_label_column(name, content, ext, hint):
    """Names that are none of the formats are refused by type, even when the content is CSV."""
    msg = _error(content, name)
    _has(msg, f"'{name}' has an unsupported file type {ext}; {UPLOAD_FORMATS}.")
    assert "label column" not in msg
    if hint:
        _has(msg, hint)


def test_extensionless_csv_and_gzip_without_inner_extension_follow_the_content():
    """Nameless bytes (the Python API) are sniffed; ``preds.gz`` is decompressed and sniffed."""
    assert load_predictions(GOOD.encode())[0].n_samples > 0
    assert load_predictions(gzip.compress(GOOD.encode()), file_name="preds.gz")[0].n_samples > 0


def test_utf16_without_bom_and_latin1():
    _has(_error(GOOD.encode("utf-16-le")), "NUL bytes", "UTF-16")
    msg = _error("label,p_a,p_b\ncafé,0.5,0.5\nb,0.25,0.75\n".encode("latin-1"))
    _has(msg, "not valid UTF-8", "0xe9", "line 2", "CSV UTF-8", "encoding='latin-1'")
    _has(_error(GOOD, encoding="klingon"), "unknown encoding 'klingon'")


def test_formats_and_extensions(tmp_path):
    _has(
        _error(GOOD, "preds.dat"),
        "'preds.dat' has an unsupported file type '.dat'",
        "Parquet or NPZ",
    )
    _has(_error(b"PK\x03\x04junk", "book.xlsx"), "unsupported file type '.xlsx'", "CSV UTF-8")
    _has(_error(GOOD, "preds.parquet"), "not a Parquet file", "rename it")
    _has(_error(GOOD, "preds.npz"), "not a .npz", "rename it")
    _has(_error(GOOD, "preds.csv.gz"), "not gzip-compressed", "without .gz")
    _has(_error(gzip.compress(GOOD.encode())[:20], "preds.csv.gz"), "corrupt or truncated")
    _has(_error(b"PAR1 not really parquet PAR1", "t.parquet"), "damaged Parquet", "Write it")
    _has(_error(b"PK\x03\x04 not a zip", "t.npz"), "not a readable .npz", "numpy.savez")
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


# ------------------------------------------- messages without library text (issue 13)
#: Words of pyarrow's and numpy's own error texts, which messages must not repeat.
LIBRARY_WORDS = ("thrift", "Deserializ", "EOF", "File is not a zip", "ArrowInvalid", "zlib")


def _npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _cut_member(data: bytes, member: str, keep: float) -> bytes:
    """The archive with ``member`` cut to ``keep`` of its length (a truncated .npy)."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            raw = src.read(name)
            dst.writestr(name, raw[: int(len(raw) * keep)] if name == member else raw)
    return out.getvalue()


def _parquet(table, compression="snappy") -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression=compression)
    return buf.getvalue()


def _no_library_text(msg: str) -> None:
    assert not any(w in msg for w in LIBRARY_WORDS), msg


def test_a_truncated_npy_member_is_called_truncated_not_pickled():
    good = _npz_bytes(probs=np.full((100, 2), 0.5), labels=np.arange(100) % 2)
    msg = _error(_cut_member(good, "probs.npy", 0.5), "cut.npz")
    _has(msg, "array 'probs'", "'cut.npz'", "truncated", "(100, 2)", "1,600 bytes", "again")
    assert "Python objects" not in msg and "pickle" not in msg
    _no_library_text(msg)
    msg = _error(_cut_member(good, "labels.npy", 0.05), "cut.npz")
    _has(msg, "'labels'", "header is missing or damaged")
    _no_library_text(msg)


def test_a_truncated_npz_and_a_damaged_parquet_say_so_without_library_text():
    good = _npz_bytes(probs=np.full((100, 2), 0.5), labels=np.arange(100) % 2)
    msg = _error(good[: len(good) // 2], "half.npz")
    _has(msg, "'half.npz'", "not a readable .npz", "truncated or corrupt")
    _no_library_text(msg)
    import pyarrow as pa

    data = _parquet(pa.table({"p_a": [0.2, 0.7], "p_b": [0.8, 0.3], "label": ["b", "a"]}))
    damaged = data[:4] + b"\xff" * 40 + data[44:]
    msg = _error(damaged, "d.parquet")
    _has(msg, "'d.parquet'", "damaged Parquet file", "data pages", "to_parquet")
    _no_library_text(msg)
    msg = _error(data[:4] + data[-40:], "cut.parquet")
    _has(msg, "damaged Parquet file")
    _no_library_text(msg)


def test_parquet_text_columns_of_numbers_load_and_others_name_the_cells():
    import pyarrow as pa

    table = pa.table({"p_a": ["0.2", "0.7"], "p_b": ["0.8", "0.3"], "label": ["b", "a"]})
    (pred,) = load_predictions(_parquet(table), file_name="t.parquet")
    np.testing.assert_allclose(pred.probs, [[0.2, 0.8], [0.7, 0.3]])
    table = pa.table({"p_a": ["0.2", "x"], "p_b": ["0.8", "0.3"], "label": ["b", "a"]})
    msg = _error(_parquet(table), "t.parquet")
    _has(msg, "column 'p_a'", "found 'x' at row 2 (1-based)")
    table = pa.table({"p_a": ["0.2", "7" * 100], "p_b": ["0.8", "0.3"], "label": ["b", "a"]})
    msg = _error(_parquet(table), "t.parquet")
    _has(msg, "column 'p_a'", "100 characters at row 2 (1-based)", "at most 64")
    assert "found  at" not in msg


# ------------------------------------------------------------- length of names
def test_long_names_and_labels_are_refused_with_column_and_row():
    from calibration_core.io.budget import MAX_NAME_LENGTH

    long = "c" * (MAX_NAME_LENGTH + 1)
    msg = _error(f"label,p_a,p_{long}\na,0.5,0.5\n{long},0.25,0.75\n")
    _has(msg, f"{MAX_NAME_LENGTH + 1} characters long", "column 3", f"at most {MAX_NAME_LENGTH}")
    msg = _error(f"label,p_a,p_b\na,0.5,0.5\n{long},0.25,0.75\n")
    _has(msg, "label column 'label'", f"{MAX_NAME_LENGTH + 1} characters", ROW2)
    assert long not in msg
    msg = _error(f"model,label,p_a,p_b\nm,a,0.5,0.5\n{long},b,0.25,0.75\n")
    _has(msg, "model column 'model'", ROW2, f"at most {MAX_NAME_LENGTH}")
    ok = "d" * MAX_NAME_LENGTH
    (pred,) = load_predictions(f"label,p_a,p_{ok}\na,0.5,0.5\n{ok},0.2,0.8\n".encode())
    assert pred.class_names == ("a", ok)


def test_long_npz_class_names_and_labels_are_refused():
    names = np.array(["a", "b" * 300])
    msg = _error(_npz_bytes(probs=np.full((2, 2), 0.5), labels=[0, 1], class_names=names), "n.npz")
    _has(msg, "'class_names'", "300 characters", "1 (0-based array indices)")
    labels = np.array(["a", "b" * 300])
    msg = _error(
        _npz_bytes(probs=np.full((2, 2), 0.5), labels=labels, class_names=["a", "b"]), "n.npz"
    )
    _has(msg, "labels 'labels'", "300 characters", "1 (0-based")


def test_a_dictionary_entry_of_one_megabyte_is_refused_before_it_is_expanded():
    """20,000 rows pointing at one 1 MB string: 20 GB as strings, refused from the dictionary."""
    import pyarrow as pa

    rows = 20_000
    model = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["x" * (1 << 20)])
    )
    table = pa.table({"model": model, "label": np.arange(rows) % 2, "score": np.full(rows, 0.5)})
    data = _parquet(table, "zstd")
    assert len(data) < 10_000
    pool = pa.default_memory_pool()
    before = pool.max_memory()
    msg = _error(data, "dict.parquet")
    _has(msg, "model column 'model'", "1,048,576 characters")
    _has(msg, "rows 1, 2, 3, 4, 5 (and 19995 more) (1-based)")
    # Arrow never held more than a few copies of the one entry (the pool's high-water mark
    # only grows, so this bounds what this load allocated).
    assert pool.max_memory() - before < 64 << 20
