"""Calibration of prediction logs larger than memory, on Dask or streamed in one process.

Install with ``pip install 'calibration-dashboard[dask]'`` (Dask, distributed and
Numba). Nothing here imports Dask or Numba until a dataset is evaluated, and the
rest of the core never needs them.

How it works
------------
Each row group of each Parquet file (or each partition of a dask.dataframe) is
read and validated with the loader's own conventions and messages, and
summarised, one compiled loop per batch of rows (:mod:`.kernel`), by counts and
sums only (:class:`ModelSummary`): hits, Brier and
log-loss sums, and per-*cell* statistics of the top-label confidence and of
every class column. Summaries merge by addition in a tree reduction
(:func:`tree_merge`), so a worker lost mid-run costs only the recomputation of
its pieces, and the numbers do not depend on the partitioning.

Cells (:mod:`.cells`) are cut at the union of the core's exact equal-width
thresholds for M = 2..100 (3,097 floats), so one pass answers the statistics
of **every equal-width bin count M in 1..100** exactly: every score lands in the
bin the in-memory core gives it (bit for bit), counts and positives are equal,
and sums equal up to the order of float additions. ECE, MCE (confidence,
classwise, binary), reliability curves and their binomial bands
(:func:`~calibration_core.bands.binomial_band` of :meth:`ModelSummary.statistics`),
Brier score, log-loss and accuracy agree with the in-memory core to 1e-12.
:class:`ModelSummary` is a :class:`~calibration_core.engines.CalibrationSummary`,
the interface of every engine: it answers the in-memory engine's questions
(:class:`~calibration_core.engines.PredictionsSummary`) with the same types.

Equal-frequency bins (:func:`~.frequency.frequency_statistics`) are **exact**,
with no rank error: their edges, order statistics of the whole dataset, are
selected digit by digit from the floats' bit patterns in three passes of
sparse digit counts, then a fourth pass bins every column with them; edges
and counts equal the core's, for any M (also above 100).
Per group and time window (:mod:`.slices`, ``--group-by``/``--window``) the
same selection picks every group's own edges, all groups at once
(:func:`~.group_bins.group_frequency_bins`), as the in-memory slices bin them.

Temperature scaling is fitted exactly on every row
(:func:`~.temperature.fit_temperature_on_dataset`): the core's own Newton
iteration, each derivative a tree-reduced sum over the pieces (one pass per
step).

Platt scaling is fitted exactly on every row too
(:func:`~.platt.fit_platt_on_dataset`): the core's batched Newton iteration
with its line search, on an objective whose loss, gradient and Hessian are
tree-reduced sums over the pieces (one pass per evaluation, plus one for the
targets' sums); the coefficients equal the in-memory fit's to about 1e-12.

Any other map is fitted on a reproducible uniform sample
(:func:`~.sample.fit_map_on_sample`, default up to 1e6 rows), its size and
seed recorded in the exported map (``"fit_sample"``). Choosing among maps
(:func:`~.select.select_map_on_dataset`) cross-fits them on that sample
(the core's ``compare_maps``, one task on the cluster) and refits the one
with the lowest held-out log-loss.

A fitted map is applied to a whole dataset file by file
(:func:`~.apply.apply_map_to_dataset`: the core's streaming ``apply`` in one
task per file), writing calibrated Parquet.

The calibration and refinement parts of the Brier score (any K) and of the
log-loss (K = 2) come from per-bin sums too (:mod:`.parts`,
:meth:`ModelSummary.score_parts`); the log-loss parts for K > 2 do not merge
(each row's estimated class frequencies are renormalised over its K bins at
once) and are None.

Calibration per group, per calendar time window and per window of N rows
(:mod:`.slices`) is exact on every row for the point estimates (the kernel on
each group's rows, kept as the sums of the bins asked for); intervals and tests
run on the sample. Windows of rows number each model's rows in the order of the
pieces (files sorted by path, row groups in file order), counted from the
footers.

The cumulative-differences curve of the whole dataset
(:func:`~.cumulative.summary_cumulative`) is exact at every cell edge (the rows
below a threshold are whole cells); between edges the cells bound it, so its
KS and Kuiper statistics, sigma and p-values come as ``(low, high)``.

Not yet: equal-width bin counts above 100, the consistency band, and a smooth
reliability curve from the cells (no bound in the cell width: docs/dask.md).

On one machine the same summaries are streamed in this process
(:func:`~.stream.stream_summaries`, :mod:`.stream`): the same per-batch code folded
into running totals, equal-frequency bins by the same four passes run piece
after piece, without importing Dask (Numba only).

Entry points
------------
:func:`dataset_summaries` (a Parquet file, folder, glob or list, or a
dask.dataframe) and the CLI ``calibration-dashboard evaluate 'logs/*.parquet'
--engine dask`` (also ``fit`` and ``apply``); :func:`stream_summaries` and
``evaluate 'logs/*.parquet' --engine stream`` on one machine.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

#: Rows of the reproducible sample by default (:mod:`.sample`).
DEFAULT_SAMPLE_ROWS = 1_000_000

#: Public name -> the module defining it, loaded on first use: the modules import
#: pyarrow, pandas and the maps (scikit-learn), which naming the default above
#: (the command line's help) does not need.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("apply_map_to_dataset", "dataset_deployable"), "apply"),
    **dict.fromkeys(("CELL_THRESHOLDS", "MAX_CELL_BINS", "CellStatistics"), "cells"),
    **dict.fromkeys(("CellCumulative", "summary_cumulative"), "cumulative"),
    **dict.fromkeys(
        ("dataset_summaries", "piece_summaries", "require_dask", "tree_merge"), "engine"
    ),
    "frequency_statistics": "frequency",
    **dict.fromkeys(("Piece", "ReadOptions", "find_pieces"), "pieces"),
    "fit_platt_on_dataset": "platt",
    **dict.fromkeys(
        (
            "SampleInfo",
            "draw_sample",
            "fit_map_on_sample",
            "run_on_sample",
            "sample_predictions",
        ),
        "sample",
    ),
    **dict.fromkeys(
        ("SampleComparison", "compare_maps_on_sample", "select_map_on_dataset"), "select"
    ),
    **dict.fromkeys(("ModelSummary", "merge_summaries", "summarize"), "summary"),
    "fit_temperature_on_dataset": "temperature",
    "stream_summaries": "stream",
}

__all__ = [
    "CELL_THRESHOLDS",
    "DEFAULT_SAMPLE_ROWS",
    "MAX_CELL_BINS",
    "CellCumulative",
    "CellStatistics",
    "ModelSummary",
    "Piece",
    "ReadOptions",
    "SampleComparison",
    "SampleInfo",
    "apply_map_to_dataset",
    "compare_maps_on_sample",
    "dataset_deployable",
    "dataset_summaries",
    "draw_sample",
    "find_pieces",
    "fit_map_on_sample",
    "fit_platt_on_dataset",
    "fit_temperature_on_dataset",
    "frequency_statistics",
    "merge_summaries",
    "piece_summaries",
    "require_dask",
    "run_on_sample",
    "sample_predictions",
    "select_map_on_dataset",
    "stream_summaries",
    "summarize",
    "summary_cumulative",
    "tree_merge",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
