"""Server-side datasets (DATASETS_DIR) computed on a Dask LocalCluster from the page's job.

Picking a dataset runs the cluster job once; its cached statistics then answer
every bin count, notion and band with the in-memory core's numbers (to 1e-12)
without reading the files again. Names from the browser are looked up in the
server's list, never joined to a path. Bad rows are reported with their file
and row range; a killed (cancelled) job leaves nothing half-done behind.
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

from app.analysis import HISTOGRAM_BINS  # noqa: E402
from app.callbacks.datasets import (  # noqa: E402
    dataset_panel,
    maps_panel,
    run_dataset_job,
    run_maps_job,
)
from app.config import AppConfig, ConfigError  # noqa: E402
from app.context import AppContext  # noqa: E402
from app.dataset_diagnostics import HL_MISSING, sample_cards, whole_estimators  # noqa: E402
from app.dataset_view import (  # noqa: E402
    FREQUENCY_NOTE,
    dataset_view,
    model_info,
    sample_panels,
    target_statistics,
)
from app.datasets import Datasets, scan_datasets  # noqa: E402
from app.diagnostics.cards import hosmer_lemeshow_row  # noqa: E402
from app.diagnostics.overview import estimators  # noqa: E402
from app.diagnostics.target import notion_spec  # noqa: E402
from app.session import new_session_id  # noqa: E402
from app.settings import ALL_CLASSES, SCORE_PARTS_ON, RawSettings, parse_view  # noqa: E402
from calibration_core import (  # noqa: E402
    CalibrationInputError,
    compare_maps,
    load_predictions,
    score_parts,
)
from calibration_core.compare.results import score_probs  # noqa: E402
from calibration_core.measures import cumulative_differences  # noqa: E402
from calibration_core.metrics import classwise_statistics, confidence_statistics  # noqa: E402

from .conftest import make_context  # noqa: E402

TOL = 1e-12


def _write(path: Path, n: int, k: int, seed: int, *, model=None, row_group: int = 500) -> None:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    p[: n // 4] = np.round(p[: n // 4], 2)  # scores on bin edges
    p[: n // 4] /= p[: n // 4].sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(0, k - 1)
    cols = {f"p_{j}": p[:, j] for j in range(k)}
    cols["label"] = y
    if model is not None:
        cols["model"] = model
    pq.write_table(pa.table(cols), path, row_group_size=row_group)


@pytest.fixture(scope="module")
def datasets_dir(tmp_path_factory) -> Path:
    """``logs/`` (3 files, K = 4, two models in the last), ``binary.parquet``, ``bad/``."""
    root = tmp_path_factory.mktemp("datasets")
    (root / "logs").mkdir()
    for i, n in enumerate((1200, 900, 1500)):
        model = None if i < 2 else np.where(np.arange(n) % 3 == 0, "main", "other")
        _write(root / "logs" / f"part-{i}.parquet", n, 4, seed=i, model=model)
    _write(root / "binary.parquet", 2000, 2, seed=7)
    (root / "bad").mkdir()
    _write(root / "bad" / "part-0.parquet", 1000, 3, seed=3)
    table = pq.read_table(root / "bad" / "part-0.parquet").to_pydict()
    table["p_1"][700] = float("nan")
    pq.write_table(pa.table(table), root / "bad" / "part-1.parquet", row_group_size=500)
    (root / "notes.txt").write_text("not a dataset")
    return root


@pytest.fixture
def ctx(tmp_path, datasets_dir, scheduler) -> AppContext:
    base = make_context(tmp_path)
    datasets = Datasets(datasets_dir, scheduler, tmp_path / "datasets", 3600)
    context = AppContext(config=base.config, store=base.store, sessions=base.sessions,
                         datasets=datasets)  # fmt: skip
    yield context
    context.store.close()


def _reference(paths) -> dict:
    per_model: dict[str, list] = {}
    for path in paths:
        for pred in load_predictions(path, name=Path(path).parent.name):
            per_model.setdefault(pred.name, []).append(pred)
    return {
        name: (np.concatenate([p.probs for p in ps]), np.concatenate([p.labels for p in ps]))
        for name, ps in per_model.items()
    }


def _run(ctx, sid, name):
    progress = []
    state = run_dataset_job(ctx, sid, None, None, name, set_progress=progress.append)
    return state, progress


# ---------------------------------------------------------------- settings
def test_datasets_dir_needs_a_directory_and_a_scheduler_is_optional(tmp_path):
    streamed = AppConfig.from_env({"DATASETS_DIR": str(tmp_path)})  # the streaming engine
    assert streamed.datasets_dir == tmp_path and streamed.dask_scheduler_address is None
    with pytest.raises(ConfigError, match="not a directory"):
        AppConfig.from_env(
            {"DATASETS_DIR": str(tmp_path / "no"), "DASK_SCHEDULER_ADDRESS": "tcp://h:8786"}
        )
    with pytest.raises(ConfigError, match=r"tcp://10\.0\.0\.5:8786"):
        AppConfig.from_env({"DATASETS_DIR": str(tmp_path), "DASK_SCHEDULER_ADDRESS": "h:8786"})
    config = AppConfig.from_env(
        {"DATASETS_DIR": str(tmp_path), "DASK_SCHEDULER_ADDRESS": "tcp://127.0.0.1:8786"}
    )
    assert config.datasets_dir == tmp_path
    assert config.dask_scheduler_address == "tcp://127.0.0.1:8786"
    assert AppConfig.from_env({}).datasets_dir is None


# ------------------------------------------------------------------ names
def test_the_list_is_the_folders_and_files_of_datasets_dir(datasets_dir):
    assert list(scan_datasets(datasets_dir)) == ["bad", "binary", "logs"]


@pytest.mark.parametrize(
    "name",
    [
        "../datasets",
        "..",
        "logs/../bad",
        "logs/part-0.parquet",
        "/etc/passwd",
        "binary.parquet",
        "",
        None,
        5,
        ["logs"],
        {"name": "logs"},
    ],
)
def test_a_name_outside_the_list_is_refused_before_any_file_is_touched(ctx, name):
    sid = new_session_id()
    with pytest.raises(CalibrationInputError, match="no dataset named"):
        ctx.datasets.resolve(name)
    if name is None:
        return  # the cleared dropdown: no job, nothing drawn
    state, progress = _run(ctx, sid, name)
    assert "no dataset named" in state["error"] and progress == []
    shown = dataset_panel(ctx, sid, name, state, RawSettings())
    assert "no dataset named" in str(shown)
    assert not list(ctx.datasets.results.iterkeys())


# ------------------------------------------------------------ job and view
def test_picked_dataset_equals_the_in_memory_core_and_rebins_from_the_cache(
    ctx, datasets_dir, tmp_path
):
    # A copy of logs/ that the test may take away after the job.
    moving = datasets_dir / "moving"
    moving.mkdir()
    for path in sorted((datasets_dir / "logs").glob("*.parquet")):
        (moving / path.name).write_bytes(path.read_bytes())
    paths = sorted(str(p) for p in moving.glob("*.parquet"))
    reference = _reference(paths)
    sid = new_session_id()
    try:
        state, progress = _run(ctx, sid, "moving")
        assert state["error"] is None
        assert progress[-1][0] == progress[-1][1] == str(1200 + 900 + 1500)
        assert "rows summarised on the cluster" in progress[-1][2]
        summaries = ctx.datasets.cached(sid, "moving")["summaries"]
        assert list(summaries) == ["moving", "main", "other"]
    finally:
        for path in moving.glob("*.parquet"):  # the data is gone: only the cache answers
            path.rename(path.with_suffix(".moved"))
    assert "moving" not in ctx.datasets.names()
    for m in (2, 7, 15, 64, 100):  # the page's bin counts (the cells answer 1..100)
        for band in ("wilson", "consistency"):
            raw = RawSettings(n_bins=m, band=band, handles=[])
            shown = dataset_panel(ctx, sid, "moving", state, raw)
            assert "drawn from the cached statistics" in str(shown), shown
            view = dataset_view("moving", summaries, raw.parse()[3])
            assert len(view.figures) == 3
            for row in view.rows:
                probs, labels = reference[row["model"]]
                want = score_probs(probs, labels, n_bins=m, scheme="width")
                assert row["n_samples"] == len(labels)
                for key, value in want.items():
                    assert abs(row[key] - value) <= TOL, (m, key)
        for name, (probs, labels) in reference.items():
            view = parse_view("confidence", None, "width", m, "wilson", 0.95)
            got, want = (
                target_statistics(summaries[name], view, None),
                confidence_statistics(probs, labels, n_bins=m),
            )
            np.testing.assert_array_equal(got.count, want.count)
            np.testing.assert_array_equal(got.sum_target, want.sum_target)
            classes = classwise_statistics(probs, labels, n_bins=m)
            view = parse_view("class", "2", "width", m, "wilson", 0.95)
            got = target_statistics(summaries[name], view, 2)
            np.testing.assert_array_equal(got.count, classes.count[2])
    # Asking again for a kept dataset does not run anything on the cluster.
    state, progress = _run(ctx, sid, "moving")
    assert state["error"] is None and progress == []


def test_views_the_cells_cannot_answer_say_so(ctx):
    sid = new_session_id()
    state, _ = _run(ctx, sid, "binary")
    assert state["error"] is None
    frequency = dataset_panel(ctx, sid, "binary", state, RawSettings(scheme="frequency"))
    assert FREQUENCY_NOTE.format(n_bins=15) in str(frequency)
    smooth = str(dataset_panel(ctx, sid, "binary", state, RawSettings(kind="smooth")))
    assert "Smooth diagram: on the sample only" in smooth and "Fit maps on a sample" in smooth
    assert "No bound in the cell width holds" in smooth
    binary = dataset_panel(ctx, sid, "binary", state, RawSettings(notion="binary"))
    assert "Dataset binary" in str(binary)
    # The page's class follows the model list's models: one the dataset lacks shows its worst.
    lacking = str(
        dataset_panel(ctx, sid, "binary", state, RawSettings(notion="class", class_value="8"))
    )
    assert "has no class named '8'" in lacking and "showing all 2 classes" in lacking
    other = new_session_id()  # another session has to compute its own
    assert "not computed yet" in str(dataset_panel(ctx, other, "binary", None, RawSettings()))


def _traces(figure: dict, name: str) -> list[dict]:
    return [trace for trace in figure["data"] if trace.get("name") == name]


@pytest.mark.parametrize(
    ("dataset", "notion", "class_value"),
    [("logs", "confidence", None), ("logs", "class", "all"), ("binary", "binary", None)],
)
def test_the_cumulative_diagram_of_a_dataset_is_exact_at_the_cell_edges(
    ctx, datasets_dir, dataset, notion, class_value
):
    folder = datasets_dir / dataset
    one = [str(datasets_dir / f"{dataset}.parquet")]
    paths = sorted(str(p) for p in folder.glob("*.parquet")) if folder.is_dir() else one
    reference = _reference(paths) if folder.is_dir() else None
    sid = new_session_id()
    state, _ = _run(ctx, sid, dataset)
    assert state["error"] is None
    raw = RawSettings(kind="cumulative", notion=notion, class_value=class_value, handles=[])
    shown = str(dataset_panel(ctx, sid, dataset, state, raw))
    assert "exact at every cell edge" in shown and "need the rows" not in shown
    summaries = ctx.datasets.cached(sid, dataset)["summaries"]
    view = dataset_view(dataset, summaries, raw.parse()[3])
    for figure, name in zip(view.figures, summaries, strict=True):
        if reference is None:
            (pred,) = load_predictions(paths[0])
            probs, labels = pred.probs, pred.labels
        else:
            probs, labels = reference[name]
        curves = _traces(figure, "cumulative difference (labels − scores)")
        boxes = _traces(figure, "range between cell edges")
        assert len(curves) == len(boxes) >= 1
        assert "exact at the cell edges (markers)" in str(figure["layout"])
        classes = [None] if notion != "class" else list(range(4))
        for curve in curves:  # in "all classes" the worst come first: match each by its class
            matched = False
            for k in classes:
                full = cumulative_differences(probs, labels, notion=notion, class_index=k)
                rows = np.rint(full.rank * full.n_samples).astype(np.int64)
                edges = np.rint(np.asarray(curve["x"]) * full.n_samples).astype(np.int64)
                at = np.searchsorted(rows, edges).clip(0, rows.shape[0] - 1)
                if np.array_equal(rows[at], edges) and np.allclose(
                    full.difference[at], curve["y"], rtol=0, atol=TOL
                ):
                    matched = True
                    break
            assert matched, (dataset, notion, name)


# ------------------------------------------------------------------- maps
def _fit_maps(ctx, sid, name, raw):
    progress = []
    state = run_maps_job(ctx, sid, None, raw, name, set_progress=progress.append)
    return state, progress


def test_maps_on_a_dataset_sample_are_the_in_memory_comparison(ctx, datasets_dir):
    """The sample (100,000 rows at most) holds every row of these models, so the held-out
    table is the in-memory comparison's with the same folds, for any bins, either scheme."""
    sid = new_session_id()
    fit = RawSettings(maps=["temperature", "isotonic"], folds=3, handles=[])
    state, progress = _fit_maps(ctx, sid, "logs", fit)  # computes the statistics first
    assert state["error"] is None, state
    assert ctx.datasets.cached(sid, "logs") is not None
    assert "cross-fitting isotonic, temperature on the cluster" in progress[-2][2]
    assert progress[-1][2] == "maps fitted"
    entry = ctx.datasets.cached_maps(sid, "logs")
    assert entry["maps"] == ("isotonic", "temperature") and list(entry["models"]) == [
        "logs",
        "main",
        "other",
    ]
    reference = _reference(sorted(str(p) for p in (datasets_dir / "logs").glob("*.parquet")))
    for m, scheme, parts in ((15, "width", []), (7, "frequency", [SCORE_PARTS_ON])):
        raw = RawSettings(
            maps=["temperature", "isotonic"], n_bins=m, scheme=scheme, score_parts=parts,
            handles=[],
        )  # fmt: skip
        *panel, cards = maps_panel(ctx, sid, "logs", state, raw)
        shown = str(panel)  # the cards' notes say rows were "not fitted on"
        assert "calibration maps on a sample" in shown and "3-fold cross-fitting" in shown
        assert "not fitted" not in shown
        assert "Diagnostics, on the sample" in str(cards)
        for rows in ("2,100", "500", "1,000"):  # each model's own sample: logs, main, other
            assert f"Computed on the sample ({rows} rows, seed 0)" in str(cards)
        for title in ("ECE against the number of bins", "Hosmer-Lemeshow goodness of fit"):
            assert f"{title} · other" in str(cards)
        assert "Plug-in, adaptive and debiased calibration errors · main" in str(cards)
        assert HL_MISSING not in str(cards)  # the maps' job ran the test once, kept with it
        assert ("log-loss cal." in shown) == bool(parts)  # the parts box adds the parts
        stats = ctx.datasets.cached(sid, "logs")["summaries"]
        view = maps_view_of(entry, stats, raw)
        assert len(view.figures) == 3 and len(view.rows) == 9
        for row in view.rows:
            probs, labels = reference[row["model"]]
            memory = compare_maps(
                load_predictions_of(probs, labels, row["model"]),
                maps=["temperature", "isotonic"],
                folds=3,
                seed=0,
            )
            pred = memory.calibrated[row["map"]]
            want = score_probs(pred.probs, pred.labels, n_bins=m, scheme=scheme)
            if parts:
                want.update(score_parts(pred.probs, pred.labels, n_bins=m, scheme=scheme))
            assert set(want) <= set(row)
            for key, value in want.items():
                assert abs(row[key] - value) <= 1e-9, (row["model"], row["map"], key)
    # The measures of each sample's uncalibrated rows: the core's, labelled with the sample.
    from calibration_core.measures import measures_summary

    assert "Measures beyond bins, on the sample" in shown
    for row in view.measures:
        probs, labels = reference[row["model"]]
        found = entry["models"][row["model"]]
        want = measures_summary(load_predictions_of(probs, labels, row["model"]), seed=0)
        assert found["measures"].keys() == want.keys()
        assert (row["sample_rows"], row["sample_seed"]) == (len(labels), 0)
        assert f"{len(labels):,} rows (seed 0)" in shown and "on a uniform sample of" in shown
        top, close = want["confidence"], {"rel": 1e-9}  # a worker's BLAS may sum otherwise
        assert row["smooth_ece"] == pytest.approx(top["smooth_ece"]["value"], **close)
        assert row["ks_error"] == pytest.approx(top["cumulative"]["ks_error"], **close)
        assert row["tace"] == pytest.approx(want["classwise"]["tace"], **close)
        assert row["skce"] == pytest.approx(want["canonical"]["skce"]["unbiased"], **close)
        slope = top["hierarchy"]["recalibration"]["slope"]["value"]
        assert row["slope"] == pytest.approx(slope, **close)
    assert [r["model"] for r in view.measures] == ["logs", "main", "other"]
    # Equal-frequency diagrams keep an equal-width score histogram, as for uploads.
    frequency = parse_view("class", None, "frequency", 7, "wilson", 0.95)
    found = entry["models"]["main"]
    panels = sample_panels(model_info("logs", stats["main"]), found["comparison"], frequency)
    assert len(panels.panels) == 3 * 4 and panels.classes_shown == (4, 4)
    for panel in panels.panels:
        assert panel.message is None and len(panel.curve.stats.count) == 7
        assert len(panel.histogram.count) == HISTOGRAM_BINS
    # Other maps picked since: the last fit is shown, and says so.
    stale = str(maps_panel(ctx, sid, "logs", state, RawSettings(maps=["platt"], handles=[])))
    assert "the maps of the last fit (isotonic, temperature)" in stale
    hl = entry["models"]["main"]["hosmer_lemeshow"]
    assert [r.calibrator for r in hl] == ["uncalibrated", "isotonic", "temperature"]
    want = hosmer_lemeshow_row(entry["models"]["main"]["comparison"].calibrated["isotonic"], 10)
    assert (hl[1].statistic, hl[1].p_value) == (want.statistic, want.p_value)  # seed 0
    older = {**entry["models"]["main"]}
    del older["hosmer_lemeshow"]  # an entry kept before the job ran it
    old_entry = {**entry, "models": {"main": older}}
    assert HL_MISSING in str(sample_cards("logs", old_entry, stats, raw.parse()[3], ctx.store))


