"""The Brier and log-loss parts of the Dask engine on datasets, against the core.

``ModelSummary.score_parts`` of a dataset summarised on a LocalCluster of 2
worker processes (per-cell sums: equal-width M in 1..100; or the exact
equal-frequency bins) equals :func:`calibration_core.score_parts` on the same
rows to 1e-12: the Brier parts for every K, the log-loss parts for K = 2 (None
for K > 2); so do the rows of ``evaluate --engine dask`` and a CIFAR file's.
The same on single blocks, without a cluster: ``test_distributed_kernel.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("numba", reason="the 'dask' extra is not installed")
distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")

from app.cli import main  # noqa: E402
from calibration_core import PART_FIELDS, load_predictions  # noqa: E402
from calibration_core.distributed import dataset_summaries, frequency_statistics  # noqa: E402

from .test_distributed_kernel import PART_BINS, assert_parts  # noqa: E402

#: The Dask engine on the session's cluster: the ``dask`` tier.
pytestmark = pytest.mark.usefixtures("dask_extra")

FREQUENCY_BINS = (1, 3, 15, 150)


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


def test_dataset_parts_equal_the_core_for_every_binning(dask_client, dataset):
    folder, probs, labels = dataset
    summary = dataset_summaries(str(folder), client=dask_client)["logs"]
    for m in PART_BINS:
        assert_parts(summary.score_parts(m), probs, labels, m)
    for m in FREQUENCY_BINS:
        frequency = frequency_statistics(str(folder), {"logs": summary}, m, client=dask_client)
        parts = summary.with_frequency(m, frequency["logs"]).score_parts(m, "frequency")
        assert_parts(parts, probs, labels, m, "frequency")


def test_cli_evaluate_on_dask_writes_the_parts(dask_client, dataset, capsys):
    folder, probs, labels = dataset
    where = ["--engine", "dask", "--scheduler", dask_client.scheduler.address, "--format", "json"]
    for scheme in ("width", "frequency"):
        assert main(["evaluate", str(folder), *where, "--bins", "12", "--scheme", scheme]) == 0
        (model,) = json.loads(capsys.readouterr().out)["models"]
        row = model["rows"][0]
        assert_parts({key: row[key] for key in PART_FIELDS}, probs, labels, 12, scheme)
        assert row["brier_calibration"] > 0 and row["brier_refinement"] > 0


@pytest.mark.realdata
def test_cifar_parts_equal_the_core(dask_client, realdata, tmp_path):
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
        summary = dataset_summaries(str(folder), client=dask_client)[name]
        ref_probs, ref_labels = _loaded(sorted(str(f) for f in folder.glob("*.parquet")))
        assert summary.n_samples == 10_000
        for m in (5, 15, 100):
            assert_parts(summary.score_parts(m), ref_probs, ref_labels, m)
        frequency = frequency_statistics(str(folder), {name: summary}, 15, client=dask_client)
        parts = summary.with_frequency(15, frequency[name]).score_parts(15, "frequency")
        assert_parts(parts, ref_probs, ref_labels, 15, "frequency")
