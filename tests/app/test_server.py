"""app.server: the development server's start (the first page drawn after it listens)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from app.server import on_first_request

#: Name of the thread :func:`app.server.on_first_request` starts.
WORK_THREAD = "calibration-first-page"


def test_first_request_starts_the_work_once_on_a_thread():
    calls: list[tuple[str, int]] = []
    caller = threading.get_ident()

    def work(tag):
        calls.append((tag, threading.get_ident()))

    hook = on_first_request(work, "page")
    assert not calls  # nothing before a request
    with ThreadPoolExecutor(8) as pool:  # concurrent first requests
        list(pool.map(lambda _: hook(), range(32)))
    hook()
    # Once hook() has returned, each thread it started is running or done (Thread.start
    # waits until the thread runs): joining the running ones leaves nothing pending, so
    # a second start could not hide behind a slow thread.
    for thread in threading.enumerate():
        if thread.name == WORK_THREAD:
            thread.join(timeout=60)  # a safety deadline; the work returns at once
            assert not thread.is_alive()
    assert [tag for tag, _ in calls] == ["page"]
    assert calls[0][1] != caller  # not on a request's thread
