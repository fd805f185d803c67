"""A store that reads without writing (issue 30): uses written on a schedule, expiry that frees.

Reads of the disk store are plain ``SELECT`` statements; the session's last
use and the longer expiries are written by the sweeper at most once a minute
(:mod:`app.store.upkeep`); expired data leaves the disk and the process's
memory on the sweeper's schedule; a read that finds the store locked past its
retries is a message, not an HTTP 500.
"""

from __future__ import annotations

import time

import diskcache
import numpy as np
import pytest

from app.factory import create_app
from app.session import new_session_id
from app.settings import HeldOut
from app.store import disk
from app.store.budget import UPLOAD_SHARE
from app.store.data_store import DataStore, use_key
from app.store.disk import BUSY_MESSAGE, StorageBusy
from app.store.records import FitRecord
from calibration_core import Predictions

from .conftest import make_config

WRITES = ("BEGIN", "INSERT", "UPDATE", "DELETE", "REPLACE", "COMMIT")


def _pred(n=300, k=3, seed=0, name="model") -> Predictions:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    return Predictions.from_probs(p, rng.integers(0, k, n), name=name)


def _statements(store: DataStore) -> list[str]:
    """Every SQL statement this thread's connection to ``store`` runs from now on."""
    seen: list[str] = []
    store.cache._con.set_trace_callback(seen.append)
    return seen


def _writes(statements: list[str]) -> list[str]:
    return [s for s in statements if s.lstrip().upper().startswith(WRITES)]


def test_reading_a_session_its_models_and_fits_writes_nothing(tmp_path):
    heldout = HeldOut()
    writer = DataStore(tmp_path, sweep_seconds=0)
    sid = new_session_id()
    (info,) = writer.add_models(sid, [_pred()], "a.csv")
    record = FitRecord(map="uncalibrated", heldout=heldout.key, variant=None, params=[{"t": 1}])
    writer.put_fit(info.handle, record, None)
    reader = DataStore(tmp_path, memory_bytes=0, sweep_seconds=0)  # another worker: disk reads
    seen = _statements(reader)
    for _ in range(3):
        assert reader.uploaded_models(sid) == [info]
        assert reader.resolve(sid, info.handle) == info
        assert reader.predictions(info.handle).n_samples == 300
        assert reader.get_fit(info.handle, "uncalibrated", heldout, params=True) is not None
        assert not reader.was_evicted(sid)
    assert any(s.startswith("SELECT") for s in seen)
    assert _writes(seen) == []
    reader.upkeep()  # the noted uses are written here, once
    assert _writes(seen)


def test_a_session_use_is_written_at_most_once_a_minute(tmp_path, wall_clock):
    store = DataStore(tmp_path, sweep_seconds=0)
    other_worker = DataStore(tmp_path, sweep_seconds=0)
    sid = new_session_id()
    store.add_models(sid, [_pred()], "a.csv")
    seen = _statements(store)
    for _ in range(50):
        store.uploaded_models(sid)
    store.upkeep()
    first = store.cache.get(use_key(sid))
    assert first == pytest.approx(time.time(), abs=5)
    assert len([s for s in _writes(seen) if s.startswith("BEGIN")]) >= 1
    wall_clock.advance(30)
    store.uploaded_models(sid)
    other_worker.uploaded_models(sid)
    store.upkeep()
    other_worker.upkeep()
    assert store.cache.get(use_key(sid)) == first  # written 30 s ago: not again
    wall_clock.advance(31)
    store.uploaded_models(sid)
    store.upkeep()
    assert store.cache.get(use_key(sid)) > first + 60
    seen.clear()
    store.upkeep()  # no use since: nothing to write
    assert [s for s in _writes(seen) if "used:" in s or s.startswith("INSERT")] == []


