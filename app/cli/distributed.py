"""The Dask engine of the command line: ``evaluate``, ``fit`` and ``apply`` on a dataset.

The FILE argument may be a Parquet file, a folder of ``*.parquet`` or a quoted
glob (``'logs/*.parquet'``). The dataset is read and summarised on a Dask
cluster (:mod:`calibration_core.distributed`): ``--scheduler tcp://host:8786``
uses a running scheduler, otherwise a LocalCluster of ``--workers N`` worker
processes starts for the run. The output has the schema of ``evaluate``
(docs/evaluate-json-schema.md) with one row per model, ``uncalibrated``: no
map is cross-fitted on this engine yet and the verdict has a single
candidate. The Brier parts are exact for every K, the log-loss parts for
K = 2 only: for K > 2 they are null, because the core renormalises each
row's binned class frequencies over its K bins at once, which no per-bin sum
of one class column gives (:mod:`calibration_core.distributed.parts`). A
progress bar (rows summarised) is drawn on stderr when it is a terminal.

``fit FILES --engine dask --map NAME`` fits temperature and Platt exactly on
every row and other maps on a recorded sample, and writes the deployable map
(``--select best``: the maps are cross-fitted on the sample and the best one
is refitted so);
``apply MAP FILES --engine dask -o DIR`` writes one calibrated Parquet file per
input file (docs/dask.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

from . import EXIT_OK, SCHEMA, CommandError, ProgressBar


def add_engine_arguments(parser: argparse.ArgumentParser, dask_help: str) -> None:
    """``--engine``, ``--scheduler`` and ``--workers`` (evaluate, fit, apply).

    ``dask_help`` says what ``--engine dask`` does for the command.
    """
    parser.add_argument(
        "--engine",
        choices=("memory", "dask"),
        default="memory",
        help=f"'memory' (default): load FILE in memory; 'dask': {dask_help} (needs the "
        "'dask' extra)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="with --engine dask: a running Dask scheduler, e.g. tcp://host:8786",
    )
    where.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="with --engine dask: start a local cluster of N worker processes (default: "
        "Dask's choice for this machine)",
    )


def check_cluster_options(args: argparse.Namespace) -> None:
    """``--scheduler``/``--workers`` only with ``--engine dask``, and at least one worker."""
    if args.engine != "dask":
        if args.scheduler is not None or args.workers is not None:
            raise CommandError("--scheduler and --workers need --engine dask.")
        return
    if args.workers is not None and args.workers < 1:
        raise CommandError(f"--workers must be at least 1, got {args.workers}.")


def check_dask_options(args: argparse.Namespace) -> None:
    """Refuse the ``evaluate`` options the Dask engine does not support yet, naming each."""
    check_cluster_options(args)
    if args.engine != "dask":
        return
    unsupported = {
        "--maps": args.maps.strip().lower() != "all",
        "--measures": args.measures,
        "--group-by": getattr(args, "group_by", None) is not None,
        "--window": getattr(args, "window", None) is not None,
    }
    named = [flag for flag, given in unsupported.items() if given]
    if named:
        raise CommandError(
            f"{', '.join(named)}: not supported with --engine dask yet (it reports the "
            "uncalibrated metrics); drop them or use --engine memory."
        )
    check_bins(args)


def check_bins(args: argparse.Namespace) -> None:
    """Equal-width ``--bins`` up to the cells' limit (100)."""
    from calibration_core.distributed import MAX_CELL_BINS

    if args.scheme == "width" and args.bins > MAX_CELL_BINS:
        raise CommandError(
            f"--bins {args.bins}: the Dask engine answers equal-width bin counts up to "
            f"{MAX_CELL_BINS} from one pass; use --bins {MAX_CELL_BINS} or fewer, or "
            "--scheme frequency."
        )


