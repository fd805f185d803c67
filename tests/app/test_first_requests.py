"""The first requests of a fresh worker, in parallel, all succeed (plotly/dash#3971).

Dash's once-per-process setup registers the component bundles; under a
threaded worker the browser's parallel bundle requests used to race it and
get HTTP 500 until the setup finished (found by the browser tests). Servers
run the setup before they accept connections (:func:`app.factory.finish_setup`).
"""

from __future__ import annotations

import re
import threading

from app.factory import create_app, finish_setup

from .conftest import make_config


def _bundle_paths(tmp_path) -> list[str]:
    """The component-suite scripts of the page, read from another app's index."""
    other = create_app(make_config(tmp_path / "index"))
    index = other.server.test_client().get("/").get_data(as_text=True)
    paths = re.findall(r'src="(/_dash-component-suites/[^"]+\.js)"', index)
    assert paths, index[:500]
    return paths


def test_parallel_first_requests_after_finish_setup_succeed(tmp_path):
    paths = _bundle_paths(tmp_path)
    dash_app = create_app(make_config(tmp_path / "fresh"))
    finish_setup(dash_app)
    statuses: list[tuple[str, int]] = []
    start = threading.Barrier(1 + 2 * len(paths))

    def get(path: str) -> None:
        client = dash_app.server.test_client()
        start.wait()
        statuses.append((path, client.get(path).status_code))

    # The layout request and the bundle requests arrive together, as a page's do.
    threads = [threading.Thread(target=get, args=("/_dash-layout",))]
    threads += [threading.Thread(target=get, args=(p,)) for p in paths * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(statuses) == len(threads)
    assert [s for s in statuses if s[1] != 200] == []
