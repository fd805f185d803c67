"""Fair storage (issue 31, item 6): one client making many sessions cannot lock others out.

The store's bound is small (40 MB); one client address (or one signed-in user)
opens session after session and uploads until refused; another client's
3 MB CSV must still be stored, and the first client is told that its own
quota is reached, not that the server is full.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pandas as pd
import pytest

from app.factory import create_app
from app.upload import UPLOAD_PATH

from .conftest import make_config

GREEDY = "203.0.113.66"
OTHER = "198.51.100.7"
MB = 1 << 20


def csv_of_size(megabytes: float, k: int = 3, seed: int = 0) -> bytes:
    """A valid predictions CSV of about ``megabytes`` (probability columns and labels)."""
    rng = np.random.default_rng(seed)
    n = int(megabytes * MB / (k * 20 + 4))
    z = rng.normal(size=(n, k)) * 2.0
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(0, k - 1)
    frame = pd.DataFrame({f"p_c{j}": p[:, j] for j in range(k)})
    frame["label"] = np.array([f"c{j}" for j in range(k)], dtype=object)[y]
    return frame.to_csv(index=False).encode()


@pytest.fixture(scope="module")
def files():
    return {"greedy": csv_of_size(2.5, seed=1), "three_mb": csv_of_size(3.0, seed=2)}


def _upload(client, content: bytes, address: str, headers=None):
    data = {"file": [(io.BytesIO(content), "scores.csv")]}
    return client.post(
        UPLOAD_PATH,
        data=data,
        content_type="multipart/form-data",
        environ_base={"REMOTE_ADDR": address},
        headers=headers or {},
    )


def _fill_from_many_sessions(app, content: bytes, address: str, headers=None) -> list[str]:
    """Eight fresh sessions from one client, each uploading until refused; the refusals."""
    refusals = []
    for _ in range(8):
        client = app.server.test_client()  # no cookie: a new session
        for _ in range(20):
            body = _upload(client, content, address, headers).get_json()
            if body.get("errors") or body.get("error"):
                refusals.append(body["error"])
                break
    return refusals


def _small_store(tmp_path, **overrides):
    settings = {
        "cache_size_limit_mb": 40,
        "session_quota_mb": 8,
        "max_upload_mb": 4,
        "parse_concurrency": 1,
    }
    settings.update(overrides)
    return create_app(make_config(tmp_path, **settings))


def test_one_address_with_many_sessions_cannot_fail_another_clients_upload(tmp_path, files):
    app = _small_store(tmp_path)
    refusals = _fill_from_many_sessions(app, files["greedy"], GREEDY)
    other = app.server.test_client()
    body = _upload(other, files["three_mb"], OTHER).get_json()
    assert not body["errors"], body
    assert len(body["models"]) == 1
    assert refusals, "the greedy client was never refused"
    assert all("server is full" not in r for r in refusals), refusals[-1]
    assert f"address {GREEDY}" in refusals[-1] and "CLIENT_QUOTA_MB" in refusals[-1]


def test_one_signed_in_user_with_many_sessions_cannot_fail_another_users_upload(tmp_path, files):
    app = _small_store(tmp_path, basic_auth=(("greedy", "pw-greedy"), ("other", "pw-other")))

    def auth(user, password):
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return {"Authorization": f"Basic {token}"}

    # The same user from many addresses is still one client.
    refusals = []
    for i in range(4):
        refusals += _fill_from_many_sessions(
            app, files["greedy"], f"203.0.113.{i}", auth("greedy", "pw-greedy")
        )
    body = _upload(
        app.server.test_client(), files["three_mb"], GREEDY, auth("other", "pw-other")
    ).get_json()
    assert not body["errors"], body
    assert len(body["models"]) == 1
    assert refusals and "signed-in user 'greedy'" in refusals[-1], refusals[-1:]


def _model(seed: int):
    from app.store.records import warm
    from calibration_core import Predictions

    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(3), size=20_000)
    return warm(Predictions.from_probs(p, rng.integers(0, 3, 20_000), name=f"m{seed}"))


def test_a_client_over_its_share_loses_its_oldest_session_to_a_new_client(tmp_path):
    from app.session import new_session_id
    from app.store.budget import StoreFull
    from app.store.data_store import SHARE_EVICTED_MESSAGE, DataStore

    # No quota per client and no reserve: one client can fill the store, as before the fix;
    # a newcomer within its fair share then takes the room of the largest client's oldest
    # session (none of them idle), and the one evicted is told why.
    store = DataStore(tmp_path, size_limit_bytes=24 * MB, store_reserve=0.0)
    greedy = []
    with pytest.raises(StoreFull, match="server is full"):
        for seed in range(40):
            sid = new_session_id()
            store.add_models(sid, [_model(seed)], "a.csv", client="addr:203.0.113.66")
            greedy.append(sid)
    [info] = store.add_models(new_session_id(), [_model(99)], "b.csv", client="addr:198.51.100.7")
    assert info.name == "m99"
    assert store.uploaded_models(greedy[0]) == []
    assert store.lost_data_message(greedy[0]) == SHARE_EVICTED_MESSAGE
    assert store.uploaded_models(greedy[-1]), "more was evicted than needed"
    # The greedy client, over its share, cannot evict the newcomer in turn.
    with pytest.raises(StoreFull, match="server is full"):
        store.add_models(new_session_id(), [_model(7)], "a.csv", client="addr:203.0.113.66")


def test_the_quota_per_client_is_capped_by_the_reserve(tmp_path):
    from app.store.data_store import DataStore

    store = DataStore(tmp_path, size_limit_bytes=100 * MB, max_client_bytes=90 * MB)
    assert store.budget.client_limit() == int(80 * MB * 0.75)
    store = DataStore(tmp_path, size_limit_bytes=100 * MB, max_client_bytes=10 * MB)
    assert store.budget.client_limit() == 10 * MB
