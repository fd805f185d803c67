"""``calibration-dashboard evaluate FILE``: compare calibration maps and print the table.

Cross-fits the maps on a predictions file (:func:`calibration_core.compare_maps`)
and prints the table of every model in the file, as text, CSV or JSON (schema
``calibration-dashboard/evaluate/v1``, ``docs/evaluate-json-schema.md``), with
``--measures`` the binning-free measures, with ``--group-by``/``--window`` the
groups (:mod:`app.cli.groups`). With ``--engine stream`` (the default for a
folder or glob of Parquet files) a Parquet dataset larger than memory streamed in
this process (:mod:`app.cli.stream`); with ``--engine dask`` on a Dask cluster
(:mod:`app.cli.distributed`, ``docs/dask.md``).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from typing import Any

from .common import (
    EXIT_OK,
    MAPS_HELP,
    PROG,
    add_data_arguments,
    add_engine_arguments,
    add_sample_argument,
    input_path,
    load_models,
    parse_maps,
    positive_int,
)
from .groups import add_group_arguments, model_slices, slice_lines
from .outputs import (
    SLICES_NOT_IN_CSV,
    ModelResult,
    evaluate_document,
    measures_lines,
    verdict_line,
    write_csv,
)

FORMATS = ("table", "json", "csv")


def add_parser(sub) -> None:
    """The ``evaluate`` subcommand."""
    ev = sub.add_parser(
        "evaluate",
        help="compare calibration maps on a predictions file and print the table",
        description="Cross-fit calibration maps on a predictions file (CSV/TSV, Parquet or "
        "NPZ) and print, for every model in the file, a table of accuracy, confidence and "
        "classwise ECE/MCE, Brier score and log-loss of the held-out calibrated "
        "predictions. The first row is always the uncalibrated model.",
    )
    add_data_arguments(ev)
    ev.add_argument(
        "--maps",
        default=None,
        metavar="NAMES",
        help=MAPS_HELP + " or 'all' (default; with --engine dask, none unless given: maps "
        "are then cross-fitted on a sample, see --sample-rows)",
    )
    ev.add_argument("--format", choices=FORMATS, default="table", help="output format (table)")
    ev.add_argument(
        "--measures",
        action="store_true",
        help="also compute the binning-free, vector and clinical measures of the uncalibrated "
        "predictions (KS, Kuiper, Spiegelhalter, smooth ECE, calibration hierarchy, TACE, "
        "SKCE); a 'measures' object per model in JSON, a few lines per model in the table "
        "(not in CSV); seconds per model; with --engine dask, on a sample (--sample-rows)",
    )
    _add_verdict_arguments(ev)
    add_group_arguments(ev, evaluate=True)
    add_engine_arguments(
        ev,
        "the uncalibrated metrics of a Parquet file, folder or quoted glob larger than "
        "memory, on Dask, exactly on every row; --maps and --measures on a sample",
        stream_help="the same uncalibrated metrics, groups and windows, exactly on every "
        "row, streamed batch by batch in this process (no cluster; no --maps, --measures)",
    )
    add_sample_argument(
        ev,
        "maps (--maps) are cross-fitted, measures (--measures) computed and the intervals "
        "of --group-by/--window estimated (these also with --engine stream) on a "
        "reproducible uniform sample of at most N rows per model",
    )
    ev.set_defaults(run=run)


def _level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), e.g. 0.95, got {text}")
    return value


def _add_verdict_arguments(parser: argparse.ArgumentParser) -> None:
    """The level of the verdict's interval (evaluate); ``--resamples`` is accepted and ignored."""
    parser.add_argument(
        "--resamples",
        type=positive_int,
        default=None,
        help=argparse.SUPPRESS,  # the verdict no longer resamples: warn_ignored_resamples
    )
    parser.add_argument(
        "--level",
        type=_level,
        default=0.95,
        metavar="L",
        help="coverage of the verdict's interval (0.95)",
    )


def warn_ignored_resamples(args: argparse.Namespace) -> None:
    """Say on stderr that ``--resamples`` (of older versions' verdict bootstrap) is ignored."""
    if args.resamples is not None:
        sys.stderr.write(
            "calibration-dashboard: --resamples is ignored: the verdict's interval is no longer "
            "a bootstrap (docs/statistics.md, 'The map verdict').\n"
        )


def run(args: argparse.Namespace) -> int:
    """Run ``evaluate`` and print its result on stdout once complete; returns the exit code."""
    warn_ignored_resamples(args)
    buffer = io.StringIO()
    code = evaluate(args, buffer)
    sys.stdout.write(buffer.getvalue())
    sys.stdout.flush()
    return code


