"""The file's other columns survive the upload into the store (issue 19).

Groups, ids, times and features of an uploaded file travel with its
predictions (``Predictions.extra``): through the parsing child, onto disk
(text as integer codes plus its values) and back, equal to what the loader
reads in-process; they count against the upload's decoded-data bound and the
session's storage.
"""

from __future__ import annotations

import decimal
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from app.factory import create_app
from app.store.data_store import DataStore
from app.store.extra_columns import encode_column, encode_extra, extra_nbytes
from app.store.records import nbytes
from app.upload import UPLOAD_PATH
from calibration_core.io import load_predictions

from .conftest import make_config

CSV = (
    b"model,p_a,p_b,label,hospital,age,patient,timestamp,flag\n"
    b"m1,0.2,0.8,b,north,41.5,1001,2024-03-01T10:00:00Z,true\n"
    b"m1,0.7,0.3,a,south,,1002,2024-03-02T11:00:00Z,false\n"
    b"m1,0.4,0.6,b,,63,1003,2024-03-09T12:00:00Z,true\n"
    b"m2,0.9,0.1,a,north,29,1004,2024-04-01T00:00:00Z,false\n"
    b"m2,0.6,0.4,b,south,52.25,1005,2024-04-02T00:00:00Z,true\n"
)


@pytest.fixture(scope="module")
def dash_app(tmp_path_factory):
    return create_app(make_config(tmp_path_factory.mktemp("extra"), max_upload_mb=1))


def _post(dash_app, name: str, content: bytes) -> dict:
    client = dash_app.server.test_client()
    client.get("/_dash-dependencies")
    data = {"file": [(io.BytesIO(content), name)]}
    response = client.post(UPLOAD_PATH, data=data, content_type="multipart/form-data")
    assert response.status_code == 200
    return response.json


def _from_disk(dash_app, handle: str):
    """The stored model as a fresh process reads it (disk, not the memory cache)."""
    store = dash_app.server.extensions["calibration_dashboard"].store
    fresh = DataStore(store.directory.parent, memory_bytes=0)
    try:
        return fresh.predictions(handle)
    finally:
        fresh.close()


def _assert_same_columns(stored: dict, loaded: dict) -> None:
    assert list(stored) == list(loaded)
    for name, want in loaded.items():
        got = stored[name]
        assert got.shape == want.shape, name
        if want.dtype.kind == "O":
            assert got.dtype.kind == "O" and list(got) == list(want), name
        else:
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want, err_msg=name)
        assert not got.flags.writeable


def test_csv_extra_columns_survive_upload_and_disk(dash_app):
    body = _post(dash_app, "slices.csv", CSV)
    assert body["errors"] == [] and [m["name"] for m in body["models"]] == ["m1", "m2"]
    expected = load_predictions(io.BytesIO(CSV), file_name="slices.csv")
    for info, want in zip(body["models"], expected, strict=True):
        pred = _from_disk(dash_app, info["handle"])
        assert set(pred.extra) == {"hospital", "age", "patient", "timestamp", "flag"}
        _assert_same_columns(dict(pred.extra), dict(want.extra))
    first = _from_disk(dash_app, body["models"][0]["handle"])
    assert list(first.extra["hospital"]) == ["north", "south", ""]  # kept as written


def test_parquet_dates_and_dictionary_text_survive(dash_app):
    n = 300
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, n)
    table = pa.table({
        "p_no": 1 - p, "p_yes": p, "label": np.where(rng.random(n) < p, "yes", "no"),
        "site": pa.array(np.array(["a", "b", "c"])[np.arange(n) % 3]).dictionary_encode(),
        "when": pa.array(np.datetime64("2024-01-01") + np.arange(n), type=pa.date32()),
        "at": pa.array(np.arange(n) * 10**9, type=pa.timestamp("ns", tz="UTC")),
        "count": pa.array(np.arange(n), type=pa.uint16()),
    })  # fmt: skip
    buf = io.BytesIO()
    pq.write_table(table, buf)
    body = _post(dash_app, "dates.parquet", buf.getvalue())
    assert body["errors"] == [], body
    (want,) = load_predictions(io.BytesIO(buf.getvalue()), file_name="dates.parquet")
    pred = _from_disk(dash_app, body["models"][0]["handle"])
    assert list(pred.extra) == ["site", "when", "at", "count"]
    assert pred.extra["at"].dtype.kind == "M" and pred.extra["count"].dtype == np.int64
    for name in ("site", "when", "at"):
        _assert_same_columns({name: pred.extra[name]}, {name: want.extra[name]})
    np.testing.assert_array_equal(pred.extra["count"], want.extra["count"])


def test_extra_columns_count_against_the_decoded_bound(dash_app):
    """A small Parquet file whose other columns decode past 8 x MAX_UPLOAD_MB is refused."""
    n = 100_000
    columns = {
        "p_a": np.full(n, 0.5),
        "p_b": np.full(n, 0.5),
        "label": np.array(["a", "b"])[np.arange(n) % 2],
    }
    columns.update({f"feature_{i}": np.full(n, i, dtype=np.int64) for i in range(30)})
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    assert len(buf.getvalue()) < 1 << 20  # under the 1 MB upload limit
    body = _post(dash_app, "wide.parquet", buf.getvalue())
    assert body["models"] == [] and "would decode to more than 8 MB" in body["error"], body
    without = pa.table({k: columns[k] for k in ("p_a", "p_b", "label")})
    buf = io.BytesIO()
    pq.write_table(without, buf)
    assert _post(dash_app, "narrow.parquet", buf.getvalue())["errors"] == []


def test_session_storage_counts_the_extra_columns():
    (pred,) = load_predictions(io.BytesIO(CSV.replace(b"m2,", b"m1,")), file_name="s.csv")
    # 5 rows: hospital (text, 8 a row), age, patient, timestamp (8 bytes each), flag (bool)
    assert extra_nbytes(pred.extra) == 5 * (8 + 8 + 8 + 8 + 1)
    bare = type(pred)(probs=pred.probs, labels=pred.labels, class_names=pred.class_names)
    assert nbytes(pred) == nbytes(bare) + extra_nbytes(pred.extra)


def test_encoding_keeps_values_and_kinds():
    n = 6
    columns = {
        "text": np.array(["x", None, "y", "x", "", "y"], dtype=object),
        "big": np.array([2**64 - 1, 0, 1, 2, 3, 4], dtype=np.uint64),
        "small": np.arange(n, dtype=np.uint8),
        "when": np.arange(n).astype("datetime64[ms]"),
        "money": np.array([decimal.Decimal("1.50")] * n, dtype=object),
        "wait": np.arange(n).astype("timedelta64[s]"),
    }
    encoded = {c.name: c for c in encode_extra(columns)}
    assert {k: c.kind for k, c in encoded.items()} == {
        "text": "text", "big": "number", "small": "integer", "when": "time",
        "money": "text", "wait": "text",
    }  # fmt: skip
    text = encoded["text"]
    assert text.values.dtype == np.int32 and text.categories == ("x", "y", "")
    assert list(text.decode()) == ["x", None, "y", "x", "", "y"]
    np.testing.assert_array_equal(encoded["when"].decode(), columns["when"])
    assert list(encoded["money"].decode()) == ["1.50"] * n
    assert encode_column("empty", np.array([], dtype=object)).decode().shape == (0,)
