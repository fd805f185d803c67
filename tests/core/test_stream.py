"""The streaming engine (calibration_core.distributed.stream) against the other two.

On the same Parquet files (several files, several row groups, several batches
per row group), the streamed summaries, the in-memory engine
(:class:`~calibration_core.engines.PredictionsSummary`) and the Dask engine
(Dask's local scheduler) answer every question of the engine interface alike:
counts and edges exactly, every number within 1e-12 relative. That the
streaming path imports neither Dask nor distributed is tested through the
command line (tests/app/test_cli_stream.py).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calibration_core import CalibrationInputError, Predictions
from calibration_core.engines import CalibrationSummary, PredictionsSummary
from calibration_core.measures.decomposition import PART_FIELDS

#: The kernel is compiled by Numba (the ``dask`` extra): the ``dask`` tier.
pytestmark = pytest.mark.usefixtures("dask_extra")

#: Largest relative difference allowed on a number.
RTOL = 1e-12


def _rows(k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.5), size=n)
    edges = slice(0, n, 4)  # a quarter of the rows with scores exactly on bin edges
    p[edges] = np.round(p[edges], 2) + 1e-3
    p[edges] /= p[edges].sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) < rng.random(n)[:, None]).sum(axis=1).clip(0, k - 1)
    return p, y


def _dataset(folder, k: int, n_files: int = 3, n: int = 2500):
    """``n_files`` files of ``n`` rows in row groups of 700; the rows in file order."""
    folder.mkdir()
    probs, labels = [], []
    for f in range(n_files):
        p, y = _rows(k, n, seed=f)
        cols = {f"p_{j}": p[:, j] for j in range(k)}
        table = pa.table({**cols, "label": y})
        pq.write_table(table, folder / f"part-{f}.parquet", row_group_size=700)
        probs.append(p)
        labels.append(y)
    memory = Predictions.from_probs(np.concatenate(probs), np.concatenate(labels), name="logs")
    return str(folder), PredictionsSummary(memory)


def _assert_close(a, b) -> None:
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL)


def _assert_same(memory: CalibrationSummary, other: CalibrationSummary, n_bins: int, scheme):
    for notion in ("confidence", "classwise"):
        a, b = memory.statistics(notion, n_bins, scheme), other.statistics(notion, n_bins, scheme)
        np.testing.assert_array_equal(a.edges, b.edges)
        np.testing.assert_array_equal(a.count, b.count)
        np.testing.assert_array_equal(a.sum_target, b.sum_target)
        _assert_close(a.sum_score, b.sum_score)
    got, want = other.metrics(n_bins, scheme), memory.metrics(n_bins, scheme)
    assert list(got) == list(want)
    _assert_close([got[c] for c in want], [want[c] for c in want])
    parts, known = other.score_parts(n_bins, scheme), memory.score_parts(n_bins, scheme)
    fields = PART_FIELDS if memory.n_classes == 2 else PART_FIELDS[:2]  # merged K > 2: none
    _assert_close([parts[f] for f in fields], [known[f] for f in fields])


@pytest.mark.parametrize("k", [2, 10])
def test_stream_memory_and_dask_agree_with_equal_width_bins(k, tmp_path):
    from calibration_core.distributed import dataset_summaries
    from calibration_core.distributed.stream import stream_summaries

    path, memory = _dataset(tmp_path / "logs", k)
    streamed = stream_summaries(path, batch_rows=300)["logs"]
    on_dask = dataset_summaries(path)["logs"]
    assert isinstance(streamed, CalibrationSummary)
    assert (streamed.n_samples, streamed.class_names) == (memory.n_samples, memory.class_names)
    for n_bins in (1, 7, 15, 100):
        _assert_same(memory, streamed, n_bins, "width")
        _assert_same(on_dask, streamed, n_bins, "width")


@pytest.mark.parametrize("k", [2, 10])
def test_stream_memory_and_dask_agree_with_equal_frequency_bins(k, tmp_path):
    from calibration_core.distributed import dataset_summaries, frequency_statistics
    from calibration_core.distributed.stream import stream_summaries

    path, memory = _dataset(tmp_path / "logs", k)
    on_dask = dataset_summaries(path)
    for n_bins in (1, 15):
        streamed = stream_summaries(path, frequency_bins=n_bins, batch_rows=300)["logs"]
        dask = on_dask["logs"].with_frequency(
            n_bins, frequency_statistics(path, on_dask, n_bins)["logs"]
        )
        _assert_same(memory, streamed, n_bins, "frequency")
        _assert_same(dask, streamed, n_bins, "frequency")


def test_batches_do_not_change_the_counts(tmp_path):
    from calibration_core.distributed.stream import stream_summaries

    path, _ = _dataset(tmp_path / "logs", 3, n_files=2, n=900)
    small = stream_summaries(path, batch_rows=64)["logs"]
    whole = stream_summaries(path)["logs"]
    np.testing.assert_array_equal(small.confidence.count, whole.confidence.count)
    np.testing.assert_array_equal(small.classwise.positives, whole.classwise.positives)
    assert small.hits == whole.hits


def test_bad_rows_name_their_file_and_rows(tmp_path):
    from calibration_core.distributed.stream import stream_summaries

    path, _ = _dataset(tmp_path / "logs", 3, n_files=2, n=900)
    table = pq.read_table(f"{path}/part-1.parquet").to_pydict()
    table["p_0"][800] = -0.5
    pq.write_table(pa.table(table), f"{path}/part-1.parquet", row_group_size=700)
    with pytest.raises(CalibrationInputError, match=r"part-1.parquet' rows 701-900"):
        stream_summaries(path)
    with pytest.raises(CalibrationInputError, match="no Parquet file matches"):
        stream_summaries(str(tmp_path / "none" / "*.parquet"))


def test_the_sample_drawn_in_process_is_the_dask_sample(tmp_path):
    """The same seed draws the same rows, in the same order, with their columns and row
    numbers: each piece's draw is seeded by its index, wherever the piece is read."""
    from calibration_core.distributed.frequency import InProcessPasses
    from calibration_core.distributed.sample import draw_sample

    path, _ = _dataset(tmp_path / "logs", 3)
    for file in sorted((tmp_path / "logs").glob("*.parquet")):
        table = pq.read_table(file)
        region = np.array(["north", "south"])[np.arange(table.num_rows) % 2]
        pq.write_table(table.append_column("region", pa.array(region)), file,
                       row_group_size=700)  # fmt: skip
    drawn = {}
    for size, seed in ((500, 0), (500, 3), (10_000, 1)):  # 10,000 > 7,500 rows: every row
        common = {"size": size, "seed": seed, "columns": ("region",), "row_numbers": True}
        here, here_info, here_rows = draw_sample(path, passes=InProcessPasses(), **common)
        there, there_info, there_rows = draw_sample(path, **common)  # Dask's local scheduler
        assert here_info == there_info and here.n_samples == here_info.rows <= size
        np.testing.assert_array_equal(here.probs, there.probs)
        np.testing.assert_array_equal(here.labels, there.labels)
        np.testing.assert_array_equal(here.extra["region"], there.extra["region"])
        np.testing.assert_array_equal(here_rows, there_rows)
        drawn[seed] = here_rows
    assert drawn[1].shape == (7500,)
    assert not np.array_equal(drawn[0][:400], drawn[3][:400])  # another seed, other rows