def evaluate(args: argparse.Namespace, out) -> int:
    """Run ``evaluate`` and write the result to ``out``; returns the exit code."""
    from .distributed import check_dask_options, evaluate_on_dask
    from .stream import default_engine, evaluate_on_stream

    if args.engine is None:
        args.engine = default_engine(args)
    check_dask_options(args)
    if args.engine == "dask":
        return evaluate_on_dask(args, out)
    if args.engine == "stream":
        return evaluate_on_stream(args, out)
    from calibration_core.maps import available_maps

    models = load_models(input_path(args.file), args)
    maps = parse_maps("all" if args.maps is None else args.maps)
    if maps == "all":
        maps = list(available_maps())
    write_result(args, maps, [model_result(model, maps, args) for model in models], out)
    return EXIT_OK


def model_result(model, maps: list[str], args: argparse.Namespace) -> ModelResult:
    """One model on the in-memory engine: every answer computed on all its rows.

    The maps cross-fitted (:func:`calibration_core.compare_maps`), with
    ``--measures`` the measures, with ``--group-by``/``--window`` the slices.
    """
    from calibration_core import compare_maps
    from calibration_core.engines import PredictionsSummary

    comparison = compare_maps(
        model, maps=maps, folds=args.folds, n_bins=args.bins, scheme=args.scheme, seed=args.seed
    )
    return ModelResult(
        PredictionsSummary(model),
        comparison,
        model_measures(model, args) if args.measures else None,
        slices=model_slices(model, args) if args.group_by or args.window else {},
    )


def write_result(args: argparse.Namespace, maps: list[str], found: list[ModelResult], out):
    """The document (JSON), the CSV or the tables of the in-memory ``evaluate``."""
    if args.format == "json":
        json.dump(evaluate_document(args, maps, found), out, indent=2, allow_nan=False)
        out.write("\n")
        return
    results = [m.comparison for m in found]
    for result in results:
        for note in result.warnings:
            print(f"{PROG}: warning: {result.settings['model']}: {note}", file=sys.stderr)
    sliced = bool(args.group_by or args.window)
    if args.format == "csv":
        write_csv(evaluate_document(args, maps, found)["models"], out)
        if sliced:
            print(SLICES_NOT_IN_CSV, file=sys.stderr)
        return
    write_tables(results, out)
    write_verdicts(results, args, out)
    if args.measures:
        write_measures(found, out)
    for m in found if sliced else []:
        out.write("\n" + "\n".join(slice_lines(m.summary.name, m.slices)) + "\n")


def model_measures(model, args: argparse.Namespace) -> dict[str, Any]:
    """The ``measures`` object of one model (calibration_core.measures.measures_summary)."""
    from calibration_core.measures import measures_summary

    return measures_summary(model, seed=args.seed)


def write_measures(found: list[ModelResult], out) -> None:
    """The measures of every model, a few lines each, after the verdicts."""
    out.write("\n")
    for m in found:
        out.write(f"{m.summary.name}: measures of the uncalibrated predictions\n")
        out.write("\n".join(measures_lines(m.measures or {})) + "\n")


def write_tables(results, out) -> None:
    """A plain-text table per model, metrics to 4 decimals."""
    from calibration_core.compare import METRIC_COLUMNS

    for i, result in enumerate(results):
        s = result.settings
        if i:
            out.write("\n")
        out.write(
            f"{s['model']}: {s['n_samples']} rows, {s['n_classes']} classes; "
            f"{s['folds']}-fold cross-fitting ({s['splitter']}, seed {s['seed']}), "
            f"{s['n_bins']} {s['scheme']} bins\n"
        )
        table = result.table.copy()
        for col in METRIC_COLUMNS:
            table[col] = table[col].map(lambda v: "-" if v != v else f"{v:.4f}")
        table["fit_seconds"] = table["fit_seconds"].map(lambda v: f"{v:.3f}")
        table["converged"] = [
            "-" if row["converged"] is None else ("yes" if row["converged"] else "NO")
            for row in result.rows()
        ]
        errors = table.pop("error")
        counts = result.n_parameters()
        table.insert(
            0, "parameters", ["-" if counts[n] is None else counts[n] for n in table.index]
        )
        out.write(table.reset_index().to_string(index=False) + "\n")
        for name, message in errors.items():
            if message is not None:
                out.write(f"  {name} failed: {message}\n")


def write_verdicts(results, args: argparse.Namespace, out) -> None:
    """The verdict of every model, one line each, after the tables."""
    out.write("\n")
    for result in results:
        verdict = result.verdict(level=args.level)
        out.write(f"{result.settings['model']}: {verdict_line(verdict.to_dict())}\n")
