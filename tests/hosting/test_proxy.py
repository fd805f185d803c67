"""The documented deployment's reverse proxy against slow clients (issue 13, item 2).

Debian's nginx runs ``deploy/nginx.conf.template``, the file compose.yaml's
``proxy`` service mounts, in front of gunicorn (gthread, 2 workers x 2 threads,
``REDIS_URL`` set, basic auth on) started as the other hosting tests start it.
The slow clients are ``benchmarks/slow_clients.py``'s: the headers of a
``POST /api/upload`` announcing 10 MB, then one byte at a time. Nothing here
measures time: the tests wait for conditions, with generous safety deadlines.
"""

from __future__ import annotations

import base64
import functools
import gzip
import http.server
import importlib.util
import re
import socket
import threading
import time

import brotli
import pytest
import requests

from .conftest import REPO, DashTab, uploaded

WORKERS, THREADS = 2, 2
#: Three times gunicorn's request slots: without the proxy they would all be taken.
SLOW = 3 * WORKERS * THREADS
USER, PASSWORD = "alice", "proxy test password"
AUTH_RATE_LIMIT = 3


def _load_slow_clients():
    spec = importlib.util.spec_from_file_location(
        "slow_clients", REPO / "benchmarks" / "slow_clients.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


slow_clients = _load_slow_clients()


def wait_for(condition, what: str, timeout: float = 120.0) -> None:
    """Wait until ``condition()`` holds (the timeout is a safety deadline only)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, gunicorn_server, nginx_proxy, redis_server):
    """gunicorn (with Redis) and nginx from the deploy template in front of it."""
    tmp = tmp_path_factory.mktemp("proxy")
    redis = redis_server(tmp / "redis")
    env = {
        "REDIS_URL": redis.url,
        "BASIC_AUTH_USER": USER,
        "BASIC_AUTH_PASSWORD": PASSWORD,
        "AUTH_RATE_LIMIT": str(AUTH_RATE_LIMIT),
    }
    try:
        server = gunicorn_server(tmp / "cache", workers=WORKERS, threads=THREADS, env=env)
    except Exception:
        redis.stop()
        raise
    proxy = nginx_proxy(tmp / "nginx", server.url)
    yield server, proxy
    proxy.stop()
    server.stop()
    redis.stop()


def _gunicorn_saw(server, pattern: str) -> int:
    """Lines of gunicorn's access log whose request line matches ``pattern``."""
    return len(re.findall(pattern, server.access_log.read_text()))


#: The slow clients sign in: their uploads pass the check and reach the body.
SIGNED_IN = {"Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}


def _signed_in_tab(url: str, origin: str | None = None) -> DashTab:
    """A signed-in client that sends ``Origin`` (default: the proxy's) as a browser page does."""
    tab = DashTab(url)
    tab.http.auth = (USER, PASSWORD)
    tab.http.headers["Origin"] = origin or url
    return tab


def test_slow_uploads_wait_in_nginx_while_others_are_served(stack, make_csv):
    server, proxy = stack
    uploads_before = _gunicorn_saw(server, r"POST /api/upload")
    with slow_clients.SlowClients(proxy.url, SLOW, interval=1.0, headers=SIGNED_IN) as clients:
        # Every slow client has trickled a few bytes: all of them are connected.
        wait_for(lambda: clients.sent >= 3 * SLOW, "the slow clients trickling")
        for _ in range(3):
            r = requests.get(proxy.url + "/healthz", timeout=60)
            assert r.status_code == 200 and r.json() == {"status": "ok"}
        # A second user signs in, uploads a file and draws a view, all through the proxy.
        tab = _signed_in_tab(proxy.url)
        handle = uploaded(tab, make_csv, seed=13)
        out = tab.view([handle], n_bins=12)
        assert out.get("reliability-grid.children")
        assert clients.sent >= 3 * SLOW and clients.cut == 0  # still trickling, in nginx
        # gunicorn saw the second user's complete upload and none of the slow ones.
        assert _gunicorn_saw(server, r"POST /api/upload") == uploads_before + 1


@pytest.fixture(scope="module")
def strict_proxy(stack, nginx_proxy, tmp_path_factory):
    """A second nginx from the same template with one-second header and body timeouts."""
    server, _ = stack
    proxy = nginx_proxy(
        tmp_path_factory.mktemp("strict-nginx"),
        server.url,
        CLIENT_HEADER_TIMEOUT="1s",
        CLIENT_BODY_TIMEOUT="1s",
    )
    yield proxy
    proxy.stop()


def _closed_by_server(sock: socket.socket) -> bytes:
    """Read until the server closes; what it sent (a socket timeout fails the test)."""
    sock.settimeout(120)
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def test_body_and_header_timeouts_cut_slow_clients(stack, strict_proxy):
    server, _ = stack
    uploads_before = _gunicorn_saw(server, r"POST /api/upload")
    host, port = "127.0.0.1", strict_proxy.port
    with socket.create_connection((host, port)) as sock:  # headers, then a stalled body
        sock.sendall(slow_clients.upload_headers(host, port, extra=SIGNED_IN))
        answer = _closed_by_server(sock)
        assert answer == b"" or answer.startswith(b"HTTP/1.1 408"), answer[:200]
    with socket.create_connection((host, port)) as sock:  # headers that never end
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        answer = _closed_by_server(sock)
        assert answer == b"" or answer.startswith(b"HTTP/1.1 408"), answer[:200]
    # Clients pausing 2 s between bytes are cut by a 1 s body timeout, again and again.
    with slow_clients.SlowClients(strict_proxy.url, 4, interval=2.0, headers=SIGNED_IN) as clients:
        wait_for(lambda: clients.cut >= 8, "slow clients cut by client_body_timeout")
    assert _gunicorn_saw(server, r"POST /api/upload") == uploads_before
    assert " 408 " in strict_proxy.access_log.read_text()


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8050", "10.9.8.7", ""])
def test_requests_for_other_host_names_are_dropped_unanswered(stack, host):
    # A DNS-rebinding page's requests carry its own name: nginx closes them (444)
    # and gunicorn never sees them; the names of SERVER_NAME are served.
    server, proxy = stack
    before = _gunicorn_saw(server, r"GET /_dash-layout")
    head = f"HTTP/1.1\r\nHost: {host}" if host else "HTTP/1.0"  # 1.0: no Host needed
    with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(f"GET /_dash-layout {head}\r\nConnection: close\r\n\r\n".encode())
        assert _closed_by_server(sock) == b""
    assert _gunicorn_saw(server, r"GET /_dash-layout") == before
    assert " 444 " in proxy.access_log.read_text()
    assert requests.get(proxy.url + "/healthz", timeout=10).status_code == 200


def test_the_same_origin_check_sees_the_address_the_browser_used(stack, make_csv):
    # Through the proxy the app sees the browser's Host (nginx passes $http_host), so the
    # page's own uploads and callbacks pass the cross-site check and another origin does not.
    _, proxy = stack
    tab = _signed_in_tab(proxy.url).load()
    handle = uploaded(tab, make_csv, seed=14)
    assert tab.view([handle], n_bins=10).get("reliability-grid.children")
    other_port = proxy.url.rsplit(":", 1)[0] + ":1"
    status, body = _signed_in_tab(proxy.url, origin=other_port).upload("x.csv", b"label\n")
    assert status == 403 and "origin" in body["error"].lower()


def _raw_get(url: str, encoding: str) -> requests.Response:
    """GET asking for ``encoding``; the body as sent (``.content`` is not decoded)."""
    r = requests.get(url, auth=(USER, PASSWORD), headers={"Accept-Encoding": encoding},
                     stream=True, timeout=60)  # fmt: skip
    r.raise_for_status()
    r._content = r.raw.read(decode_content=False)
    return r


def test_the_apps_compressed_scripts_pass_nginx_compressed_once(stack):
    server, proxy = stack
    index = _raw_get(server.url + "/", "identity").content.decode()
    scripts = re.findall(r'<script src="(/[^"]+)"', index)
    bundle = next(s for s in scripts if "dash_renderer" in s)
    plotly = next(s for s in scripts if "plotly-basic" in s)
    for path in (bundle, plotly):
        plain = _raw_get(server.url + path, "identity").content
        for encoding, decompress in (("gzip", gzip.decompress), ("br", brotli.decompress)):
            sent = _raw_get(proxy.url + path, encoding)
            assert sent.headers["Content-Encoding"] == encoding, path
            assert decompress(sent.content) == plain, path  # one layer: no double compression


@pytest.fixture(scope="module")
def plain_upstream(tmp_path_factory):
    """A plain HTTP server (no compression) of a script and a CSV file."""
    root = tmp_path_factory.mktemp("plain-upstream")
    (root / "big.js").write_text("var a = 1;\n" * 2000)
    (root / "export.csv").write_text("label,p\n" + "1,0.5\n" * 2000)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    thread.join()


def test_nginx_gzips_plain_scripts_and_leaves_exports_alone(
    plain_upstream, nginx_proxy, tmp_path_factory
):
    proxy = nginx_proxy(tmp_path_factory.mktemp("gzip-nginx"), plain_upstream)
    try:
        script = _raw_get(proxy.url + "/big.js", "gzip")
        assert script.headers["Content-Encoding"] == "gzip"
        assert "Accept-Encoding" in script.headers["Vary"]
        assert gzip.decompress(script.content) == b"var a = 1;\n" * 2000
        # A request that came through another proxy (Via) is compressed too.
        via = requests.get(proxy.url + "/big.js", headers={"Via": "1.1 edge"}, timeout=60)
        assert via.headers["Content-Encoding"] == "gzip"
        export = _raw_get(proxy.url + "/export.csv", "gzip")
        assert "Content-Encoding" not in export.headers
        assert export.content.startswith(b"label,p\n1,0.5\n")
    finally:
        proxy.stop()


def test_a_spoofed_x_forwarded_for_does_not_dodge_the_sign_in_limit(stack):
    """Runs last: it spends this address's failed sign-ins in both workers."""
    _, proxy = stack
    statuses = []
    # Each worker counts for itself: after WORKERS x limit failures, one has refused.
    for i in range(WORKERS * AUTH_RATE_LIMIT + 1):
        r = requests.get(
            proxy.url + "/_dash-layout",
            auth=(USER, f"wrong {i}"),
            headers={"X-Forwarded-For": f"192.0.2.{i}", "Connection": "close"},
            timeout=60,
        )
        statuses.append(r.status_code)
    assert set(statuses) <= {401, 429} and 429 in statuses, statuses
    assert requests.get(proxy.url + "/healthz", timeout=60).status_code == 200
