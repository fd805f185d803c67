"""A dataset's "Per group" and "Over time", computed on a Dask LocalCluster by the page's job.

The point estimates equal the in-memory core's on all rows (to float rounding);
the intervals and the test come from the sample and the page says so. Results
are kept per dataset and settings (a later view needs no cluster); bad choices
(a column the dataset lacks, too many groups, no time column, equal-frequency
bins) are messages in the block, never a traceback.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")

from dash import no_update  # noqa: E402

from app.callbacks.groups.dataset import (  # noqa: E402
    run_slices_job,
    slice_options,
    slices_panel,
    slices_request,
)
from app.context import AppContext  # noqa: E402
from app.datasets import Datasets  # noqa: E402
from app.groups.dataset import (  # noqa: E402
    compute_slices,
    dataset_group_views,
    dataset_time_views,
    parse_slices,
    time_subtitle,
)
from app.session import new_session_id  # noqa: E402
from app.settings import RawSettings, parse_view  # noqa: E402
from calibration_core import Binning, load_predictions  # noqa: E402
from calibration_core.slices import (  # noqa: E402
    drift_report,
    group_index,
    slice_report,
    time_values,
    window_index,
)

from .conftest import make_context  # noqa: E402

TOL = 1e-9
REGIONS = np.array(["north", "south", "east", "west", "tiny"])


def _write(path: Path, n: int, seed: int, start: int) -> None:
    """K = 3 scores, a label, two models, a region (one rare), a row id, a timestamp."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 3)) * 2.0
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(0, 2)
    region = REGIONS[rng.choice(5, size=n, p=[0.3, 0.3, 0.2, 0.19, 0.01])]
    seconds = 1_704_067_200 + start * 86_400 + np.sort(rng.integers(0, 21 * 86_400, size=n))
    cols = {f"p_{j}": p[:, j] for j in range(3)}
    cols |= {"label": y, "model": np.where(np.arange(n) % 2 == 0, "a", "b"), "region": region}
    cols |= {"row_id": np.arange(n) + start * 10_000, "timestamp": seconds.astype("datetime64[s]")}
    pq.write_table(pa.table(cols), path, row_group_size=700)


@pytest.fixture(scope="module")
def datasets_dir(tmp_path_factory) -> Path:
    """``events/`` (two files, three weeks each) and ``plain.parquet`` (no other column)."""
    root = tmp_path_factory.mktemp("datasets")
    (root / "events").mkdir()
    _write(root / "events" / "part-0.parquet", 2400, seed=1, start=0)
    _write(root / "events" / "part-1.parquet", 1800, seed=2, start=21)
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(2), size=500)
    pq.write_table(
        pa.table({"p_0": p[:, 0], "p_1": p[:, 1], "label": rng.integers(0, 2, 500)}),
        root / "plain.parquet",
    )
    return root


def _context(tmp_path, datasets_dir, address) -> AppContext:
    base = make_context(tmp_path)
    datasets = Datasets(datasets_dir, address, tmp_path / "datasets", 3600)
    return AppContext(config=base.config, store=base.store, sessions=base.sessions,
                      datasets=datasets)  # fmt: skip


@pytest.fixture
def ctx(tmp_path, datasets_dir, scheduler) -> AppContext:
    context = _context(tmp_path, datasets_dir, scheduler)
    yield context
    context.store.close()


def _controls(**values) -> dict:
    return {"group": None, "min_rows": None, "time_column": None, "window": None,
            "rows": None, "reference": "1", **values}  # fmt: skip


def _job(ctx, sid, name, slices, raw=None) -> dict:
    progress = []
    raw = RawSettings(n_bins=10) if raw is None else raw
    state = run_slices_job(ctx, sid, None, raw, name, slices, set_progress=progress.append)
    return state


def _text(component) -> str:
    """Every string of a component tree, joined (what the page shows)."""
    if isinstance(component, str):
        return component
    if isinstance(component, (list, tuple)):
        return " ".join(_text(c) for c in component)
    children = getattr(component, "children", None)
    return "" if children is None else _text(children)


def _in_memory(datasets_dir: Path, tmp_path: Path) -> dict:
    """Per model, the in-memory predictions of all rows of ``events/`` with their columns."""
    paths = sorted((datasets_dir / "events").glob("*.parquet"))
    whole = tmp_path / "events.parquet"
    pq.write_table(pa.concat_tables([pq.read_table(p) for p in paths]), whole)
    return {pred.name: pred for pred in load_predictions(whole, name="events")}


