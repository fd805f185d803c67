"""Against ``gunicorn app.wsgi:server`` with 4 workers on 127.0.0.1 (APP_ENV=production).

Browser tabs are :class:`DashTab` clients (own cookie jar, a new connection
per request so requests spread over the workers) that call the callbacks as
``dash-renderer`` does. Proves:

* two sessions uploading and working concurrently never see each other's
  model names, class names, handles, figures, tables or exports, while their
  requests are served by several worker processes;
* forged, tampered, malformed and expired session cookies get a fresh, empty
  session;
* the upload limit is enforced before the body is read (HTTP 413);
* crafted callback payloads are refused by the server with a readable
  message, and malformed requests never show a traceback, a path or an
  exception text;
* many quick setting changes each get the figure of their own settings;
* a worker killed with SIGKILL in the middle of a callback costs that one
  request: the next action works, on the same session and data. That test
  has its own server, ``blocking_wsgi:server`` (the same app, whose 97-bin
  view blocks after announcing its worker's pid), so the worker is killed
  while it is inside the callback for certain, on any machine.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from itsdangerous import TimestampSigner, URLSafeTimedSerializer

from app.ids import VIEW_KEYS
from app.session import SALT

from .conftest import GRAPH_SLOT, Fit, fit_state

SECRET = "hosting-test-secret-key-0123456789abcdef"
EXPIRED = "your data expired, please upload again"
LEAK_MARKERS = ("Traceback", 'File "', "site-packages", "/work/", "KeyError", "Exception")


@pytest.fixture(scope="module")
def server(tmp_path_factory, gunicorn_server):
    srv = gunicorn_server(
        tmp_path_factory.mktemp("gunicorn"),
        workers=4,
        threads=1,
        env={"MAX_UPLOAD_MB": "20", "SESSION_TTL_SECONDS": "3600"},
    )
    yield srv
    srv.stop()


def figures(out: dict) -> list[dict]:
    """The figures with data (not a blank message figure) in a view answer."""
    kids = out.get("reliability-grid.children") or []
    figs = [(k.get("props") or {}).get("figure") for k in kids]
    return [f for f in figs if f and f.get("data")]


def answered_figures(out: dict) -> list[dict]:
    """The figures with data that a view answer itself carries (its slots' children).

    Answers fired together are applied to the tab in any order, so what the tab
    shows after one of them (:func:`figures`) may be another's diagram.
    """
    kids = [
        kid
        for key, value in out.items()
        if key.startswith(GRAPH_SLOT) and key.endswith(".children")
        for kid in value or []
    ]
    figs = [(k.get("props") or {}).get("figure") for k in kids]
    return [f for f in figs if f and f.get("data")]


def messages(out: dict) -> str:
    return json.dumps(out.get("message.children") or [])


def loaded(tab, name: str, content: bytes) -> list[dict]:
    """Upload a file and run the follow-up callback, as the page script does."""
    status, body = tab.upload(name, content)
    assert status == 200 and not body["errors"], body
    result = {"nonce": time.time(), "results": [{"file": name, "models": body["models"]}]}
    out = tab.call("models-store.data", ["upload-result.data"], {"upload-result.data": result})
    assert {m["handle"] for m in body["models"]} <= set(out["model-select.value"])
    return body["models"]


def session_work(tab, name, content, rounds=4) -> dict:
    """One user's session: upload, list models, redraw, export. Returns everything seen."""
    tab.load()
    models = loaded(tab, name, content)
    handle = models[0]["handle"]
    # The calibrated export holds fitted maps: fit one through the page's background job.
    status, answer = Fit(tab).start(handle, maps=("platt",)).result()
    assert status == 200 and fit_state(answer)["error"] is None, answer
    seen = {"handle": handle, "texts": [json.dumps(tab.values)], "csv": [], "n": []}
    for r in range(rounds):
        out = tab.view([handle], n_bins=5 + r, band=["wilson", "none"][r % 2])
        assert figures(out), messages(out)
        seen["texts"].append(json.dumps(out))
        rows = out["metrics-grid.rowData"]
        seen["n"].extend(row["n"] for row in rows if "n" in row)
        status, _, body = tab.call_raw(
            "download.data",
            ["export-metrics-csv.n_clicks"],
            {"export-metrics-csv.n_clicks": r + 1, "model-select.value": [handle]},
        )
        assert status == 200
        seen["csv"].append(json.loads(body)["response"]["download"]["data"]["content"])
        out = tab.call(
            "download-url.data",
            ["export-calibrated-csv.n_clicks"],
            {
                "export-calibrated-csv.n_clicks": r + 1,
                "model-select.value": [handle],
                "maps.value": ["platt"],
            },
        )
        url = out["download-url.data"]["url"]
        status, headers, body = tab.get(url)
        assert status == 200 and headers["Content-Disposition"].startswith("attachment")
        seen["texts"].append(body.decode())
        seen["export_url"] = url
    seen["texts"].extend(seen["csv"])
    return seen


def test_concurrent_sessions_see_only_their_own_data(server, dash_tab, make_csv):
    alice_csv = make_csv(n=3000, k=3, seed=1, class_names=["ant", "bee", "cat"], model="alpha")
    bob_csv = make_csv(n=2000, k=4, seed=2, class_names=["xenon", "yttrium", "zinc", "argon"])
    alice, bob = dash_tab(server.url), dash_tab(server.url)
    with ThreadPoolExecutor(2) as pool:
        fa = pool.submit(session_work, alice, "alice.csv", alice_csv)
        fb = pool.submit(session_work, bob, "bob.csv", bob_csv)
        a, b = fa.result(), fb.result()

    a_text, b_text = "\n".join(a["texts"]), "\n".join(b["texts"])
    assert "alpha" in a_text and "ant" in a_text
    assert "bob" in b_text and "xenon" in b_text
    for marker in ("alpha", a["handle"], '"ant"', "p_ant", "p_bee"):
        assert marker not in b_text
    for marker in ('"bob"', b["handle"], "xenon", "yttrium", "p_zinc", "argon"):
        assert marker not in a_text
    # The numbers are each one's own: every metric row and CSV line counts its own rows.
    assert set(a["n"]) == {3000} and set(b["n"]) == {2000}
    assert all(",3000," in c and ",2000," not in c for c in a["csv"])
    assert all(",2000," in c and ",3000," not in c for c in b["csv"])

    # Each other's handle and export link give nothing.
    out = bob.view([a["handle"]])
    assert EXPIRED in messages(out) and not figures(out)
    assert "alpha" not in json.dumps(out)
    status, _, body = bob.get(a["export_url"])
    assert status == 404 and b"alpha" not in body
    status, _, body = bob.get("/_dash-layout")
    assert a["handle"].encode() not in body and b"alpha" not in body

    # The sessions really were served by several worker processes.
    pids = {server.pid_of_request(r) for r in alice.request_ids + bob.request_ids if r}
    assert len(pids - {None}) >= 2, pids


def _expired_cookie(sid: str) -> str:
    """A cookie we really signed for ``sid``, two hours ago (the server's TTL is one hour)."""

    class TwoHoursAgo(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time()) - 7200

    return URLSafeTimedSerializer(SECRET, salt=SALT, signer=TwoHoursAgo).dumps(sid)


def _cookie_sid(cookie: str) -> str:
    return URLSafeTimedSerializer(SECRET, salt=SALT).loads(cookie)


def test_forged_malformed_and_expired_cookies_get_a_fresh_empty_session(server, dash_tab, make_csv):
    owner = dash_tab(server.url).load()
    (model,) = loaded(owner, "owned.csv", make_csv(n=300, model="owned-model"))
    good = owner.cookie()
    sid = _cookie_sid(good)
    bad_cookies = {
        "garbage": "not-a-cookie",
        "empty": "",
        "huge": "a" * 600,
        "tampered": good[:-2] + ("AA" if not good.endswith("AA") else "BB"),
        "other key": URLSafeTimedSerializer("another-secret-key-0123456789", salt=SALT).dumps(sid),
        "expired": _expired_cookie(sid),
        "malformed id": URLSafeTimedSerializer(SECRET, salt=SALT).dumps("../../" + sid),
        "raw id": sid,
    }
    for what, value in bad_cookies.items():
        intruder = dash_tab(server.url)
        intruder.set_cookie(value)
        status, _, body = intruder.get("/_dash-layout")
        assert status == 200, what
        assert model["handle"].encode() not in body and b"owned-model" not in body, what
        fresh = intruder.cookie()
        assert fresh and fresh != value and _cookie_sid(fresh) != sid, what
        intruder.load()
        out = intruder.view([model["handle"]])
        assert EXPIRED in messages(out) and not figures(out), what
        assert "owned-model" not in json.dumps(out), what
    # The owner still has the data.
    assert figures(owner.view([model["handle"]]))


def test_upload_limit_answers_413_before_reading_the_body(server):
    """Only the request head is sent, never a byte of the announced 10 GB body.

    An answer can therefore only come from a server that refused the upload
    without reading its body; one that waited for the body would wait for
    ever (the socket timeout is only a safety deadline that fails the test).
    """
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(
            b"POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: multipart/form-data; boundary=xyz\r\n"
            b"Content-Length: 10737418240\r\n\r\n"
        )
        # gunicorn sends the head and the body in separate writes: read until it closes.
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            pytest.fail(f"no complete answer without the body; got {b''.join(chunks)[:200]!r}")
        answer = b"".join(chunks).decode("latin-1")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert "20 MB limit" in answer


@pytest.mark.parametrize(
    ("setting", "value", "needle"),
    [
        ("n-bins.value", 10**9, "number of bins"),
        ("n-bins.value", -3, "number of bins"),
        ("n-bins.value", "ten", "number of bins"),
        ("n-bins.value", 7.5, "number of bins"),
        ("maps.value", ["temperature", "rm -rf"], "unknown calibration map"),
        ("maps.value", "temperature", "list of map names"),
        ("notion.value", "<script>", "notion"),
        ("band-level.value", 1e308, "band level"),
        ("folds.value", 10**6, "number of folds"),
    ],
)
def test_crafted_payloads_are_refused_by_the_server(server, dash_tab, setting, value, needle):
    tab = dash_tab(server.url).load()
    handles = tab.values["model-select.value"]
    out = tab.call(
        "metrics-grid.rowData", [setting], {setting: value, "model-select.value": handles}
    )
    assert needle in messages(out)
    assert not out["metrics-grid.rowData"]
    assert not figures(out)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"output": "nope.children", "outputs": {"id": "nope", "property": "children"}, '
        b'"inputs": [], "changedPropIds": []}',
        b'{"output": "..reliability-grid.children...metrics-grid.rowData..", "inputs": 5}',
        b"[" * 5000,
    ],
    ids=["not-json", "unknown-output", "inputs-not-a-list", "deep-nesting"],
)
def test_malformed_callback_requests_reveal_nothing(server, body):
    import requests

    r = requests.post(
        server.url + "/_dash-update-component",
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert r.status_code in (400, 500)
    for marker in LEAK_MARKERS:
        assert marker not in r.text
    if r.status_code == 500:
        rid = r.headers["X-Request-ID"]
        assert f"request id {rid}" in r.json()["error"]
        log = server.log_path.read_text()
        assert f"request id {rid}" in log and "Traceback" in log  # logged, with the id


def test_rapid_setting_changes_each_get_their_own_figure(server, dash_tab, make_csv):
    tab = dash_tab(server.url).load()
    (model,) = loaded(tab, "rapid.csv", make_csv(n=2000, k=3, seed=5))
    handle = model["handle"]
    bins = list(range(3, 15))
    # Fired together, as a user dragging the slider would; answers arrive in any order.
    with ThreadPoolExecutor(6) as pool:
        outs = list(pool.map(lambda n: tab.view([handle], n_bins=n, scheme="width"), bins))
    for n, out in zip(bins, outs, strict=True):
        assert f"Binning: {n} equal-width bins" in out["metrics-caption.children"]
        (fig,) = answered_figures(out)
        curve = next(t for t in fig["data"] if t.get("mode", "").startswith("lines+markers"))
        assert 1 <= len(curve["x"]) <= n
    # The last setting wins: asking again with the final value gives the same answer.
    # Unlike the page, this tab applies stale answers too, so it forgets what it shows
    # (as a reloaded page would) and the view answers in full.
    tab.values.pop(f"{VIEW_KEYS}.data", None)
    again = tab.view([handle], n_bins=bins[-1], scheme="width")
    assert again["metrics-grid.rowData"] == outs[-1]["metrics-grid.rowData"]


#: ``blocking_wsgi.BLOCKING_N_BINS``: a view asked for this many bins never returns.
BLOCKING_N_BINS = 97
KILL_WORKERS = 2


@pytest.fixture
def blocking_server(tmp_path, gunicorn_server):
    """Gunicorn serving ``blocking_wsgi:server``: the app, whose 97-bin views block.

    Yields ``(server, marker_dir)``; a worker that enters a blocking view
    writes ``marker_dir / "entered-<pid>"`` first (see ``blocking_wsgi.py``).
    Its own server, so that the killed worker touches no other test.
    """
    marker_dir = tmp_path / "entered"
    marker_dir.mkdir()
    srv = gunicorn_server(
        tmp_path / "cache",
        workers=KILL_WORKERS,
        threads=1,
        env={"SESSION_TTL_SECONDS": "3600", "BLOCKING_WSGI_MARKER_DIR": str(marker_dir)},
        wsgi="blocking_wsgi:server",
    )
    yield srv, marker_dir
    srv.stop()


def _worker_inside_callback(marker_dir, thread, timeout: float = 120) -> int:
    """The pid of the worker that entered the blocking view (its marker file).

    Parameters
    ----------
    marker_dir : Path
        Where the blocking view writes ``entered-<pid>``.
    thread : threading.Thread
        The thread whose request is blocked; if it ends first, the request
        never reached the blocking view and the test fails at once.
    timeout : float
        Safety deadline only: the marker appears as soon as a worker takes
        the request, whatever the machine's speed.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        markers = sorted(marker_dir.glob("entered-*"))
        if markers:
            (marker,) = markers
            pid = int(marker.name.removeprefix("entered-"))
            assert marker.read_text() == str(pid)
            return pid
        assert thread.is_alive(), "the request ended without entering the blocking view"
        time.sleep(0.05)
    pytest.fail(f"no worker entered the blocking view within {timeout} s")


def test_a_worker_killed_mid_callback_costs_only_that_request(blocking_server, dash_tab, make_csv):
    import requests

    server, marker_dir = blocking_server
    tab = dash_tab(server.url, timeout=120).load()
    (model,) = loaded(tab, "kill.csv", make_csv(n=1500, k=3, seed=3, model="kill-model"))
    handle = model["handle"]
    result = {}

    def blocked():
        try:
            result["out"] = tab.view([handle], n_bins=BLOCKING_N_BINS)
        except (requests.RequestException, AssertionError) as exc:
            result["error"] = exc

    thread = threading.Thread(target=blocked)
    thread.start()
    # The worker is inside the callback now, and stays there until it is killed.
    killed = _worker_inside_callback(marker_dir, thread)
    assert killed in server.worker_pids()
    os.kill(killed, signal.SIGKILL)
    thread.join(120)
    assert not thread.is_alive(), "the request did not end when its worker was killed"
    assert "error" in result and "out" not in result, result

    # The next actions of the same session work, on the same stored data.
    out = tab.view([handle], notion="confidence", band="wilson", n_bins=12)
    assert figures(out) and {r["n"] for r in out["metrics-grid.rowData"] if "n" in r} == {1500}
    assert "kill-model" in json.dumps(out)
    (again,) = loaded(tab, "after.csv", make_csv(n=500, seed=4, model="after-kill"))
    assert again["n_samples"] == 500
    # The master replaced the killed worker.
    deadline = time.monotonic() + 120  # a safety deadline: the master forks at once
    while time.monotonic() < deadline:
        pids = server.worker_pids()
        if killed not in pids and len(pids) == KILL_WORKERS:
            break
        time.sleep(0.2)
    assert killed not in pids and len(pids) == KILL_WORKERS
    server.wait_ready()  # and the new worker has loaded the app
    assert len(server.ready_workers()) == KILL_WORKERS and killed not in server.ready_workers()
    # Only the one request was ever blocked (and only the killed worker entered).
    assert [m.name for m in marker_dir.iterdir()] == [f"entered-{killed}"]
