"""Hostile files: the loader and ``POST /api/upload`` survive each with a specific message.

Every file is fed twice: to :func:`calibration_core.io.load_predictions`
(which must raise :class:`CalibrationInputError` with the message, or load
correctly) and to the upload route of a running app, after a good model was
uploaded in the same session. The route must answer 200 with the loader's
message for that file, and the good model must still be listed and drawn.
Compressed bombs are stopped by the upload path before the loader runs
(:mod:`app.upload.guard`): the limit applies to the decompressed size. The route
parses in a child process (:mod:`app.upload.parser`, whose own limits are tested in
``test_parse_isolation.py``), so checks of what a parse allocates or calls run
:func:`app.upload.parser.parse_upload`, what the child runs, in this process.
Hostile file names are cleaned for display and never used as a path.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import unicodedata
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.factory import create_app
from app.upload.guard import UploadTooLarge, check_expansion
from calibration_core import CalibrationInputError
from calibration_core.io import load_predictions

GOOD = b"p_a,p_b,label\n0.2,0.8,b\n0.7,0.3,a\n0.4,0.6,b\n0.9,0.1,a\n"


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _wide(columns: int) -> bytes:
    header = ",".join(f"p_c{i}" for i in range(columns)) + ",label\n"
    row = ",".join(["0.00001"] * columns) + ",c0\n"
    return (header + row).encode()


def _parquet(table, compression="zstd") -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression=compression)
    return buf.getvalue()


def _one_megabyte_dictionary(rows: int = 20_000) -> bytes:
    """``rows`` model names all pointing at one 1 MB dictionary entry: 1.3 kB, 20 GB as text."""
    model = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["x" * (1 << 20)])
    )
    return _parquet(
        pa.table({"model": model, "label": np.arange(rows) % 2, "score": np.full(rows, 0.5)})
    )


def _one_megabyte_names(rows: int = 200) -> bytes:
    """``rows`` distinct model names of 1 MB each (plain encoding), written 50 rows at a time."""
    schema = pa.schema([("model", pa.string()), ("label", pa.int64()), ("score", pa.float64())])
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, schema, compression="zstd") as writer:
        for start in range(0, rows, 50):
            names = [f"{i:06d}" + "x" * (1 << 20) for i in range(start, start + 50)]
            labels = np.arange(start, start + 50) % 2
            writer.write_table(pa.table([names, labels, np.full(50, 0.5)], schema=schema))
    return buf.getvalue()


def _truncated_member(member: str = "probs.npy") -> bytes:
    """A valid npz whose ``member`` is cut to half its length (inside an intact zip)."""
    good = _npz(probs=np.full((100, 2), 0.5), labels=np.arange(100) % 2)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            raw = src.read(name)
            dst.writestr(name, raw[: len(raw) // 2] if name == member else raw)
    return out.getvalue()


LONG = "c" * 201

#: name -> (file name, content, words the message must contain)
REJECTED = {
    "pickle": ("model.pkl", pickle.dumps({"probs": [0.1]}), ["pickle", "never loaded"]),
    "pickle named csv": ("scores.csv", pickle.dumps([1, 2, 3]), ["pickle"]),
    "pickle named npz": ("scores.npz", pickle.dumps([1, 2, 3]), ["pickle"]),
    "object array npz": (
        "objects.npz",
        _npz(probs=np.array([[0.2, 0.8], [0.6, 0.4]], dtype=object), labels=np.array([1, 0])),
        ["Python objects", "never loaded"],
    ),
    "binary with NUL named csv": ("noise.csv", bytes(range(256)) * 64, ["not a text file"]),
    "binary without NUL named csv": ("noise2.csv", bytes(range(1, 256)) * 8, ["not valid UTF-8"]),
    "latin-1": ("latin.csv", "p_é,p_b,label\n0.2,0.8,b\n0.7,0.3,é\n".encode("latin-1"), ["UTF-8"]),
    "unbalanced quote": (
        "quote.csv",
        b'p_a,p_b,label\n0.2,"0.8,b\n0.7,0.3,a\n',
        ["not a well-formed table", "data row 1"],
    ),
    "stray carriage return": (
        "cr.csv",
        b"p_a,p_b,label\n0.2,0.8,b\n0.7,0.3\r,a\n",
        ["not a well-formed table", "data row 2"],
    ),
    "50 MB single cell": (
        "cell.csv",
        b"p_a,p_b,label\n0.2,0.8,b\n0.7,0.3," + b"a" * (50 << 20) + b"\n",
        ["single field longer than"],
    ),
    "100,000 columns": ("wide.csv", _wide(100_000), ["100,001 columns"]),
    "empty": ("empty.csv", b"", ["empty"]),
    "header only": ("header.csv", b"p_a,p_b,label\n", ["no data rows"]),
    "one class": ("one.csv", b"p_a,p_b,label\n0.2,0.8,b\n0.3,0.7,b\n", ["every label", "'b'"]),
    "NaN cell": ("nan.csv", b"p_a,p_b,label\n0.2,0.8,b\nnan,0.5,a\n", ["missing values"]),
    '"nan" text cell': ("nan2.csv", b'p_a,p_b,label\n0.2,0.8,b\n"nan",0.5,a\n', ["missing"]),
    "inf cell": ("inf.csv", b"p_a,p_b,label\n0.2,0.8,b\ninf,0,a\n", ["infinite"]),
    "labels -1/1 for a score": ("pm.csv", b"score,label\n0.2,-1\n0.7,1\n", ["-1", "as 0"]),
    "labels 1/2 for a score": ("12.csv", b"score,label\n0.2,1\n0.7,2\n", ["{1, 2}", "recode"]),
    "labels yes/no for a score": ("yn.csv", b"score,label\n0.2,no\n0.7,yes\n", ["'yes'", "recode"]),
    "truncated npy member": ("cut.npz", _truncated_member(), ["truncated", "(100, 2)"]),
    "Parquet text that is not a number": (
        "text.parquet",
        _parquet(pa.table({"p_a": ["0.2", "x"], "p_b": ["0.8", "0.3"], "label": ["b", "a"]})),
        ["column 'p_a'", "found 'x' at row 2 (1-based)"],
    ),
    "1 MB model names, one dictionary entry": (
        "dict.parquet",
        _one_megabyte_dictionary(),
        ["model column 'model'", "1,048,576 characters", "rows 1, 2", "at most 200"],
    ),
    "1 MB model names, distinct": (
        "names.parquet",
        _one_megabyte_names(),
        ["column 'model'", "bytes per row", "footer", "at most 200"],
    ),
    "201-character class name": (
        "long.csv",
        f"p_a,p_{LONG},label\n0.2,0.8,a\n0.7,0.3,a\n".encode(),
        ["201 characters long", "column 2", "at most 200"],
    ),
    "201-character model name": (
        "longm.csv",
        f"model,p_a,p_b,label\nm,0.2,0.8,a\n{LONG},0.7,0.3,b\n".encode(),
        ["model column 'model'", "201 characters", "data row 2"],
    ),
    "201-character label": (
        "longl.csv",
        f"p_a,p_b,label\n0.2,0.8,a\n0.7,0.3,{LONG}\n".encode(),
        ["label column 'label'", "201 characters", "data row 2"],
    ),
}

#: name -> (file name, content, (n_samples, class names)) of odd files that must load.
ACCEPTED = {
    "UTF-8 BOM": ("bom.csv", b"\xef\xbb\xbf" + GOOD, (4, ("a", "b"))),
    "UTF-16 with BOM": ("utf16.csv", GOOD.decode().encode("utf-16"), (4, ("a", "b"))),
    "carriage returns only": ("mac.csv", GOOD.replace(b"\n", b"\r"), (4, ("a", "b"))),
    "CRLF": ("dos.csv", GOOD.replace(b"\n", b"\r\n"), (4, ("a", "b"))),
    "class names -1/1": (
        "pm1.csv",
        b"p_-1,p_1,label\n0.2,0.8,-1\n0.7,0.3,1\n",
        (2, ("-1", "1")),
    ),
    "class names yes/no": (
        "yesno.csv",
        b"p_no,p_yes,label\n0.2,0.8,yes\n0.7,0.3,no\n",
        (2, ("no", "yes")),
    ),
    "Parquet numbers stored as text": (
        "text.parquet",
        _parquet(pa.table({"p_a": ["0.2", "0.7"], "p_b": ["0.8", "0.3"], "label": ["b", "a"]})),
        (2, ("a", "b")),
    ),
}


@pytest.fixture(scope="module")
def dash_app(tmp_path_factory):
    from app.config import AppConfig

    config = AppConfig(
        cache_dir=tmp_path_factory.mktemp("hostile"),
        secret_key="hostile-input-secret-0123456789",
        max_upload_mb=64,
        max_models_per_session=500,
    )
    return create_app(config)


@pytest.fixture(scope="module")
def session(dash_app, dash_tab):
    """A tab that has a good model loaded."""
    tab = dash_tab(flask_client=dash_app.server.test_client()).load()
    status, body = tab.upload("good.csv", GOOD * 1)
    assert status == 200 and body["models"], body
    return tab, body["models"][0]


def _good_model_survives(tab, good) -> None:
    status, _, layout = tab.get("/_dash-layout")
    assert status == 200 and good["handle"].encode() in layout
    out = tab.view([good["handle"]], maps=[])
    kids = out["reliability-grid.children"]
    assert any(k["props"]["figure"]["data"] for k in kids), out.get("message.children")


def _post(tab, name, content):
    status, _, body = tab.request("POST", "/api/upload", files=[(name, content)])
    return status, json.loads(body)


@pytest.mark.parametrize("case", list(REJECTED))
def test_the_loader_refuses_with_a_specific_message(case):
    name, content, words = REJECTED[case]
    with pytest.raises(CalibrationInputError) as info:
        load_predictions(content, file_name=name)
    message = str(info.value)
    assert all(w in message for w in words), message
    assert len(message) < 2000


@pytest.mark.parametrize("case", list(REJECTED))
def test_the_upload_route_answers_with_that_message_and_keeps_the_models(session, case):
    tab, good = session
    name, content, words = REJECTED[case]
    status, body = _post(tab, name, content)
    assert status == 200 and body["models"] == []
    (error,) = body["errors"]
    assert error["file"] == name and error["error"].startswith(f"{name}: ")
    assert all(w in error["error"] for w in words), error
    assert "Traceback" not in error["error"] and "/tmp" not in error["error"]
    _good_model_survives(tab, good)


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_odd_but_valid_files_load_in_the_loader_and_the_route(session, case):
    tab, _ = session
    name, content, (n, classes) = ACCEPTED[case]
    (pred,) = load_predictions(content, file_name=name)
    assert (pred.n_samples, pred.class_names) == (n, classes)
    status, body = _post(tab, name, content)
    assert status == 200 and not body["errors"], body
    (model,) = body["models"]
    assert (model["n_samples"], tuple(model["class_names"])) == (n, classes)


# ------------------------------------------------------------------ bombs
def _gzip_bomb(expanded_mb: int) -> bytes:
    """Gzip members of 8 MB of zeros after a valid header: about 1/1000 of ``expanded_mb``."""
    member = gzip.compress(b"\0" * (8 << 20), compresslevel=9)
    head = gzip.compress(b"p_a,p_b,label\n0.2,0.8,b\n")
    return head + member * (expanded_mb // 8)


def _zip_bomb(expanded_mb: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("probs.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(
                fh, {"descr": "<f8", "fortran_order": False, "shape": (expanded_mb << 16, 2)}
            )
            zeros = b"\0" * (1 << 20)
            for _ in range(expanded_mb):
                fh.write(zeros)
        zf.writestr("labels.npy", _npy(np.zeros(4, dtype=np.int64)))
    return buf.getvalue()


def _npy(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def _parquet_bomb(rows: int) -> bytes:
    table = pa.table({"p_a": np.zeros(rows), "p_b": np.ones(rows), "label": ["b"] * rows})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def _limits(app):
    return app.server.extensions["calibration_dashboard"].upload_parser.limits


@pytest.fixture(scope="module")
def small_limit_app(tmp_path_factory):
    from app.config import AppConfig

    config = AppConfig(
        cache_dir=tmp_path_factory.mktemp("bombs"),
        secret_key="hostile-input-secret-0123456789",
        max_upload_mb=1,
    )
    return create_app(config)


@pytest.mark.parametrize(
    ("name", "make", "words"),
    [
        ("bomb.csv.gz", lambda: _gzip_bomb(512), ["expands to more than the 1 MB"]),
        ("bomb.csv", lambda: _gzip_bomb(64), ["expands to more than the 1 MB"]),
        ("bomb.npz", lambda: _zip_bomb(64), ["expands to more than the 1 MB"]),
        ("wide.npz", lambda: _npz(probs=np.zeros((1, 30_000)), labels=[0]), ["30,000 columns"]),
    ],
)
def test_compressed_bombs_are_stopped_before_parsing(
    small_limit_app, dash_tab, monkeypatch, name, make, words
):
    content = make()
    assert len(content) < 1 << 20  # it passes the plain upload limit
    tab = dash_tab(flask_client=small_limit_app.server.test_client()).load()
    status, body = tab.upload("good.csv", GOOD)
    good = body["models"][0]
    status, body = _post(tab, name, content)
    assert status == 200 and body["models"] == []
    (error,) = body["errors"]
    assert all(w in error["error"] for w in words), error
    _good_model_survives(tab, good)
    # The route parses in a child (app.upload.parser); what the child runs, run here,
    # stops the bomb before the loader sees it.
    import app.upload.parser as parser_module

    def must_not_parse(*args, **kwargs):
        raise AssertionError("the loader ran on a bomb")

    monkeypatch.setattr(parser_module, "load_with_notices", must_not_parse)
    with pytest.raises(UploadTooLarge) as info:
        parser_module.parse_upload(io.BytesIO(content), name, _limits(small_limit_app))
    assert all(w in str(info.value) for w in words), info.value


def _float16_npz() -> bytes:
    """975 kB of float16 / int8 arrays (within 1 MB) that decode to 8.6 MB as float64."""
    rows, classes = 25_000, 19
    probs = np.full((rows, classes), 1 / classes, dtype=np.float16)
    return _npz(probs=probs, labels=(np.arange(rows) % classes).astype(np.int8))


@pytest.mark.parametrize(
    ("name", "make", "words"),
    [
        ("bomb.parquet", lambda: _parquet_bomb(2_000_000), ["2,000,000 rows", "8 MB", "footer"]),
        ("short.csv", lambda: b"p_a,p_b,label\n" + b"0,1,b\n1,0,a\n" * 87_000, ["8 MB"]),
        ("half.npz", _float16_npz, ["8 MB", "float64"]),
        ("dict.parquet", _one_megabyte_dictionary, ["1,048,576 characters", "at most 200"]),
    ],
)
def test_decoded_data_is_bounded_in_every_format(small_limit_app, dash_tab, name, make, words):
    """Within the 1 MB upload limit, each file would decode past 8 x 1 MB: refused, cheaply.

    The route parses in a child process, so the refusal is checked twice: the
    route's answer, and what the child runs (:func:`app.upload.parser.parse_upload`)
    run in this process, where Arrow's memory pool high-water mark (it only
    grows) bounds what the parse allocated in Arrow; the refused files would
    need from 9 MB (the CSV) to 20 GB (the dictionary) to load.
    """
    from app.upload.parser import parse_upload

    content = make()
    assert len(content) < 1 << 20  # it passes the plain upload limit
    tab = dash_tab(flask_client=small_limit_app.server.test_client()).load()
    status, body = tab.upload("good.csv", GOOD)
    good = body["models"][0]
    status, body = _post(tab, name, content)
    assert status == 200 and body["models"] == []
    (error,) = body["errors"]
    assert all(w in error["error"] for w in words), error
    _good_model_survives(tab, good)
    pool = pa.default_memory_pool()
    before = pool.max_memory()
    with pytest.raises(CalibrationInputError) as info:
        parse_upload(io.BytesIO(content), name, _limits(small_limit_app))
    assert pool.max_memory() - before < 16 << 20
    assert all(w in str(info.value) for w in words), info.value


class CountingStream(io.BytesIO):
    """A binary stream that counts the bytes handed out by its ``read*`` methods."""

    bytes_read = 0

    def read(self, size=-1):
        data = super().read(size)
        self.bytes_read += len(data)
        return data

    def read1(self, size=-1):
        data = super().read1(size)
        self.bytes_read += len(data)
        return data

    def readinto(self, buffer):
        n = super().readinto(buffer)
        self.bytes_read += n
        return n

    def readinto1(self, buffer):
        n = super().readinto1(buffer)
        self.bytes_read += n
        return n

    def readline(self, size=-1):
        data = super().readline(size)
        self.bytes_read += len(data)
        return data


def test_the_guard_reads_at_most_the_limit_of_a_bomb():
    """The guard stops decompressing once the limit is passed: it reads a sliver of the bomb.

    The work is bounded by the bytes taken from the upload, not by a clock:
    8 GB of zeros are about 8 MB of gzip, of which passing a 2 MB limit needs
    a few kB (gzip packs 1 MB of zeros into about 1 kB); the bound of 1 MB
    leaves room for the gzip reader's buffer, whose size varies by Python
    version, and is still an eighth of what decompressing it all reads.
    """
    content = _gzip_bomb(8 * 1024)  # 8 GB of zeros in about 8 MB
    bomb = CountingStream(content)
    with pytest.raises(UploadTooLarge, match="expands to more than the 2 MB"):
        check_expansion(bomb, "huge.gz", 2 << 20)
    assert 0 < bomb.bytes_read <= 1 << 20, (bomb.bytes_read, len(content))
    assert bomb.tell() == 0  # rewound for the loader


def test_the_guard_passes_ordinary_and_corrupt_files():
    ok = [
        gzip.compress(GOOD),
        _npz(probs=np.full((4, 2), 0.5), labels=[0, 1, 0, 1]),
        _parquet_bomb(100),
        GOOD,
        b"\x1f\x8b" + b"not really gzip",
        b"PK\x03\x04 truncated zip",
        b"PAR1 not parquet PAR1",
    ]
    for content in ok:
        stream = io.BytesIO(content)
        check_expansion(stream, "f", 1 << 20)
        assert stream.tell() == 0


def test_a_bomb_within_the_limit_still_loads(small_limit_app, dash_tab):
    rows = b"".join(b"0.2,0.8,b\n0.7,0.3,a\n" for _ in range(20_000))  # 400 kB
    content = zlib.compress(b"p_a,p_b,label\n" + rows, wbits=31)
    tab = dash_tab(flask_client=small_limit_app.server.test_client()).load()
    status, body = _post(tab, "fine.csv.gz", content)
    assert status == 200 and body["models"][0]["n_samples"] == 40_000


# ------------------------------------------------------------ file names
#: ``shown`` for a name whose cleaned form depends on how the client quotes it in the
#: multipart header. A backslash is the escape character of a quoted string there:
#: werkzeug's test client sends ``..\\..\\windows\\pwned.csv`` as is and werkzeug 3.1
#: unescapes it to ``....windowspwned.csv`` (shown as ``windowspwned.csv``), while a
#: client that escapes the backslashes gets ``pwned.csv``. Either is fine: such a name
#: is held only to the rules every shown name obeys (see :func:`_assert_safe_name`).
#: ``app.upload.clean_file_name`` itself is tested on the raw names in
#: ``tests/app/test_upload.py``.
ANY_SAFE_NAME = "any safe name"
#: ``shown`` for a name too long to show whole: shortened with "…", extension kept.
SHORTENED = "shortened"


def _assert_safe_name(source: str, extension: str | None) -> None:
    """What every shown file name obeys, whatever the client sent.

    No path separator, no traversal (no leading dot, no ``..``), no control
    or invisible formatting (bidi) character, at most 120 characters, and
    the extension kept when the name had one.
    """
    assert source and len(source) <= 120, source
    assert "/" not in source and "\\" not in source, source
    assert not source.startswith(".") and ".." not in source, source
    assert all(unicodedata.category(ch)[0] != "C" for ch in source), ascii(source)
    if extension is not None:
        assert source.endswith(extension), source


def _paths_named_by(raw: str, bases) -> set[str]:
    """Where a server that used ``raw`` as a path would have written it.

    ``raw`` is joined to each base directory (absolute names replace it),
    with ``/`` and with ``\\`` read as the separator.
    """
    names = {raw, raw.replace("\\", "/")} - {""}
    return {os.path.normpath(os.path.join(base, name)) for base in bases for name in names}


def _existing(paths) -> set[str]:
    return {p for p in paths if os.path.lexists(p)}  # False for names too long, never raises


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("../../../../tmp/pwned.csv", "pwned.csv"),
        ("..\\..\\windows\\pwned.csv", ANY_SAFE_NAME),
        ("/etc/passwd.csv", "passwd.csv"),
        ("\u202egnp.csv", "gnp.csv"),
        ("evil\u202e\u2066name\u200f.csv", "evilname.csv"),
        ("bell\x07tab\t\x1b[31m.csv", "belltab[31m.csv"),
        ("x" * 5000 + ".csv", SHORTENED),
        ("..", "upload"),
        ("", "upload"),
    ],
)
def test_hostile_file_names_are_cleaned_and_never_used_as_paths(session, raw, shown):
    tab, _ = session
    store = tab.flask.application.extensions["calibration_dashboard"].store
    upload_dir = store.directory.parents[1] / "uploads"
    cache_dir = upload_dir.parent
    targets = _paths_named_by(raw, [Path.cwd(), upload_dir, cache_dir, store.directory])
    existed = _existing(targets)
    before = set(Path("/tmp").glob("*pwned*"))
    status, _, body = tab.request("POST", "/api/upload", files=[(raw, GOOD)])
    body = json.loads(body)
    assert status in (200, 400)
    if status == 400:  # werkzeug drops a part without a file name: nothing was stored
        assert raw == ""
        return
    if shown == "upload":  # no usable name left: no extension, so the format is unknown
        (error,) = body["errors"]
        assert error["file"] == "upload" and "unsupported file type" in error["error"]
        source = error["file"]
    else:
        (model,) = body["models"]
        source = model["source"]
    _assert_safe_name(source, None if shown == "upload" else ".csv")
    if shown == SHORTENED:
        assert "…" in source and source.startswith("x")
    elif shown == ANY_SAFE_NAME:
        assert source.endswith("pwned.csv"), source  # the file's own name is kept
    else:
        assert source == shown
    # Nothing was written under the given name, and the upload dir holds no leftovers.
    assert _existing(targets) == existed
    assert set(Path("/tmp").glob("*pwned*")) == before
    assert not any("pwned" in p.name or "passwd" in p.name for p in cache_dir.rglob("*"))
    assert list(upload_dir.iterdir()) == []


# --------------------------------------------------------------------- fuzz
NAMES = st.sampled_from(
    ["f.csv", "f.tsv", "f.txt", "f.csv.gz", "f.npz", "f.parquet", "f", "f.pkl", "f.xlsx"]
) | st.text(min_size=0, max_size=40)
PREFIXES = st.sampled_from(
    [b"", b"\x1f\x8b", b"PK\x03\x04", b"PAR1", b"\x80\x04", b"\xef\xbb\xbf", b"\xff\xfe"]
)
CELLS = st.sampled_from(["0.2", "0.8", "nan", "-1", "1e309", '"', "a", "", "=cmd()", "\r", "é"])


@st.composite
def uploads(draw):
    kind = draw(st.sampled_from(["bytes", "table"]))
    if kind == "bytes":
        return draw(NAMES), draw(PREFIXES) + draw(st.binary(max_size=2000))
    n_cols = draw(st.integers(1, 5))
    header = draw(
        st.lists(
            st.sampled_from(["p_a", "p_b", "label", "score", "model", "x"]),
            min_size=n_cols,
            max_size=n_cols,
        )
    )
    rows = draw(st.lists(st.lists(CELLS, min_size=n_cols, max_size=n_cols), max_size=8))
    text = "\n".join(",".join(r) for r in [header, *rows])
    data = text.encode()
    if draw(st.booleans()):
        data = gzip.compress(data)
    return draw(NAMES), data


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(upload=uploads())
def test_fuzz_the_upload_route(session, upload):
    tab, good = session
    name, content = upload
    status, _, body = tab.request("POST", "/api/upload", files=[(name, content)])
    assert status in (200, 400), body[:300]
    answer = json.loads(body)
    assert set(answer) >= {"models", "errors"}
    text = json.dumps(answer)
    for marker in ("Traceback", "site-packages", 'File "', "/tmp/"):
        assert marker not in text
    for error in answer["errors"]:
        assert error["error"].strip()
        assert "unexpected error" not in error["error"], error  # every failure is explained
    status, _, layout = tab.get("/_dash-layout")
    assert good["handle"].encode() in layout


# ------------------------------------------------------------------ classes
def _classes_npz(classes: int, rows: int) -> bytes:
    rng = np.random.default_rng(classes)
    return _npz(probs=rng.dirichlet(np.ones(classes), size=rows), labels=np.arange(rows) % classes)


def _store_files(app) -> int:
    root = Path(app.server.extensions["calibration_dashboard"].store.directory)
    return sum(1 for p in root.rglob("*") if p.is_file())


def test_a_thousand_class_model_takes_a_few_files_and_every_view_works(dash_app, dash_tab):
    """24,000 classes once made 48,006 store files; now MAX_CLASSES bounds K and a model is
    stored in a constant number of files, read back (memory-mapped) by every view."""
    tab = dash_tab(flask_client=dash_app.server.test_client()).load()
    before = _store_files(dash_app)
    status, body = tab.upload("k1000.npz", _classes_npz(1000, 2000))
    assert status == 200 and not body["errors"], body
    (model,) = body["models"]
    assert model["n_classes"] == 1000
    assert _store_files(dash_app) - before <= 6  # 4 arrays, the record, the session's list
    for view in ({}, {"notion": "class", "class_value": "999"}, {"notion": "class"}):
        out = tab.view([model["handle"]], maps=[], **view)
        figures = [k["props"]["figure"] for k in out["reliability-grid.children"]]
        assert figures and all(f["data"] for f in figures), (view, out.get("message.children"))
    status, body = tab.upload("k1001.npz", _classes_npz(1001, 1001))
    assert body["models"] == []
    assert "1,001 classes" in body["error"] and "MAX_CLASSES" in body["error"]
