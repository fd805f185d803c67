"""The streaming engine of the command line: ``evaluate --engine stream`` on one machine.

FILE is a Parquet file, a folder of ``*.parquet`` or a quoted glob
(``'logs/*.parquet'``), read batch by batch in this process
(:func:`calibration_core.distributed.stream.stream_summaries`): the Dask engine's
summaries and numbers (the ``uncalibrated`` row of every model, exact on every
row, equal-frequency bins by the same passes), without a cluster and without
importing Dask. The document is the Dask engine's (``evaluate_document``), with
``settings.engine`` ``"stream"``.

With ``--group-by``/``--window`` the ``slices``/``group_maps``/``time`` objects are
the Dask engine's too: the same per-piece passes (exact point estimates of every
group and window, every group's own equal-frequency edges) run here piece after
piece (:class:`~calibration_core.distributed.frequency.InProcessPasses`), and the
bounds, test, flags and group maps come from the in-memory reports on the same
reproducible sample (``--sample-rows``, ``--seed``: the same rows as on Dask).

It is the default engine of ``evaluate`` for a folder or a glob (which the
in-memory engine cannot read); a single file stays on the in-memory engine by
default, which cross-fits every map and computes the measures on all rows.
``--maps`` and ``--measures`` are refused here, naming the engines that do them:
``--engine dask`` (on a sample; a LocalCluster without ``--scheduler``) or
``--engine memory`` (one file).
"""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

from .common import EXIT_OK, CommandError, ProgressBar
from .distributed import (
    check_bins,
    dataset_slices,
    engine_settings,
    group_map_names,
    time_spec,
    write_dask_result,
)
from .outputs import ModelResult, evaluate_document

#: The options of ``evaluate`` the streaming engine does not compute, by their flags.
IN_MEMORY_OPTIONS = {
    "--maps": "maps",
    "--measures": "measures",
}


def default_engine(args: argparse.Namespace) -> str:
    """``evaluate``'s engine when ``--engine`` is not given.

    ``"stream"`` for a folder or a glob (Parquet files), else ``"memory"`` (one
    file, every option on all rows). Dask is never a default: a cluster is asked
    for by name (``--engine dask``, with ``--scheduler`` or a LocalCluster).
    """
    if Path(args.file).is_dir() or glob.has_magic(args.file):
        return "stream"
    return "memory"


def check_stream_options(args: argparse.Namespace) -> None:
    """Refuse, naming each, the options the streaming engine does not compute."""
    given = [flag for flag, name in IN_MEMORY_OPTIONS.items() if getattr(args, name, None)]
    if given:
        raise CommandError(
            f"{', '.join(given)}: the streaming engine computes the uncalibrated metrics of "
            "every row and its groups and windows only; use --engine dask (maps and measures "
            "on a sample; a local cluster without --scheduler), or --engine memory for one "
            "file."
        )
    check_bins(args)


def evaluate_on_stream(args: argparse.Namespace, out) -> int:
    """Run ``evaluate --engine stream`` and write the result to ``out``; returns the exit code."""
    from calibration_core.distributed.frequency import InProcessPasses
    from calibration_core.distributed.stream import stream_summaries

    check_stream_options(args)
    time_spec(args)  # refused windows before any pass
    group_map_names(args)  # an unknown map fails before any pass
    bar = ProgressBar(sys.stderr, "summarising") if sys.stderr.isatty() else None
    try:
        summaries = stream_summaries(
            args.file,
            label_column=args.label_column,
            renormalize=args.renormalize,
            frequency_bins=args.bins if args.scheme == "frequency" else None,
            progress=None if bar is None else lambda done, total: bar(done, total, "rows"),
        )
    finally:
        if bar is not None:
            bar.close()
    found = [ModelResult(s) for s in summaries.values()]
    if args.group_by or args.window:
        slices = dataset_slices(args, None, InProcessPasses())
        for result in found:
            result.slices = slices.get(result.summary.name, {})
    write_dask_result(args, evaluate_document(args, (), found, engine_settings(args)), out)
    return EXIT_OK
