"""Per-session quotas, the bounded disk store with eviction, and expired sessions.

An expired or evicted session always reads "your data expired, please upload
again" in the page (HTTP 200), never an HTTP error.
"""

from __future__ import annotations

import json

import pytest

from app.factory import create_app

EXPIRED = "your data expired, please upload again"


def _store(dash_app):
    return dash_app.server.extensions["calibration_dashboard"].store


def _tab(dash_app, dash_tab):
    return dash_tab(flask_client=dash_app.server.test_client()).load()


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


def test_the_disk_store_is_bounded_and_evicts_the_least_recently_used(
    hosting_config, dash_tab, make_csv
):
    limit_mb = 4
    dash_app = create_app(hosting_config(cache_size_limit_mb=limit_mb, memory_cache_mb=0))
    store = _store(dash_app)
    tabs, handles, volumes = [], [], []
    for i in range(8):
        tab = _tab(dash_app, dash_tab)
        status, body = tab.upload(f"s{i}.csv", make_csv(n=20_000, k=3, seed=i))
        assert status == 200 and not body["errors"], body
        tabs.append(tab)
        handles.append(body["models"][0]["handle"])
        volumes.append(store.cache.volume())
    one_model = 2.6 * (1 << 20)  # 20,000 x 3 arrays and their sorted scores
    assert max(volumes) <= limit_mb * (1 << 20) + one_model, volumes
    results = [_view(t, h) for t, h in zip(tabs, handles, strict=True)]
    assert results[-1][0]  # the newest session works
    evicted = [msg for has, msg in results if not has]
    assert len(evicted) >= 4  # 8 x 2.6 MB do not fit in 4 MB
    assert all(EXPIRED in msg for msg in evicted)


def test_an_expired_session_reads_your_data_expired(hosting_config, dash_tab, make_csv, wall_clock):
    # A long TTL, and a jump of the wall clock past it instead of a sleep: nothing
    # expires while the session is set up, however slow the machine.
    ttl = 3600
    dash_app = create_app(hosting_config(session_ttl_seconds=ttl))
    store = _store(dash_app)
    tab = _tab(dash_app, dash_tab)
    (model,) = tab.upload("old.csv", make_csv(n=300, model="old"))[1]["models"]
    out = tab.call(
        "download-url.data",
        ["export-calibrated-csv.n_clicks"],
        {"export-calibrated-csv.n_clicks": 1, "model-select.value": [model["handle"]]},
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