@contextlib.contextmanager
def dask_client(args: argparse.Namespace) -> Iterator[Any]:
    """A distributed Client on ``--scheduler``, or on a LocalCluster of ``--workers``."""
    from calibration_core.distributed import require_dask
    from calibration_core.distributed.engine import local_cluster

    try:
        require_dask()
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    from distributed import Client

    if args.scheduler is not None:
        try:
            client = Client(args.scheduler, timeout="20s")
        except OSError as exc:
            raise CommandError(
                f"cannot reach the Dask scheduler at {args.scheduler} ({exc}); check the "
                "address, or use --workers N for a local cluster."
            ) from None
        with client:
            yield client
        return
    cluster = local_cluster(
        args.workers,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    with cluster, Client(cluster) as client:
        yield client


def evaluate_on_dask(args: argparse.Namespace, out) -> int:
    """Run ``evaluate --engine dask`` and write the result to ``out``; returns the exit code."""
    from distributed import KilledWorker

    from calibration_core.distributed import dataset_summaries
    from calibration_core.distributed.frequency import frequency_statistics

    bar = ProgressBar(sys.stderr, "summarising") if sys.stderr.isatty() else None
    with dask_client(args) as client:
        read = {"label_column": args.label_column, "renormalize": args.renormalize}
        try:
            summaries = dataset_summaries(
                args.file,
                client=client,
                progress=None if bar is None else lambda done, total: bar(done, total, "rows"),
                **read,
            )
            frequency = None
            if args.scheme == "frequency":
                frequency = frequency_statistics(
                    args.file, summaries, args.bins, client=client, **read
                )
        except KilledWorker as exc:
            raise killed_error(exc) from None
        finally:
            if bar is not None:
                bar.close()
    models = [
        model_entry(s, args, None if frequency is None else frequency[name])
        for name, s in summaries.items()
    ]
    if args.format == "json":
        json.dump(dask_document(args, models), out, indent=2, allow_nan=False)
        out.write("\n")
    elif args.format == "csv":
        write_dask_csv(models, out)
    else:
        write_dask_tables(models, args, out)
    return EXIT_OK


def killed_error(exc) -> CommandError:
    """The message of a run stopped by workers that kept dying (``KilledWorker``)."""
    return CommandError(
        f"Dask workers died repeatedly while computing {exc.task!r} (out of memory, or "
        "killed); the run was stopped. Give the workers more memory, or use smaller "
        "row groups."
    )


def uncalibrated_row(summary, n_bins: int, frequency=None) -> dict[str, Any]:
    """The ``uncalibrated`` row: the summary's metrics and score parts, no fit.

    ``frequency``: the model's equal-frequency statistics (``--scheme frequency``).
    The log-loss parts are None (null) for K > 2 (module docstring).
    """
    metrics = summary.metrics(n_bins, frequency)
    row: dict[str, Any] = {"map": "uncalibrated"}
    for key, value in metrics.items():
        row[key] = value
        if key == "log_loss":
            row.update(summary.score_parts(n_bins, frequency))
    return {**row, "fit_seconds": 0.0, "converged": None, "error": None}


def single_verdict(summary, row: dict[str, Any], level: float, resamples: int, seed: int):
    """The verdict of a table whose only row is ``uncalibrated`` (nothing was cross-fitted)."""
    from calibration_core.compare import Verdict

    return Verdict(
        winner="uncalibrated",
        runner_up=None,
        clear=False,
        difference=None,
        lower=None,
        upper=None,
        level=level,
        n_resamples=resamples,
        seed=seed,
        n_rows=summary.n_samples,
        log_loss={"uncalibrated": row["log_loss"]},
        confidence_ece={"uncalibrated": row["confidence_ece"]},
    )


def model_entry(summary, args: argparse.Namespace, frequency=None) -> dict[str, Any]:
    """One ``models[]`` entry: the uncalibrated row and its single-candidate verdict."""
    row = uncalibrated_row(summary, args.bins, frequency)
    verdict = single_verdict(summary, row, args.level, args.resamples, args.seed)
    return {
        "model": summary.name,
        "n_samples": summary.n_samples,
        "n_classes": summary.n_classes,
        "splitter": "none",
        "warnings": [],
        "rows": [row],
        "verdict": verdict.to_dict(),
    }


def dask_document(args: argparse.Namespace, models: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``evaluate`` JSON document of a Dask run (docs/evaluate-json-schema.md)."""
    from calibration_core import __version__

    return {
        "schema": SCHEMA,
        "version": __version__,
        "file": str(args.file),
        "settings": {
            "n_bins": args.bins,
            "scheme": args.scheme,
            "folds": args.folds,
            "seed": args.seed,
            "maps": [],
            "label_column": args.label_column,
            "renormalize": bool(args.renormalize),
            "resamples": args.resamples,
            "level": args.level,
            "measures": False,
            "group_by": None,
            "window": None,
            "engine": "dask",
        },
        "models": models,
    }


def write_dask_csv(models: list[dict[str, Any]], out) -> None:
    """The CSV of ``evaluate``: a ``model`` and a ``map`` column, then the table's."""
    from calibration_core.compare import TABLE_COLUMNS

    from ..exports import csv_writer

    writer = csv_writer(out)
    writer.writerow(["model", "map", *TABLE_COLUMNS])
    for m in models:
        row = m["rows"][0]
        cells = [row[c] for c in TABLE_COLUMNS]
        writer.writerow([m["model"], row["map"], *("" if c is None else c for c in cells)])


def write_dask_tables(models: list[dict[str, Any]], args: argparse.Namespace, out) -> None:
    """One line of metrics per model, to 4 decimals."""
    from calibration_core.compare import METRIC_COLUMNS

    kind = "equal-width" if args.scheme == "width" else "equal-frequency"
    out.write(f"{args.file}: uncalibrated metrics on Dask, {args.bins} {kind} bins\n")
    out.write("model  n_samples  " + "  ".join(METRIC_COLUMNS) + "\n")
    for m in models:
        row = m["rows"][0]
        values = "  ".join(f"{row[c]:.4f}" for c in METRIC_COLUMNS)
        out.write(f"{m['model']}  {m['n_samples']}  {values}\n")


# ------------------------------------------------------------ fit, apply
def add_sample_argument(parser: argparse.ArgumentParser) -> None:
    """``--sample-rows`` of ``fit``."""
    from calibration_core.distributed.sample import DEFAULT_SAMPLE_ROWS

    parser.add_argument(
        "--sample-rows",
        type=int,
        default=None,
        metavar="N",
        help="with --engine dask: maps other than temperature and platt are fitted on a "
        f"reproducible uniform sample of at most N rows (default {DEFAULT_SAMPLE_ROWS:,}; "
        "seed --seed), recorded in the map",
    )


def check_fit_options(args: argparse.Namespace, maps) -> str:
    """The one map ``fit --engine dask`` deploys ("" with ``--select best``); checks options."""
    check_cluster_options(args)
    if args.engine != "dask":
        if args.sample_rows is not None:
            raise CommandError("--sample-rows needs --engine dask.")
        return ""
    if args.sample_rows is not None and args.sample_rows < 1:
        raise CommandError(f"--sample-rows must be at least 1, got {args.sample_rows}.")
    check_bins(args)
    return "" if args.select is not None else maps[0]


def _fit_model(summaries, wanted: str | None, file: str):
    """The summary of the model to fit (``--model``), or a clear error naming the models."""
    names = list(summaries)
    if wanted is None and len(names) == 1:
        return summaries[names[0]]
    if wanted in summaries:
        return summaries[wanted]
    listed = ", ".join(repr(n) for n in names)
    if wanted is None:
        raise CommandError(f"{file} holds {len(names)} models ({listed}); choose one with --model")
    raise CommandError(f"{file} has no model {wanted!r}; it holds {listed}")


def fit_dataset_map(args: argparse.Namespace, map_name: str, client, summary):
    """The map fitted on the dataset: exactly (temperature, Platt) or on a sample."""
    from calibration_core.distributed.select import fit_map_on_dataset

    return fit_map_on_dataset(
        args.file,
        map_name,
        size=sample_rows(args),
        seed=args.seed,
        client=client,
        label_column=args.label_column,
        renormalize=args.renormalize,
        model=summary.name,
    )


def sample_rows(args: argparse.Namespace) -> int:
    """``--sample-rows``, or the core's default sample size."""
    from calibration_core.distributed.sample import DEFAULT_SAMPLE_ROWS

    return DEFAULT_SAMPLE_ROWS if args.sample_rows is None else args.sample_rows


def fit_on_dask(args: argparse.Namespace, map_name: str, out) -> int:
    """Run ``fit --engine dask``: fit one map on a dataset and write the deployable map.

    The JSON summary has the fields of the in-memory ``fit`` (``calibration-dashboard/fit/v1``):
    ``comparison`` holds the exact uncalibrated row of the whole dataset,
    ``held_out`` is null (nothing is cross-fitted) and ``settings`` adds
    ``engine`` and ``fitted_on`` (``"all rows"`` or ``"sample"``).
    """
    from distributed import KilledWorker

    from calibration_core import PART_FIELDS
    from calibration_core.distributed import (
        dataset_deployable,
        dataset_summaries,
        frequency_statistics,
    )
    from calibration_core.distributed.select import EXACT_MAPS
    from calibration_core.maps import make_map

    from . import write_fit_summary

    make_map(map_name)  # an unknown name fails before any work on the cluster
    with dask_client(args) as client:
        read = {"label_column": args.label_column, "renormalize": args.renormalize}
        try:
            summaries = dataset_summaries(args.file, client=client, **read)
            summary = _fit_model(summaries, args.model, args.file)
            frequency = None
            if args.scheme == "frequency":
                wanted = {summary.name: summary}
                frequency = frequency_statistics(
                    args.file, wanted, args.bins, client=client, **read
                )
            fitted = fit_dataset_map(args, map_name, client, summary)
        except KilledWorker as exc:
            raise killed_error(exc) from None
    exact = map_name in EXACT_MAPS
    n_rows = summary.n_samples if exact else int(fitted.fit_sample_["rows"])
    deployable = dataset_deployable(fitted, summary.name, summary.class_names, n_rows)
    deployable.save(args.output)
    frequency = None if frequency is None else frequency[summary.name]
    row = uncalibrated_row(summary, args.bins, frequency)
    for part in PART_FIELDS:  # fit's comparison rows have no parts (as in memory)
        del row[part]
    settings = {
        "maps": [map_name],
        "folds": args.folds,
        "seed": args.seed,
        "n_bins": args.bins,
        "scheme": args.scheme,
        "engine": "dask",
        "fitted_on": "all rows" if exact else "sample",
    }
    verdict = single_verdict(summary, row, 0.95, 1000, args.seed).to_dict()
    return write_fit_summary(
        args,
        deployable,
        out,
        model=summary.name,
        map_name=map_name,
        settings=settings,
        comparison=[row],
        verdict=verdict,
        n_rows=n_rows,
        held_out=None,
    )


def apply_on_dask(args: argparse.Namespace, deployable, out) -> int:
    """Run ``apply --engine dask``: calibrated Parquet, one task per input file, into OUT/."""
    from distributed import KilledWorker

    from calibration_core.distributed import apply_map_to_dataset

    from . import write_apply_summary

    check_cluster_options(args)
    with dask_client(args) as client:
        try:
            written = apply_map_to_dataset(deployable, args.file, args.output, client=client)
        except KilledWorker as exc:
            raise killed_error(exc) from None
    rows = sum(written.values())
    return write_apply_summary(args, deployable, rows, out, engine="dask", files=written)


def select_on_dask(args: argparse.Namespace, maps, out) -> int:
    """Run ``fit --select best --engine dask``: choose on the sample, refit, write the map.

    The maps are cross-fitted on the reproducible sample (``--sample-rows``,
    ``--seed``) as the in-memory ``fit --select best`` cross-fits them on all
    rows; the winner (lowest held-out log-loss) is refitted as ``fit --map``
    fits it on this engine. ``comparison`` and ``verdict`` are the sample's;
    ``held_out`` records the sample under ``"sample"``.
    """
    from distributed import KilledWorker

    from calibration_core.distributed import dataset_summaries, select_map_on_dataset
    from calibration_core.distributed.select import EXACT_MAPS

    from . import write_fit_summary

    read = {"label_column": args.label_column, "renormalize": args.renormalize}
    settings = {"folds": args.folds, "seed": args.seed, "n_bins": args.bins, "scheme": args.scheme}
    with dask_client(args) as client:
        try:
            summary = _fit_model(
                dataset_summaries(args.file, client=client, **read), args.model, args.file
            )
            deployable, found = select_map_on_dataset(
                args.file,
                maps,
                model=summary.name,
                class_names=summary.class_names,
                n_rows=summary.n_samples,
                client=client,
                size=sample_rows(args),
                **settings,
                **read,
            )
        except KilledWorker as exc:
            raise killed_error(exc) from None
    deployable.save(args.output)
    chosen = deployable.map.to_dict()["map"]
    rows = found.comparison.rows()
    settings = {
        "maps": [r["map"] for r in rows][1:],
        **settings,
        "engine": "dask",
        "fitted_on": "all rows" if chosen in EXACT_MAPS else "sample",
    }
    return write_fit_summary(
        args,
        deployable,
        out,
        model=summary.name,
        map_name=chosen,
        settings=settings,
        comparison=rows,
        verdict=found.comparison.verdict().to_dict(),
    )
