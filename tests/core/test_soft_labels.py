"""load_soft_labels: h_<class> columns (CSV/TSV/Parquet, model split) and npz arrays."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pandas as pd
import pytest

from calibration_core import CalibrationInputError, human_uncertainty_calibration
from calibration_core.io import load_predictions
from calibration_core.io.soft_labels import load_soft_labels


def _frame(n=6, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(3), size=n)
    votes = rng.integers(0, 5, size=(n, 3))
    votes[votes.sum(axis=1) == 0, 0] = 1
    frame = pd.DataFrame({"p_cat": p[:, 0], "p_dog": p[:, 1], "p_emu": p[:, 2]})
    frame["label"] = np.array(["cat", "dog", "emu"])[rng.integers(0, 3, n)]
    # Soft-label columns in another order than the prediction columns.
    frame["h_emu"], frame["h_cat"], frame["h_dog"] = votes[:, 2], votes[:, 0], votes[:, 1]
    return frame, votes


def _csv(frame, sep=","):
    return frame.to_csv(index=False, sep=sep).encode()


def test_csv_columns_are_matched_by_class_and_normalised():
    frame, votes = _frame()
    data = _csv(frame)
    (pred,) = load_predictions(data, file_name="x.csv")
    soft = load_soft_labels(data, file_name="x.csv", class_names=pred.class_names)
    assert list(soft) == [pred.name] == ["x"]
    expected = votes / votes.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(soft["x"], expected, rtol=0, atol=1e-15)
    # Without class names: column order of the file (emu, cat, dog).
    plain = load_soft_labels(data, file_name="x.csv")["x"]
    np.testing.assert_allclose(plain, expected[:, [2, 0, 1]], atol=1e-15)
    # And the result feeds the core's human-uncertainty measures.
    result = human_uncertainty_calibration(pred, soft["x"])
    tvd = 0.5 * np.abs(pred.probs - expected).sum(axis=1)
    assert result.distce == pytest.approx(tvd.mean())


def test_model_column_splits_like_the_loader_and_other_formats(tmp_path):
    frame, votes = _frame(n=10, seed=1)
    frame.insert(0, "model", ["b", "a"] * 5)
    expected = votes / votes.sum(axis=1, keepdims=True)
    path = tmp_path / "m.parquet"
    frame.to_parquet(path)
    sources = {
        "m.csv": _csv(frame),
        "m.tsv": _csv(frame, sep="\t"),
        "m.csv.gz": gzip.compress(_csv(frame)),
        "m.parquet": path.read_bytes(),
    }
    for file_name, data in sources.items():
        preds = load_predictions(data, file_name=file_name)
        soft = load_soft_labels(data, file_name=file_name, class_names=preds[0].class_names)
        assert list(soft) == [p.name for p in preds] == ["b", "a"], file_name
        np.testing.assert_allclose(soft["b"], expected[0::2], atol=1e-15)
        np.testing.assert_allclose(soft["a"], expected[1::2], atol=1e-15)
    # A path works too, and a file-like object.
    assert set(load_soft_labels(path)) == {"b", "a"}
    assert set(load_soft_labels(io.BytesIO(sources["m.csv"]), file_name="m.csv")) == {"b", "a"}


def test_no_soft_labels_gives_an_empty_dict(tmp_path):
    frame, _ = _frame()
    plain = frame.drop(columns=["h_cat", "h_dog", "h_emu"])
    assert load_soft_labels(_csv(plain), file_name="x.csv") == {}
    path = tmp_path / "x.parquet"
    plain.to_parquet(path)
    assert load_soft_labels(path) == {}
    buf = io.BytesIO()
    np.savez(buf, probs=plain[["p_cat", "p_dog", "p_emu"]].to_numpy(), labels=np.zeros(6, int))
    assert load_soft_labels(buf.getvalue(), file_name="x.npz") == {}


def test_npz_soft_labels():
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(4), size=8)
    votes = rng.integers(1, 4, size=(8, 4)).astype(float)
    buf = io.BytesIO()
    np.savez(buf, probs=p, labels=np.arange(8) % 4, soft_labels=votes)
    soft = load_soft_labels(buf.getvalue(), file_name="run.npz", class_names=list("0123"))
    np.testing.assert_allclose(soft["run"], votes / votes.sum(axis=1, keepdims=True))
    bad = io.BytesIO()
    np.savez(bad, probs=p, labels=np.arange(8) % 4, human=votes[:, :3])
    with pytest.raises(CalibrationInputError, match=r"shape \(N, 4\)"):
        load_soft_labels(bad.getvalue(), file_name="run.npz", class_names=list("0123"))


def test_binary_score_file_pairs_h_0_and_h_1():
    frame = pd.DataFrame(
        {"score": [0.2, 0.9, 0.6], "label": [0, 1, 1], "h_1": [1, 3, 2], "h_0": [3, 0, 2]}
    )
    data = _csv(frame)
    (pred,) = load_predictions(data, file_name="b.csv")
    soft = load_soft_labels(data, file_name="b.csv", class_names=pred.class_names)["b"]
    np.testing.assert_allclose(soft, [[0.75, 0.25], [0.0, 1.0], [0.5, 0.5]])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.drop(columns=["h_dog"]), r"no h_<class> column for 'dog'"),
        (lambda f: f.rename(columns={"h_emu": "h_owl"}), r"unknown classes 'owl'"),
        (lambda f: f.assign(h_cat=[1, -1, 1, 1, 1, 1]), r"negative at data rows? 2 \(1-based"),
        (
            lambda f: f.assign(h_cat=[0] * 6, h_dog=[0] * 6, h_emu=[1, 1, 0, 1, 1, 1]),
            r"all zero at data rows? 3 ",
        ),
        (lambda f: f.assign(h_dog=["1", "x", "1", "1", "1", "1"]), r"must hold numbers"),
        (lambda f: f.assign(h_dog=[1, None, 1, 1, 1, 1]), r"missing values .* data rows? 2 "),
        (lambda f: f.rename(columns={"h_emu": "h_"}), r"no class name after the prefix"),
    ],
)
def test_bad_soft_labels_have_clear_messages(change, message):
    frame, _ = _frame()
    frame[["h_cat", "h_dog", "h_emu"]] = 1
    bad = change(frame)
    with pytest.raises(CalibrationInputError, match=message):
        load_soft_labels(_csv(bad), file_name="x.csv", class_names=("cat", "dog", "emu"))


def test_duplicated_soft_label_columns_are_rejected():
    text = "p_a,p_b,label,h_a,h_b,h_a\n0.5,0.5,a,1,1,1\n0.2,0.8,b,0,2,0\n"
    with pytest.raises(CalibrationInputError, match=r"more than one soft-label column .*'a'"):
        load_soft_labels(text.encode(), file_name="d.csv", class_names=("a", "b"))
