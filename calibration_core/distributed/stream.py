"""The streaming engine: a dataset's summaries computed in this process, without Dask.

The same mergeable summaries as the Dask engine (:class:`~.summary.ModelSummary`),
from the same per-batch code: every row group of every file (files sorted by
path, :func:`~.pieces.find_pieces`) is read batch by batch
(:func:`~.pieces.read_piece_batches`, batches sized by
:func:`~.engine.summary_batch_rows`) and each batch is added to one
:class:`~.summary.SummaryBuilder` (the loader's checks and messages, the
compiled kernel of :mod:`.kernel`), one builder per row group, whose summary is
added to the running total (:func:`~.summary.merge_summaries`): the Dask
engine's order of float additions but for the shape of the merge tree (one
running float64 total over 2e7 rows was 1e-13 off the Dask engine's Brier score,
per row group 6e-17; ``benchmarks/bench_stream.py``). Nothing is sent anywhere.
Equal-frequency bins take the Dask
engine's four passes (:func:`~.frequency.frequency_statistics`), run here piece
after piece (:class:`~.frequency.InProcessPasses`).

Neither Dask nor distributed is imported; Numba is (the kernel, cached on disk:
0.4 s of CPU to load, 3.2 s to compile on a first run). For one machine this
is the lean engine: no cluster to start, no task graph, no serialisation
(``benchmarks/bench_stream.py``, BENCHMARKS.md). Memory follows the batch, not the
dataset.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import CalibrationInputError
from .engine import summary_batch_rows
from .frequency import InProcessPasses, frequency_statistics
from .pieces import ReadOptions, dataset_name, find_pieces, read_piece_batches
from .summary import Summaries, SummaryBuilder, merge_summaries

__all__ = ["stream_summaries"]


def stream_summaries(
    source,
    *,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
    frequency_bins: int | None = None,
    batch_rows: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Summaries:
    """Per-model summaries of a whole Parquet dataset, streamed in this process.

    Parameters
    ----------
    source : str, os.PathLike or list of paths
        A Parquet file, a folder of ``*.parquet``, a glob (``'logs/*.parquet'``) or
        a list of files, with the loader's columns.
    label_column, renormalize
        As in :func:`~calibration_core.load_predictions`.
    name : str, optional
        Model name when there is no ``model`` column; default the file's stem (one
        file) or the folder's name (several), as on Dask.
    frequency_bins : int, optional
        Also answer ``scheme="frequency"`` at this bin count (four more passes:
        :meth:`~.summary.ModelSummary.with_frequency`).
    batch_rows : int, optional
        Rows per batch; default :func:`~.engine.summary_batch_rows` of each row
        group (the whole row group when it is small enough).
    progress : callable, optional
        Called as ``progress(done, total)`` in rows, after each row group.

    Returns
    -------
    dict of str to ModelSummary
        One per model, in the order models are first seen; equal to
        :func:`~.engine.dataset_summaries` of the same files (sums to float rounding).
    """
    if batch_rows is not None and batch_rows < 1:
        raise CalibrationInputError(f"batch_rows must be at least 1, got {batch_rows}.")
    options = ReadOptions(label_column, renormalize, name or dataset_name(source))
    pieces = find_pieces(source)
    summaries: Summaries = {}
    done, total = 0, sum(p.n_rows for p in pieces)
    for piece in pieces:
        builder = SummaryBuilder()
        rows = batch_rows or summary_batch_rows(piece)
        for _ in read_piece_batches(piece, options, rows, use=builder.add_table):
            pass
        summaries = merge_summaries([summaries, builder.summaries()])
        done += piece.n_rows
        if progress is not None:
            progress(done, total)
    if not summaries:
        raise CalibrationInputError("the dataset has no rows.")
    if frequency_bins is None:
        return summaries
    frequency = frequency_statistics(
        source, summaries, frequency_bins, passes=InProcessPasses(), label_column=label_column,
        renormalize=renormalize, name=options.name,
    )  # fmt: skip
    return {m: s.with_frequency(frequency_bins, frequency[m]) for m, s in summaries.items()}
