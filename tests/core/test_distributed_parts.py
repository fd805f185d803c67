"""The Brier and log-loss parts of the Dask engine against calibration_core.decomposition.

``ModelSummary.score_parts`` (per-cell sums, any equal-width M in 1..100, or the
exact equal-frequency bins) equals :func:`calibration_core.score_parts` on the
same rows to 1e-12: the Brier parts for every K, the log-loss parts for K = 2
(None for K > 2). Blocks without a cluster first (edge rows: ties, zeros, values
on thresholds, rows divided by their sums, binary rows off 1 within the exact
tolerance), then datasets on a LocalCluster of 2 worker processes, the CLI's
JSON and a CIFAR file.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("numba", reason="the 'dask' extra is not installed")

from app.cli import main
from calibration_core import PART_FIELDS, load_predictions, score_parts
from calibration_core.distributed.kernel import BlockTotals, summarize_block
from calibration_core.distributed.summary import ModelSummary
from calibration_core.io.checks import exact_tolerance

from .test_distributed_kernel import _loader_values, _rows

TOL = 1e-12
WIDTH_BINS = (1, 2, 7, 15, 64, 100)
FREQUENCY_BINS = (1, 3, 15, 150)


def _assert_parts(got: dict, probs, labels, n_bins: int, scheme: str = "width") -> None:
    """``got`` equals the core's parts; the log-loss ones are None exactly when K > 2."""
    want = score_parts(probs, labels, n_bins=n_bins, scheme=scheme)
    assert list(got) == list(PART_FIELDS)
    for key in PART_FIELDS:
        if key.startswith("log_loss") and probs.shape[1] > 2:
            assert got[key] is None, key
            continue
        assert abs(got[key] - want[key]) <= TOL, (scheme, n_bins, key, got[key], want[key])


def _summary(stored: np.ndarray, labels: np.ndarray) -> ModelSummary:
    k = stored.shape[1]
    totals = BlockTotals(k)
    for start in range(0, stored.shape[0], 1000):  # several blocks add up
        block = np.stack(list(stored[start : start + 1000].T))
        check = summarize_block(block, labels[start : start + 1000], exact_tolerance(k), totals)
        assert check.bad == 0
    return ModelSummary.of_totals("m", [str(j) for j in range(k)], totals)


# ------------------------------------------------------------ blocks, no cluster
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 3, 4, 10])
def test_parts_of_blocks_equal_the_core(dtype, k):
    rng = np.random.default_rng(20 + k)
    stored, labels = _rows(rng, 4000, k, dtype)
    summary = _summary(stored, labels)
    probs = _loader_values(stored)
    for m in WIDTH_BINS:
        _assert_parts(summary.score_parts(m), probs, labels, m)


def test_binary_rows_off_one_within_the_exact_tolerance_keep_exact_brier_parts():
    """Rows off 1 by +-9e-13 (by label) are used as stored, so column 0 is not 1 - p1:
    its sums in the positive column's bins are kept, not derived from column 1's,
    which would be off by 2 mean cov_b(p0 + p1 - 1, y0) = 9e-13 here (asserted: 1e-13)."""
    rng = np.random.default_rng(5)
    p1 = 0.001 + 0.998 * rng.random(6000)
    p1[:500] = np.round(p1[:500], 1).clip(0.001, 0.999)  # scores on bin edges
    labels = (rng.random(6000) < 0.5).astype(np.intp)
    p0 = 1.0 - p1 + np.where(labels == 0, 9e-13, -9e-13)
    stored = np.column_stack([p0, p1])
    assert np.all(np.abs(stored.sum(axis=1) - 1.0) <= exact_tolerance(2))  # not divided
    summary = _summary(stored, labels)
    for m in WIDTH_BINS:
        got, want = summary.score_parts(m), score_parts(stored, labels, n_bins=m)
        for key in PART_FIELDS:
            assert abs(got[key] - want[key]) <= 1e-13, (m, key, got[key], want[key])


def test_an_earlier_summary_without_part_sums_gives_none():
    rng = np.random.default_rng(1)
    stored, labels = _rows(rng, 500, 3, np.float64)
    summary = _summary(stored, labels)
    kept = ("name", "class_names", "n_samples", "hits", "brier_sum", "log_loss_sum")
    old = ModelSummary(*(getattr(summary, f) for f in kept), summary.confidence, summary.classwise)
    assert old.score_parts(15) == dict.fromkeys(PART_FIELDS)
    assert (old + summary).parts is None


