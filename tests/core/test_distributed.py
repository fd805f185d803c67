"""The Dask engine (calibration_core.distributed) against the in-memory core.

Every statistic of a dataset summarised on a LocalCluster of 2 worker processes
equals the in-memory core's on the same rows (to 1e-12; counts exactly), on
synthetic Parquet datasets and on the real CIFAR files. A worker killed after
its pieces were summarised costs a recomputation, not a different number; bad
rows are reported with their file and row range.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("dask.dataframe", reason="the 'dask' extra is not installed")
distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")
#: The Dask engine on the session's cluster: the ``dask`` tier.
pytestmark = pytest.mark.usefixtures("dask_extra")

from app.cli import main  # noqa: E402
from calibration_core import (  # noqa: E402
    Binning,
    CalibrationInputError,
    binary_statistics,
    binomial_band,
    load_predictions,
)
from calibration_core.compare.results import score_probs  # noqa: E402
from calibration_core.distributed import (  # noqa: E402
    CELL_THRESHOLDS,
    CellStatistics,
    dataset_summaries,
    engine,
    piece_summaries,
    tree_merge,
)
from calibration_core.distributed.apply import (  # noqa: E402
    apply_map_to_dataset,
    dataset_deployable,
)
from calibration_core.distributed.engine import (  # noqa: E402
    SUMMARY_BATCH_BYTES,
    SUMMARY_BATCH_ROWS,
    WORKER_MALLOC,
    local_cluster,
    summary_batch_rows,
)
from calibration_core.distributed.frequency import frequency_statistics  # noqa: E402
from calibration_core.distributed.pieces import ReadOptions, find_pieces  # noqa: E402
from calibration_core.distributed.platt import fit_platt_on_dataset  # noqa: E402
from calibration_core.distributed.sample import (  # noqa: E402
    fit_map_on_sample,
    sample_predictions,
)
from calibration_core.distributed.temperature import fit_temperature_on_dataset  # noqa: E402
from calibration_core.maps import PlattScaling, TemperatureScaling  # noqa: E402
from calibration_core.metrics import classwise_statistics, confidence_statistics  # noqa: E402

from .distributed_checks import TOL, assert_summary_equals_core  # noqa: E402

BIN_COUNTS = (1, 2, 7, 15, 64, 100)


def test_local_workers_keep_freed_blocks_in_the_heap(dask_client):
    """The workers start with WORKER_MALLOC, not Dask's trim-everything default."""
    seen = dask_client.run(lambda: {k: os.environ.get(k) for k in WORKER_MALLOC})
    assert len(seen) == 2
    assert all(env == WORKER_MALLOC for env in seen.values())


def test_worker_malloc_wins_over_an_earlier_cluster_in_the_process(monkeypatch):
    """A nanny copies its settings into the parent's os.environ, which later nannies
    prefer to the config: after a default cluster (as the app tests run one first),
    ``local_cluster`` must still start its workers with WORKER_MALLOC."""
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # what a default nanny leaves
    cluster = local_cluster(1, dashboard_address=None, silence_logs=40)
    with cluster, distributed.Client(cluster) as c:
        seen = c.run(lambda: {k: os.environ.get(k) for k in WORKER_MALLOC})
    assert list(seen.values()) == [WORKER_MALLOC]
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"


