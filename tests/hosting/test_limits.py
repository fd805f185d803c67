"""Per-session quotas, the hard bound of the disk store, and expired or evicted sessions.

An expired session reads "your data expired, please upload again" in the
page, an evicted one that its data was "removed to make room" (HTTP 200),
never an HTTP error. A full store refuses newcomers instead of evicting
data in use.
"""

from __future__ import annotations

import itertools
import json

import pytest

from app.factory import create_app, finish_setup
from app.services.fit import run_fits

EXPIRED = "your data expired, please upload again"
LOST = "Your previous session could not be restored"


def _store(dash_app):
    return dash_app.server.extensions["calibration_dashboard"].store


#: A distinct client address for each tab: the store's quota per client applies per address.
_ADDRESSES = (f"192.0.2.{i}" for i in itertools.count(1))


def _tab(dash_app, dash_tab):
    """A fresh session of a new client (its own address)."""
    client = dash_app.server.test_client()
    client.environ_base["REMOTE_ADDR"] = next(_ADDRESSES)
    return dash_tab(flask_client=client).load()


def _view(tab, handle):
    """``(has data, messages)`` of the view of one model."""
    out = tab.view([handle], maps=[])
    kids = out["reliability-grid.children"]
    has = any(k["props"]["figure"]["data"] for k in kids)
    return has, json.dumps(out.get("message.children"))


def test_models_per_session_quota(hosting_config, dash_tab, make_csv):
    dash_app = create_app(hosting_config(max_models_per_session=2))
    tab, other = _tab(dash_app, dash_tab), _tab(dash_app, dash_tab)
    handles = [tab.upload(f"m{i}.csv", make_csv(n=200, seed=i))[1] for i in range(2)]
    status, body = tab.upload("m2.csv", make_csv(n=200, seed=2))
    assert status == 200 and body["models"] == []
    assert "at most 2 are kept" in body["errors"][0]["error"]
    for h in handles:
        assert _view(tab, h["models"][0]["handle"])[0]
    assert other.upload("mine.csv", make_csv(n=200))[1]["models"]  # per session


def test_bytes_per_session_quota(hosting_config, dash_tab, make_csv):
    dash_app = create_app(hosting_config(session_quota_mb=1))
    tab, other = _tab(dash_app, dash_tab), _tab(dash_app, dash_tab)
    small = tab.upload("small.csv", make_csv(n=2000, k=3))[1]["models"][0]
    status, body = tab.upload("big.csv", make_csv(n=20_000, k=3, seed=1))
    assert status == 200 and body["models"] == []
    error = body["errors"][0]["error"]
    assert "quota" in error and "1.0 MB" in error
    assert _view(tab, small["handle"])[0]
    assert other.upload("mine.csv", make_csv(n=2000))[1]["models"]


def _disk_bytes(dash_app) -> int:
    """The store's size on disk: every file under its directory (database, log, values)."""
    root = _store(dash_app).directory
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def _page_messages(tab) -> str:
    """The layout of a reloaded page, messages included (the page, then its layout)."""
    assert tab.get("/")[0] == 200
    status, _, body = tab.get("/_dash-layout")
    assert status == 200
    return body.decode()


def test_a_full_store_refuses_newcomers_and_keeps_active_users_data(
    hosting_config, dash_tab, make_csv
):
    # Five users upload, then fresh sessions (of new clients: one client alone is bounded
    # by its own quota, tests/app/test_fair_storage.py) upload until the store is full:
    # they are refused, nobody active is evicted (nobody is over its fair share), and
    # the store stays under its bound on disk after every upload.
    limit_mb = 24
    dash_app = create_app(
        hosting_config(cache_size_limit_mb=limit_mb, session_quota_mb=6, memory_cache_mb=0)
    )
    users = []
    for i in range(5):
        tab = _tab(dash_app, dash_tab)
        status, body = tab.upload(f"user{i}.csv", make_csv(n=10_000, k=3, seed=i))
        assert status == 200 and not body["errors"], body
        users.append((tab, body["models"][0]["handle"]))
    sizes, refused = [], []
    big = make_csv(n=20_000, k=3, seed=99)
    for _ in range(12):
        attacker = _tab(dash_app, dash_tab)
        for j in range(2):
            status, body = attacker.upload(f"big{j}.csv", big)
            assert status == 200
            refused.extend(e["error"] for e in body["errors"])
            sizes.append(_disk_bytes(dash_app))
    assert max(sizes) <= limit_mb << 20, [f"{s / (1 << 20):.1f}" for s in sizes]
    assert refused, "the attack never filled the store: the test proves nothing"
    assert all("server is full right now" in e for e in refused), refused
    assert all("CACHE_SIZE_LIMIT_MB" in e and "reload" not in e for e in refused)
    for tab, handle in users:
        has, messages = _view(tab, handle)
        assert has, messages


