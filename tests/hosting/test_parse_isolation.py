"""Uploads are parsed in a child process: its limits, its failures, what comes back.

:mod:`app.upload.parser` runs every parse in a fresh child of a forkserver
under ``RLIMIT_AS`` (``PARSE_MEMORY_LIMIT_MB``) and ``RLIMIT_CPU``
(``PARSE_TIME_LIMIT_SECONDS``). A parse past either limit, or a child that dies,
must give the user a clear message, leave the web process's memory where it
was and keep the session's models; a parse within them must give back exactly
what the loader gives in-process.
"""

from __future__ import annotations

import gzip
import io
import os
import signal
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import app.upload.parser as parser_module
from app.config import AppConfig, ConfigError
from app.factory import create_app
from app.upload.parser import ParseLimits, UploadParser, parse_upload

GOOD = b"p_a,p_b,label\n0.2,0.8,b\n0.7,0.3,a\n0.4,0.6,b\n0.9,0.1,a\n"
ROWS = 2_000_000


def _rss_mb() -> float:
    """This process's resident memory now (Linux ``VmRSS``), in MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise OSError("no VmRSS")


def _big_npz() -> bytes:
    """2,000,000 x 10 float64 probabilities (160 MB decoded) in about 0.5 MB of npz."""
    buf = io.BytesIO()
    probs = np.full((ROWS, 10), 0.1)
    np.savez_compressed(buf, probs=probs, labels=np.arange(ROWS) % 10)
    return buf.getvalue()


def _long_csv_gz() -> bytes:
    """10,000,000 rows of text (120 MB) gzipped to well under 1 MB: seconds of CPU to parse."""
    return gzip.compress(b"p_a,p_b,label\n" + b"0.25,0.75,b\n0.75,0.25,a\n" * 5_000_000, 6)


def _app(tmp_path, **overrides):
    config = AppConfig(
        cache_dir=tmp_path,
        secret_key="parse-isolation-secret-0123456789",
        max_upload_mb=200,
        **overrides,
    )
    return create_app(config)


def _tab_with_a_model(app, dash_tab):
    tab = dash_tab(flask_client=app.server.test_client()).load()
    status, body = tab.upload("good.csv", GOOD)
    assert status == 200 and body["models"], body
    return tab, body["models"][0]["handle"]


def _models_intact(tab, handle) -> None:
    status, _, layout = tab.get("/_dash-layout")
    assert status == 200 and handle.encode() in layout
    out = tab.view([handle], maps=[])
    assert any(k["props"]["figure"]["data"] for k in out["reliability-grid.children"])


def _parser(app) -> UploadParser:
    return app.server.extensions["calibration_dashboard"].upload_parser


def _as_file(content: bytes):
    stream = tempfile.TemporaryFile()
    stream.write(content)
    stream.seek(0)
    return stream


def test_a_parse_past_the_memory_limit_is_refused_and_the_server_does_not_grow(tmp_path, dash_tab):
    app = _app(tmp_path, parse_memory_limit_mb=100)
    tab, handle = _tab_with_a_model(app, dash_tab)
    content = _big_npz()
    before = _rss_mb()
    status, body = tab.upload("big.npz", content)
    assert _rss_mb() - before < 64  # the 160 MB of arrays were never in this process
    assert status == 200 and body["models"] == []
    (error,) = body["errors"]
    assert error["error"].startswith("big.npz: this file needs more than 100 MB of memory")
    assert "PARSE_MEMORY_LIMIT_MB" in error["error"]
    _models_intact(tab, handle)
    # The same file within a limit it fits: the refusal was the limit's.
    limits = _parser(app).limits
    roomy = UploadParser(ParseLimits(limits.upload_bytes, limits.max_classes, 1024, 60))
    with _as_file(content) as stream:
        (pred,) = roomy.parse(stream, "big.npz").predictions
    assert pred.probs.shape == (ROWS, 10)


def test_a_parse_past_the_cpu_limit_is_stopped_with_a_message(tmp_path, dash_tab):
    app = _app(tmp_path, parse_time_limit_seconds=1, parse_memory_limit_mb=4096)
    tab, handle = _tab_with_a_model(app, dash_tab)
    status, body = tab.upload("long.csv.gz", _long_csv_gz())
    assert status == 200 and body["models"] == []
    (error,) = body["errors"]
    assert error["error"].startswith("long.csv.gz: this file took more than 1 s to parse")
    assert "PARSE_TIME_LIMIT_SECONDS" in error["error"]
    _models_intact(tab, handle)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGABRT])
def test_a_child_killed_mid_parse_gives_a_message(tmp_path, dash_tab, monkeypatch, signum):
    """A child that dies by a signal (the OOM killer, Arrow aborting on a failed allocation)."""
    app = _app(tmp_path)
    tab, handle = _tab_with_a_model(app, dash_tab)
    killed = []

    class KillingReduction:
        """Kills the child instead of handing it the file: it never answers."""

        @staticmethod
        def send_handle(conn, fd, pid):
            os.kill(pid, signum)
            killed.append(pid)

    monkeypatch.setattr(parser_module, "reduction", KillingReduction)
    status, body = tab.upload("scores.csv", GOOD)
    monkeypatch.undo()
    assert killed and status == 200 and body["models"] == []
    (error,) = body["errors"]
    assert error["error"].startswith("scores.csv: this file needs more than")
    assert "Traceback" not in error["error"]
    _models_intact(tab, handle)
    status, body = tab.upload("again.csv", GOOD)  # the next upload gets a fresh child
    assert status == 200 and body["models"], body


def test_an_unexpected_error_in_the_child_is_logged_with_its_traceback(tmp_path, dash_tab, caplog):
    app = _app(tmp_path)
    tab, handle = _tab_with_a_model(app, dash_tab)
    # The child runs parse_upload with these limits: a negative class bound is a bug,
    # not a user error (a TypeError in the child).
    parser = _parser(app)
    limits = parser.limits
    parser.limits = ParseLimits(limits.upload_bytes, None, limits.memory_mb, limits.cpu_seconds)
    try:
        status, body = tab.upload("scores.csv", GOOD)
    finally:
        parser.limits = limits
    assert status == 200 and body["models"] == []
    (error,) = body["errors"]
    assert "unexpected error; request id" in error["error"]
    assert "Traceback" not in error["error"]
    logged = "\n".join(r.getMessage() + str(r.exc_info and r.exc_info[1]) for r in caplog.records)
    assert "TypeError" in logged and "check_classes" in logged
    _models_intact(tab, handle)


def _rich_csv() -> bytes:
    """Two models with logits and soft labels (h_ columns), string labels."""
    rng = np.random.default_rng(3)
    lines = ["model,logit_x,logit_y,logit_z,h_x,h_y,h_z,label"]
    for model in ("m1", "m2"):
        for i in range(50):
            z = rng.normal(size=3)
            h = rng.dirichlet(np.ones(3))
            cells = [model, *(f"{v:.17g}" for v in (*z, *h)), "xyz"[i % 3]]
            lines.append(",".join(cells))
    return ("\n".join(lines) + "\n").encode()


def test_what_comes_back_is_what_the_loader_gives(tmp_path):
    app = _app(tmp_path)
    parser = _parser(app)
    content = _rich_csv()
    with _as_file(content) as stream:
        child = parser.parse(stream, "rich.csv")
    here = parse_upload(io.BytesIO(content), "rich.csv", parser.limits)
    assert [p.name for p in child.predictions] == ["m1", "m2"]
    for got, want in zip(child.predictions, here.predictions, strict=True):
        assert got.class_names == want.class_names == ("x", "y", "z")
        for attr in ("probs", "labels", "logits"):
            a, b = getattr(got, attr), getattr(want, attr)
            assert a.dtype == b.dtype and np.array_equal(a, b)
            assert not a.flags.writeable
    assert set(child.soft_labels) == {"m1", "m2"}
    for name, soft in here.soft_labels.items():
        assert np.array_equal(child.soft_labels[name], soft)


def test_a_threaded_gunicorn_worker_parses_in_children_and_stays_small(
    tmp_path, gunicorn_server, dash_tab
):
    """gthread (4 threads): a refused parse and good uploads at once; the worker is unharmed.

    The children come from the forkserver the worker started when it warmed up
    (never a fork of the threaded worker): the worker's children are that
    forkserver and multiprocessing's resource tracker, and the forkserver has
    reaped every parser once the answers are in.
    """
    import psutil

    srv = gunicorn_server(
        tmp_path,
        workers=1,
        threads=4,
        env={"MAX_UPLOAD_MB": "200", "PARSE_MEMORY_LIMIT_MB": "100"},
    )
    try:
        (pid,) = srv.worker_pids()
        worker = psutil.Process(pid)
        children = worker.children()
        (forkserver,) = [c for c in children if "forkserver" in " ".join(c.cmdline())]
        rss = worker.memory_info().rss
        tabs = [dash_tab(base_url=srv.url) for _ in range(4)]
        for tab in tabs:
            tab.get("/_dash-dependencies")  # gets a session cookie
        files = [("big.npz", _big_npz())] + [(f"good{i}.csv", GOOD) for i in range(3)]
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda tab, f: tab.upload(*f), tabs, files))
        (status, body), *good = answers
        assert status == 200 and "needs more than 100 MB" in body["error"]
        assert all(s == 200 and b["models"] and not b["errors"] for s, b in good), good
        assert worker.memory_info().rss - rss < 64 << 20
        assert srv.worker_pids() == [pid]
        assert worker.children() == children and forkserver.children() == []
    finally:
        srv.stop()


def test_the_limits_come_from_the_environment(tmp_path):
    env = {"CACHE_DIR": str(tmp_path), "MAX_UPLOAD_MB": "50"}
    config = AppConfig.from_env(env)
    assert config.parse_memory_limit_mb is None and config.parse_time_limit_seconds == 60
    limits = _parser(create_app(config)).limits
    assert (limits.memory_mb, limits.cpu_seconds) == (8 * 50 + 256, 60)
    config = AppConfig.from_env(
        {**env, "PARSE_MEMORY_LIMIT_MB": "300", "PARSE_TIME_LIMIT_SECONDS": "5"}
    )
    limits = _parser(create_app(config)).limits
    assert (limits.memory_mb, limits.cpu_seconds) == (300, 5)
    with pytest.raises(ConfigError, match="PARSE_MEMORY_LIMIT_MB must be at least 64"):
        AppConfig.from_env({**env, "PARSE_MEMORY_LIMIT_MB": "10"})


def test_an_upload_waits_for_a_parse_slot_and_is_told_to_retry_when_none_frees(tmp_path, dash_tab):
    app = _app(tmp_path, parse_concurrency=1, parse_time_limit_seconds=1)
    assert AppConfig.from_env({"PARSE_CONCURRENCY": "3"}).parse_concurrency == 3
    tab, handle = _tab_with_a_model(app, dash_tab)
    slots = _parser(app)._slots
    assert slots.acquire(timeout=5)  # another upload of this worker holds the only slot
    try:
        status, body = tab.upload("second.csv", GOOD)
    finally:
        slots.release()
    assert status == 200 and body["models"] == []
    (error,) = body["errors"]
    assert error["error"].startswith("second.csv: the server is parsing 1 other upload(s)")
    assert "PARSE_CONCURRENCY" in error["error"] and "Try again" in error["error"]
    _models_intact(tab, handle)
    status, body = tab.upload("third.csv", GOOD)  # the slot is free again: parsed
    assert status == 200 and len(body["models"]) == 1, body