def maps_view_of(entry, summaries, raw):
    from app.dataset_view import maps_view

    return maps_view("logs", entry, summaries, raw.parse()[3])


def load_predictions_of(probs, labels, name):
    from calibration_core import Predictions

    return Predictions.from_probs(probs, labels, class_names=("0", "1", "2", "3"), name=name)


def test_maps_of_a_dataset_draw_every_kind_and_the_samples_verdict(
    ctx, datasets_dir, scheduler, capsys, monkeypatch
):
    """Smooth and cumulative diagrams of a dataset's maps are the uploads' curves of the
    sample's held-out predictions; its verdict is what ``evaluate --engine dask --maps``
    prints for the same sample, labelled with the sample."""
    import json

    from app.cli import main
    from app.curves import cumulative_panel, smooth_panel
    from app.dataset_view import KIND_NOTES, maps_view

    sid = new_session_id()
    maps = ["isotonic", "temperature"]
    state, _ = _fit_maps(ctx, sid, "binary", RawSettings(maps=maps, folds=3, handles=[]))
    assert state["error"] is None, state
    entry = ctx.datasets.cached_maps(sid, "binary")
    found = entry["models"]["binary"]
    calibrated = found["comparison"].calibrated
    stats = ctx.datasets.cached(sid, "binary")["summaries"]
    curves = {
        "smooth": "smoothed frequency",
        "cumulative": "cumulative difference (labels − scores)",
    }
    for kind, name in curves.items():
        raw = RawSettings(maps=maps, folds=3, kind=kind, notion="binary", handles=[])
        view = maps_view_of(entry, stats, raw)
        figure = view.figures[0]
        drawn = [t for t in figure["data"] if t["name"] == name]
        assert len(drawn) == 3  # uncalibrated, isotonic, temperature: one panel each
        titles = [a["text"] for a in figure["layout"]["annotations"]]
        assert {"uncalibrated", *maps} <= set(titles)
        assert "3-fold cross-fitting on a sample of 2,000 rows" in str(figure["layout"])
        for trace, label in zip(drawn, ["uncalibrated", *maps], strict=True):
            pred = calibrated[label]
            if kind == "smooth":
                want = smooth_panel(pred, "binary", None, 0.95, band=True)
                np.testing.assert_allclose(
                    np.asarray(trace["y"], dtype=float)[want.density >= 0.1],
                    want.observed[want.density >= 0.1],
                )
            else:
                want = cumulative_panel(pred, "binary", None, 0.95)[0]
                np.testing.assert_array_equal(trace["y"], want.difference)
        shown = str(maps_panel(ctx, sid, "binary", state, raw))
        assert "not drawn for a dataset" not in shown
        # The whole dataset's smooth diagram stays binned and says so; its cumulative
        # one is drawn from the cached statistics.
        whole = dataset_panel(ctx, sid, "binary", state, raw)
        assert KIND_NOTES[kind] in str(whole) and "Verdict" not in str(whole)
        whole_figure = dataset_view("binary", stats, raw.parse()[3]).figures[0]
        binned = "15 equal-width bins" in str(whole_figure["layout"])
        assert binned == (kind == "smooth")
        assert ("no bins" in str(whole_figure["layout"])) == (kind == "cumulative")
    # The page's redraws keep the curves of this fit in the store's memo (not another fit's).
    import app.curves

    calls = []
    real = app.curves.smooth_panel
    monkeypatch.setattr(
        app.curves, "smooth_panel", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    smooth = RawSettings(maps=maps, kind="smooth", handles=[]).parse()[3]
    first = maps_view("binary", entry, stats, smooth, ctx.store).figures[0]["data"]
    assert len(calls) == 3
    again = maps_view("binary", entry, stats, smooth, ctx.store).figures[0]["data"]
    assert len(calls) == 3
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(
            np.asarray(a["y"], dtype=float), np.asarray(b["y"], dtype=float)
        )
    maps_view("binary", {**entry, "fit_id": "another"}, stats, smooth, ctx.store)
    assert len(calls) == 6
    # The sample's verdict: the CLI's on the same sample (seed 0, the same folds).
    cli = ["evaluate", str(datasets_dir / "binary.parquet"), "--engine", "dask"]
    cli += ["--scheduler", scheduler, "--format", "json", "--maps", ",".join(maps)]
    assert main([*cli, "--folds", "3"]) == 0
    want = json.loads(capsys.readouterr().out)["models"][0]["verdict"]
    view = maps_view_of(entry, stats, RawSettings(maps=maps, handles=[]))
    (verdict,) = view.verdicts
    got = verdict.verdict.to_dict()
    assert want.pop("evaluated_on") == {"rows": 2000, "seed": 0, "of": 2000}
    assert got == want  # ECE too: the page's 15 equal-width bins are the CLI's
    assert set(got["log_loss"]) == {"uncalibrated", *maps}
    shown = str(maps_panel(ctx, sid, "binary", state, RawSettings(maps=maps, handles=[])))
    assert "Verdict, on the sample" in shown and "verdict-card" in shown
    assert "Computed on the sample: 2,000 rows of binary drawn uniformly (seed 0)" in shown


def test_maps_of_a_dataset_say_what_is_missing(ctx):
    sid = new_session_id()
    before = str(maps_panel(ctx, sid, "binary", None, RawSettings(maps=["platt"])))
    assert "no maps fitted yet" in before
    state, _ = _fit_maps(ctx, sid, "binary", RawSettings(maps=[], handles=[]))
    assert "no calibration map is picked" in state["error"]
    state, _ = _fit_maps(ctx, sid, None, RawSettings(maps=["platt"], handles=[]))
    assert state["error"] == "pick a dataset first."
    state, _ = _fit_maps(ctx, sid, "../etc", RawSettings(maps=["platt"], handles=[]))
    assert "this server has no dataset named" in state["error"]
    state, _ = _fit_maps(ctx, sid, "bad", RawSettings(maps=["platt"], handles=[]))
    assert "'bad/part-1.parquet' rows 501-1,000" in state["error"]  # the statistics' check


def test_equal_frequency_bins_of_a_dataset_are_the_in_memory_core_once_computed(ctx, datasets_dir):
    sid = new_session_id()
    raw = RawSettings(scheme="frequency", n_bins=7, handles=[])
    state, progress = _run_with(ctx, sid, "logs", raw)
    assert state["error"] is None and progress[-1][2] == "7 equal-frequency bins computed"
    assert ctx.datasets.cached_frequency(sid, "logs", 8) is None  # per bin count
    assert "Press Compute to compute 8" in str(
        dataset_panel(ctx, sid, "logs", state, RawSettings(scheme="frequency", n_bins=8))
    )
    reference = _reference(sorted(str(p) for p in (datasets_dir / "logs").glob("*.parquet")))
    shown = str(dataset_panel(ctx, sid, "logs", state, raw))
    assert "7 equal-frequency bins" in shown and "Press Compute" not in shown
    summaries = ctx.datasets.cached(sid, "logs")["summaries"]
    frequency = ctx.datasets.cached_frequency(sid, "logs", 7)
    for notion, value in (("confidence", None), ("class", "2"), ("class", None)):
        view = parse_view(notion, value, "frequency", 7, "wilson", 0.95)
        result = dataset_view("logs", summaries, view, frequency)
        for row in result.rows:
            probs, labels = reference[row["model"]]
            want = score_probs(probs, labels, n_bins=7, scheme="frequency")
            for key, number in want.items():
                assert abs(row[key] - number) <= TOL, (key, row[key], number)
        got = target_statistics(summaries["main"].with_frequency(7, frequency["main"]), view, 2)
        want = classwise_statistics(*reference["main"], n_bins=7, scheme="frequency")
        np.testing.assert_array_equal(got.count, want.count[2])
        np.testing.assert_array_equal(got.edges, want.edges[2])
    # Asking again does not run anything on the cluster.
    state, progress = _run_with(ctx, sid, "logs", raw)
    assert state["error"] is None and progress == []
    # The estimators card is then offered on all rows, equal to the uploads' card in memory.
    for scheme in ("frequency", "width"):
        shown = str(dataset_panel(ctx, sid, "logs", state, RawSettings(scheme=scheme, n_bins=7)))
        assert "Diagnostics, on all rows" in shown and "Computed on all rows." in shown
        for notion, value in (("confidence", None), ("class", "2"), ("class", ALL_CLASSES)):
            view = parse_view(notion, value, scheme, 7, "wilson", 0.95)
            for name, summary in summaries.items():
                got = whole_estimators(summary, view, frequency[name])
                pred = load_predictions_of(*reference[name], name)
                want = estimators(pred, notion_spec(model_info("logs", summary), view), view)
                for key in ("plugin_ece", "adaptive_ece", "plugin_l2", "debiased_l2", "ace"):
                    assert abs(getattr(got, key) - getattr(want, key)) <= TOL, (scheme, key)
    assert "Diagnostics, on all rows" not in str(
        dataset_panel(ctx, sid, "logs", state, RawSettings(n_bins=8))  # not computed for 8
    )


def _run_with(ctx, sid, name, raw):
    progress = []
    state = run_dataset_job(ctx, sid, None, raw, name, set_progress=progress.append)
    return state, progress


def test_bad_rows_are_reported_with_file_and_rows_without_a_traceback(ctx, datasets_dir):
    sid = new_session_id()
    state, _ = _run(ctx, sid, "bad")
    error = state["error"]
    assert "'bad/part-1.parquet' rows 501-1,000 (row group 1)" in error, error
    assert str(datasets_dir) not in error and "Traceback" not in error
    shown = str(dataset_panel(ctx, sid, "bad", state, RawSettings()))
    assert "bad/part-1.parquet" in shown and ctx.datasets.cached(sid, "bad") is None


def test_an_unreachable_scheduler_is_a_message(tmp_path, datasets_dir, monkeypatch):
    monkeypatch.setattr("app.datasets.CONNECT_SECONDS", 1)
    datasets = Datasets(datasets_dir, "tcp://127.0.0.1:9", tmp_path / "d", 60)
    with pytest.raises(CalibrationInputError, match="cannot be reached"):
        datasets.compute(new_session_id(), "binary", lambda *a: None)


# ------------------------------------------------------------------ cancel
def _job_in_child(ctx, sid, name, marker: Path) -> None:
    def progress(done, total, text):
        marker.write_text(f"{done} {total}")
        time.sleep(0.2)  # slow reporting keeps the job running until it is killed

    ctx.datasets.compute(sid, name, progress)


def _wait(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def _task_keys(client) -> set[str]:
    """The keys of every task the scheduler holds now."""
    return set(
        client.run_on_scheduler(lambda dask_scheduler: [str(k) for k in dask_scheduler.tasks])
    )


def test_a_cancelled_job_leaves_no_result_and_the_cluster_idle(ctx, datasets_dir, scheduler):
    big = datasets_dir / "big"
    big.mkdir()
    for i in range(4):
        _write(big / f"part-{i}.parquet", 6000, 4, seed=20 + i, row_group=200)
    sid = new_session_id()
    marker = datasets_dir.parent / "cancel-marker"
    child = multiprocessing.get_context("fork").Process(
        target=_job_in_child, args=(ctx, sid, "big", marker)
    )
    with distributed.Client(scheduler) as client:
        # The session's cluster may hold other tests' data (their session client): the
        # job must leave none of its own tasks, not an empty scheduler.
        before = _task_keys(client)
        child.start()
        _wait(marker.exists)  # the job has submitted its graph and reports progress
        assert _task_keys(client) - before, "the job's graph was not on the scheduler"
        os.kill(child.pid, signal.SIGKILL)  # what the job manager's cancel does
        child.join()
        _wait(lambda: _task_keys(client) <= before)
    assert ctx.datasets.cached(sid, "big") is None
    assert "not computed yet" in str(dataset_panel(ctx, sid, "big", None, RawSettings()))
    state, _ = _run(ctx, sid, "big")  # the page is usable: computing again works
    assert state["error"] is None and ctx.datasets.cached(sid, "big")["rows"] == 24_000


def _maps_job_in_child(datasets, sid, name) -> None:
    from app.settings import HeldOut

    datasets.fit_maps(sid, name, ("isotonic",), HeldOut(), lambda *_: None)


def test_a_cancelled_maps_job_keeps_nothing_and_lets_go_of_the_cluster(ctx, tmp_path):
    """The maps' job is killed (the job manager's cancel) while its tasks wait on a
    scheduler without workers: the scheduler forgets them and nothing is kept."""
    sid = new_session_id()
    state, _ = _run(ctx, sid, "binary")  # the statistics, kept
    assert state["error"] is None
    idle = distributed.LocalCluster(
        n_workers=0, processes=True, dashboard_address=None, silence_logs=40
    )
    with idle:
        # The same kept statistics, on a scheduler whose tasks cannot start.
        stalled = Datasets(ctx.datasets.root, idle.scheduler_address, tmp_path / "datasets", 3600)
        assert stalled.cached(sid, "binary") is not None
        child = multiprocessing.get_context("fork").Process(
            target=_maps_job_in_child, args=(stalled, sid, "binary")
        )
        child.start()
        _wait(lambda: len(idle.scheduler.tasks) > 0)  # the sample's graph is submitted
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        _wait(lambda: len(idle.scheduler.tasks) == 0)
    assert ctx.datasets.cached_maps(sid, "binary") is None
    assert "no maps fitted yet" in str(
        maps_panel(ctx, sid, "binary", None, RawSettings(maps=["isotonic"]))
    )
    state, _ = _fit_maps(ctx, sid, "binary", RawSettings(maps=["isotonic"], handles=[]))
    assert state["error"] is None and ctx.datasets.cached_maps(sid, "binary") is not None


def _table_rows(panel) -> list[list[str]]:
    """The text of every row (header first) of the dataset's metrics table in a panel."""
    (table,) = [c for c in panel if getattr(c, "className", None) == "dataset-metrics"]
    head, body = table.children
    rows = [head.children, *body.children]
    return [[cell.children for cell in row.children] for row in rows]


def test_the_parts_box_adds_the_score_parts_to_a_dataset_table(ctx, datasets_dir):
    """Ticked, the table has the upload table's four part columns after Brier and
    log-loss, equal to the core's score_parts (log-loss parts n/a for K > 2, with why)."""
    from app.metrics_table import METRICS
    from calibration_core import PART_FIELDS

    sid = new_session_id()
    names = {"binary": 2, "logs": 4}
    for name in names:
        assert _run(ctx, sid, name)[0]["error"] is None
    plain = dataset_panel(ctx, sid, "binary", {}, RawSettings(n_bins=10, handles=[]))
    assert "Brier cal." not in str(_table_rows(plain)[0])
    for scheme in ("width", "frequency"):
        raw = RawSettings(n_bins=10, scheme=scheme, score_parts=[SCORE_PARTS_ON], handles=[])
        for name, k in names.items():
            if scheme == "frequency":
                assert _run_with(ctx, sid, name, raw)[0]["error"] is None
            panel = dataset_panel(ctx, sid, name, {}, raw)
            header, *rows = _table_rows(panel)
            assert header == [
                "model", "rows", "accuracy", "confidence ECE", "confidence MCE",
                "classwise ECE", "Brier", *(METRICS[f][0] for f in PART_FIELDS[:2]),
                "log-loss", *(METRICS[f][0] for f in PART_FIELDS[2:]),
            ]  # fmt: skip
            if name == "logs":
                reference = _reference(sorted((datasets_dir / "logs").glob("*.parquet")))
            else:
                (pred,) = load_predictions(datasets_dir / "binary.parquet", name="binary")
                reference = {"binary": (pred.probs, pred.labels)}
            for row in rows:
                probs, labels = reference[row[0]]
                want = score_parts(probs, labels, n_bins=10, scheme=scheme)
                cells = dict(zip(header, row, strict=True))
                for field in PART_FIELDS:
                    shown = cells[METRICS[field][0]]
                    assert shown == ("n/a" if k > 2 and "log" in field else f"{want[field]:.4f}")
            why = "Log-loss cal. and ref. are n/a for logs, main, other"
            assert (why in str(panel)) == (k > 2)
            summaries = ctx.datasets.cached(sid, name)["summaries"]
            frequency = ctx.datasets.cached_frequency(sid, name, 10)
            result = dataset_view(name, summaries, raw.parse()[3], frequency)
            for row in result.rows:
                want = score_parts(*reference[row["model"]], n_bins=10, scheme=scheme)
                for field in PART_FIELDS:
                    if k == 2 or "brier" in field:
                        assert abs(row[field] - want[field]) <= TOL, (scheme, name, field)


def test_the_dataset_view_follows_the_parts_box(tmp_path, datasets_dir):
    """The dataset section's callback has the parts box among its inputs."""
    from app import ids
    from app.factory import create_app

    from .conftest import make_config

    config = make_config(
        tmp_path, datasets_dir=datasets_dir, dask_scheduler_address="tcp://127.0.0.1:1"
    )
    callbacks = create_app(config).callback_map
    (view,) = [c for key, c in callbacks.items() if f"{ids.DATASET_VIEW}.children" in key]
    assert f"{ids.SCORE_PARTS}.value" in {f"{i['id']}.{i['property']}" for i in view["inputs"]}


# ------------------------------------------------------------ without a scheduler
@pytest.fixture
def streamed(tmp_path, datasets_dir) -> AppContext:
    """The page's datasets without ``DASK_SCHEDULER_ADDRESS``: the streaming engine."""
    base = make_context(tmp_path / "streamed")
    datasets = Datasets(datasets_dir, None, tmp_path / "streamed" / "datasets", 3600)
    context = AppContext(config=base.config, store=base.store, sessions=base.sessions,
                         datasets=datasets)  # fmt: skip
    yield context
    context.store.close()


def _assert_rows_equal(mine: list[dict], theirs: list[dict], tol: float) -> None:
    assert [(r["model"], r.get("map")) for r in mine] == [
        (r["model"], r.get("map")) for r in theirs
    ]
    for a, b in zip(mine, theirs, strict=True):
        assert a.keys() == b.keys()
        for key, value in a.items():
            if isinstance(value, float):
                assert abs(value - b[key]) <= tol * max(1.0, abs(value)), (a["model"], key)


def test_without_a_scheduler_a_dataset_is_streamed_to_the_dask_numbers(ctx, streamed):
    """The same view, equal-frequency bins and maps on the sample as on the cluster, computed
    in the job's own process; the page says where."""
    assert not streamed.datasets.on_cluster and ctx.datasets.on_cluster
    sid = new_session_id()
    raw = RawSettings(scheme="frequency", n_bins=7, handles=[])
    said = {}
    for context in (streamed, ctx):
        state, progress = _run_with(context, sid, "logs", raw)
        assert state["error"] is None, state
        said[context.datasets.on_cluster] = " ".join(p[2] for p in progress)
    assert "3,600 of 3,600 rows summarised in this server" in said[False]
    assert "four passes over the data in this server" in said[False]
    shown = str(dataset_panel(streamed, sid, "logs", state, RawSettings(n_bins=15)))
    assert "summarised streamed in this server" in shown
    here, there = (c.datasets.cached(sid, "logs")["summaries"] for c in (streamed, ctx))
    assert list(here) == list(there) == ["logs", "main", "other"]
    frequency = [c.datasets.cached_frequency(sid, "logs", 7) for c in (streamed, ctx)]
    for notion, value in (("confidence", None), ("class", "2")):
        for scheme, m in (("width", 15), ("width", 100), ("frequency", 7)):
            view = parse_view(notion, value, scheme, m, "wilson", 0.95)
            mine = dataset_view("logs", here, view, frequency[0]).rows
            _assert_rows_equal(mine, dataset_view("logs", there, view, frequency[1]).rows, TOL)
    for name in here:
        got, want = frequency[0][name]["classwise"], frequency[1][name]["classwise"]
        np.testing.assert_array_equal(got.edges, want.edges)
        np.testing.assert_array_equal(got.count, want.count)
    fit = RawSettings(maps=["temperature", "isotonic"], folds=3, handles=[])
    for context in (streamed, ctx):
        state, progress = _fit_maps(context, sid, "logs", fit)
        assert state["error"] is None, state
        if context is streamed:
            assert "cross-fitting isotonic, temperature in this server" in progress[-2][2]
    entries = [c.datasets.cached_maps(sid, "logs") for c in (streamed, ctx)]
    for model, found in entries[0]["models"].items():
        assert found["info"] == entries[1]["models"][model]["info"]  # the same sample
    shown_maps = str(maps_panel(streamed, sid, "logs", state, fit))
    assert "(seed 0; logs: 2,100 of 3,600 rows" in shown_maps and "streamed in this server" in (
        shown_maps
    )
    view_raw = RawSettings(maps=["temperature", "isotonic"], n_bins=10, handles=[])
    mine = maps_view_of(entries[0], here, view_raw).rows
    _assert_rows_equal(mine, maps_view_of(entries[1], there, view_raw).rows, 1e-9)


def test_without_a_scheduler_the_jobs_run_under_the_job_limits(streamed, ctx, monkeypatch):
    """On a cluster the page's dataset jobs only wait (no limit of the web side); streamed,
    they do the work in the job's process, so they run under the limits of every job."""
    from dash import Dash

    from app.callbacks import datasets as wiring
    from app.callbacks.groups import dataset as group_wiring

    kinds: list[tuple[str, bool]] = []

    def register_job(app, _ctx, _ids, _triggers, _states, what, _runner, cluster=False):
        kinds.append((what, cluster))

    monkeypatch.setattr(wiring, "register_job", register_job)
    monkeypatch.setattr(group_wiring, "register_job", register_job)
    for context, on_cluster in ((streamed, False), (ctx, True)):
        kinds.clear()
        wiring.register(Dash(__name__), context)
        assert kinds == [
            ("dataset computation", on_cluster),
            ("maps of a dataset", on_cluster),
            ("per group and over time of a dataset", on_cluster),
        ]
