"""The ``calibration-dashboard`` command.

``calibration-dashboard evaluate FILE ...``
    Load a predictions file, compare calibration maps on held-out folds
    (:func:`calibration_core.compare_maps`) and print the table of every
    model in the file, as text, CSV or JSON (schema
    ``calibration-dashboard/evaluate/v1``, see ``docs/evaluate-json-schema.md``).
    With ``--engine dask`` a Parquet dataset larger than memory: the
    uncalibrated metrics exactly on every row, ``--maps`` and ``--measures``
    on a reproducible sample of each model (``--sample-rows``, ``--seed``;
    :mod:`app.cli.distributed`, ``docs/dask.md``).
``calibration-dashboard check FILE --max METRIC=VALUE ... [--after MAP]``
    A CI gate: exit 0 when every bound holds for every model, 1 when one
    fails, 2 on bad input (unknown metric, malformed bound, unreadable file);
    one ``PASS``/``FAIL`` line per bound and model, or JSON (schema
    ``calibration-dashboard/check/v1``).
``calibration-dashboard report FILE [--maps NAMES] [--group-by COLS] [--window W] -o REPORT.html``
    The page's standalone HTML report (figures, verdict, metrics,
    diagnostics) of a predictions file, with date, input file, settings and
    version; with ``--group-by`` a "Calibration by group" section, with
    ``--window`` (and ``--time-column``) a "Calibration over time" section.
``calibration-dashboard fit FILE (--map NAME | --select best [--maps NAMES]) -o MAP``
    Compare maps on held-out folds, refit the chosen one on all rows and write
    the deployable map document (``docs/deployable-map.md``); prints a JSON
    summary (schema ``calibration-dashboard/fit/v1``).
``calibration-dashboard apply MAP FILE -o OUT``
    Calibrate a predictions file (CSV/TSV, Parquet, NPZ) with a deployable map,
    streaming it in batches; prints a JSON summary (``calibration-dashboard/apply/v1``).
``calibration-dashboard serve [--host H] [--port P] [--debug]``
    Start the dashboard; with no subcommand at all, the dashboard starts on
    its built-in demo.

This module never imports dash at module level: ``evaluate`` stays fast and
works without the web stack. Errors are printed to stderr as one line,
never as a traceback. Exit codes: 0 success, 1 bad input (file, data or
settings), 2 bad command line (for ``serve``, also a configuration from the
environment that cannot be used, every bad variable named), 130 interrupted;
``check`` alone uses 1 for a failed bound and 2 for any bad input, so that a
CI gate can tell them apart.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from .slices import (
    add_group_arguments,
    group_check_results,
    model_slices,
    slice_lines,
    slice_settings,
)

PROG = "calibration-dashboard"
#: Said on stderr when ``--format csv`` meets ``--group-by``/``--window`` (either engine).
SLICES_NOT_IN_CSV = (
    f"{PROG}: warning: --group-by and --window results are in the table and JSON outputs "
    "only, not in CSV"
)
SCHEMA = "calibration-dashboard/evaluate/v1"
CHECK_SCHEMA = "calibration-dashboard/check/v1"
EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
FORMATS = ("table", "json", "csv")


class UsageError(Exception):
    """A bad command line (exit code 2)."""


class CommandError(Exception):
    """A command that cannot run, with a message for the user (exit code 1)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`UsageError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _version() -> str:
    from calibration_core import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``calibration-dashboard`` command."""
    parser = _Parser(
        prog=PROG,
        description="Measure and fix the calibration of a classifier's probabilities. "
        "Without a subcommand, start the dashboard on its built-in demo.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="on an unexpected error, show the Python traceback (for bug reports)",
    )
    sub = parser.add_subparsers(dest="command", metavar="{evaluate,fit,apply,check,report,serve}")

    ev = sub.add_parser(
        "evaluate",
        help="compare calibration maps on a predictions file and print the table",
        description="Cross-fit calibration maps on a predictions file (CSV/TSV, Parquet or "
        "NPZ) and print, for every model in the file, a table of accuracy, confidence and "
        "classwise ECE/MCE, Brier score and log-loss of the held-out calibrated "
        "predictions. The first row is always the uncalibrated model.",
    )
    _add_data_arguments(ev)
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
    from .distributed import add_engine_arguments, add_sample_argument

    add_engine_arguments(
        ev,
        "the uncalibrated metrics of a Parquet file, folder or quoted glob larger than "
        "memory, on Dask, exactly on every row; --maps and --measures on a sample",
    )
    add_sample_argument(
        ev,
        "maps (--maps) are cross-fitted and measures (--measures) computed on a "
        "reproducible uniform sample of at most N rows per model",
    )
    _add_deploy_commands(sub)
    _add_check_parser(sub)
    _add_report_parser(sub)

    sv = sub.add_parser("serve", help="start the dashboard web server")
    _add_serve_arguments(sv)
    return parser


MAPS_HELP = (
    "comma-separated map names (histogram,isotonic,platt,beta,temperature,vector,matrix,dirichlet)"
)


def _add_data_arguments(parser: argparse.ArgumentParser, *, seed: bool = True) -> None:
    """FILE and how it is read, binned and cross-fitted (evaluate, check, report, fit).

    ``report`` has no ``--seed``: the page's folds always use seed 0.
    """
    parser.add_argument(
        "file", metavar="FILE", help="predictions file (CSV/TSV, .gz, Parquet, NPZ)"
    )
    parser.add_argument(
        "--label-column", metavar="C", default=None, help="name of the true-label column"
    )
    parser.add_argument(
        "--bins", type=_positive_int, default=15, metavar="M", help="bins for ECE/MCE (15)"
    )
    parser.add_argument(
        "--scheme",
        choices=("width", "frequency"),
        default="width",
        help="equal-width or equal-frequency bins (width)",
    )
    parser.add_argument(
        "--folds", type=_int, default=5, metavar="K", help="cross-fitting folds, >= 2 (5)"
    )
    if seed:
        parser.add_argument("--seed", type=_int, default=0, help="seed of the fold assignment (0)")
    parser.add_argument(
        "--renormalize",
        action="store_true",
        help="divide probability rows by their sum instead of rejecting rows that do not sum to 1",
    )


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
        type=_positive_int,
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


def _metric_names() -> str:
    from calibration_core.compare import METRIC_COLUMNS

    return ", ".join(METRIC_COLUMNS)


def _add_check_parser(sub) -> None:
    """The ``check`` subcommand (a CI gate)."""
    names = _metric_names()
    ck = sub.add_parser(
        "check",
        help="fail (exit 1) when a calibration metric exceeds its bound: a CI gate",
        description="Check upper bounds on calibration metrics of every model in a "
        "predictions file. Exit code 0 when every bound holds, 1 when one fails, 2 on bad "
        f"input. Metrics: {names}.",
    )
    _add_data_arguments(ck)
    ck.add_argument(
        "--max",
        action="append",
        required=True,
        metavar="METRIC=VALUE",
        dest="bounds",
        help=f"an upper bound, e.g. confidence_ece=0.05 (repeatable); METRIC is one of {names}",
    )
    ck.add_argument(
        "--after",
        metavar="MAP",
        default=None,
        help="bound the held-out (cross-fitted) metrics of this calibration map instead of "
        "the uncalibrated predictions",
    )
    ck.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (text)"
    )
    add_group_arguments(ck, evaluate=False)


def _add_report_parser(sub) -> None:
    """The ``report`` subcommand (the page's HTML report)."""
    rp = sub.add_parser(
        "report",
        help="write the dashboard's standalone HTML report of a predictions file",
        description="Fit calibration maps on held-out folds as the dashboard does and write "
        "its offline HTML report (reliability diagrams, verdict, metrics, diagnostics), with "
        "the date, input file, settings and version.",
    )
    _add_data_arguments(rp, seed=False)
    rp.add_argument(
        "--maps",
        default="all",
        metavar="NAMES",
        help=MAPS_HELP + " or 'all' (default)",
    )
    rp.add_argument(
        "--diagram",
        choices=("binned", "smooth", "cumulative"),
        default="binned",
        help="the diagram of each model: binned reliability (default), smooth reliability "
        "or cumulative differences; the report's 'Beyond bins' measures are always computed",
    )
    rp.add_argument(
        "-o", "--output", required=True, metavar="REPORT.html", help="where to write the report"
    )
    add_group_arguments(rp, evaluate=True, group_maps=False)


def _add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (127.0.0.1)")
    parser.add_argument("--port", type=_int, default=8050, help="port (8050)")
    parser.add_argument("--debug", action="store_true", help="Dash debug mode (reloader)")


# ------------------------------------------------------------------ evaluate
def parse_maps(text: str):
    """``"all"`` or a tuple of map names from the ``--maps`` option."""
    text = text.strip()
    if text.lower() == "all":
        return "all"
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    return names


def input_path(text: str) -> Path:
    """The FILE argument as a path, or a clear error when it is missing or a folder."""
    path = Path(text)
    if not path.exists():
        raise FileNotFoundError(f"file not found: {text}")
    if path.is_dir():
        raise IsADirectoryError(f"{text} is a folder, not a predictions file")
    return path


def load_models(path: Path, args: argparse.Namespace) -> list:
    """The file's models, with the loader's notices (renormalised rows) printed as warnings."""
    import calibration_core

    models, notices = calibration_core.load_with_notices(
        path, label_column=args.label_column, renormalize=args.renormalize
    )
    for note in notices:
        print(f"{PROG}: warning: {note}", file=sys.stderr)
    return models


def evaluate(args: argparse.Namespace, out) -> int:
    """Run ``evaluate`` and write the result to ``out``; returns the exit code."""
    from calibration_core import compare_maps

    from .distributed import check_dask_options, evaluate_on_dask

    check_dask_options(args)
    if args.engine == "dask":
        return evaluate_on_dask(args, out)
    models = load_models(input_path(args.file), args)
    maps = parse_maps("all" if args.maps is None else args.maps)
    results = [
        compare_maps(
            model,
            maps,
            folds=args.folds,
            n_bins=args.bins,
            scheme=args.scheme,
            seed=args.seed,
        )
        for model in models
    ]
    measures = [model_measures(model, args) for model in models] if args.measures else None
    slices = None
    if args.group_by or args.window:
        slices = [model_slices(model, args) for model in models]
    if args.format == "json":
        doc = evaluate_document(args, maps, results, measures, slices)
        json.dump(doc, out, indent=2, allow_nan=False)
        out.write("\n")
        return EXIT_OK
    for result in results:
        for note in result.warnings:
            print(f"{PROG}: warning: {result.settings['model']}: {note}", file=sys.stderr)
    if args.format == "csv":
        write_csv(results, out)
        if slices is not None:
            print(SLICES_NOT_IN_CSV, file=sys.stderr)
    else:
        write_tables(results, out)
        write_verdicts(results, args, out)
        if measures is not None:
            write_measures(results, measures, out)
        for model, doc in zip(models, slices or [], strict=False):
            out.write("\n" + "\n".join(slice_lines(model.name, doc)) + "\n")
    return EXIT_OK


#: ``evaluated_on`` of what was computed on every row (rows, verdict, measures).
ALL_ROWS = "all rows"


def model_measures(model, args: argparse.Namespace) -> dict[str, Any]:
    """The ``measures`` object of one model (calibration_core.measures.measures_summary)."""
    from calibration_core.measures import measures_summary

    return {**measures_summary(model, seed=args.seed), "evaluated_on": ALL_ROWS}


def _num(value, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def measures_lines(m: dict[str, Any]) -> list[str]:
    """A few lines of one model's measures for the table output."""
    top = m["confidence"]
    cum, sp, sm = top["cumulative"], top["spiegelhalter"], top["smooth_ece"]
    sk = m["canonical"]["skce"]
    lines = [
        f"  top label: KS error {_num(cum['ks_error'])} (p {_p(cum['ks_p_value'])}), "
        f"Kuiper p {_p(cum['kuiper_p_value'])}, Spiegelhalter z {_num(sp['z'], 2)} "
        f"(p {_p(sp['p_value'])}), smooth ECE {_num(sm['value'])} "
        f"(bandwidth {_num(sm['bandwidth'])})",
        f"  classwise: mean KS error {_num(m['classwise']['ks_error_mean'])}, "
        f"ACE {_num(m['classwise']['ace'])}, TACE {_num(m['classwise']['tace'])}; "
        f"SKCE {sk['unbiased']:.3g} on {sk['n_quadratic']} rows (resampling p "
        f"{_p(sk['p_value'])}), linear {sk['linear']:.3g} (p {_p(sk['linear_p_value'])})",
    ]
    h = top["hierarchy"]
    if h is not None:
        r, c = h["recalibration"], h["curve"]
        lines.append(
            f"  top-label hierarchy: O/E {_num(h['in_the_large']['ratio']['value'], 3)}, "
            f"intercept {_num(r['intercept']['value'], 3)}, slope {_num(r['slope']['value'], 3)} "
            f"[{_num(r['slope']['lower'], 3)}, {_num(r['slope']['upper'], 3)}], ICI "
            f"{_num(c['ici'])}, E50 {_num(c['e50'])}, E90 {_num(c['e90'])}, Emax {_num(c['emax'])}"
        )
    return lines


def write_measures(results, measures, out) -> None:
    """The measures of every model, a few lines each, after the verdicts."""
    out.write("\n")
    for result, m in zip(results, measures, strict=True):
        out.write(f"{result.settings['model']}: measures of the uncalibrated predictions\n")
        out.write("\n".join(measures_lines(m)) + "\n")


def rows_with_parts(result, n_bins: int, scheme: str) -> list[dict[str, Any]]:
    """The comparison rows with the Brier and log-loss parts after ``log_loss``.

    :func:`calibration_core.score_parts` of each row's held-out predictions,
    binned as the ECE columns; null for a map that failed.
    """
    from calibration_core import PART_FIELDS, score_parts

    out = []
    for row in result.rows():
        pred = result.calibrated.get(row["map"])
        parts = (
            dict.fromkeys(PART_FIELDS)
            if pred is None
            else score_parts(pred.probs, pred.labels, n_bins=n_bins, scheme=scheme)
        )
        ordered: dict[str, Any] = {}
        for key, value in row.items():
            ordered[key] = value
            if key == "log_loss":
                ordered.update(parts)
        out.append(ordered)
    return out


def evaluate_document(
    args: argparse.Namespace, maps, results, measures=None, slices=None
) -> dict[str, Any]:
    """The JSON document of ``evaluate --format json`` (see docs/evaluate-json-schema.md).

    ``measures``: one ``measures`` object per model (``--measures``), or None.
    ``slices``: per model, its ``slices``/``group_maps``/``time`` objects
    (``--group-by``, ``--window``), or None.
    """
    from calibration_core import __version__
    from calibration_core.maps import available_maps

    map_names = list(available_maps()) if maps == "all" else list(maps)
    return {
        "schema": SCHEMA,
        "version": __version__,
        "file": str(args.file),
        "settings": {
            "n_bins": args.bins,
            "scheme": args.scheme,
            "folds": args.folds,
            "seed": args.seed,
            "maps": map_names,
            "label_column": args.label_column,
            "renormalize": bool(args.renormalize),
            "level": args.level,
            "measures": measures is not None,
            "group_by": getattr(args, "group_by", None),
            "window": getattr(args, "window", None),
        },
        "models": [
            {
                "model": r.settings["model"],
                "n_samples": r.settings["n_samples"],
                "n_classes": r.settings["n_classes"],
                "splitter": r.settings["splitter"],
                "warnings": list(r.warnings),
                "rows": [
                    {**row, "evaluated_on": ALL_ROWS}
                    for row in rows_with_parts(r, args.bins, args.scheme)
                ],
                "verdict": {
                    **r.verdict(level=args.level).to_dict(),
                    "evaluated_on": ALL_ROWS,
                },
                **({} if measures is None else {"measures": measures[i]}),
                **({} if slices is None else slices[i]),
            }
            for i, r in enumerate(results)
        ],
    }


def csv_text(value) -> str:
    """One CSV cell of ``evaluate``: empty for None, ``true``/``false``, else ``str``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_csv(results, out) -> None:
    """One CSV with a ``model`` and a ``map`` column, then the table columns."""
    from calibration_core.compare import TABLE_COLUMNS

    from ..exports import csv_writer, safe_cell

    writer = csv_writer(out)
    writer.writerow(["model", "map", *TABLE_COLUMNS])
    for result in results:
        for row in result.rows():
            cells = [result.settings["model"], row["map"], *(row[c] for c in TABLE_COLUMNS)]
            writer.writerow([csv_text(safe_cell(cell)) for cell in cells])


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


def verdict_line(verdict: dict[str, Any]) -> str:
    """One line: the summary, the winner's parameters in words, the recommendation, merges.

    ``verdict``: ``Verdict.to_dict()`` (both engines' JSON verdict). A merged
    contender ("matrix = dirichlet") is followed by why its maps coincide.
    """
    words = verdict["parameters"].get(verdict["winner"])
    parts = [f"verdict: {verdict['summary']}"]
    if words:
        parts.append(f"{verdict['winner']}: {words}.")
    if verdict.get("recommendation"):
        parts.append(verdict["recommendation"])
    parts += [
        f"{c['label']}: {c['same_because']}."
        for c in verdict.get("contenders", ())
        if c["same_because"]
    ]
    return " ".join(parts)


def write_verdicts(results, args: argparse.Namespace, out) -> None:
    """The verdict of every model, one line each, after the tables."""
    out.write("\n")
    for result in results:
        verdict = result.verdict(level=args.level)
        out.write(f"{result.settings['model']}: {verdict_line(verdict.to_dict())}\n")


# --------------------------------------------------------------------- check
@dataclass(frozen=True)
class Bound:
    """One ``--max METRIC=VALUE`` bound."""

    metric: str
    limit: float


def parse_bounds(texts: Sequence[str]) -> list[Bound]:
    """The ``--max`` bounds; raises CommandError naming the bad one and the metric names."""
    from calibration_core.compare import METRIC_COLUMNS

    bounds = []
    for text in texts:
        metric, sep, value = text.partition("=")
        metric = metric.strip()
        if not sep or not metric:
            raise CommandError(
                f"malformed bound {text!r}: write --max METRIC=VALUE, e.g. confidence_ece=0.05"
            )
        if metric not in METRIC_COLUMNS:
            raise CommandError(
                f"unknown metric {metric!r} in --max {text}; choose one of "
                f"{', '.join(METRIC_COLUMNS)}"
            )
        try:
            limit = float(value)
        except ValueError:
            limit = math.nan
        if not math.isfinite(limit):
            raise CommandError(
                f"malformed bound {text!r}: the value must be a finite number, e.g. {metric}=0.05"
            )
        bounds.append(Bound(metric, limit))
    return bounds


def checked_metrics(model, args: argparse.Namespace) -> dict[str, float]:
    """The metrics the bounds apply to: uncalibrated, or held-out after ``--after``."""
    from calibration_core import compare_maps
    from calibration_core.compare import score_probs

    if args.after is None:
        return score_probs(model.probs, model.labels, n_bins=args.bins, scheme=args.scheme)
    result = compare_maps(
        model, [args.after], folds=args.folds, n_bins=args.bins, scheme=args.scheme,
        seed=args.seed,
    )  # fmt: skip
    label = next(name for name in result.table.index if name != "uncalibrated")
    error = result.errors.get(label)
    if error is not None:
        raise CommandError(f"{model.name}: map {args.after!r} failed: {error}")
    return {k: float(v) for k, v in result.table.loc[label].items() if isinstance(v, float)}


def checked_probs(model, args: argparse.Namespace):
    """The probabilities ``check`` bounds: the model's, or held-out after ``--after``."""
    from calibration_core import compare_maps

    if args.after is None:
        return model.probs
    result = compare_maps(
        model, [args.after], folds=args.folds, n_bins=args.bins, scheme=args.scheme,
        seed=args.seed,
    )  # fmt: skip
    label = next(name for name in result.calibrated if name != "uncalibrated")
    return result.calibrated[label].probs


def check(args: argparse.Namespace, out) -> int:
    """Run ``check``: 0 when every bound holds for every model, 1 when one fails."""
    from calibration_core.compare import score_probs

    bounds = parse_bounds(args.bounds)
    if args.per_group and not args.group_by:
        raise CommandError("--per-group needs the groups: add --group-by COLS")
    models = load_models(input_path(args.file), args)
    results = []
    for model in models:
        values = checked_metrics(model, args)
        for bound in bounds:
            value = values[bound.metric]
            results.append(
                {
                    "model": model.name,
                    "metric": bound.metric,
                    "value": value,
                    "max": bound.limit,
                    "after": args.after,
                    "passed": value <= bound.limit,
                }
            )
        if args.per_group:
            source = checked_probs(model, args)
            results.extend(group_check_results(model, lambda rows, p=source, m=model: score_probs(
                p[rows], m.labels[rows], n_bins=args.bins, scheme=args.scheme
            ), bounds, args))  # fmt: skip
    passed = all(r["passed"] for r in results)
    if args.format == "json":
        json.dump(check_document(args, results, passed), out, indent=2, allow_nan=False)
        out.write("\n")
    else:
        for r in results:
            out.write(check_line(r) + "\n")
    return EXIT_OK if passed else EXIT_INPUT


def check_line(result: dict[str, Any]) -> str:
    """``PASS confidence_ece = 0.0312 <= 0.05 (model m)`` (or ``FAIL ... > ...``)."""
    where = f"model {result['model']}"
    if "group" in result:
        where += f", group {result['group']}"
        if not result["judged"]:
            return f"SKIP {result['metric']} ({where}: {result['rows']} rows, too few to judge)"
    verdict, op = ("PASS", "<=") if result["passed"] else ("FAIL", ">")
    if result["after"] is not None:
        where += f", held-out after {result['after']}"
    return f"{verdict} {result['metric']} = {result['value']:.4f} {op} {result['max']:g} ({where})"


def check_document(args: argparse.Namespace, results, passed: bool) -> dict[str, Any]:
    """The JSON document of ``check --format json`` (see docs/evaluate-json-schema.md)."""
    return {
        "schema": CHECK_SCHEMA,
        "version": _version(),
        "file": str(args.file),
        "passed": passed,
        "settings": {
            "n_bins": args.bins,
            "scheme": args.scheme,
            "folds": args.folds,
            "seed": args.seed,
            "after": args.after,
            "label_column": args.label_column,
            "renormalize": bool(args.renormalize),
            "group_by": args.group_by,
            "per_group": bool(args.per_group),
            "min_group_rows": args.min_group_rows,
        },
        "results": results,
    }


# -------------------------------------------------------------------- report
def report(args: argparse.Namespace) -> int:
    """Run ``report``: write the page's HTML report of FILE to ``--output``."""
    from calibration_core.maps import available_maps

    path = input_path(args.file)
    maps = parse_maps(args.maps)
    try:
        from app.offline_report import ReportSettings, file_report
    except ModuleNotFoundError as exc:
        raise CommandError(
            f"the report needs the dashboard's web dependencies ({exc}); install "
            "calibration-dashboard with them"
        ) from None
    settings = ReportSettings(
        maps=tuple(available_maps()) if maps == "all" else maps,
        folds=args.folds,
        n_bins=args.bins,
        scheme=args.scheme,
        label_column=args.label_column,
        renormalize=args.renormalize,
        diagram=args.diagram,
        slices=slice_settings(args),
    )
    content, notes = file_report(path, settings)
    for note in notes:
        print(f"{PROG}: warning: {note}", file=sys.stderr)
    Path(args.output).write_text(content, encoding="utf-8")
    print(f"{PROG}: wrote {args.output}", file=sys.stderr)
    return EXIT_OK


# ------------------------------------------------------------- fit, apply
FIT_SCHEMA = "calibration-dashboard/fit/v1"
APPLY_SCHEMA = "calibration-dashboard/apply/v1"


def _add_deploy_commands(sub) -> None:
    """The ``fit`` and ``apply`` subcommands (deployable maps, docs/deployable-map.md)."""
    ft = sub.add_parser(
        "fit",
        help="refit a calibration map on all rows and export it as a deployable JSON map",
        description="Compare maps on held-out folds, refit the chosen one on all rows of a "
        "predictions file and write the deployable map document (JSON). Prints a JSON "
        f"summary ({FIT_SCHEMA}).",
    )
    _add_data_arguments(ft)
    ft.add_argument(
        "--map",
        "--maps",
        dest="map",
        default=None,
        metavar="NAMES",
        help="the map to deploy; with --select best, the comma-separated maps to choose "
        "from ('all' by default)",
    )
    ft.add_argument(
        "--select",
        choices=("best",),
        default=None,
        help="'best': deploy the verdict's recommended map among --map: the fewest parameters "
        "among those not clearly worse than the lowest held-out log-loss ('uncalibrated': the "
        "identity map)",
    )
    ft.add_argument("-o", "--output", required=True, metavar="OUT", help="the map file (.json)")
    ft.add_argument("--model", default=None, metavar="M", help="model of a multi-model file")
    from .distributed import add_engine_arguments, add_sample_argument

    add_engine_arguments(
        ft,
        "fit --map on a Parquet file, folder or quoted glob larger than memory, on Dask: "
        "temperature and platt exactly on every row, other maps on a sample (--select best: "
        "maps compared on the sample)",
    )
    add_sample_argument(
        ft,
        "maps other than temperature and platt are fitted on a reproducible uniform sample "
        "of at most N rows, recorded in the map",
    )

    ap = sub.add_parser(
        "apply",
        help="calibrate a predictions file with a deployable map",
        description="Apply a map written by 'fit' (or the page's download) to a predictions "
        "file, streaming it in batches. The output (CSV/TSV, Parquet or NPZ, by extension) "
        "keeps every other column and replaces the prediction columns by the calibrated "
        f"probabilities p_<class>. Prints a JSON summary ({APPLY_SCHEMA}).",
    )
    ap.add_argument("map_file", metavar="MAP", help="deployable map (.json)")
    ap.add_argument("file", metavar="FILE", help="predictions (CSV/TSV, .gz, Parquet, NPZ)")
    ap.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="calibrated file; with --engine dask, a folder (one calibrated Parquet file per "
        "input file, same names)",
    )
    add_engine_arguments(
        ap,
        "FILE is a Parquet file, folder or quoted glob, calibrated file by file on Dask",
    )


def _one_model(models, wanted: str | None, file: str):
    names = [m.name for m in models]
    if wanted is None and len(models) == 1:
        return models[0]
    if wanted in names:
        return models[names.index(wanted)]
    listed = ", ".join(repr(n) for n in names)
    if wanted is None:
        raise CommandError(f"{file} holds {len(models)} models ({listed}); choose one with --model")
    raise CommandError(f"{file} has no model {wanted!r}; it holds {listed}")


def fit_map(args: argparse.Namespace, out) -> int:
    """Run ``fit``: compare, refit the chosen map on all rows, write the document."""
    from calibration_core import compare_maps
    from calibration_core.compare import UNCALIBRATED
    from calibration_core.deploy import IDENTITY_WORDS, deployable_map

    from .distributed import check_fit_options, fit_on_dask, select_on_dask

    maps = parse_maps(args.map or "all")
    if args.select is None and (args.map is None or maps == "all" or len(maps) != 1):
        raise UsageError("name one map with --map NAME, or choose among maps with --select best")
    map_name = check_fit_options(args, maps)
    if args.engine == "dask":
        if args.select is not None:
            return select_on_dask(args, maps, out)
        return fit_on_dask(args, map_name, out)
    path = input_path(args.file)
    models = load_models(path, args)
    model = _one_model(models, args.model, args.file)
    comparison = compare_maps(
        model, maps, folds=args.folds, n_bins=args.bins, scheme=args.scheme, seed=args.seed
    )
    verdict = comparison.verdict()
    chosen = maps[0] if args.select is None else verdict.recommended
    if chosen == UNCALIBRATED:
        print(
            f"{PROG}: no map is clearly better than the uncalibrated predictions: the "
            f"deployable map is {IDENTITY_WORDS}.",
            file=sys.stderr,
        )
    deployable = deployable_map(model, chosen, comparison)
    deployable.save(args.output)
    settings = {
        "maps": [r["map"] for r in comparison.rows()][1:],
        "folds": args.folds,
        "seed": args.seed,
        "n_bins": args.bins,
        "scheme": args.scheme,
    }
    return write_fit_summary(
        args,
        deployable,
        out,
        model=model.name,
        map_name=chosen,
        settings=settings,
        comparison=comparison.rows(),
        verdict=verdict.to_dict(),
    )


def write_fit_summary(
    args: argparse.Namespace,
    deployable,
    out,
    *,
    model: str,
    map_name: str,
    settings: dict,
    comparison: list[dict],
    verdict: dict,
    n_rows: int | None = None,
    held_out: dict | str | None = "deployable",
) -> int:
    """Write ``fit``'s JSON summary (schema :data:`FIT_SCHEMA`) for either engine.

    ``n_rows`` and ``held_out`` default to the deployable map's own (``held_out``
    ``"deployable"``); a map fitted on a whole dataset passes its row count and
    None (no rows were held out).
    """
    from calibration_core import __version__

    summary = {
        "schema": FIT_SCHEMA,
        "version": __version__,
        "file": str(args.file),
        "output": str(args.output),
        "model": model,
        "map": map_name,
        "selected": args.select or "given",
        "settings": settings,
        "input": deployable.input,
        "n_rows": deployable.n_rows if n_rows is None else n_rows,
        "n_classes": deployable.n_classes,
        "held_out": deployable.held_out if held_out == "deployable" else held_out,
        "comparison": comparison,
        "verdict": verdict,
    }
    json.dump(summary, out, indent=2, allow_nan=False)
    out.write("\n")
    return EXIT_OK


class ProgressBar:
    """A one-line progress bar on a terminal's stderr, redrawn at most 5 times a second."""

    def __init__(self, stream, label: str) -> None:
        self.stream, self.label, self.last = stream, label, 0.0

    def __call__(self, done: int, total: int | None, unit: str) -> None:
        """Draw ``done`` of ``total`` (bytes or rows)."""
        now = time.monotonic()
        if now - self.last < 0.2 and (total is None or done < total):
            return
        self.last = now
        scale, name = (1 << 20, "MB") if unit == "bytes" else (1, "rows")
        if total:
            frac = min(done / total, 1.0)
            bar = "#" * int(30 * frac)
            text = f"{bar:<30} {frac:6.1%} {done / scale:,.0f}/{total / scale:,.0f} {name}"
        else:
            text = f"{done / scale:,.0f} {name}"
        self.stream.write(f"\r{self.label}: {text}")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        self.stream.write("\n")
        self.stream.flush()


def apply_map(args: argparse.Namespace, out) -> int:
    """Run ``apply``: stream a predictions file through a deployable map."""
    from calibration_core.deploy import apply_map_to_file, load_deployable

    from .distributed import apply_on_dask, check_cluster_options

    check_cluster_options(args)
    deployable = load_deployable(args.map_file)
    if args.engine == "dask":
        return apply_on_dask(args, deployable, out)
    input_path(args.file)
    bar = ProgressBar(sys.stderr, f"{PROG} apply") if sys.stderr.isatty() else None
    try:
        rows = apply_map_to_file(deployable, args.file, args.output, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    return write_apply_summary(args, deployable, rows, out)


def write_apply_summary(args: argparse.Namespace, deployable, rows: int, out, **extra) -> int:
    """Write ``apply``'s JSON summary (schema :data:`APPLY_SCHEMA`, ``extra`` fields last)."""
    from calibration_core import __version__

    summary = {
        "schema": APPLY_SCHEMA,
        "version": __version__,
        "map_file": str(args.map_file),
        "file": str(args.file),
        "output": str(args.output),
        "model": deployable.model,
        "map": deployable.map.name,
        "input": deployable.input,
        "n_classes": deployable.n_classes,
        "rows": rows,
        **extra,
    }
    json.dump(summary, out, indent=2, allow_nan=False)
    out.write("\n")
    return EXIT_OK


DEPLOY_COMMANDS = {"fit": fit_map, "apply": apply_map}


# --------------------------------------------------------------------- serve
def _without_ipython() -> None:
    """Keep dash from importing IPython in the server process (a slower start for nothing).

    ``dash._jupyter`` imports IPython when it is installed (it usually is next
    to notebooks) and falls back when the import fails; the server started
    here never runs inside IPython. A ``None`` entry in ``sys.modules`` makes
    that import fail at once.
    """
    sys.modules.setdefault("IPython", None)


def serve(args: argparse.Namespace) -> int:
    """Start the dashboard (imports dash only now).

    The configuration is checked first: a missing or invalid setting is one line
    on stderr naming every such setting, and exit code 2, before the server starts.
    """
    from app.config import AppConfig, ConfigError, error_line

    try:
        AppConfig.from_env()
    except ConfigError as exc:
        print(error_line(exc), file=sys.stderr, flush=True)
        return EXIT_USAGE
    _without_ipython()
    try:
        from app.server import serve as run_server
    except ModuleNotFoundError as exc:
        if exc.name in ("app.server", "dash"):
            raise CommandError(
                f"the dashboard is not available ({exc}); install calibration-dashboard with "
                "its web dependencies"
            ) from None
        raise
    run_server(host=args.host, port=args.port, debug=args.debug)
    return EXIT_OK


# ---------------------------------------------------------------------- main
#: How the command line applies each remedy of a CalibrationInputError.
CLI_REMEDIES = {
    "renormalize": "To divide each row by its sum, add --renormalize.",
    "label_column": "Or choose the label column with --label-column C.",
}


def _fail(message, code: int) -> int:
    """Print ``message`` (an exception: input errors with their remedy as a flag) as an error."""
    text = message.phrased(CLI_REMEDIES) if hasattr(message, "phrased") else str(message)
    print(f"{PROG}: error: {' '.join(text.split())}", file=sys.stderr)
    return code


def run_check(args: argparse.Namespace) -> int:
    """``check`` with its own exit codes: 0 pass, 1 a bound fails, 2 any bad input."""
    from calibration_core import CalibrationInputError

    try:
        buffer = io.StringIO()
        code = check(args, buffer)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except (CalibrationInputError, CommandError, OSError) as exc:
        return _fail(exc, EXIT_USAGE)
    except Exception as exc:
        if args.traceback:
            raise
        return _fail(
            f"{type(exc).__name__}: {exc} (rerun with --traceback for details)", EXIT_USAGE
        )
    sys.stdout.write(buffer.getvalue())
    sys.stdout.flush()
    return code


def warn_ignored_resamples(args: argparse.Namespace) -> None:
    """Say on stderr that ``--resamples`` (of older versions' verdict bootstrap) is ignored."""
    if getattr(args, "resamples", None) is not None:
        sys.stderr.write(
            "calibration-dashboard: --resamples is ignored: the verdict's interval is no longer "
            "a bootstrap (docs/statistics.md, 'The map verdict').\n"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``calibration-dashboard`` console script.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit code: 0 success, 1 bad input, 2 bad command line, 130 interrupted.
    """
    from calibration_core import CalibrationInputError

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    if args.command is None:
        args = argparse.Namespace(host="127.0.0.1", port=8050, debug=False, **vars(args))
    warn_ignored_resamples(args)
    if args.command == "check":
        return run_check(args)
    try:
        if args.command == "report":
            return report(args)
        if args.command == "evaluate":
            buffer = io.StringIO()
            code = evaluate(args, buffer)
            sys.stdout.write(buffer.getvalue())
            sys.stdout.flush()
            return code
        if args.command in DEPLOY_COMMANDS:
            return DEPLOY_COMMANDS[args.command](args, sys.stdout)
        return serve(args)
    except UsageError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except CalibrationInputError as exc:
        return _fail(exc, EXIT_INPUT)
    except (CommandError, OSError) as exc:
        return _fail(str(exc), EXIT_INPUT)
    except Exception as exc:
        if args.traceback:
            raise
        return _fail(
            f"{type(exc).__name__}: {exc} (rerun with --traceback for details)", EXIT_INPUT
        )
