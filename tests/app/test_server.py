"""app.server: the development server's start (the first page drawn after it listens)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from app.server import on_first_request


def test_first_request_starts_the_work_once_on_a_thread():
    calls: list[tuple[str, int]] = []
    done = threading.Event()
    caller = threading.get_ident()

    def work(tag):
        calls.append((tag, threading.get_ident()))
        done.set()

    hook = on_first_request(work, "page")
    assert not calls  # nothing before a request
    with ThreadPoolExecutor(8) as pool:  # concurrent first requests
        list(pool.map(lambda _: hook(), range(32)))
    assert done.wait(5)
    time.sleep(0.05)
    hook()
    assert [tag for tag, _ in calls] == ["page"]
    assert calls[0][1] != caller  # not on a request's thread