def _string_bomb(path, column: str) -> str:
    """2,000 rows whose ``column`` holds one 100 KB string on every row: a few KB on disk
    (dictionary-encoded), 200 MB if its values were decoded one per row."""
    n, long = 2000, "x" * 100_000
    p = np.full(n, 0.7)
    cols = {"p_a": p, "p_b": 1 - p, "label": np.array(["a", "b"])[np.arange(n) % 2]}
    cols[column] = pa.array([long] * n)
    pq.write_table(pa.table(cols), path)
    return str(path)


def test_piece_reads_a_repeated_string_once(tmp_path):
    """Text columns are read dictionary-encoded: the batch holds the string once."""
    from calibration_core.distributed.pieces import find_pieces, piece_batches

    path = _string_bomb(tmp_path / "note.parquet", "note")
    assert pq.ParquetFile(path).metadata.serialized_size < 10_000
    (piece,) = find_pieces(path)
    batches = list(piece_batches(piece, 1 << 16))
    assert sum(b.nbytes for b in batches) < 1 << 20  # not 200 MB


@pytest.mark.parametrize("column", ["label", "model"])
@pytest.mark.parametrize("engine", ["stream", "dask"])
def test_string_bomb_is_refused_by_file_on_both_engines(tmp_path, column, engine):
    from calibration_core.distributed import dataset_summaries
    from calibration_core.distributed.stream import stream_summaries

    path = _string_bomb(tmp_path / "bomb.parquet", column)
    summarize = stream_summaries if engine == "stream" else dataset_summaries
    with pytest.raises(CalibrationInputError, match="at most 200 characters") as info:
        summarize(path)
    assert f"{path!r} rows 1-2,000 (row group 0)" in str(info.value)


def test_extra_text_column_travels_without_expanding(tmp_path):
    from calibration_core.distributed.stream import stream_summaries

    path = _string_bomb(tmp_path / "note.parquet", "note")
    assert stream_summaries(path)["note"].n_samples == 2000


def test_piece_too_large_for_its_bound_is_refused_from_the_footer(tmp_path):
    from calibration_core.distributed.pieces import find_pieces

    n = 2000
    p = np.full(n, 0.7)
    notes = [f"{i:06d}" + "y" * 1000 for i in range(n)]  # distinct: 2 MB of text pages
    table = pa.table({"p_a": p, "p_b": 1 - p, "label": np.arange(n) % 2, "note": notes})
    path = str(tmp_path / "wide.parquet")
    pq.write_table(table, path, row_group_size=1000)
    with pytest.raises(CalibrationInputError, match="max_piece_bytes") as info:
        find_pieces(path, max_piece_bytes=512 << 10)
    assert f"{path!r} row group 0: its columns decode to 1.0 MB" in str(info.value)
    assert len(find_pieces(path, max_piece_bytes=4 << 20)) == 2
    assert len(find_pieces(path)) == 2  # the default bound
