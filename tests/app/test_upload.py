"""POST /api/upload with Flask's test client: multipart, 413 before parsing, messages, isolation."""

from __future__ import annotations

import io

import numpy as np
import pytest

from app.factory import ASSETS_DIR, create_app
from app.layout.page import EXAMPLE_FILE, EXAMPLE_URL
from app.upload import UPLOAD_PATH, clean_file_name

from .conftest import make_config, prediction_csv


@pytest.fixture(scope="module")
def dash_app(tmp_path_factory):
    return create_app(make_config(tmp_path_factory.mktemp("upload"), max_upload_mb=1))


@pytest.fixture
def client(dash_app):
    client = dash_app.server.test_client()
    client.get("/_dash-dependencies")  # gets a session cookie
    return client


def _store(dash_app):
    return dash_app.server.extensions["calibration_dashboard"].store


def _post(client, *files):
    data = {"file": [(io.BytesIO(content), name) for name, content in files]}
    return client.post(UPLOAD_PATH, data=data, content_type="multipart/form-data")


def test_upload_a_csv_becomes_a_model(client, dash_app):
    response = _post(client, ("scores.csv", prediction_csv(n=300, k=3)))
    assert response.status_code == 200
    body = response.json
    assert body["errors"] == []
    (model,) = body["models"]
    assert model["name"] == "scores" and model["n_samples"] == 300 and model["n_classes"] == 3
    assert model["class_names"] == ["c0", "c1", "c2"]
    assert model["handle"].startswith("up-")
    # The page of this session now lists it; the browser only ever saw the handle.
    assert model["handle"] in client.get("/_dash-layout").get_data(as_text=True)


def test_one_file_with_several_models(client):
    content = (
        prediction_csv(n=200, k=2, model="a")
        + prediction_csv(n=150, k=2, model="b").split(b"\n", 1)[1]
    )
    body = _post(client, ("two.csv", content)).json
    assert [m["name"] for m in body["models"]] == ["a", "b"]
    assert [m["n_samples"] for m in body["models"]] == [200, 150]


def test_bad_file_gives_the_loaders_message_and_models_stay(client, dash_app):
    good = _post(client, ("first.csv", prediction_csv(n=100))).json["models"][0]
    response = _post(client, ("broken.csv", b"a,b\n1,2\nx,y\n"))
    assert response.status_code == 200
    body = response.json
    assert body["models"] == []
    (error,) = body["errors"]
    assert error["file"] == "broken.csv"
    assert "broken.csv" in error["error"] and "label" in error["error"]
    assert "Traceback" not in error["error"]
    page = client.get("/_dash-layout").get_data(as_text=True)
    assert good["handle"] in page


def _parser(dash_app):
    return dash_app.server.extensions["calibration_dashboard"].upload_parser


def test_too_large_is_refused_before_parsing(client, dash_app, monkeypatch):
    def must_not_parse(*args, **kwargs):
        raise AssertionError("the loader ran on an oversized upload")

    monkeypatch.setattr(_parser(dash_app), "parse", must_not_parse)
    big = b"x" * (1024 * 1024 + 100_000)
    response = _post(client, ("big.csv", big))
    assert response.status_code == 413
    assert "1 MB limit" in response.json["error"]
    # A lying Content-Length is refused from the header alone.
    response = client.post(
        UPLOAD_PATH,
        data=b"--x--",
        content_type="multipart/form-data; boundary=x",
        environ_overrides={"CONTENT_LENGTH": str(10**9)},
    )
    assert response.status_code == 413


def test_file_just_over_the_limit_inside_the_multipart_slack(client, dash_app, monkeypatch):
    monkeypatch.setattr(
        _parser(dash_app), "parse", lambda *a, **k: pytest.fail("parsed an oversized file")
    )
    response = _post(client, ("edge.csv", b"y" * (1024 * 1024 + 10)))
    assert response.status_code == 413


def test_request_without_files(client):
    response = client.post(UPLOAD_PATH, data={"other": "x"}, content_type="multipart/form-data")
    assert response.status_code == 400
    assert "form field named 'file'" in response.json["error"]


def test_sessions_do_not_see_each_others_uploads(dash_app):
    alice, bob = dash_app.server.test_client(), dash_app.server.test_client()
    handle = _post(alice, ("alice.csv", prediction_csv(n=120))).json["models"][0]["handle"]
    assert handle in alice.get("/_dash-layout").get_data(as_text=True)
    assert handle not in bob.get("/_dash-layout").get_data(as_text=True)


