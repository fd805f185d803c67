"""Faults: a full or read-only cache directory, a failing calibrator.

Storage faults are real: the app's ``CACHE_DIR`` is a small tmpfs that is
filled up, or a read-only bind mount of it (root only; skipped otherwise).
The store keeps no predictions in memory (``MEMORY_CACHE_MB=0``), so
everything the session sees after the fault is read from the faulty disk.

The other two faults of the issue are covered elsewhere: a worker killed
mid-callback in ``test_gunicorn.py``; rapid setting changes in
``test_gunicorn.py`` (each answer matches its own settings) and in the
browser (``test_csp_browser.py``: the final figure matches the final
settings).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import uuid

import pytest

from app.analysis import UNCALIBRATED
from app.callbacks.view import render
from app.factory import create_app
from app.services.fit import run_fits
from app.settings import RawSettings
from app.store.disk import STORAGE_MESSAGE
from calibration_core.maps import available_maps, get_map_class

STORAGE_WORDS = "storage (CACHE_DIR) is full or read-only"


def _mount(*args) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def tmpfs(path, size_mb: int):
    path.mkdir(parents=True, exist_ok=True)
    try:
        _mount("-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path))
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {exc}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


@contextlib.contextmanager
def read_only(path):
    """``path`` read-only for new writes (a read-only bind mount over itself)."""
    _mount("--bind", str(path), str(path))
    try:
        _mount("-o", "remount,ro,bind", str(path))
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def fill(path) -> None:
    """Write filler files until the file system has not one byte left."""
    fd = os.open(path / f"filler-{uuid.uuid4().hex}", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, block)
    finally:
        os.close(fd)
    assert os.statvfs(path).f_bavail == 0


def _app(cache_dir, hosting_config):
    return create_app(hosting_config(cache_dir=cache_dir, memory_cache_mb=0))


def _view_has_data(tab, handle) -> tuple[bool, str]:
    out = tab.view([handle], maps=[])
    kids = out["reliability-grid.children"]
    has = any(k["props"]["figure"]["data"] for k in kids)
    return has, str(out.get("message.children"))


def _check_storage_fault(dash_app, tab, first, make_csv, stop_fault) -> None:
    # The upload during the fault gets a readable message, nothing else changes: 507 when
    # the file cannot even be received (full disk), else the file's error line.
    status, body = tab.upload("second.csv", make_csv(n=500, seed=2, model="second"))
    assert status in (200, 507) and body["models"] == []
    message = body["error"] if status == 507 else body["errors"][0]["error"]
    assert STORAGE_WORDS in message and "request id" not in message
    # The earlier model is still listed and drawn (read from the faulty disk), with a banner.
    status, _, layout = tab.get("/_dash-layout")
    assert first["handle"].encode() in layout
    has, messages = _view_has_data(tab, first["handle"])
    assert has and STORAGE_WORDS in messages
    # A fit cannot be saved either: a message, not a crash.
    ctx = dash_app.server.extensions["calibration_dashboard"]
    sid = ctx.sessions.verify(tab.cookie())[0]
    state = run_fits(ctx, sid, [first["handle"]], ["temperature"], "folds", 3, 0.5, lambda *_: None)
    assert state["error"] == STORAGE_MESSAGE
    # When the disk takes writes again, the banner goes at the next redraw (before
    # anything else is written), and uploads work again.
    stop_fault()
    has, messages = _view_has_data(tab, first["handle"])
    assert has and STORAGE_WORDS not in messages
    status, body = tab.upload("third.csv", make_csv(n=300, seed=3, model="third"))
    assert status == 200 and not body["errors"], body
    has, messages = _view_has_data(tab, body["models"][0]["handle"])
    assert has and STORAGE_WORDS not in messages
    assert _view_has_data(tab, first["handle"])[0]


def test_a_full_cache_directory(tmp_path, hosting_config, dash_tab, make_csv):
    with tmpfs(tmp_path / "cache", size_mb=24) as cache_dir:
        dash_app = _app(cache_dir, hosting_config)
        tab = dash_tab(flask_client=dash_app.server.test_client()).load()
        _, body = tab.upload("first.csv", make_csv(n=800, seed=1, model="first"))
        (first,) = body["models"]
        fill(cache_dir)

        def free():
            for f in cache_dir.glob("filler-*"):
                f.unlink()

        _check_storage_fault(dash_app, tab, first, make_csv, free)
        dash_app.server.extensions["calibration_dashboard"].store.close()


def test_a_read_only_cache_directory(tmp_path, hosting_config, dash_tab, make_csv):
    with tmpfs(tmp_path / "cache", size_mb=64) as cache_dir:
        dash_app = _app(cache_dir, hosting_config)
        tab = dash_tab(flask_client=dash_app.server.test_client()).load()
        _, body = tab.upload("first.csv", make_csv(n=800, seed=1, model="first"))
        (first,) = body["models"]
        with contextlib.ExitStack() as stack:
            stack.enter_context(read_only(cache_dir))
            with pytest.raises(OSError) as info:
                (cache_dir / "probe").write_bytes(b"x")
            assert info.value.errno == errno.EROFS
            _check_storage_fault(dash_app, tab, first, make_csv, stack.close)
        dash_app.server.extensions["calibration_dashboard"].store.close()


def test_a_start_on_an_unusable_cache_dir_is_a_clear_error(tmp_path, hosting_config):
    from app.config import ConfigError

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(ConfigError, match=r"CACHE_DIR .* cannot hold the disk store"):
        create_app(hosting_config(cache_dir=not_a_dir))


def test_one_failing_calibrator_fails_only_its_panel(
    tmp_path, hosting_config, dash_tab, make_csv, monkeypatch
):
    maps = [m for m in ("temperature", "isotonic", "platt") if m in available_maps()][:2]
    assert len(maps) == 2
    broken, working = maps
    cls = get_map_class(broken)

    def explode(self, *args, **kwargs):
        raise RuntimeError("numerical trouble in the broken map")

    monkeypatch.setattr(cls, "_fit", explode)
    dash_app = create_app(hosting_config())
    ctx = dash_app.server.extensions["calibration_dashboard"]
    tab = dash_tab(flask_client=dash_app.server.test_client()).load()
    _, body = tab.upload("m.csv", make_csv(n=600, k=3, seed=4, model="m"))
    handle = body["models"][0]["handle"]
    sid = ctx.sessions.verify(tab.cookie())[0]

    state = run_fits(ctx, sid, [handle], [broken, working], "folds", 3, 0.5, lambda *_: None)
    assert state["error"] is None  # the fit as a whole went through

    raw = RawSettings(handles=[handle], maps=[broken, working], folds=3, band="none")
    children, rows, _, _, _, messages, verdict, status = render(ctx, sid, raw, fit_state=state)
    by_map = {r["map"]: r for r in rows}
    assert by_map[working].get("ece") is not None and by_map[UNCALIBRATED].get("ece") is not None
    assert "numerical trouble" in by_map[broken]["status"] and by_map[broken].get("ece") is None
    (graph,) = children
    annotations = " ".join(a["text"] for a in graph.figure["layout"]["annotations"])
    annotations = annotations.replace("<br>", " ")
    assert f"{broken} failed:" in annotations and "numerical trouble" in annotations
    # The two working panels are drawn: one reliability curve each.
    assert len([t for t in graph.figure["data"] if t.get("mode") == "lines+markers"]) == 2
    assert not any("numerical trouble" in m for m in messages)  # no page-wide error
    assert status == state["summary"]  # the failed map is no longer pending
    # The verdict does not wait for the failed map: the others are compared, it is named.
    (card,) = verdict[1].children
    assert card.className != "verdict-card verdict-waiting"
    assert card.children[1].children[-1].children == f"not compared (pending or failed): {broken}"

    # The same through the page's callback: an answer, not an HTTP error.
    out = tab.view([handle], maps=[broken, working], folds=3, band="none")
    rows = {r["map"]: r for r in out["metrics-grid.rowData"]}
    assert rows[working]["ece"] is not None and "numerical trouble" in rows[broken]["status"]


def test_an_unexpected_failure_of_the_view_empties_the_diagram_slots(
    tmp_path, hosting_config, dash_tab, monkeypatch
):
    """The view's failure reply fits its outputs (diagram slots, keys): a message, no 500."""
    import app.callbacks.view as view_module

    dash_app = create_app(hosting_config())
    tab = dash_tab(flask_client=dash_app.server.test_client()).load()
    handles = tab.values["model-select.value"]
    assert tab.view(handles, n_bins=9)["reliability-grid.children"]

    def explode(*args, **kwargs):
        raise RuntimeError("a bug in drawing")

    monkeypatch.setattr(view_module, "render", explode)
    out = tab.view(handles, n_bins=11)
    assert out["reliability-grid.children"] == []
    assert out["view-keys.data"] == {}  # the next view writes every slot again
    (line,) = out["message.children"]
    assert "Something went wrong while drawing this view (request id" in line["props"]["children"]
    monkeypatch.undo()
    assert tab.view(handles, n_bins=12)["reliability-grid.children"]
