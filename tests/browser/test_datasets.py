"""Picking a server-side dataset (DATASETS_DIR) in a real browser: computed on a Dask cluster.

A gunicorn server of its own (production settings, local job manager) lists two
datasets; a LocalCluster of 2 worker processes computes them. The server's
per-job memory limit is tiny (64 MB): the dataset job, which only waits on the
cluster, is exempt from it (the cluster bounds memory), so it finishes all the
same; its time limit applies (generous here). Changing the bin count redraws
from the cached statistics; maps fitted on a sample show their table, verdict
and diagrams of every kind; per group and over time are computed on the cluster
too; a dataset with a bad row shows the core's message.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from app.supervisor import web_command

from .conftest import (
    APP_ENV_VARS,
    REPO,
    SCREENS,
    TIMEOUT_MS,
    VIEWPORT,
    Server,
    free_port,
    start_server,
    wait_until_healthy,
)
from .dashboard_page import Dashboard, PageWatch

distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")

try:
    from playwright.sync_api import expect
except ImportError:  # the browser_available fixture skips
    expect = None


def _write(path: Path, n: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.5
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = rng.random(n)[:, None] > np.cumsum(p**0.8 / (p**0.8).sum(1, keepdims=True), axis=1)
    cols = {f"p_{j}": p[:, j] for j in range(k)}
    cols["label"] = y.sum(axis=1).clip(0, k - 1)
    pq.write_table(pa.table(cols), path, row_group_size=2000)


def _write_events(path: Path, n: int) -> None:
    """K = 3 scores with a region (one over-confident) and a timestamp over eight weeks."""
    rng = np.random.default_rng(4)
    z = rng.normal(size=(n, 3)) * 2.0
    truth = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(0, 2)
    region = np.array(["north", "south", "west"])[rng.integers(0, 3, n)]
    z = z * np.where(region == "west", 1.8, 1.0)[:, None]
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    seconds = 1_704_067_200 + np.sort(rng.integers(0, 56 * 86_400, n))
    cols = {f"p_{j}": p[:, j] for j in range(3)}
    cols |= {"label": y, "region": region, "row_id": np.arange(n)}
    cols["timestamp"] = seconds.astype("datetime64[s]")
    pq.write_table(pa.table(cols), path, row_group_size=2000)


@pytest.fixture(scope="module")
def datasets_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("datasets")
    (root / "requests").mkdir()
    for i in range(2):
        _write(root / "requests" / f"day-{i}.parquet", 5000, 3, seed=i)
    _write_events(root / "events.parquet", 4000)
    _write(root / "broken.parquet", 3000, 3, seed=9)
    table = pq.read_table(root / "broken.parquet").to_pydict()
    table["label"][2500] = 7  # a label out of range
    pq.write_table(pa.table(table), root / "broken.parquet", row_group_size=2000)
    return root


@pytest.fixture(scope="module")
def cluster(dask_extra) -> Iterator:
    """A LocalCluster of 2 worker processes, of this module's own.

    Not the session's ``dask_cluster``: a test here scales it to no worker and back,
    and workers started by ``scale`` do not get the engine's malloc settings, which
    the core tests check on the session's cluster.
    """
    local = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    with local:
        yield local


@pytest.fixture(scope="module")
def dataset_server(browser_available, datasets_dir, cluster, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dataset-server")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in APP_ENV_VARS}
    env.update(
        APP_ENV="production",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECRET_KEY=secrets.token_hex(32),
        SESSION_COOKIE_SECURE="0",
        CACHE_DIR=str(tmp / "cache"),
        BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="2",
        THREADS="1",
        LOG_LEVEL="info",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        DATASETS_DIR=str(datasets_dir),
        DASK_SCHEDULER_ADDRESS=cluster.scheduler_address,
        JOB_TIME_LIMIT_SECONDS="240",  # cluster jobs obey it (issue 31, item 8)
        JOB_MEMORY_LIMIT_MB="64",
    )
    srv: Server = start_server(
        web_command(), f"http://127.0.0.1:{port}", cwd=REPO, env=env, log_path=tmp / "server.log"
    )
    try:
        wait_until_healthy(srv)
    except Exception as exc:
        srv.stop()
        pytest.fail(f"the server did not start: {exc}\n{srv.log_since()}", pytrace=False)
    yield srv
    srv.stop()


@pytest.fixture
def tab(browser, dataset_server):
    context = browser.new_context(viewport=VIEWPORT, base_url=dataset_server.url)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    watch = PageWatch()
    watch.attach(page)
    yield Dashboard(page, watch)
    context.close()
    assert "Traceback" not in dataset_server.log_since(), dataset_server.log_since()[-4000:]


def _pick(ui: Dashboard, name: str) -> None:
    ui.show_controls()
    ui.page.locator("#dataset-select").click()
    ui.page.get_by_role("option", name=name, exact=True).click()


def test_pick_a_dataset_see_its_diagram_and_rebin_from_the_cache(tab):
    ui = tab
    ui.open()
    section = ui.page.locator("#dataset-view")
    _pick(ui, "requests")
    expect(section.locator(".section-title")).to_have_text("Dataset requests", timeout=120_000)
    expect(section).to_contain_text("10,000 rows, 1 model(s): summarised on the Dask cluster")
    graph = section.locator(".reliability-graph .main-svg").first
    expect(graph).to_be_visible()
    expect(section.locator(".gtitle")).to_contain_text("requests")
    expect(ui.page.locator("#dataset-cancel")).to_be_disabled()  # the job is over
    ui.set_bins(30)
    expect(section).to_contain_text("30 equal-width bins")
    expect(section).to_contain_text("drawn from the cached statistics")
    ui.wait_callbacks()
    SCREENS.mkdir(parents=True, exist_ok=True)
    ui.page.screenshot(path=str(SCREENS / "dataset-picked.png"), full_page=True)
    # The parts box adds the Brier and log-loss parts to the dataset's table too (K = 3:
    # no log-loss parts, and the section says why).
    ui.page.locator("#score-parts input").check()
    table = section.locator("table.dataset-metrics")
    expect(table.locator("th")).to_contain_text(["Brier", "Brier cal.", "Brier ref."])
    expect(table.locator("td").last).to_have_text("n/a")
    expect(section).to_contain_text("Log-loss cal. and ref. are n/a for requests")
    ui.wait_callbacks()
    ui.page.screenshot(path=str(SCREENS / "dataset-parts.png"), full_page=True)
    # Maps on a sample: another cluster job (exempt from the tiny memory limit too).
    ui.map_checkbox("temperature scaling").check()
    ui.page.locator("#dataset-maps-run").click()
    maps = ui.page.locator("#dataset-maps-view")
    expect(maps.locator(".section-title").first).to_have_text(
        "Dataset requests: calibration maps on a sample", timeout=120_000
    )
    expect(maps.locator("table").first).to_contain_text("temperature")
    # The sample's measures beside the comparison, labelled with the sample.
    expect(maps).to_contain_text("Measures beyond bins, on the sample")
    measures = maps.locator("table").nth(1)
    expect(measures).to_contain_text("on a uniform sample of")
    expect(measures).to_contain_text("10,000 rows (seed 0)")
    expect(maps.locator(".reliability-graph .main-svg").first).to_be_visible()
    # The sample's verdict, as the uploads' (the same cards), labelled with the sample.
    expect(maps.locator(".section-title").nth(1)).to_have_text("Verdict, on the sample")
    card = maps.locator('.verdict-card[data-model="requests"]')
    expect(card).to_contain_text("Computed on the sample: 10,000 rows of requests")
    # The uploads' diagnostics cards, on the sample, each saying so.
    cards = maps.locator(".dataset-diagnostics")
    expect(cards).to_contain_text("Hosmer-Lemeshow goodness of fit · requests")
    expect(cards.locator(".card-source").first).to_have_text(
        "Computed on the sample (10,000 rows, seed 0)."
    )
    ui.wait_callbacks()
    ui.page.screenshot(path=str(SCREENS / "dataset-maps.png"), full_page=True)
    # Smooth and cumulative diagrams of the maps on the sample; the whole dataset stays
    # binned for the smooth kind and draws its cumulative diagram from the cells.
    whole = {
        "smooth": "The whole dataset shows its binned reliability diagram instead",
        "cumulative": "exact at every cell edge",
    }
    for kind, curve in (("smooth", "smoothed frequency"), ("cumulative", "cumulative difference")):
        ui.page.locator(f"#diagram-kind input[value={kind}]").check()
        expect(maps.locator(".reliability-graph").first).to_contain_text(curve)
        expect(maps.locator(".reliability-graph").first).to_contain_text("on a sample of")
        expect(section).to_contain_text(whole[kind])
    ui.wait_callbacks()
    ui.page.screenshot(path=str(SCREENS / "dataset-maps-cumulative.png"), full_page=True)
    ui.watch.assert_clean()


def _choose(ui: Dashboard, dropdown: str, option: str) -> None:
    ui.page.locator(dropdown).click()
    ui.page.get_by_role("option", name=option, exact=True).click()


def test_a_dataset_per_group_and_over_time(tab):
    """Group by a column of the dataset's schema, then weekly windows: the uploads' tables
    and figures, labelled exact on every row / from the sample; a column with too many
    groups is a message that leaves the windows; going back is drawn from the cache."""
    ui = tab
    ui.open()
    _pick(ui, "events")
    block = ui.page.locator("#dataset-slices")
    expect(block).to_be_visible()
    _choose(ui, "#dataset-group-select", "region")
    expect(block).to_contain_text("Worst group: region=west", timeout=120_000)
    expect(block).to_contain_text("Exact on all 4,000 rows (summed on the cluster)")
    expect(block).to_contain_text("reproducible uniform sample of 4,000 rows (seed 0)")
    expect(block.locator("table.diag-table").first).to_contain_text("region=west")
    expect(block.locator(".js-plotly-plot").first).to_be_visible()
    _choose(ui, "#dataset-window", "week (from Monday)")
    expect(block.locator(".dataset-slices-title").nth(1)).to_have_text("Over time", timeout=120_000)
    expect(block.locator("table.diag-table").nth(1)).to_contain_text(
        "reference (the first window)", timeout=120_000
    )
    expect(block).to_contain_text("the windows flagged above the reference")
    ui.wait_callbacks()
    SCREENS.mkdir(parents=True, exist_ok=True)
    block.screenshot(path=str(SCREENS / "dataset-slices.png"))
    _choose(ui, "#dataset-group-select", "row_id")
    expect(block).to_contain_text("Per group: ", timeout=120_000)
    expect(block).to_contain_text("more than the 1,000 that can be compared and drawn")
    expect(block.locator("table.diag-table").first).to_contain_text("reference (the first")
    ui.wait_callbacks()
    block.screenshot(path=str(SCREENS / "dataset-slices-too-many-groups.png"))
    _choose(ui, "#dataset-group-select", "region")
    expect(block).to_contain_text("Worst group: region=west")
    expect(ui.page.locator("#dataset-slices-cancel")).to_be_disabled()
    ui.watch.assert_clean()


def test_a_dataset_with_a_bad_row_shows_the_file_and_rows(tab):
    ui = tab
    ui.open()
    _pick(ui, "broken")
    section = ui.page.locator("#dataset-view")
    expect(section).to_contain_text(
        "'broken.parquet' rows 2,001-3,000 (row group 1)", timeout=120_000
    )
    expect(ui.page.locator("#dataset-run")).to_be_enabled()
    ui.watch.assert_clean()


def _wait(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.1)


def test_cancel_leaves_the_page_usable_and_the_cluster_idle(tab, cluster):
    ui = tab
    ui.open()
    cluster.scale(0)  # no worker: the job's graph waits on the scheduler until cancelled
    _wait(lambda: not cluster.scheduler.workers)
    try:
        _pick(ui, "requests")
        expect(ui.page.locator("#dataset-status")).to_contain_text("0 of 10,000 rows")
        _wait(lambda: len(cluster.scheduler.tasks) > 0)
        ui.page.locator("#dataset-cancel").click()
        expect(ui.page.locator("#dataset-cancel")).to_be_disabled()
        expect(ui.page.locator("#dataset-run")).to_be_enabled()
        _wait(lambda: len(cluster.scheduler.tasks) == 0)  # the job's client let go of its graph
        expect(ui.page.locator("#dataset-view")).to_contain_text("not computed yet")
    finally:
        cluster.scale(2)
    _wait(lambda: len(cluster.scheduler.workers) == 2)
    ui.page.locator("#dataset-run").click()  # the page is usable: computing again works
    section = ui.page.locator("#dataset-view")
    expect(section.locator(".section-title")).to_have_text("Dataset requests", timeout=120_000)
    expect(section.locator(".reliability-graph .main-svg").first).to_be_visible()
    ui.watch.assert_clean()
