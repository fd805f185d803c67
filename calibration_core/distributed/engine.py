"""The Dask graph: one summary task per piece, merged in a tree reduction.

Dask and distributed are imported here, lazily, only when a dataset is
evaluated: the core does not need them (:func:`require_dask` names the extra
when they are missing).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from ..errors import CalibrationInputError
from ..io.checks import Context
from .pieces import Piece, ReadOptions, dataset_name, find_pieces, read_piece_batches
from .summary import Summaries, SummaryBuilder, merge_summaries

__all__ = [
    "SPLIT_EVERY",
    "SUMMARY_BATCH_BYTES",
    "SUMMARY_BATCH_ROWS",
    "WHOLE_ROW_GROUP_BYTES",
    "WORKER_MALLOC",
    "dataset_summaries",
    "local_cluster",
    "piece_summaries",
    "require_dask",
    "summary_batch_rows",
    "tree_merge",
]

#: Summaries merged per task of the tree reduction.
SPLIT_EVERY = 8


#: glibc allocator settings of the worker processes :func:`local_cluster` starts: freed
#: blocks up to 32 MiB stay in the heap, which is trimmed past 64 MiB free. Dask's own
#: default (``MALLOC_TRIM_THRESHOLD_=65536``, so that workers hand memory back) turns
#: off glibc's adaptive threshold: every temporary over 128 KiB (a block's arrays are
#: 0.1-5 MB) is then fresh pages from the system, faulted in on first write. Measured
#: with ``benchmarks/bench_dask_stages.py``: 1.9x the CPU per 1e6 x 10 row group
#: (1.26-1.44 s against 0.68-0.82 s). Peak memory stays flat: at most 64 MiB more per
#: worker.
WORKER_MALLOC = {"MALLOC_TRIM_THRESHOLD_": str(64 << 20), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}


def local_cluster(n_workers: int, **kwargs):
    """A ``distributed.LocalCluster`` of ``n_workers`` processes with :data:`WORKER_MALLOC`.

    The settings go through Dask's ``distributed.nanny.pre-spawn-environ`` (read
    before a worker process starts, as glibc reads them once); other keyword
    arguments go to ``LocalCluster`` (default 1 thread per worker). A nanny lets the
    parent's environment override that setting, and every nanny writes its values
    into the parent's ``os.environ``: after any other cluster in the same process,
    Dask's trim-everything default would win. So the parent's variables are set to
    :data:`WORKER_MALLOC` while the workers start and restored afterwards.
    """
    dask = require_dask()
    from distributed import LocalCluster

    environ = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_MALLOC.items()}
    kwargs.setdefault("threads_per_worker", 1)
    with dask.config.set(environ), _process_environ(WORKER_MALLOC):
        return LocalCluster(n_workers=n_workers, processes=True, **kwargs)


@contextlib.contextmanager
def _process_environ(values: dict[str, str]):
    """Set ``values`` in ``os.environ`` for the block, then restore what was there."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def require_dask():
    """The ``dask`` module, or an ImportError naming the extra to install."""
    try:
        import dask
        import distributed  # noqa: F401  (the scheduler the CLI and the tests use)
        import numba  # noqa: F401  (the compiled summary of a block, .kernel)
    except ImportError as exc:
        raise ImportError(
            "the Dask engine needs the optional 'dask' extra: "
            "pip install 'calibration-dashboard[dask]' (dask[dataframe], distributed, numba). "
            f"({exc})"
        ) from None
    return dask


#: Rows per batch of :func:`summarize_piece` (at most; see :func:`summary_batch_rows`): the
#: compiled summary keeps no float64 matrix, so a batch is the K columns as stored plus one
#: (K, n) copy (10 MB at K = 10, float32). Batches of 2**18 rows decode in 0.06 s CPU per
#: 1e6 x 10 row group against 0.07 s for 2**16 (BENCHMARKS.md).
SUMMARY_BATCH_ROWS = 1 << 18

#: Decoded bytes of a batch of :func:`summarize_piece`, counted as 8 per value of every column
#: of the file: files of up to 24 columns are read :data:`SUMMARY_BATCH_ROWS` rows at a time,
#: wider ones in fewer rows, so that a task's memory does not grow with K (at K = 100 a batch
#: of 2**18 rows was 105 MB, and 1e6-row groups killed 1 GB workers). Not less: batches of
#: 31,000 rows at K = 100 cost 10-15 % more kernel CPU than 62,000 (BENCHMARKS.md).
SUMMARY_BATCH_BYTES = 48 << 20


#: Decoded bytes (counted as for :data:`SUMMARY_BATCH_BYTES`) up to which a row group is read
#: in one batch: pyarrow decodes a row group read whole without the copy into batches that a
#: row group read in parts costs, 20-25 % of the decode (0.041-0.045 against 0.052-0.055 CPU s
#: per 1e6 x 10 float32 row group, whatever the batch size below the row group;
#: BENCHMARKS.md). 96 MiB takes pyarrow's default row groups of 2**20 rows whole up to K = 11.
WHOLE_ROW_GROUP_BYTES = 96 << 20


