"""load_predictions: round trips for every format and column convention, real files, chunks."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax

import calibration_core
from calibration_core import CalibrationInputError, confidence_ece
from calibration_core.io import iter_prediction_chunks, load_predictions

RNG = np.random.default_rng(12345)
CLASSES = ["cat", "dog", "bird"]


def _probs(n, k, rng=RNG):
    return softmax(rng.normal(size=(n, k)), axis=1)


def _frame(n=40, prefix="p_", classes=CLASSES, rng=RNG):
    """A table with string labels covering every class, and its probabilities."""
    p = _probs(n, len(classes), rng)
    labels = np.array(classes)[np.arange(n) % len(classes)]
    df = pd.DataFrame(p, columns=[f"{prefix}{c}" for c in classes])
    df.insert(0, "label", labels)
    return df, p, np.arange(n) % len(classes)


def _write(df, path):
    """Write a frame in the format implied by the path's extension."""
    name = path.name
    if name.endswith((".parquet", ".pq")):
        df.to_parquet(path, index=False)
    else:
        sep = "\t" if ".tsv" in name else ","
        df.to_csv(path, index=False, sep=sep, float_format="%.17g")
    return path


FORMATS = ["p.csv", "p.tsv", "p.csv.gz", "p.tsv.gz", "p.parquet", "p.pq"]