def _probs(rng, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    logits = rng.normal(size=(n, k)) * 2.0
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    # Rounded probabilities put scores exactly on bin edges (0.5, 0.25, ...).
    p[: n // 4] = np.round(p[: n // 4], 2)
    p[: n // 4] /= p[: n // 4].sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in p])
    return p, y


def _write(path, probs, labels, *, row_group_size: int, model=None) -> None:
    cols = {f"p_{j}": probs[:, j] for j in range(probs.shape[1])}
    cols["label"] = labels
    if model is not None:
        cols["model"] = model
    pq.write_table(pa.table(cols), path, row_group_size=row_group_size)


def _reference(paths, name: str = "data") -> dict:
    """The in-memory loader's predictions of every file, concatenated per model."""
    per_model: dict[str, list] = {}
    for path in paths:
        for pred in load_predictions(path, name=name):
            per_model.setdefault(pred.name, []).append(pred)
    return {
        name: (np.concatenate([p.probs for p in preds]), np.concatenate([p.labels for p in preds]))
        for name, preds in per_model.items()
    }


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Three files (row groups of 700 rows), K = 4, two models in the third."""
    rng = np.random.default_rng(18)
    folder = tmp_path_factory.mktemp("logs")
    paths = []
    for i, n in enumerate((2000, 1500, 2600)):
        p, y = _probs(rng, n, 4)
        path = folder / f"part-{i}.parquet"
        model = None if i < 2 else np.where(np.arange(n) % 3 == 0, "data", "other")
        _write(path, p, y, row_group_size=700, model=model)
        paths.append(str(path))
    return folder, paths


@pytest.fixture(scope="module")
def overconfident(tmp_path_factory):
    """:func:`synthetic`'s files with over-confident scores (each row's probabilities
    squared and renormalised; the labels keep the calibrated draw): a map clearly
    beats the uncalibrated scores, so ``--select best`` deploys a fitted map."""
    rng = np.random.default_rng(18)
    folder = tmp_path_factory.mktemp("overconfident")
    paths = []
    for i, n in enumerate((2000, 1500, 2600)):
        p, y = _probs(rng, n, 4)
        sharp = p**2 / (p**2).sum(axis=1, keepdims=True)
        path = folder / f"part-{i}.parquet"
        model = None if i < 2 else np.where(np.arange(n) % 3 == 0, "data", "other")
        _write(path, sharp, y, row_group_size=700, model=model)
        paths.append(str(path))
    return folder, paths


# ---------------------------------------------------------------- cells
def test_cells_give_the_core_bins_for_every_width_bin_count():
    rng = np.random.default_rng(0)
    edges = np.concatenate([CELL_THRESHOLDS, np.nextafter(CELL_THRESHOLDS, 0)])
    scores = np.concatenate([rng.random(20_000), np.arange(101) / 100, [0.0, 1.0], edges])
    targets = (rng.random(scores.size) < scores).astype(np.int8)
    cells = CellStatistics.of_scores(scores, targets)
    for m in range(1, 101):
        a, b = cells.bins(m), Binning("width", m).statistics(scores, targets)
        np.testing.assert_array_equal(a.count, b.count)
        np.testing.assert_array_equal(a.sum_target, b.sum_target)
        np.testing.assert_allclose(a.sum_score, b.sum_score, rtol=1e-13, atol=0)


def test_cells_refuse_more_than_100_bins():
    cells = CellStatistics.empty()
    with pytest.raises(CalibrationInputError, match=r"1\.\.100"):
        cells.bins(101)


def test_cells_merge_by_addition_and_refuse_other_shapes():
    a, b = CellStatistics.empty(3), CellStatistics.empty(4)
    with pytest.raises(CalibrationInputError, match="number of classes"):
        a + b


# ----------------------------------------------------- against the core
def test_synthetic_dataset_equals_the_in_memory_core(dask_client, synthetic):
    folder, paths = synthetic
    summaries = dataset_summaries(str(folder / "*.parquet"), client=dask_client, name="data")
    reference = _reference(paths)
    assert list(summaries) == list(reference) == ["data", "other"]
    for name, (probs, labels) in reference.items():
        assert summaries[name].n_samples == len(labels)
        assert_summary_equals_core(summaries[name], probs, labels, BIN_COUNTS)


def test_progress_counts_every_row_once(dask_client, synthetic):
    folder, paths = synthetic
    seen: list[tuple[int, int]] = []
    dataset_summaries(str(folder), client=dask_client, progress=lambda d, t: seen.append((d, t)))
    total = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert len(seen) == 1 + 3 + 3 + 4  # the start, then one call per row group


def test_curves_and_binomial_bands_equal_the_core(dask_client, synthetic):
    folder, paths = synthetic
    summary = dataset_summaries(str(folder), client=dask_client, name="data")["data"]
    probs, labels = _reference(paths)["data"]
    for m in (5, 15, 40):
        curve = summary.reliability_curve("confidence", m)
        core = confidence_statistics(probs, labels, n_bins=m)
        np.testing.assert_allclose(curve.x, core.mean_score, rtol=0, atol=TOL, equal_nan=True)
        np.testing.assert_array_equal(curve.y, core.frequency)
        for method in ("wilson", "clopper-pearson", "jeffreys"):
            got, want = binomial_band(curve, method=method), binomial_band(core, method=method)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("n_bins", [1, 3, 15, 150])
def test_equal_frequency_edges_are_exact(dask_client, synthetic, n_bins):
    folder, paths = synthetic
    summaries = dataset_summaries(str(folder), client=dask_client, name="data")
    got = frequency_statistics(str(folder), summaries, n_bins, client=dask_client, name="data")
    for name, (probs, labels) in _reference(paths).items():
        for notion, core in (
            ("confidence", confidence_statistics),
            ("classwise", classwise_statistics),
        ):
            a, b = got[name][notion], core(probs, labels, n_bins=n_bins, scheme="frequency")
            np.testing.assert_array_equal(a.edges, b.edges)
            np.testing.assert_array_equal(a.count, b.count)
            np.testing.assert_array_equal(a.sum_target, b.sum_target)
            np.testing.assert_allclose(a.sum_score, b.sum_score, rtol=0, atol=TOL * len(labels))
        metrics = summaries[name].with_frequency(n_bins, got[name]).metrics(n_bins, "frequency")
        want = score_probs(probs, labels, n_bins=n_bins, scheme="frequency")
        for key in want:
            assert abs(metrics[key] - want[key]) <= TOL, (key, metrics[key], want[key])


def test_binary_notion_equals_binary_statistics(dask_client, tmp_path):
    rng = np.random.default_rng(3)
    p, y = _probs(rng, 3000, 2)
    path = tmp_path / "binary.parquet"
    _write(path, p, y, row_group_size=512)
    summary = dataset_summaries(str(path), client=dask_client)["binary"]
    ref = load_predictions(path)[0]
    for m in BIN_COUNTS:
        a, b = summary.statistics("binary", m), binary_statistics(ref.probs, ref.labels, n_bins=m)
        np.testing.assert_array_equal(a.count, b.count)
        np.testing.assert_array_equal(a.sum_target, b.sum_target)
        assert abs(a.ece() - b.ece()) <= TOL and abs(a.mce() - b.mce()) <= TOL


def test_a_dask_dataframe_with_the_loader_columns(dask_client, synthetic):
    import dask.dataframe as dd

    _, paths = synthetic
    frame = pq.read_table(paths[0]).to_pandas()
    summary = dataset_summaries(dd.from_pandas(frame, npartitions=3), client=dask_client)["model"]
    probs, labels = _reference(paths[:1])["data"]
    assert_summary_equals_core(summary, probs, labels, BIN_COUNTS)


@pytest.mark.realdata
@pytest.mark.parametrize(
    "name", ["densenet-bc-100-cifar-100", "wideresnet-16-4-cifar-10", "lenet-5-cifar-100"]
)
def test_cifar_files_equal_the_in_memory_core(dask_client, realdata, tmp_path, name):
    with np.load(realdata[name], allow_pickle=False) as data:
        p, y = data["predictions"], data["ground_truth"]
    table = pa.table({**{f"p_{j}": p[:, j] for j in range(p.shape[1])}, "label": y})
    pq.write_table(table.slice(0, 4000), tmp_path / "a.parquet", row_group_size=1000)
    pq.write_table(table.slice(4000), tmp_path / "b.parquet", row_group_size=1500)
    pq.write_table(table, tmp_path / "whole.parquet")
    summary = dataset_summaries(str(tmp_path / "[ab].parquet"), client=dask_client, name="m")["m"]
    ref = load_predictions(tmp_path / "whole.parquet")[0]
    assert summary.n_samples == 10_000
    assert_summary_equals_core(summary, ref.probs, ref.labels, BIN_COUNTS)


# ----------------------------------------------------------------- maps
def test_distributed_temperature_fit_equals_the_in_memory_fit(dask_client, synthetic):
    _, paths = synthetic
    probs, labels = _reference(paths[:2])["data"]
    fitted = fit_temperature_on_dataset(paths[:2], client=dask_client, name="data")
    core = TemperatureScaling().fit(probs, labels)
    assert fitted.converged_ and fitted.passes_ == fitted.n_iter_ + 1
    assert abs(fitted.temperature_ - core.temperature_) <= 1e-9 * core.temperature_
    np.testing.assert_allclose(fitted.predict_proba(probs), core.predict_proba(probs), atol=1e-9)
    again = TemperatureScaling.from_dict(fitted.to_dict())
    assert again.temperature_ == fitted.temperature_


@pytest.mark.parametrize("transform", ["logit", "log", "raw"])
@pytest.mark.parametrize("targets", [False, True])
def test_distributed_platt_fit_equals_the_in_memory_fit(dask_client, synthetic, transform, targets):
    _, paths = synthetic
    probs, labels = _reference(paths[:2])["data"]
    options = {"input_transform": transform, "platt_targets": targets}
    fitted = fit_platt_on_dataset(paths[:2], client=dask_client, name="data", **options)
    core = PlattScaling(**options).fit(probs, labels)
    assert fitted.converged_ and fitted.coef_.shape == core.coef_.shape == (4, 2)
    assert fitted.passes_ >= fitted.n_iter_ + 1  # the counts, then one per evaluation
    np.testing.assert_allclose(fitted.coef_, core.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(fitted.predict_proba(probs), core.predict_proba(probs), atol=1e-10)
    again = PlattScaling.from_dict(fitted.to_dict())
    np.testing.assert_array_equal(again.coef_, fitted.coef_)


def test_distributed_platt_fit_of_a_binary_model(dask_client, tmp_path):
    rng = np.random.default_rng(8)
    p, y = _probs(rng, 5000, 2)
    _write(tmp_path / "binary.parquet", p, y, row_group_size=900)
    fitted = fit_platt_on_dataset(str(tmp_path / "binary.parquet"), client=dask_client)
    ref = load_predictions(tmp_path / "binary.parquet")[0]
    core = PlattScaling().fit(ref.probs, ref.labels)
    assert fitted.coef_.shape == (1, 2)
    np.testing.assert_allclose(fitted.coef_, core.coef_, rtol=0, atol=1e-10)


def test_distributed_platt_refuses_a_single_class(dask_client, tmp_path):
    rng = np.random.default_rng(9)
    p, _ = _probs(rng, 300, 3)
    _write(tmp_path / "one.parquet", p, np.zeros(300, dtype=np.int64), row_group_size=100)
    with pytest.raises(CalibrationInputError, match="at least two classes"):
        fit_platt_on_dataset(str(tmp_path / "one.parquet"), client=dask_client)


def test_samples_are_reproducible_uniform_subsets(dask_client, synthetic):
    _, paths = synthetic
    probs, labels = _reference(paths[:2])["data"]
    first, info = sample_predictions(paths[:2], size=1000, seed=4, client=dask_client, name="data")
    again, _ = sample_predictions(paths[:2], size=1000, seed=4, client=dask_client, name="data")
    other, _ = sample_predictions(paths[:2], size=1000, seed=5, client=dask_client, name="data")
    np.testing.assert_array_equal(first.probs, again.probs)
    assert not np.array_equal(first.probs[:50], other.probs[:50])
    assert info.rows == first.n_samples <= 1000 and info.seed == 4
    assert info.dataset_rows == len(labels) and info.fraction == 1000 / len(labels)
    # Every sampled row is a row of the dataset, with its own label, in file order
    # (rounded rows repeat: take the first matching row after the previous one).
    where: dict[bytes, list[int]] = {}
    for i, row in enumerate(probs):
        where.setdefault(row.tobytes(), []).append(i)
    previous = -1
    for row, label in zip(first.probs, first.labels, strict=True):
        later = [i for i in where[row.tobytes()] if i > previous and labels[i] == label]
        assert later, "a sampled row that is not a later row of the dataset"
        previous = later[0]


def test_a_map_fitted_on_a_whole_sample_is_the_in_memory_fit(dask_client, synthetic):
    from calibration_core.maps import CalibrationMap, IsotonicCalibration

    _, paths = synthetic
    probs, labels = _reference(paths[:2])["data"]
    fitted = fit_map_on_sample(paths[:2], "isotonic", size=10**6, client=dask_client, name="data")
    core = IsotonicCalibration().fit(probs, labels)
    np.testing.assert_array_equal(fitted.predict_proba(probs), core.predict_proba(probs))
    exported = fitted.to_dict()
    assert exported["fit_sample"] == {
        "rows": len(labels),
        "seed": 0,
        "fraction": 1.0,
        "dataset_rows": len(labels),
    }
    assert CalibrationMap.from_dict(exported).fit_sample_ == exported["fit_sample"]


def test_a_map_applied_to_a_dataset_writes_calibrated_parquet(dask_client, synthetic, tmp_path):
    _, paths = synthetic
    fitted = fit_temperature_on_dataset(paths[:2], client=dask_client, name="data")
    deployable = dataset_deployable(fitted, "data", ("0", "1", "2", "3"), n_rows=3500)
    written = apply_map_to_dataset(deployable, paths[:2], tmp_path / "out", client=dask_client)
    assert list(written) == [str(tmp_path / "out" / Path(p).name) for p in paths[:2]]
    for path, (out, rows) in zip(paths[:2], written.items(), strict=True):
        source = load_predictions(path)[0]
        calibrated = load_predictions(out)[0]
        assert rows == source.n_samples == calibrated.n_samples
        np.testing.assert_allclose(calibrated.probs, fitted.predict_proba(source.probs), atol=1e-12)
        np.testing.assert_array_equal(calibrated.labels, source.labels)
    with pytest.raises(CalibrationInputError, match="holds the input"):
        apply_map_to_dataset(deployable, paths[:1], Path(paths[0]).parent, client=dask_client)


@pytest.mark.realdata
def test_distributed_temperature_on_densenet(dask_client, realdata, tmp_path):
    with np.load(realdata["densenet-bc-100-cifar-100"], allow_pickle=False) as data:
        p, y = data["predictions"], data["ground_truth"]
    table = pa.table({**{f"p_{j}": p[:, j] for j in range(p.shape[1])}, "label": y})
    pq.write_table(table, tmp_path / "densenet.parquet", row_group_size=2500)
    fitted = fit_temperature_on_dataset(str(tmp_path / "densenet.parquet"), client=dask_client)
    ref = load_predictions(tmp_path / "densenet.parquet")[0]
    core = TemperatureScaling().fit(ref.probs, ref.labels)
    assert 2.0 < core.temperature_ < 2.2  # the README's over-confident network
    assert abs(fitted.temperature_ - core.temperature_) <= 1e-9 * core.temperature_


@pytest.mark.realdata
def test_distributed_platt_on_densenet(dask_client, realdata, tmp_path):
    with np.load(realdata["densenet-bc-100-cifar-100"], allow_pickle=False) as data:
        p, y = data["predictions"], data["ground_truth"]
    table = pa.table({**{f"p_{j}": p[:, j] for j in range(p.shape[1])}, "label": y})
    pq.write_table(table, tmp_path / "densenet.parquet", row_group_size=2500)
    fitted = fit_platt_on_dataset(str(tmp_path / "densenet.parquet"), client=dask_client)
    ref = load_predictions(tmp_path / "densenet.parquet")[0]
    core = PlattScaling().fit(ref.probs, ref.labels)
    np.testing.assert_allclose(fitted.coef_, core.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        fitted.predict_proba(ref.probs), core.predict_proba(ref.probs), rtol=0, atol=1e-10
    )


# ---------------------------------------------------------------- faults
def test_a_worker_killed_after_its_pieces_costs_a_recomputation(dask_client, synthetic):
    folder, paths = synthetic
    parts = piece_summaries(str(folder), name="data")
    persisted = dask_client.persist(parts)
    distributed.wait(persisted)
    holders = dask_client.who_has(persisted)
    lost = {w for workers in holders.values() for w in workers}
    assert lost, "no worker holds a summarised piece"
    victim = sorted(lost)[0]
    pids = dask_client.run(os.getpid)
    os.kill(pids[victim], signal.SIGKILL)  # its summaries are lost with it
    total = dask_client.compute(tree_merge(persisted)).result()
    for name, (probs, labels) in _reference(paths).items():
        assert_summary_equals_core(total[name], probs, labels, BIN_COUNTS)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("nan", "NaN or infinite probabilities"),
        ("sum", "must sum to 1"),
        ("label", "not among the classes"),
    ],
)
def test_bad_rows_are_reported_with_file_and_row_range(dask_client, tmp_path, damage, message):
    rng = np.random.default_rng(5)
    p, y = _probs(rng, 4000, 3)
    if damage == "nan":
        p[2345, 1] = np.nan
    elif damage == "sum":
        p[2345] = [0.5, 0.5, 0.5]
    else:
        y[2345] = 7
    _write(tmp_path / "good.parquet", *_probs(rng, 1000, 3), row_group_size=1000)
    _write(tmp_path / "bad.parquet", p, y, row_group_size=1000)
    with pytest.raises(CalibrationInputError) as info:
        dataset_summaries(str(tmp_path / "*.parquet"), client=dask_client)
    text = str(info.value)
    assert "bad.parquet' rows 2,001-3,000 (row group 2)" in text
    assert message in text
    assert "at row 2346 (1-based)" in text  # the bad row itself, numbered in the file


def test_files_with_different_classes_do_not_merge(dask_client, tmp_path):
    rng = np.random.default_rng(6)
    _write(tmp_path / "a.parquet", *_probs(rng, 300, 3), row_group_size=300)
    _write(tmp_path / "b.parquet", *_probs(rng, 300, 4), row_group_size=300)
    with pytest.raises(CalibrationInputError, match="same prediction columns"):
        dataset_summaries(str(tmp_path / "*.parquet"), client=dask_client)


def test_wide_files_are_summarised_in_batches_of_fewer_rows(tmp_path, monkeypatch):
    rng = np.random.default_rng(14)
    probs, labels = _probs(rng, 5000, 30)
    _write(tmp_path / "wide.parquet", probs, labels, row_group_size=5000)
    (piece,) = find_pieces(str(tmp_path / "wide.parquet"))
    assert piece.n_columns == 31
    assert summary_batch_rows(piece) == 5000  # the whole row group: 1.2 MB decoded
    big = replace(piece, n_rows=10**6)  # 248 MB decoded
    assert summary_batch_rows(big) == SUMMARY_BATCH_BYTES // (8 * 31) < SUMMARY_BATCH_ROWS
    assert summary_batch_rows(replace(big, n_columns=11)) == 10**6  # 88 MB: whole
    assert summary_batch_rows(replace(big, n_rows=2 * 10**6, n_columns=11)) == SUMMARY_BATCH_ROWS
    assert summary_batch_rows(replace(big, n_columns=10**6)) == 1024
    monkeypatch.setattr(engine, "WHOLE_ROW_GROUP_BYTES", 0)
    monkeypatch.setattr(engine, "SUMMARY_BATCH_BYTES", 8 * 31 * 1500)
    read, batch_rows = engine.read_piece_batches, []

    def spy(piece, options, rows, use):
        batch_rows.append(rows)
        return read(piece, options, rows, use)

    monkeypatch.setattr(engine, "read_piece_batches", spy)
    summary = engine.summarize_piece(piece, ReadOptions(name="data"))["data"]
    assert batch_rows == [1500]  # four batches, the last of 500 rows
    probs, labels = _reference([tmp_path / "wide.parquet"])["data"]
    assert_summary_equals_core(summary, probs, labels, BIN_COUNTS)


def test_no_matching_file_is_a_clear_error(tmp_path):
    with pytest.raises(CalibrationInputError, match="no Parquet file matches"):
        dataset_summaries(str(tmp_path / "*.parquet"))


# ------------------------------------------------------------------- CLI
def test_cli_evaluate_on_a_running_scheduler(dask_client, synthetic, capsys):
    import json

    folder, paths = synthetic
    pattern = str(folder / "*.parquet")
    args = ["evaluate", pattern, "--engine", "dask", "--scheduler", dask_client.scheduler.address]
    assert main([*args, "--format", "json", "--bins", "10"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main([*args, "--format", "json", "--bins", "10", "--scheme", "frequency"]) == 0
    frequency = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "calibration-dashboard/evaluate/v1"
    assert doc["settings"]["engine"] == "dask" and doc["settings"]["maps"] == []
    # The same fields as the in-memory engine's document (plus settings.engine).
    assert main(["evaluate", paths[0], "--maps", "temperature", "--format", "json"]) == 0
    memory = json.loads(capsys.readouterr().out)
    assert set(doc) == set(memory)
    assert set(doc["settings"]) == {*memory["settings"], "engine", "sample_rows"}
    assert doc["settings"]["sample_rows"] is None  # nothing was drawn
    assert set(doc["models"][0]) == set(memory["models"][0])
    assert list(doc["models"][0]["rows"][0]) == list(memory["models"][0]["rows"][0])
    assert set(doc["models"][0]["verdict"]) == set(memory["models"][0]["verdict"])
    # Files without a model column are named after their folder (several files).
    reference = _reference(paths, name=folder.name)
    assert [m["model"] for m in doc["models"]] == [folder.name, "data", "other"]
    for model in doc["models"]:
        probs, labels = reference[model["model"]]
        row = model["rows"][0]
        want = score_probs(probs, labels, n_bins=10, scheme="width")
        assert row["map"] == "uncalibrated" and model["n_samples"] == len(labels)
        for key, value in want.items():
            assert abs(row[key] - value) <= TOL
        assert model["verdict"]["winner"] == "uncalibrated"
        assert row["evaluated_on"] == model["verdict"]["evaluated_on"] == "all rows"
    for model in frequency["models"]:
        probs, labels = reference[model["model"]]
        want = score_probs(probs, labels, n_bins=10, scheme="frequency")
        for key, value in want.items():
            assert abs(model["rows"][0][key] - value) <= TOL


#: Objects of the evaluate document compared as leaves: those keyed by candidate map (which
#: maps depend on the verdict), and ``evaluated_on`` (a sample's object on Dask).
LEAVES = ("log_loss", "confidence_ece", "parameters", "evaluated_on")


def _shape(value, key: str | None = None):
    """The keys of a JSON value, recursively: a list by its first item, a leaf as None."""
    if isinstance(value, dict) and key not in LEAVES:
        return {k: _shape(v, k) for k, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [_shape(value[0])]
    return None


def test_evaluate_documents_of_both_engines_have_one_structure(dask_client, tmp_path, capsys):
    """One builder: the same keys at every level, equal settings and uncalibrated rows;
    the Dask engine adds only ``settings.engine``/``sample_rows`` (the schema's rule)."""
    import json

    p, y = _probs(np.random.default_rng(7), 1500, 2)
    path = str(tmp_path / "binary.parquet")
    _write(path, p, y, row_group_size=500)
    options = ["--maps", "temperature,platt", "--measures", "--format", "json", "--bins", "10"]
    assert main(["evaluate", path, *options]) == 0
    memory = json.loads(capsys.readouterr().out)
    where = ["--engine", "dask", "--scheduler", dask_client.scheduler.address]
    assert main(["evaluate", path, *options, *where]) == 0
    dask = json.loads(capsys.readouterr().out)
    settings = dask["settings"]
    assert (settings.pop("engine"), settings.pop("sample_rows")) == ("dask", 1_000_000)
    assert settings == memory["settings"]
    assert _shape(dask) == _shape(memory)
    (a,), (b,) = memory["models"], dask["models"]
    assert (a["model"], a["n_samples"], a["n_classes"]) == (b["model"], b["n_samples"], 2)
    exact, drawn = a["rows"][0], b["rows"][0]
    assert list(exact) == list(drawn) and exact["map"] == "uncalibrated"
    for key, value in exact.items():
        assert abs(value - drawn[key]) <= TOL if isinstance(value, float) else value == drawn[key]
    sample = {"rows": 1500, "seed": 0, "of": 1500}
    assert [r["evaluated_on"] for r in b["rows"]] == ["all rows", sample, sample]
    assert b["verdict"]["evaluated_on"] == b["measures"]["evaluated_on"] == sample
    assert a["verdict"]["evaluated_on"] == a["measures"]["evaluated_on"] == "all rows"


def test_cli_refuses_what_the_dask_engine_cannot_do_yet(synthetic, capsys):
    folder, paths = synthetic
    code = main(["evaluate", str(folder), "--engine", "dask", "--sample-rows", "50"])
    assert code == 1
    assert "--sample-rows 50: nothing is computed on a sample without --maps, --measures" in (
        capsys.readouterr().err
    )
    assert main(["evaluate", paths[0], "--sample-rows", "50"]) == 1
    assert "--sample-rows needs --engine dask" in capsys.readouterr().err
    code = main(["evaluate", str(folder), "--engine", "dask", "--measures", "--sample-rows", "0"])
    assert code == 1
    assert "--sample-rows must be at least 1, got 0" in capsys.readouterr().err
    assert main(["evaluate", str(folder), "--workers", "2"]) == 1
    assert "need --engine dask" in capsys.readouterr().err
    assert main(["evaluate", str(folder), "--engine", "dask", "--bins", "101"]) == 1
    assert "--bins 101: the Dask engine answers equal-width bin counts up to 100" in (
        capsys.readouterr().err
    )


def _assert_close(got, want, where: str = "") -> None:
    """Nested JSON values equal, numbers to 1e-9 relative (BLAS on a one-thread worker
    sums in another order than here: the SKCE's last digits may differ)."""
    if isinstance(want, dict):
        assert set(got) == set(want), where
        for key in want:
            _assert_close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _assert_close(a, b, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(got, bool):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-15), where
    else:
        assert got == want, where


def _without_fit_seconds(doc: dict) -> dict:
    """An evaluate document without its wall times (the only fields a rerun changes)."""
    for model in doc["models"]:
        for row in model["rows"]:
            row.pop("fit_seconds")
    return doc


def test_cli_evaluate_maps_on_dask_are_the_sample_comparison(dask_client, synthetic, capsys):
    """``--maps`` on Dask: the exact uncalibrated row of every row, then one row per map
    equal to the in-memory rows of ``compare_maps_on_sample`` on the same sample (same
    seed, same numbers), the sample's verdict among all candidates, and ``--measures``
    of that same sample; a rerun prints the same document."""
    import csv
    import io
    import json

    from app.cli.outputs import rows_with_parts
    from calibration_core.distributed import compare_maps_on_sample
    from calibration_core.measures import measures_summary

    folder, _ = synthetic
    maps = ["temperature", "isotonic"]
    where = ["--engine", "dask", "--scheduler", dask_client.scheduler.address]
    common = ["evaluate", str(folder), *where, "--format", "json", "--bins", "10", "--seed", "4"]
    both = [*common, "--maps", ",".join(maps), "--sample-rows", "3000", "--measures"]
    assert main(both) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(common) == 0
    exact = json.loads(capsys.readouterr().out)
    assert doc["settings"]["maps"] == maps and doc["settings"]["sample_rows"] == 3000
    for model, alone in zip(doc["models"], exact["models"], strict=True):
        found = compare_maps_on_sample(
            str(folder),
            maps,
            size=3000,
            seed=4,
            n_bins=10,
            model=model["model"],
            client=dask_client,
        )
        info = found.info
        assert 0 < info.rows < model["n_samples"] and info.dataset_rows == 6100
        on = {"rows": info.rows, "seed": 4, "of": model["n_samples"]}
        assert model["rows"][0] == alone["rows"][0]  # uncalibrated: exact, on every row
        assert [r["map"] for r in model["rows"]] == ["uncalibrated", *maps]
        want = [{**r, "evaluated_on": on} for r in rows_with_parts(found.comparison, 10, "width")]
        for got, row in zip(model["rows"][1:], want[1:], strict=True):
            assert list(got) == list(model["rows"][0])  # the same fields, in the same order
            assert {**got, "fit_seconds": 0} == {**row, "fit_seconds": 0}
        verdict = found.comparison.verdict(n_resamples=1000, level=0.95).to_dict()
        assert model["verdict"] == {**verdict, "evaluated_on": on}
        assert set(model["verdict"]["log_loss"]) == {"uncalibrated", *maps}
        assert model["verdict"]["n_rows"] == info.rows
        assert model["splitter"] == found.comparison.settings["splitter"]
        measures = {**measures_summary(found.sample, seed=4), "evaluated_on": on}
        _assert_close(model["measures"], json.loads(json.dumps(measures)))
    assert main([*both[:-1], "--format", "csv"]) == 0  # (--format given twice: the last wins)
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["model"], r["map"]) for r in table] == [
        (m["model"], row["map"]) for m in doc["models"] for row in m["rows"]
    ]
    cells = [(r["log_loss"], r["converged"]) for r in table]
    assert cells == [
        (repr(row["log_loss"]), {None: "", True: "true", False: "false"}[row["converged"]])
        for m in doc["models"]
        for row in m["rows"]
    ]
    assert main(both) == 0
    again = json.loads(capsys.readouterr().out)
    assert _without_fit_seconds(again) == _without_fit_seconds(doc)
    assert main([*common, "--maps", ",".join(maps), "--sample-rows", "3000", "--seed", "5"]) == 0
    other = json.loads(capsys.readouterr().out)
    assert other["models"][0]["rows"][1]["evaluated_on"]["seed"] == 5
    assert other["models"][0]["rows"][1]["log_loss"] != doc["models"][0]["rows"][1]["log_loss"]


def test_cli_evaluate_measures_on_dask_are_the_samples(dask_client, synthetic, capsys):
    """``--measures`` on Dask: the in-memory measures of the model's sample (drawn by
    ``sample_predictions`` with the same size and seed), marked with the sample; the
    table output says so too."""
    import json

    from calibration_core.measures import measures_summary

    folder, _ = synthetic
    where = ["--engine", "dask", "--scheduler", dask_client.scheduler.address]
    common = ["evaluate", str(folder), *where, "--measures", "--sample-rows", "2500", "--seed", "2"]
    assert main([*common, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["measures"] is True and doc["settings"]["maps"] == []
    for model in doc["models"]:
        sample, _ = sample_predictions(str(folder), size=2500, seed=2, model=model["model"])
        on = {"rows": sample.n_samples, "seed": 2, "of": model["n_samples"]}
        assert 0 < sample.n_samples < model["n_samples"]
        want = {**measures_summary(sample, seed=2), "evaluated_on": on}
        _assert_close(model["measures"], json.loads(json.dumps(want)))
        assert [r["map"] for r in model["rows"]] == ["uncalibrated"]  # no maps asked
        assert model["verdict"]["evaluated_on"] == "all rows"
    assert main(common) == 0
    out = capsys.readouterr().out
    name = doc["models"][0]["model"]
    n = doc["models"][0]["measures"]["evaluated_on"]["rows"]
    assert (
        f"{name}: measures of the uncalibrated predictions on a uniform sample of {n:,} of "
        f"3,500 rows (seed 2)"
    ) in out
    assert "smooth ECE" in out and "slope" in out


def test_cli_evaluate_bad_map_names_on_dask_are_the_in_memory_errors(synthetic, capsys):
    """An unknown map fails with the in-memory engine's message, before any cluster
    work (the scheduler's address here is never reached)."""
    folder, paths = synthetic
    for maps in ("temperatur", "temperature,nope"):
        assert main(["evaluate", paths[0], "--maps", maps]) == 1
        memory = capsys.readouterr().err
        args = ["evaluate", str(folder), "--engine", "dask", "--maps", maps]
        assert main([*args, "--scheduler", "tcp://127.0.0.1:9"]) == 1
        assert capsys.readouterr().err == memory
        assert "unknown" in memory.lower() or "no map" in memory.lower(), memory


@pytest.mark.parametrize("map_name", ["temperature", "platt", "isotonic"])
def test_cli_fit_on_dask_equals_the_in_memory_fit(
    dask_client, synthetic, tmp_path, capsys, map_name
):
    import json

    from calibration_core.deploy import load_deployable

    _, paths = synthetic
    where = ["--engine", "dask", "--scheduler", dask_client.scheduler.address]
    dask_map, memory_map = tmp_path / "dask.json", tmp_path / "memory.json"
    assert main(["fit", paths[0], "--map", map_name, "-o", str(dask_map), *where]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(["fit", paths[0], "--map", map_name, "-o", str(memory_map)]) == 0
    memory = json.loads(capsys.readouterr().out)
    # The in-memory summary's fields; no held-out estimate, the exact uncalibrated row.
    assert set(doc) == set(memory) and set(doc["settings"]) == {
        *memory["settings"],
        "engine",
        "fitted_on",
    }
    assert doc["held_out"] is None and [r["map"] for r in doc["comparison"]] == ["uncalibrated"]
    assert list(doc["comparison"][0]) == list(memory["comparison"][0])
    for key in ("accuracy", "confidence_ece", "brier_score", "log_loss"):
        assert abs(doc["comparison"][0][key] - memory["comparison"][0][key]) <= TOL
    exact = map_name != "isotonic"
    assert doc["settings"]["fitted_on"] == ("all rows" if exact else "sample")
    assert doc["model"] == memory["model"] and doc["n_rows"] == memory["n_rows"] == 2000
    a, b = load_deployable(dask_map), load_deployable(memory_map)
    assert (a.model, a.input, a.class_names, a.n_rows) == (b.model, b.input, b.class_names, 2000)
    probs = load_predictions(paths[0])[0].probs
    np.testing.assert_allclose(
        a.map.predict_proba(probs), b.map.predict_proba(probs), rtol=0, atol=1e-10
    )
    sample = a.map.to_dict().get("fit_sample")
    assert (sample is None) == exact
    if not exact:
        assert sample == {"rows": 2000, "seed": 0, "fraction": 1.0, "dataset_rows": 2000}


def test_cli_apply_on_dask_writes_what_apply_writes(dask_client, synthetic, tmp_path, capsys):
    import json

    folder, paths = synthetic
    where = ["--engine", "dask", "--scheduler", dask_client.scheduler.address]
    map_file = tmp_path / "map.json"
    assert main(["fit", paths[0], "--map", "platt", "-o", str(map_file), *where]) == 0
    capsys.readouterr()
    out = tmp_path / "calibrated"
    glob = str(folder / "part-[01].parquet")
    assert main(["apply", str(map_file), glob, "-o", str(out), *where]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "calibration-dashboard/apply/v1" and doc["rows"] == 3500
    assert list(doc["files"]) == [str(out / Path(p).name) for p in paths[:2]]
    for path in paths[:2]:
        memory = tmp_path / f"memory-{Path(path).name}"
        assert main(["apply", str(map_file), path, "-o", str(memory)]) == 0
        capsys.readouterr()
        assert pq.read_table(out / Path(path).name).equals(pq.read_table(memory))


@pytest.mark.parametrize("maps", ["temperature,isotonic,histogram", "isotonic,histogram"])
def test_cli_select_best_on_dask_chooses_as_in_memory_on_the_sample(
    dask_client, overconfident, tmp_path, capsys, maps
):
    """With a sample of every row, ``--select best`` on Dask compares the maps as the
    in-memory command does (same folds, same table), deploys the same winner and
    records the sample; the refit is exact (temperature) or on the sample."""
    import json

    from calibration_core.deploy import load_deployable

    _, paths = overconfident
    where = ["--engine", "dask", "--scheduler", dask_client.scheduler.address]
    common = ["fit", paths[0], "--select", "best", "--maps", maps, "--seed", "3"]
    dask_map, memory_map = tmp_path / "dask.json", tmp_path / "memory.json"
    assert main([*common, "-o", str(dask_map), *where, "--sample-rows", "5000"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main([*common, "-o", str(memory_map)]) == 0
    memory = json.loads(capsys.readouterr().out)
    assert doc["selected"] == memory["selected"] == "best"
    assert doc["map"] == memory["map"] and doc["map"] in maps.split(",")
    assert [r["map"] for r in doc["comparison"]] == [r["map"] for r in memory["comparison"]]
    for a, b in zip(doc["comparison"], memory["comparison"], strict=True):
        assert abs(a["log_loss"] - b["log_loss"]) <= 1e-9, (a["map"], a["log_loss"], b["log_loss"])
    assert doc["verdict"]["winner"] == memory["verdict"]["winner"]
    sample = {"rows": 2000, "seed": 3, "fraction": 1.0, "dataset_rows": 2000}
    assert doc["held_out"]["sample"] == sample
    assert doc["held_out"]["calibrated"] == pytest.approx(memory["held_out"]["calibrated"])
    exact = doc["map"] == "temperature"
    assert doc["settings"]["fitted_on"] == ("all rows" if exact else "sample")
    assert doc["settings"]["engine"] == "dask" and doc["n_rows"] == 2000
    a, b = load_deployable(dask_map), load_deployable(memory_map)
    assert a.held_out["sample"] == sample and (a.model, a.n_rows) == (b.model, b.n_rows)
    assert (a.map.to_dict().get("fit_sample") is None) == exact
    probs = load_predictions(paths[0])[0].probs
    np.testing.assert_allclose(
        a.map.predict_proba(probs), b.map.predict_proba(probs), rtol=0, atol=1e-9
    )


def test_select_best_on_a_sample_records_it_and_fits_on_it(dask_client, overconfident):
    """A sample smaller than the model (every row drawn with probability 3000 / 6100,
    the dataset's rows): the comparison scores the sample's rows, the winner (not
    exact) is fitted on that same sample, which the map records."""
    from calibration_core.distributed import select_map_on_dataset

    folder, _ = overconfident
    args = (str(folder), ["histogram", "isotonic"])
    kwargs = dict(
        model="other",
        class_names=("0", "1", "2", "3"),
        n_rows=1733,
        client=dask_client,
        size=3000,
        seed=5,
    )
    deployable, found = select_map_on_dataset(*args, **kwargs)
    info = found.info
    assert 0 < info.rows < 1733 and info.seed == 5 and info.dataset_rows == 6100
    assert found.sample.n_samples == info.rows and found.sample.name == "other"
    assert found.comparison.settings["n_scored"] == info.rows
    assert deployable.n_rows == info.rows and deployable.model == "other"
    assert deployable.map.to_dict()["fit_sample"] == deployable.held_out["sample"]
    again, _ = select_map_on_dataset(*args, **kwargs)
    assert again.held_out == deployable.held_out  # the same rows, folds and numbers


def test_cli_fit_and_apply_refuse_what_the_dask_engine_cannot_do(synthetic, tmp_path, capsys):
    folder, _ = synthetic
    out = str(tmp_path / "m.json")
    assert main(["fit", str(folder), "--map", "platt", "-o", out, "--sample-rows", "9"]) == 1
    assert "--sample-rows needs --engine dask" in capsys.readouterr().err
    assert main(["apply", out, str(folder), "-o", out, "--workers", "2"]) == 1
    assert "need --engine dask" in capsys.readouterr().err


# ------------------------------------------------------- without the extra
def test_the_core_does_not_import_dask():
    code = (
        "import sys, calibration_core, calibration_core.distributed, app.cli;"
        "app.cli.build_parser();"
        "assert 'dask' not in sys.modules and 'distributed' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_missing_extra_is_named(monkeypatch):
    from calibration_core.distributed import require_dask

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"calibration-dashboard\[dask\]"):
        require_dask()