# ------------------------------------------------------------ datasets on a cluster
distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")

from calibration_core.distributed import dataset_summaries, frequency_statistics  # noqa: E402
from calibration_core.distributed.engine import local_cluster  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 worker processes (1 thread each) and its client."""
    cluster = local_cluster(2, dashboard_address=None, silence_logs=40)
    with cluster, distributed.Client(cluster) as c:
        yield c


def _softmax_rows(rng, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    z = rng.normal(size=(n, k)) * 2.0
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[: n // 4] = np.round(p[: n // 4], 2)  # scores on bin edges, rows divided
    p[: n // 4] /= p[: n // 4].sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(0, k - 1)
    return p, y


def _write_files(folder, k: int, sizes, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    folder.mkdir()
    paths = []
    for i, n in enumerate(sizes):
        p, y = _softmax_rows(rng, n, k)
        path = folder / f"part-{i}.parquet"
        cols = {f"p_{j}": p[:, j] for j in range(k)}
        pq.write_table(pa.table({**cols, "label": y}), path, row_group_size=600)
        paths.append(str(path))
    return paths


def _loaded(paths) -> tuple[np.ndarray, np.ndarray]:
    preds = [load_predictions(p)[0] for p in paths]
    return np.concatenate([p.probs for p in preds]), np.concatenate([p.labels for p in preds])


@pytest.fixture(scope="module", params=[2, 4])
def dataset(request, tmp_path_factory):
    """Two files of K = 2 or K = 4 softmax rows (row groups of 600): folder, probs, labels."""
    k = request.param
    folder = tmp_path_factory.mktemp(f"k{k}") / "logs"
    paths = _write_files(folder, k, (1800, 2500), seed=k)
    return folder, *_loaded(paths)


def test_dataset_parts_equal_the_core_for_every_binning(client, dataset):
    folder, probs, labels = dataset
    summary = dataset_summaries(str(folder), client=client)["logs"]
    for m in WIDTH_BINS:
        _assert_parts(summary.score_parts(m), probs, labels, m)
    for m in FREQUENCY_BINS:
        frequency = frequency_statistics(str(folder), {"logs": summary}, m, client=client)
        _assert_parts(summary.score_parts(m, frequency["logs"]), probs, labels, m, "frequency")


def test_cli_evaluate_on_dask_writes_the_parts(client, dataset, capsys):
    folder, probs, labels = dataset
    where = ["--engine", "dask", "--scheduler", client.scheduler.address, "--format", "json"]
    for scheme in ("width", "frequency"):
        assert main(["evaluate", str(folder), *where, "--bins", "12", "--scheme", scheme]) == 0
        (model,) = json.loads(capsys.readouterr().out)["models"]
        row = model["rows"][0]
        _assert_parts({key: row[key] for key in PART_FIELDS}, probs, labels, 12, scheme)
        assert row["brier_calibration"] > 0 and row["brier_refinement"] > 0


@pytest.mark.realdata
def test_cifar_parts_equal_the_core(client, realdata, tmp_path):
    """CIFAR-10 (K = 10: the Brier parts) and its top label against correctness (K = 2:
    all four), on two files of several row groups."""
    with np.load(realdata["wideresnet-16-4-cifar-10"], allow_pickle=False) as data:
        p, y = data["predictions"], data["ground_truth"]
    top = p.max(axis=1)
    binary = np.column_stack([1.0 - top, top])
    correct = (p.argmax(axis=1) == y).astype(np.int64)
    for name, probs, labels in (("cifar10", p, y), ("top", binary, correct)):
        folder = tmp_path / name
        folder.mkdir()
        table = pa.table(
            {**{f"p_{j}": probs[:, j] for j in range(probs.shape[1])}, "label": labels}
        )
        pq.write_table(table.slice(0, 4000), folder / "a.parquet", row_group_size=1000)
        pq.write_table(table.slice(4000), folder / "b.parquet", row_group_size=1500)
        summary = dataset_summaries(str(folder), client=client)[name]
        ref_probs, ref_labels = _loaded(sorted(str(f) for f in folder.glob("*.parquet")))
        assert summary.n_samples == 10_000
        for m in (5, 15, 100):
            _assert_parts(summary.score_parts(m), ref_probs, ref_labels, m)
        frequency = frequency_statistics(str(folder), {name: summary}, 15, client=client)
        _assert_parts(
            summary.score_parts(15, frequency[name]), ref_probs, ref_labels, 15, "frequency"
        )