def summary_batch_rows(piece: Piece) -> int:
    """Rows per batch of a piece: the whole row group within :data:`WHOLE_ROW_GROUP_BYTES`,
    else :data:`SUMMARY_BATCH_ROWS` within :data:`SUMMARY_BATCH_BYTES`.

    At least 1,024 rows (the budget is exceeded only beyond 6,000 columns).
    """
    if not piece.n_columns:
        return SUMMARY_BATCH_ROWS
    if piece.n_rows * 8 * piece.n_columns <= WHOLE_ROW_GROUP_BYTES:
        return max(piece.n_rows, 1)
    return max(1024, min(SUMMARY_BATCH_ROWS, SUMMARY_BATCH_BYTES // (8 * piece.n_columns)))


def summarize_piece(piece: Piece, options: ReadOptions) -> Summaries:
    """Task: the summaries of one row group of one file, summarised batch by batch."""
    builder = SummaryBuilder()
    rows = summary_batch_rows(piece)
    for _ in read_piece_batches(piece, options, rows, use=builder.add_table):
        pass
    return builder.summaries()


def summarize_frame(frame, index: int, options: ReadOptions) -> Summaries:
    """Task: the summaries of one partition (a pandas DataFrame) of a dask.dataframe."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    ctx = Context(f"partition {index}", "table", 0)
    if table.num_rows == 0:
        return {}
    builder = SummaryBuilder()
    builder.add_table(table, ctx, options)
    return builder.summaries()


def piece_summaries(
    source,
    *,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
) -> list:
    """One delayed summary per piece of ``source``.

    Parameters
    ----------
    source : str, os.PathLike, list of paths or dask.dataframe.DataFrame
        A Parquet file, a folder of ``*.parquet``, a glob (``'logs/*.parquet'``), a
        list of files, or a dask.dataframe whose columns follow the loader's
        conventions (probability or logit columns, a label column, an optional
        ``model`` column).
    label_column, renormalize
        As in :func:`~calibration_core.load_predictions`.
    name : str, optional
        Model name when there is no ``model`` column; default the file's stem (one
        file), the folder's name (several) or ``"model"`` (a dask.dataframe).

    Returns
    -------
    list of dask.delayed.Delayed
    """
    dask = require_dask()
    task = dask.delayed(pure=True)
    if hasattr(source, "to_delayed") and hasattr(source, "npartitions"):
        options = ReadOptions(label_column, renormalize, name or "model")
        frames = source.to_delayed()
        return [task(summarize_frame)(f, i, options) for i, f in enumerate(frames)]
    options = ReadOptions(label_column, renormalize, name or dataset_name(source))
    return [task(summarize_piece)(piece, options) for piece in find_pieces(source)]


def tree_merge(
    parts: Sequence,
    split_every: int = SPLIT_EVERY,
    merge: Callable[[list], Any] = merge_summaries,
):
    """Merge delayed results ``split_every`` at a time until one is left.

    ``merge`` takes a list of results and returns one (default: summaries).
    """
    dask = require_dask()
    if not parts:
        raise CalibrationInputError("the dataset has no rows (no non-empty row group).")
    merge = dask.delayed(merge, pure=True)
    level = list(parts)
    while len(level) > 1:
        level = [merge(level[i : i + split_every]) for i in range(0, len(level), split_every)]
    if len(parts) == 1:
        level = [merge(level)]
    return level[0]


def dataset_summaries(
    source,
    *,
    client: Any = None,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
    split_every: int = SPLIT_EVERY,
    progress: Callable[[int, int], None] | None = None,
) -> Summaries:
    """Per-model summaries of a whole dataset, computed on Dask.

    Parameters
    ----------
    source, label_column, renormalize, name
        See :func:`piece_summaries`.
    client : distributed.Client, optional
        Where to compute; default Dask's current scheduler (a Client made current,
        else the local threaded scheduler).
    split_every : int
        Fan-in of the tree reduction.
    progress : callable, optional
        With a client: called as ``progress(done, total)`` each time a piece is
        summarised, in rows (Parquet) or partitions (a dask.dataframe).

    Returns
    -------
    dict of str to ModelSummary
        One per model, in the order models are first seen.
    """
    parts = piece_summaries(source, label_column=label_column, renormalize=renormalize, name=name)
    total = tree_merge(parts, split_every)
    from .kernel import warm  # Numba: the dask extra, checked by piece_summaries

    warm()  # compiled here, once, so that workers sharing this disk load Numba's cache
    if client is None:
        result = total.compute()
    else:
        future = client.compute(total)
        if progress is not None:
            _follow(client, parts, _piece_weights(source, len(parts)), progress)
        result = future.result()
    if not result:
        raise CalibrationInputError("the dataset has no rows.")
    return result


def _piece_weights(source, n_parts: int) -> list[int]:
    """Rows of every piece (Parquet), or 1 per partition (a dask.dataframe)."""
    if hasattr(source, "to_delayed"):
        return [1] * n_parts
    return [piece.n_rows for piece in find_pieces(source)]


def _follow(client, parts: list, weights: list[int], progress: Callable[[int, int], None]):
    """Report pieces as they finish; each piece's future is dropped once counted."""
    from distributed import as_completed

    futures = client.compute(parts)  # the same keys as the pieces of the reduction
    weight = {f.key: w for f, w in zip(futures, weights, strict=True)}
    done, total = 0, sum(weights)
    progress(0, total)
    for f in as_completed(futures, loop=client.loop):  # this client, default or not
        done += weight[f.key]
        progress(done, total)
        f.release()
