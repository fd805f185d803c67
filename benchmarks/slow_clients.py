"""Slow clients against a running server: does ``/healthz`` still answer?

    python benchmarks/slow_clients.py --url http://127.0.0.1:8050 --sockets 16 --seconds 40

The attack of issue 13: ``--sockets`` connections each send the headers of a
``POST /api/upload`` announcing a large body (``Content-Length``), then one byte
every ``--interval`` seconds; a connection the server closes is opened again.
Meanwhile ``GET /healthz`` is probed every ``--probe-every`` seconds, each probe
given ``--probe-timeout`` seconds. Prints the probes answered out of the probes
sent, their latencies, and how often the server cut a slow client.

Gunicorn's workers read a request body in the thread serving it, so each slow
client holds one of the ``WEB_CONCURRENCY x THREADS`` slots; a buffering
reverse proxy (``deploy/nginx.conf.template``) reads the body itself and hands
gunicorn complete requests only. ``tests/hosting/test_proxy.py`` uses
:class:`SlowClients` against the proxy; BENCHMARKS.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
import urllib.request
from urllib.parse import urlsplit

#: Body size announced by each slow client (never sent in full).
ANNOUNCED_BYTES = 10_000_000


def upload_headers(
    host: str, port: int, length: int = ANNOUNCED_BYTES, extra: dict[str, str] | None = None
) -> bytes:
    """The request line and headers of a multipart ``POST /api/upload`` of ``length`` bytes.

    ``extra`` headers (e.g. ``Authorization``: a signed-in client's upload passes the
    sign-in check and reaches the body) are added.
    """
    lines = "".join(f"{name}: {value}\r\n" for name, value in (extra or {}).items())
    return (
        "POST /api/upload HTTP/1.1\r\n"
        f"Host: {host}:{port}\r\n"
        f"{lines}"
        "Content-Type: multipart/form-data; boundary=slowclientboundary\r\n"
        f"Content-Length: {length}\r\n"
        "\r\n"
        "--slowclientboundary\r\n"
    ).encode("ascii")


class SlowClients:
    """``n`` connections trickling one byte every ``interval`` seconds, in threads.

    Parameters
    ----------
    url : str
        The server (``http://host:port``).
    n : int
        Connections kept open.
    interval : float
        Seconds between two bytes of one connection.
    reconnect : bool
        Open a connection again when the server closes it.
    headers : dict, optional
        Extra request headers (see :func:`upload_headers`).
    stagger : float
        Seconds between opening two connections (0: all at once). Opened at once,
        most connections can land in one gunicorn worker, which accepts while its
        threads are busy; staggered, they spread over the workers.

    Attributes
    ----------
    sent : int
        Body bytes sent so far, over all connections.
    cut : int
        Connections the server closed (or reset) while they were trickling.
    """

    def __init__(
        self,
        url: str,
        n: int,
        interval: float = 2.0,
        reconnect: bool = True,
        headers: dict[str, str] | None = None,
        stagger: float = 0.0,
    ):
        parts = urlsplit(url)
        self.stagger = stagger
        self.headers = dict(headers or {})
        self.host, self.port = parts.hostname, parts.port or 80
        self.n, self.interval, self.reconnect = n, interval, reconnect
        self.sent = 0
        self.cut = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> SlowClients:
        """Open the connections (each in its own thread)."""
        for i in range(self.n):
            if i and self.stagger:
                time.sleep(self.stagger)
            thread = threading.Thread(target=self._run, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop trickling and close every connection."""
        self._stop.set()
        for thread in self._threads:
            thread.join(self.interval + 10)

    def __enter__(self) -> SlowClients:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._trickle()
            except OSError:
                self._count("cut")
            if not self.reconnect:
                return
            self._stop.wait(0.2)

    def _trickle(self) -> None:
        with socket.create_connection((self.host, self.port), timeout=10) as sock:
            sock.sendall(upload_headers(self.host, self.port, extra=self.headers))
            while not self._stop.is_set():
                sock.sendall(b"x")
                self._count("sent")
                if self._stop.wait(self.interval):
                    return
                if _closed_by_peer(sock):
                    raise ConnectionResetError("closed by the server")


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the server has closed (or answered on) this connection, without blocking."""
    sock.setblocking(False)
    try:
        sock.recv(4096)  # b"" (closed) or an answer such as 408: the request is over
        return True
    except BlockingIOError:
        return False
    finally:
        sock.setblocking(True)


def probe(url: str, timeout: float) -> float | None:
    """Seconds ``GET url`` took to answer 200, or None (error or no answer in ``timeout``)."""
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            response.read()
            ok = response.status == 200
    except OSError:
        return None
    return time.perf_counter() - start if ok else None


def probe_loop(url: str, seconds: float, every: float, timeout: float) -> list[float | None]:
    """Probe ``url`` every ``every`` seconds for ``seconds``: each probe's latency or None."""
    results: list[float | None] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.monotonic()
        results.append(probe(url, timeout))
        time.sleep(max(0.0, every - (time.monotonic() - started)))
    return results


def run(args: argparse.Namespace) -> dict:
    """Trickle and probe; the summary as a dict."""
    base = args.url.rstrip("/")
    with SlowClients(base, args.sockets, args.interval, stagger=args.stagger) as clients:
        time.sleep(args.settle)
        results = probe_loop(base + "/healthz", args.seconds, args.probe_every, args.probe_timeout)
    answered = [r for r in results if r is not None]
    return {
        "url": base,
        "sockets": args.sockets,
        "interval_s": args.interval,
        "stagger_s": args.stagger,
        "probes": len(results),
        "answered": len(answered),
        "latencies_ms": [None if r is None else round(r * 1000, 1) for r in results],
        "slow_clients_cut": clients.cut,
        "bytes_trickled": clients.sent,
    }


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8050")
    parser.add_argument("--sockets", type=int, default=4)
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between bytes")
    parser.add_argument("--seconds", type=float, default=35.0, help="probing time")
    parser.add_argument("--stagger", type=float, default=0.0, help="seconds between opens")
    parser.add_argument("--settle", type=float, default=3.0, help="wait before probing")
    parser.add_argument("--probe-every", type=float, default=5.0)
    parser.add_argument("--probe-timeout", type=float, default=5.0)
    parser.add_argument("--json", help="also write the summary here")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    summary = run(args)
    print(
        f"{summary['url']}: {summary['sockets']} slow clients, /healthz answered "
        f"{summary['answered']}/{summary['probes']} probes "
        f"(timeout {args.probe_timeout:g} s); latencies ms: {summary['latencies_ms']}; "
        f"slow clients cut by the server: {summary['slow_clients_cut']}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