def test_idle_sessions_are_evicted_to_make_room_and_told_so(
    hosting_config, dash_tab, make_csv, wall_clock
):
    limit_mb = 12  # the demo (3 MB) and two of these uploads (2.6 MB each), not three
    dash_app = create_app(
        hosting_config(
            cache_size_limit_mb=limit_mb,
            session_quota_mb=6,
            idle_eviction_seconds=600,
            memory_cache_mb=0,
        )
    )
    idle, active = _tab(dash_app, dash_tab), _tab(dash_app, dash_tab)
    (idle_model,) = idle.upload("idle.csv", make_csv(n=20_000, k=3, seed=1))[1]["models"]
    wall_clock.advance(700)  # idle for longer than IDLE_EVICTION_SECONDS, well within the TTL
    (active_model,) = active.upload("active.csv", make_csv(n=20_000, k=3, seed=2))[1]["models"]
    newcomer = _tab(dash_app, dash_tab)
    status, body = newcomer.upload("new.csv", make_csv(n=20_000, k=3, seed=3))
    assert status == 200 and not body["errors"], body  # room made from the idle session
    assert _disk_bytes(dash_app) <= limit_mb << 20
    assert _view(active, active_model["handle"])[0]  # the active user keeps everything
    # The idle user's open tab, and its reloaded page, say why the data is gone.
    has, messages = _view(idle, idle_model["handle"])
    assert not has and "removed to make room" in messages and EXPIRED not in messages
    assert "removed to make room" in _page_messages(idle)
    # Until it uploads again.
    assert idle.upload("again.csv", make_csv(n=300, seed=4))[1]["models"]
    assert "removed to make room" not in _page_messages(idle)


def test_an_expired_session_reads_your_data_expired(hosting_config, dash_tab, make_csv, wall_clock):
    # A long TTL, and a jump of the wall clock past it instead of a sleep: nothing
    # expires while the session is set up, however slow the machine.
    ttl = 3600
    dash_app = create_app(hosting_config(session_ttl_seconds=ttl))
    store = _store(dash_app)
    tab = _tab(dash_app, dash_tab)
    (model,) = tab.upload("old.csv", make_csv(n=300, model="old"))[1]["models"]
    ctx = dash_app.server.extensions["calibration_dashboard"]
    sid = ctx.sessions.verify(tab.cookie())[0]
    run_fits(ctx, sid, [model["handle"]], ["platt"], "folds", 2, 0.5, lambda _: None)
    out = tab.call(
        "download-url.data",
        ["export-calibrated-csv.n_clicks"],
        {
            "export-calibrated-csv.n_clicks": 1,
            "model-select.value": [model["handle"]],
            "maps.value": ["platt"],
            "folds.value": 2,
        },
    )
    export_url = out["download-url.data"]["url"]
    old_cookie = tab.cookie()
    old_sid = dash_app.server.extensions["calibration_dashboard"].sessions.verify(old_cookie)[0]
    assert old_sid and store.uploaded_models(old_sid)  # alive until the TTL has passed
    wall_clock.advance(ttl + 60)

    # The browser replays the expired cookie: a fresh session, and a readable message.
    tab.set_cookie(old_cookie)
    has, messages = _view(tab, model["handle"])
    assert not has and EXPIRED in messages
    assert tab.cookie() != old_cookie
    status, _, body = tab.call_raw(
        "download.data",
        ["export-metrics-csv.n_clicks"],
        {"export-metrics-csv.n_clicks": 1, "model-select.value": [model["handle"]]},
    )
    assert status == 200 and EXPIRED in body.decode()
    status, _, _ = tab.get(export_url)
    assert status == 404
    # The data itself expired in the store too, whoever asks.
    assert store.uploaded_models(old_sid) == []
    with pytest.raises(Exception, match="expired"):
        store.resolve(old_sid, model["handle"])
    # And a new upload works right away.
    assert tab.upload("new.csv", make_csv(n=300))[1]["models"]


def test_a_session_lost_to_a_new_key_or_its_age_is_told_once(
    hosting_config, dash_tab, make_csv, wall_clock
):
    ttl = 3600
    dash_app = create_app(hosting_config(session_ttl_seconds=ttl))
    tab = _tab(dash_app, dash_tab)
    assert LOST not in _page_messages(tab)  # a first visit is not a lost session
    tab.upload("mine.csv", make_csv(n=300))
    old_cookie = tab.cookie()

    # The operator changes SECRET_KEY: the old cookie no longer verifies.
    rotated = create_app(hosting_config(secret_key="another-secret-key-0123456789abcdef"))
    finish_setup(rotated)  # as every server does before its first request
    after_rotation = dash_tab(flask_client=rotated.server.test_client())
    after_rotation.set_cookie(old_cookie)
    assert LOST in _page_messages(after_rotation)
    assert LOST not in _page_messages(after_rotation)  # said once, not on every reload

    # The cookie outlives its TTL: the browser still sends it, the server says so.
    wall_clock.advance(ttl + 60)
    assert LOST in _page_messages(tab)
    assert LOST not in _page_messages(tab)


def test_fitted_maps_count_against_the_session_quota(hosting_config, dash_tab, make_csv):
    from app.services.fit import run_fits

    # 20,000 x 3 takes 2.6 MB with its sorted scores, and so does each calibrated copy.
    dash_app = create_app(hosting_config(session_quota_mb=6, memory_cache_mb=0))
    ctx = dash_app.server.extensions["calibration_dashboard"]
    tab = _tab(dash_app, dash_tab)
    (model,) = tab.upload("m.csv", make_csv(n=20_000, k=3))[1]["models"]
    sid = ctx.sessions.verify(tab.cookie())[0]
    used = ctx.store.cache.tag_bytes(sid)
    assert used > 2 << 20
    state = run_fits(
        ctx, sid, [model["handle"]], ["temperature", "histogram"], "split", 5, 0.5, lambda *_: None
    )
    assert "SESSION_QUOTA_MB" in state["error"] and "fitted map" in state["error"], state
    assert ctx.store.cache.tag_bytes(sid) > used  # what was fitted before the quota counts
    assert ctx.store.cache.tag_bytes(sid) <= 6 << 20
    status, body = tab.upload("more.csv", make_csv(n=20_000, k=3, seed=1))
    assert status == 200 and body["models"] == []
    assert "quota (uploads and fitted maps)" in body["errors"][0]["error"]
    assert _view(tab, model["handle"])[0]  # and the model itself is still there