def test_columns_come_from_the_parquet_schema(ctx):
    hidden, groups, times, group, column = slice_options(ctx, "events", "gone", "timestamp")
    assert not hidden
    assert (
        [o["value"] for o in groups]
        == ["region", "row_id", "timestamp"]
        == [o["value"] for o in times]
    )
    assert group is None  # a column the dataset does not have is cleared
    assert column is no_update  # one it has stays
    assert slice_options(ctx, "plain", None, None)[1] == []
    assert slice_options(ctx, None, None, None)[0] is True


def test_groups_and_windows_are_exact_on_every_row_and_labelled(ctx, datasets_dir, tmp_path):
    """The groups' and windows' point estimates are the in-memory core's on all rows; the
    page says which numbers are exact and which come from the sample."""
    sid = new_session_id()
    slices = _controls(group="region", window="1w", reference="2")
    state = _job(ctx, sid, "events", slices)
    assert state["error"] is None, state
    raw = RawSettings(n_bins=10)
    view = parse_view("confidence", None, "width", 10, "wilson", 0.95)
    s = parse_slices(**slices)
    reference = _in_memory(datasets_dir, tmp_path)
    groups = dataset_group_views(ctx.datasets, sid, "events", s, view)
    assert [g.model for g in groups] == ["a", "b"]
    for item in groups:
        pred = reference[item.model]
        want = slice_report(pred, group_index(pred, ["region"]), binning=Binning("width", 10),
                            n_resamples=0, test_resamples=0)  # fmt: skip
        gv = item.group
        assert gv.report.groups.labels == want.groups.labels
        assert list(gv.sizes) == list(want.groups.sizes)
        for name, values in want.metrics.items():
            np.testing.assert_allclose(gv.report.metrics[name], values, atol=TOL, rtol=0)
        np.testing.assert_allclose(gv.report.statistics.count, want.statistics.count)
        assert gv.report.worst == want.worst
        assert gv.intervals["test"] is not None  # the sample's homogeneity test
    times = dataset_time_views(ctx.datasets, sid, "events", s, view)
    for item in times:
        pred = reference[item.model]
        windows = window_index(time_values(pred, "timestamp"), "1w", pred.n_samples)
        want = drift_report(pred, windows, reference="2", binning=Binning("width", 10),
                            n_resamples=0).to_dict()  # fmt: skip
        got = item.time
        assert [w["window"] for w in got["windows"]] == [w["window"] for w in want["windows"]]
        for mine, theirs in zip(got["windows"], want["windows"], strict=True):
            assert mine["rows"] == theirs["rows"]
            assert abs(mine["ece"] - theirs["ece"]) <= TOL
        assert abs(got["reference"]["ece"] - want["reference"]["ece"]) <= TOL
    shown = _text(slices_panel(ctx, sid, "events", state, slices, raw))
    n_rows = sum(reference[m].n_samples for m in ("a",))
    assert f"Exact on all {n_rows:,} rows" in shown
    assert "reproducible uniform sample of" in shown
    assert "Per group of region" in shown and "Over time" in shown
    assert "Worst group: region=" in shown
    assert "tiny" in shown and "small: not judged" in shown


def test_kept_results_are_drawn_again_without_the_cluster(ctx, tmp_path, datasets_dir):
    """Settings computed once are read back from the cache: with the scheduler out of
    reach the job does nothing and the block draws them; new settings say it cannot."""
    sid = new_session_id()
    first = _controls(group="region")
    raw = RawSettings(n_bins=10)
    assert slices_request(ctx, sid, "events", first, raw) is not no_update  # starts the job
    assert _job(ctx, sid, "events", first)["error"] is None
    assert slices_request(ctx, sid, "events", first, raw) is no_update  # kept: no job
    assert slices_request(ctx, sid, "events", first, RawSettings(n_bins=12)) is not no_update
    for refused in (_controls(group="nope"), _controls(), _controls(window="2y")):
        assert slices_request(ctx, sid, "events", refused, raw) is no_update  # the view says why
    offline = Datasets(datasets_dir, "tcp://127.0.0.1:1", tmp_path / "datasets", 3600)
    away = AppContext(config=ctx.config, store=ctx.store, sessions=ctx.sessions,
                      datasets=offline)  # fmt: skip
    assert _job(away, sid, "events", first)["error"] is None
    shown = _text(slices_panel(away, sid, "events", None, first, RawSettings(n_bins=10)))
    assert "Per group of region" in shown and "not computed" not in shown
    other = _controls(group="region", min_rows=50)
    assert "not computed for these settings" in _text(
        slices_panel(away, sid, "events", None, other, RawSettings(n_bins=10))
    )