def test_an_idle_session_is_evicted_before_an_active_one(tmp_path, wall_clock):
    store = DataStore(tmp_path, idle_eviction_seconds=600, ttl_seconds=86_400, sweep_seconds=0)
    idle, active, newcomer = new_session_id(), new_session_id(), new_session_id()
    store.add_models(idle, [_pred(n=5000, seed=1)], "idle.csv")
    (kept,) = store.add_models(active, [_pred(n=5000, seed=2)], "active.csv")
    wall_clock.advance(700)  # both uploaded > IDLE_EVICTION_SECONDS ago
    assert store.resolve(active, kept.handle) == kept  # but one of them is still working
    store.upkeep()
    # Room for half a model more: the newcomer's upload needs a session evicted.
    store.budget.bound = int((store.budget.usage() + 400_000) / UPLOAD_SHARE)
    store.add_models(newcomer, [_pred(n=5000, seed=3)], "new.csv")
    assert store.was_evicted(idle) and store.uploaded_models(idle) == []
    assert not store.was_evicted(active) and store.uploaded_models(active) == [kept]


def _value_files(store: DataStore) -> list:
    return list(store.directory.rglob("*.val"))


def test_expiry_frees_the_disk_and_the_memory_on_the_sweepers_schedule(tmp_path, wall_clock):
    ttl = 600
    store = DataStore(tmp_path, ttl_seconds=ttl, sweep_seconds=0.05)
    store.demo_models()  # the demo's file never expires
    demo_files = _value_files(store)
    sid = new_session_id()
    (info,) = store.add_models(sid, [_pred()], "a.csv")
    assert store.uploaded_models(sid) == [info]  # starts the sweeper
    store.memo(("metrics", info.handle, 15), lambda: 0.25)
    assert info.handle in store.memory_handles() and len(_value_files(store)) > len(demo_files)
    time.sleep(0.3)  # some rounds: nothing has expired yet
    assert info.handle in store.memory_handles() and len(_value_files(store)) > len(demo_files)
    wall_clock.advance(ttl + 1)
    deadline = time.monotonic() + 10
    while (
        store.memory_handles() or sorted(_value_files(store)) != sorted(demo_files)
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.memory_handles() == []
    assert sorted(_value_files(store)) == sorted(demo_files)
    calls = []
    assert store.memo(("metrics", info.handle, 15), lambda: calls.append(1) or 0.5) == 0.5
    assert calls == [1]  # the memo of the expired model was dropped too
    store.close()


def test_a_read_that_finds_the_store_locked_is_retried(tmp_path, monkeypatch):
    store = DataStore(tmp_path, sweep_seconds=0)
    sid = new_session_id()
    (info,) = store.add_models(sid, [_pred()], "a.csv")
    real_get, failures = diskcache.Cache.get, [diskcache.Timeout(), diskcache.Timeout()]

    def locked_twice(self, *args, **kwargs):
        if failures:
            raise failures.pop()
        return real_get(self, *args, **kwargs)

    monkeypatch.setattr(diskcache.Cache, "get", locked_twice)
    monkeypatch.setattr(disk.time, "sleep", lambda s: None)
    assert store.uploaded_models(sid) == [info]
    failures.extend([diskcache.Timeout()] * 10)
    with pytest.raises(StorageBusy, match="busy"):
        store.uploaded_models(sid)


def test_a_locked_store_gives_the_page_a_message_not_a_500(tmp_path, monkeypatch):
    dash_app = create_app(make_config(tmp_path))
    server = dash_app.server

    @server.route("/api/locked")
    def _locked():  # any other request that meets a locked store: 503 with the message
        return server.extensions["calibration_dashboard"].store.uploaded_models("some-session")

    client = server.test_client()
    assert client.get("/_dash-layout").status_code == 200  # the demo is loaded

    def locked(self, *args, **kwargs):
        raise diskcache.Timeout()

    monkeypatch.setattr(diskcache.Cache, "get", locked)
    monkeypatch.setattr(disk.time, "sleep", lambda s: None)
    response = client.get("/_dash-layout")
    assert response.status_code == 200
    assert BUSY_MESSAGE in response.get_data(as_text=True)
    response = client.get("/api/locked")
    assert response.status_code == 503 and response.headers["Retry-After"]
    assert response.get_json()["error"] == BUSY_MESSAGE


def test_an_upload_that_finds_the_store_locked_says_so(tmp_path, monkeypatch):
    store = DataStore(tmp_path, sweep_seconds=0)

    def locked(self, *args, **kwargs):
        raise diskcache.Timeout()

    monkeypatch.setattr(diskcache.Cache, "transact", locked)
    with pytest.raises(StorageBusy, match="busy"):
        store.add_models(new_session_id(), [_pred()], "a.csv")