def test_hostile_file_names_are_cleaned(client):
    body = _post(client, ("../../etc/evil\u202ename.csv", prediction_csv(n=80))).json
    (model,) = body["models"]
    assert model["source"] == "evilname.csv"
    assert "/" not in model["name"] and "\u202e" not in model["name"]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("scores.csv", "scores.csv"),
        ("..\\..\\win\\x.csv", "x.csv"),
        ("/abs/path/y.parquet", "y.parquet"),
        ("\u202egpj.csv", "gpj.csv"),
        ("a\x00b\nc.csv", "abc.csv"),
        ("", "upload"),
        ("...", "upload"),
        (None, "upload"),
    ],
)
def test_clean_file_name(raw, clean):
    assert clean_file_name(raw) == clean


def test_long_names_are_shortened_keeping_the_extension():
    name = clean_file_name("a" * 500 + ".parquet")
    assert len(name) <= 120 and name.endswith(".parquet")


def _npz_classes(k: int, n: int = 120) -> bytes:
    rng = np.random.default_rng(k)
    buf = io.BytesIO()
    np.savez(buf, probs=rng.dirichlet(np.ones(k), size=n), labels=np.arange(n) % k)
    return buf.getvalue()


def test_models_with_more_classes_than_max_classes_are_refused(tmp_path):
    app = create_app(make_config(tmp_path, max_classes=50))
    client = app.server.test_client()
    client.get("/_dash-dependencies")
    body = _post(client, ("fifty.npz", _npz_classes(50))).json
    assert not body["errors"] and body["models"][0]["n_classes"] == 50
    body = _post(client, ("wide.npz", _npz_classes(51))).json
    assert body["models"] == []
    (error,) = body["errors"]
    assert "51 classes" in error["error"] and "at most 50" in error["error"]
    assert "MAX_CLASSES" in error["error"]


def test_unsupported_file_type_is_named_and_models_stay(client):
    """A .txt upload, even of CSV text, is refused by type, not with 'no label column'."""
    kept = _post(client, ("kept.csv", prediction_csv(n=100, k=2))).json["models"][0]
    for name in ("notes.txt", "table.json", "predictions"):
        body = _post(client, (name, prediction_csv(n=50, k=2))).json
        (error,) = body["errors"]
        assert error["file"] == name and body["models"] == []
        assert "has an unsupported file type" in error["error"], error
        assert "upload CSV, TSV (optionally .gz), Parquet or NPZ" in error["error"]
        assert "label column" not in error["error"]
    assert kept["handle"] in client.get("/_dash-layout").get_data(as_text=True)


def test_the_example_file_under_the_drop_zone_uploads_cleanly(client):
    """The page's example (assets/, served by Dash) is what the upload route reads."""
    served = client.get(EXAMPLE_URL)
    assert served.status_code == 200 and served.mimetype == "text/csv"
    content = served.get_data()
    assert content == (ASSETS_DIR / EXAMPLE_FILE).read_bytes()
    body = _post(client, (EXAMPLE_FILE, content)).json
    assert body["errors"] == []
    assert [(m["name"], m["n_samples"], m["class_names"]) for m in body["models"]] == [
        ("sharp", 24, ["cat", "dog", "bird"]),
        ("cautious", 24, ["cat", "dog", "bird"]),
    ]


def _post_with(client, name, content, **fields):
    data = {"file": [(io.BytesIO(content), name)], **fields}
    return client.post(UPLOAD_PATH, data=data, content_type="multipart/form-data").json


def test_row_sum_refusal_names_the_switch_and_the_switch_loads(client):
    scaled = b"label,p_a,p_b\na,0.6,0.6\nb,0.2,0.6\n"
    body = _post_with(client, "scaled.csv", scaled)
    (error,) = body["errors"]
    assert error["remedy"] == "renormalize"
    assert "tick 'renormalise rows'" in error["error"]
    assert "renormalize=True" not in error["error"] and "--renormalize" not in error["error"]
    body = _post_with(client, "scaled.csv", scaled, renormalize="1")
    assert body["errors"] == [] and len(body["models"]) == 1
    (notice,) = body["notices"]
    assert notice.startswith("scaled.csv: 2 probability row(s)")


def test_rounded_file_loads_with_a_notice(client):
    rounded = b"label,p_a,p_b,p_c\na,0.3333,0.3333,0.3333\nb,0.1,0.2,0.7\n"
    body = _post_with(client, "rounded.csv", rounded)
    assert body["errors"] == [] and len(body["models"]) == 1
    (notice,) = body["notices"]
    assert "rounded.csv: 1 probability row(s)" in notice and "rounded when saved" in notice


def test_label_column_refusal_lists_the_columns_and_the_choice_loads(client):
    content = b"truth,p_a,p_b\na,0.5,0.5\nb,0.25,0.75\n"
    (error,) = _post_with(client, "unnamed.csv", content)["errors"]
    assert error["remedy"] == "label_column"
    assert error["columns"] == ["truth", "p_a", "p_b"]
    assert "pick the label column" in error["error"] and "label_column=" not in error["error"]
    body = _post_with(client, "unnamed.csv", content, label_column="truth")
    assert body["errors"] == [] and body["models"][0]["n_samples"] == 2