@pytest.mark.parametrize("fname", FORMATS)
def test_round_trip_every_table_format(tmp_path, fname):
    df, p, y = _frame()
    path = _write(df, tmp_path / fname)
    [pred] = load_predictions(path)
    np.testing.assert_allclose(pred.probs, p, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(pred.labels, y)
    assert pred.class_names == tuple(CLASSES)
    assert pred.name == "p"
    assert pred.logits is None
    # the same content as bytes (with and without a name) and as a binary file object
    data = path.read_bytes()
    for kwargs in ({"file_name": fname}, {}):
        [again] = load_predictions(data, **kwargs)
        np.testing.assert_array_equal(again.probs, pred.probs)
        np.testing.assert_array_equal(again.labels, pred.labels)
    [fobj] = load_predictions(io.BytesIO(data), file_name=fname, name="mine")
    assert fobj.name == "mine"
    np.testing.assert_array_equal(fobj.labels, y)


def test_npz_round_trip_as_path_bytes_and_nameless(tmp_path):
    p, y = _probs(30, 4), np.arange(30) % 4
    path = tmp_path / "net.npz"
    np.savez(path, probs=p.astype(np.float32), labels=y, class_names=np.array(list("abcd")))
    [pred] = load_predictions(path)
    assert pred.name == "net" and pred.class_names == tuple("abcd")
    np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(pred.probs, p, atol=1e-6)
    np.testing.assert_array_equal(pred.labels, y)
    [nameless] = load_predictions(path.read_bytes())
    assert nameless.name == "model"
    np.testing.assert_array_equal(nameless.probs, pred.probs)


@pytest.mark.parametrize(
    ("pkey", "lkey"),
    [("predictions", "ground_truth"), ("probabilities", "y"), ("PROBS", "Target")],
)
def test_npz_key_conventions(tmp_path, pkey, lkey):
    p, y = _probs(20, 3), np.arange(20) % 3
    np.savez(tmp_path / "a.npz", **{pkey: p, lkey: y})
    [pred] = load_predictions(tmp_path / "a.npz")
    np.testing.assert_allclose(pred.probs, p, atol=1e-15)
    np.testing.assert_array_equal(pred.labels, y)


def test_npz_logits_kept_and_checked_against_probs(tmp_path):
    z = RNG.normal(size=(25, 3)) * 4
    y = np.arange(25) % 3
    np.savez(tmp_path / "z.npz", logits=z, probs=softmax(z, axis=1), labels=y)
    [pred] = load_predictions(tmp_path / "z.npz")
    np.testing.assert_array_equal(pred.logits, z)
    np.testing.assert_allclose(pred.probs, softmax(z, axis=1), atol=1e-12)


def test_npz_binary_scores_and_string_labels(tmp_path):
    s = np.linspace(0.05, 0.95, 10)
    np.savez(tmp_path / "s.npz", scores=s, labels=np.arange(10) % 2 == 1)
    [pred] = load_predictions(tmp_path / "s.npz")
    np.testing.assert_allclose(pred.probs[:, 1], s)
    np.testing.assert_array_equal(pred.labels, np.arange(10) % 2)
    assert pred.score_column and pred.subset([0, 1]).score_column  # written back as `score`
    p = _probs(6, 2)
    np.savez(
        tmp_path / "n.npz", probs=p, labels=np.array(["no", "yes"] * 3), class_names=["no", "yes"]
    )
    [named] = load_predictions(tmp_path / "n.npz")
    np.testing.assert_array_equal(named.labels, [0, 1] * 3)
    assert not named.score_column


@pytest.mark.parametrize("prefix", ["p_", "prob_", "proba_", "P_", "Proba_"])
def test_probability_prefixes(prefix):
    df, _, y = _frame(prefix=prefix)
    [pred] = load_predictions(df.to_csv(index=False).encode(), file_name="x.csv")
    assert pred.class_names == tuple(CLASSES)
    np.testing.assert_array_equal(pred.labels, y)


@pytest.mark.parametrize("label", ["Label", "y", "TARGET", "true", "Ground_Truth"])
def test_label_column_names_are_case_insensitive(label):
    df, _, y = _frame()
    df = df.rename(columns={"label": label})
    [pred] = load_predictions(df.to_csv(index=False).encode(), file_name="x.csv")
    np.testing.assert_array_equal(pred.labels, y)


def test_label_column_named_by_caller():
    df, _, y = _frame()
    df = df.rename(columns={"label": "truth"})
    df["target"] = "ignored"  # a candidate name, but the caller chose another column
    [pred] = load_predictions(
        df.to_csv(index=False).encode(), file_name="x.csv", label_column="truth"
    )
    np.testing.assert_array_equal(pred.labels, y)


def test_logit_columns_keep_logits():
    z = RNG.normal(size=(12, 3)) * 3
    df = pd.DataFrame(z, columns=[f"logit_{c}" for c in CLASSES])
    df["y"] = np.array(CLASSES)[np.arange(12) % 3]
    [pred] = load_predictions(
        df.to_csv(index=False, float_format="%.17g").encode(), file_name="z.csv"
    )
    np.testing.assert_array_equal(pred.logits, z)
    np.testing.assert_allclose(pred.probs, softmax(z, axis=1), atol=1e-12)
    assert pred.class_names == tuple(CLASSES)


@pytest.mark.parametrize(
    ("labels", "text"),
    [([0, 1, 1, 0], "0,1,1,0"), ([0, 1, 1, 0], "false,True,TRUE,False")],
)
def test_binary_score_column(labels, text):
    s = [0.1, 0.8, 0.6, 0.3]
    body = "label,score\n" + "\n".join(f"{a},{b}" for a, b in zip(text.split(","), s, strict=True))
    [pred] = load_predictions(body.encode(), file_name="b.csv")
    np.testing.assert_allclose(pred.probs, np.column_stack([1 - np.array(s), s]))
    np.testing.assert_array_equal(pred.labels, labels)
    assert pred.n_classes == 2
    assert pred.score_column  # a `score` input: writers give it back as one column


def test_model_column_splits_in_order_of_appearance():
    df, p, y = _frame(n=60)
    models = np.array(["b_model", "a_model", "c"])[(np.arange(60) // 7) % 3]
    df.insert(0, "model", models)
    preds = load_predictions(
        df.to_csv(index=False, float_format="%.17g").encode(), file_name="m.csv", name="x"
    )
    assert [q.name for q in preds] == ["b_model", "a_model", "c"]
    for q in preds:
        rows = np.flatnonzero(models == q.name)
        np.testing.assert_allclose(q.probs, p[rows], atol=1e-15)
        np.testing.assert_array_equal(q.labels, y[rows])
        assert q.class_names == tuple(CLASSES)


def test_integer_labels_by_index_and_by_name():
    p = _probs(6, 3)
    by_index = pd.DataFrame(p, columns=["p_0", "p_1", "p_2"]).assign(label=[2, 0, 1, 1, 0, 2])
    [a] = load_predictions(by_index.to_csv(index=False).encode(), file_name="a.csv")
    np.testing.assert_array_equal(a.labels, [2, 0, 1, 1, 0, 2])
    by_name = pd.DataFrame(p, columns=["p_1", "p_2", "p_3"]).assign(label=[3, 1, 2, 2, 1, 3])
    [b] = load_predictions(by_name.to_csv(index=False).encode(), file_name="b.csv")
    assert b.class_names == ("1", "2", "3")
    np.testing.assert_array_equal(b.labels, [2, 0, 1, 1, 0, 2])


def test_soft_label_and_other_columns_are_ignored():
    df, p, _ = _frame()
    for c in CLASSES:
        df[f"h_{c}"] = 1.0 / 3
    df["id"] = np.arange(len(df))
    [pred] = load_predictions(
        df.to_csv(index=False, float_format="%.17g").encode(), file_name="h.csv"
    )
    assert pred.class_names == tuple(CLASSES)
    np.testing.assert_allclose(pred.probs, p, atol=1e-15)


def test_float32_rounding_is_tolerated_and_renormalised():
    k = 100
    p32 = _probs(50, k).astype(np.float32)
    p32[:, 0] += np.float32(4e-6)  # within K * eps32 = 1.2e-5, beyond 1e-6
    df = pd.DataFrame(p32, columns=[f"p_{j}" for j in range(k)]).assign(label=np.arange(50) % k)
    [pred] = load_predictions(df.to_csv(index=False).encode(), file_name="f.csv")
    np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(pred.probs, p32, atol=1e-5)


def test_float32_parquet_columns_load_as_their_float64_values_over_the_row_sum(tmp_path):
    # The columns are checked as stored (float32); each row is then divided by its
    # float64 sum where it is off by more than rounding, exactly as before.
    k = 10
    p32 = _probs(2000, k).astype(np.float32)
    p32[:5] = np.float32(0.1)  # rows whose float64 sum is 1 only to float32 rounding
    df = pd.DataFrame(p32, columns=[f"p_{j}" for j in range(k)]).assign(label=np.arange(2000) % k)
    df.to_parquet(tmp_path / "f32.parquet", index=False)
    [pred] = load_predictions(tmp_path / "f32.parquet")
    p64 = p32.astype(np.float64)
    sums = p64 @ np.ones(k)
    off = np.abs(sums - 1.0) > max(1e-12, 4 * k * np.finfo(np.float64).eps)
    want = np.where(off[:, None], p64 / sums[:, None], p64)
    np.testing.assert_allclose(pred.probs, want, rtol=2e-16, atol=0)
    assert pred.probs.dtype == np.float64 and not pred.probs.flags.writeable


def test_renormalize_when_asked():
    body = b"label,p_a,p_b\na,1,1\nb,1,3\n"
    with pytest.raises(CalibrationInputError, match="renormalize=True"):
        load_predictions(body, file_name="r.csv")
    [pred] = load_predictions(body, file_name="r.csv", renormalize=True)
    np.testing.assert_allclose(pred.probs, [[0.5, 0.5], [0.25, 0.75]])


@pytest.mark.parametrize(
    ("encoded", "kwargs"),
    [
        ("\ufefflabel,p_café,p_b\ncafé,0.25,0.75\nb,0.5,0.5\n".encode(), {"file_name": "e.csv"}),
        (
            "label\tp_café\tp_b\ncafé\t0.25\t0.75\nb\t0.5\t0.5\n".encode("utf-16"),
            {"file_name": "e.tsv"},
        ),
        (
            "label,p_café,p_b\ncafé,0.25,0.75\nb,0.5,0.5\n".encode("latin-1"),
            {"encoding": "latin-1", "file_name": "e.csv"},
        ),
    ],
    ids=["utf8-bom", "utf16-bom-excel-unicode-text", "latin1-when-named"],
)
def test_encodings(encoded, kwargs):
    [pred] = load_predictions(encoded, **kwargs)
    assert pred.class_names == ("café", "b")
    np.testing.assert_array_equal(pred.labels, [0, 1])
    np.testing.assert_allclose(pred.probs[0], [0.25, 0.75])


def test_semicolon_csv_and_quoted_newlines():
    [a] = load_predictions(b"label;p_a;p_b\na;0.25;0.75\nb;0.5;0.5\n", file_name="s.csv")
    np.testing.assert_allclose(a.probs[0], [0.25, 0.75])
    body = b'label,p_a,p_b\n"a",0.25,0.75\n"b\nc",0.5,0.5\n'
    [b] = load_predictions(body.replace(b"p_b", b'"p_b\nc"'), file_name="q.csv")
    assert b.class_names == ("a", "b\nc")


def test_content_magic_wins_over_a_wrong_extension(tmp_path):
    df, p, _ = _frame()
    df.to_parquet(tmp_path / "t.parquet", index=False)
    [pq_as_csv] = load_predictions((tmp_path / "t.parquet").read_bytes(), file_name="t.csv")
    np.testing.assert_allclose(pq_as_csv.probs, p, atol=1e-15)
    gz = gzip.compress(df.to_csv(index=False, float_format="%.17g").encode())
    [gz_as_csv] = load_predictions(gz, file_name="t.csv")
    np.testing.assert_allclose(gz_as_csv.probs, p, atol=1e-15)


def test_real_netcal_records_load_as_they_are(realdata):
    expected_ece = {
        "densenet-bc-100-cifar-100": 0.142,
        "wideresnet-16-4-cifar-100": 0.058,
        "lenet-5-cifar-100": 0.015,
        "wideresnet-16-4-cifar-10": 0.054,
        "lenet-5-cifar-10": 0.108,
    }
    for name, path in realdata.items():
        [pred] = load_predictions(path)
        with np.load(path, allow_pickle=False) as raw:
            p32, y = raw["predictions"], raw["ground_truth"]
        assert pred.name == name
        assert pred.probs.shape == p32.shape and pred.probs.dtype == np.float64
        np.testing.assert_array_equal(pred.labels, y)
        np.testing.assert_allclose(pred.probs, p32, rtol=0, atol=1e-6)
        np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-12)
        assert confidence_ece(pred.probs, pred.labels) == pytest.approx(
            expected_ece[name], abs=1e-3
        )


def test_exported_from_the_package():
    assert calibration_core.load_predictions is load_predictions
    assert "load_predictions" in calibration_core.__all__


# ---------------------------------------------------------------- chunks
@pytest.mark.parametrize("fname", ["c.csv", "c.csv.gz", "c.parquet"])
def test_chunks_concatenate_to_the_whole_file(tmp_path, fname):
    df, p, y = _frame(n=250)
    models = np.where(np.arange(250) < 120, "m1", "m2")
    df.insert(0, "model", models)
    path = _write(df, tmp_path / fname)
    chunks = list(iter_prediction_chunks(path, chunk_rows=100))
    assert [sum(q.n_samples for q in c) for c in chunks] == [100, 100, 50]
    assert [[q.name for q in c] for c in chunks] == [["m1"], ["m1", "m2"], ["m2"]]
    whole = {q.name: q for q in load_predictions(path)}
    for model in ("m1", "m2"):
        parts = [q for c in chunks for q in c if q.name == model]
        probs = np.vstack([q.probs for q in parts])
        labels = np.concatenate([q.labels for q in parts])
        np.testing.assert_allclose(probs, p[models == model], atol=1e-15)
        np.testing.assert_array_equal(labels, y[models == model])
        np.testing.assert_array_equal(probs, whole[model].probs)
        np.testing.assert_array_equal(labels, whole[model].labels)


def test_chunk_errors_number_rows_from_the_start_of_the_file(tmp_path):
    df, _, _ = _frame(n=250)
    df.loc[233, "p_dog"] = np.nan
    path = _write(df, tmp_path / "c.csv")
    with pytest.raises(CalibrationInputError) as err:
        list(iter_prediction_chunks(path, chunk_rows=100))
    assert "'p_dog'" in str(err.value) and "data row 234 (1-based, after the header)" in str(
        err.value
    )
    with pytest.raises(CalibrationInputError, match="header but no data rows"):
        list(iter_prediction_chunks(b"label,p_a,p_b\n", file_name="h.csv"))
    with pytest.raises(CalibrationInputError, match="chunk_rows must be a positive integer"):
        list(iter_prediction_chunks(path, chunk_rows=0))


def test_chunks_with_a_named_label_column_and_npz(tmp_path):
    df, p, y = _frame(n=30)
    df = df.rename(columns={"label": "truth"}).assign(target="not the labels")
    path = _write(df, tmp_path / "n.csv")
    chunks = list(iter_prediction_chunks(path, chunk_rows=16, label_column="truth"))
    np.testing.assert_array_equal(np.concatenate([c[0].labels for c in chunks]), y)
    np.savez(tmp_path / "a.npz", probs=p, labels=y)
    [[whole]] = list(iter_prediction_chunks(tmp_path / "a.npz", chunk_rows=7))
    np.testing.assert_array_equal(whole.labels, y)


def test_csv_times_of_several_zones_load_with_a_notice():
    """The CSV reader converts zoned times to UTC as it reads: the zones it saw are noticed."""
    zones = ["Z", "+02:00", "-0500"]
    rows = [f"0.{3 + i % 5},{i % 2},2024-03-0{1 + i % 3}T12:00:00{zones[i % 3]}" for i in range(9)]
    text = "score,label,ts\n" + "\n".join(rows) + "\n"
    preds, notices = calibration_core.load_with_notices(text.encode(), file_name="z.csv")
    assert notices == [
        "time column 'ts': times in 3 time zones (+02:00, -05:00, Z) were converted to UTC."
    ]
    assert preds[0].extra["ts"][1] == np.datetime64("2024-03-02T10:00:00")
    one = text.replace("+02:00", "Z").replace("-0500", "Z")
    assert calibration_core.load_with_notices(one.encode(), file_name="z.csv")[1] == []