@pytest.mark.parametrize(
    ("name", "slices", "raw", "message"),
    [
        ("events", _controls(group="nope"), None, "has no column 'nope' to group by"),
        ("events", _controls(group="row_id"), None, "1,000"),
        ("plain", _controls(window="1w"), None, "has no time column"),
        ("events", _controls(window="1w", time_column="region"), None, "not times"),
        ("events", _controls(group="region"), RawSettings(scheme="frequency"), "equal-width"),
        ("events", _controls(window="2y"), None, "the window must be one of"),
        ("events", _controls(window="rows"), None, "every N rows needs N"),
        ("events", _controls(window="rows", rows=500), None, "Over time: "),
    ],
)
def test_bad_choices_are_messages_in_the_block(ctx, name, slices, raw, message):
    """The job's record and the block say what is wrong; nothing raises."""
    sid = new_session_id()
    raw = RawSettings(n_bins=10) if raw is None else raw
    state = _job(ctx, sid, name, slices, raw)
    assert message in state["error"], state
    assert "Traceback" not in state["error"]
    assert message in _text(slices_panel(ctx, sid, name, state, slices, raw))
    # Another setting's error is not shown against these ones.
    assert message not in _text(slices_panel(ctx, sid, name, state, _controls(), raw))


def test_a_bad_group_column_does_not_cost_the_windows(ctx):
    """Picked together, a column with too many groups fails alone: the windows are kept and
    drawn, the message says which part failed."""
    sid = new_session_id()
    slices = _controls(group="row_id", window="1m")
    raw = RawSettings(n_bins=10)
    state = _job(ctx, sid, "events", slices, raw)
    assert state["error"].startswith("Per group: grouping by row_id gives"), state
    shown = _text(slices_panel(ctx, sid, "events", state, slices, raw))
    assert "Per group: grouping by row_id" in shown
    assert "Over time" in shown and "not computed" not in shown
    view = parse_view("confidence", None, "width", 10, "wilson", 0.95)
    times = dataset_time_views(ctx.datasets, sid, "events", parse_slices(**slices), view)
    assert [t.model for t in times] == ["a", "b"]


def _slices_job_in_child(datasets, sid, name, slices) -> None:
    compute_slices(datasets, sid, name, parse_slices(**slices), 10, lambda *_: None)


def _wait(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_a_cancelled_slices_job_keeps_nothing_and_lets_go_of_the_cluster(ctx, tmp_path):
    """The job is killed (the job manager's cancel) while its pass waits on a scheduler
    without workers: the scheduler forgets its tasks, nothing is kept, computing again works."""
    sid = new_session_id()
    slices = _controls(group="region")
    ctx.datasets.compute(sid, "events", lambda *_: None)  # the summaries, kept
    idle = distributed.LocalCluster(
        n_workers=0, processes=True, dashboard_address=None, silence_logs=40
    )
    with idle:
        stalled = Datasets(ctx.datasets.root, idle.scheduler_address, tmp_path / "datasets", 3600)
        child = multiprocessing.get_context("fork").Process(
            target=_slices_job_in_child, args=(stalled, sid, "events", slices)
        )
        child.start()
        _wait(lambda: len(idle.scheduler.tasks) > 0)  # the pass's graph is submitted
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        _wait(lambda: len(idle.scheduler.tasks) == 0)
    raw = RawSettings(n_bins=10)
    assert "not computed for these settings" in _text(
        slices_panel(ctx, sid, "events", None, slices, raw)
    )
    assert _job(ctx, sid, "events", slices, raw)["error"] is None
    assert "Worst group" in _text(slices_panel(ctx, sid, "events", None, slices, raw))


def test_windows_of_n_rows_pass_through_to_the_engine(ctx, datasets_dir):
    """Every N rows needs no time column: the windows equal the in-memory ones of the
    file's rows in order."""
    sid = new_session_id()
    slices = _controls(window="rows", rows=120)
    raw = RawSettings(n_bins=10)
    assert _job(ctx, sid, "plain", slices, raw)["error"] is None
    view = parse_view("confidence", None, "width", 10, "wilson", 0.95)
    (item,) = dataset_time_views(ctx.datasets, sid, "plain", parse_slices(**slices), view)
    (pred,) = load_predictions(datasets_dir / "plain.parquet", name="plain")
    windows = window_index(None, "120rows", pred.n_samples)
    want = drift_report(pred, windows, binning=Binning("width", 10), n_resamples=0).to_dict()
    got = item.time
    assert [w["window"] for w in got["windows"]] == [w["window"] for w in want["windows"]]
    assert [w["rows"] for w in got["windows"]] == [120, 120, 120, 120, 20]
    for mine, theirs in zip(got["windows"], want["windows"], strict=True):
        assert abs(mine["ece"] - theirs["ece"]) <= TOL
    assert "5 windows of 120 rows (row order)" in time_subtitle(got, view)


def _assert_same_documents(a, b) -> None:
    """Equal documents, floats within 1e-12 relative (NaN equal to NaN)."""
    if isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _assert_same_documents(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same_documents(x, y)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15, nan_ok=True), (a, b)
    else:
        assert a == b


def test_without_a_scheduler_groups_and_windows_are_the_cluster_ones(ctx, tmp_path, datasets_dir):
    """Streamed in the job's process (no DASK_SCHEDULER_ADDRESS): the same exact groups and
    windows, the same sample and so the same intervals, test and flags as on the cluster."""
    streamed = _context(tmp_path / "streamed", datasets_dir, None)
    sid = new_session_id()
    slices = _controls(group="region", window="1w", reference="2")
    for context in (streamed, ctx):
        assert _job(context, sid, "events", slices)["error"] is None
    view = parse_view("confidence", None, "width", 10, "wilson", 0.95)
    s = parse_slices(**slices)
    for views in (dataset_group_views, dataset_time_views):
        here, there = (views(c.datasets, sid, "events", s, view) for c in (streamed, ctx))
        assert [g.model for g in here] == [g.model for g in there] == ["a", "b"]
        for mine, theirs in zip(here, there, strict=True):
            if views is dataset_time_views:
                _assert_same_documents(mine.time, theirs.time)
                continue
            assert mine.group.report.groups.labels == theirs.group.report.groups.labels
            for name, values in theirs.group.report.metrics.items():
                np.testing.assert_allclose(mine.group.report.metrics[name], values, rtol=1e-12)
            _assert_same_documents(mine.group.intervals, theirs.group.intervals)
    shown = _text(slices_panel(streamed, sid, "events", None, slices, RawSettings(n_bins=10)))
    assert "(summed in this server)" in shown and "reproducible uniform sample of" in shown
    streamed.store.close()


def _zoned_dataset(folder: Path, zones: tuple[str, str]) -> None:
    """Two files of one model whose text times are written with ``zones`` ("" for none)."""
    folder.mkdir()
    for i, zone in enumerate(zones):
        rng = np.random.default_rng(i)
        p = rng.dirichlet(np.ones(2), size=400)
        start = np.datetime64("2024-01-01T00:00:00") + np.timedelta64(14 * i, "D")
        stamps = start + (np.arange(400) * 3600).astype("timedelta64[s]")
        text = [f"{t}{zone}" for t in np.datetime_as_string(stamps)]
        table = {"p_0": p[:, 0], "p_1": p[:, 1], "label": rng.integers(0, 2, 400), "time": text}
        pq.write_table(pa.table(table), folder / f"part-{i}.parquet")


def test_times_of_several_zones_are_noted_and_zoned_with_naive_files_refused(tmp_path):
    root = tmp_path / "zones"
    root.mkdir()
    _zoned_dataset(root / "zoned", ("Z", "+02:00"))
    _zoned_dataset(root / "mixed", ("", "-05:00"))
    context = _context(tmp_path, root, None)  # streamed in this process
    sid = new_session_id()
    slices = _controls(window="1w", reference="1")
    state = _job(context, sid, "zoned", slices)
    assert state["error"] is None, state
    shown = _text(slices_panel(context, sid, "zoned", state, slices, RawSettings(n_bins=10)))
    assert "times in 2 time zones (+02:00, Z) were converted to UTC" in shown
    state = _job(context, sid, "mixed", slices)
    assert "times with a zone in" in str(state["error"]), state
    assert "part-1.parquet" in str(state["error"]) and "part-0.parquet" in str(state["error"])
    context.store.close()
