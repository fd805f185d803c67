"""``calibration-dashboard check FILE --max METRIC=VALUE ... [--after MAP]``: a CI gate.

Exit 0 when every bound holds for every model, 1 when one fails, 2 on bad input
(unknown metric, malformed bound, a bound outside the metric's range, unreadable
file); one ``PASS``/``FAIL`` line per bound and model, or JSON (schema
``calibration-dashboard/check/v1``); with ``--per-group`` every bound on every
group of ``--group-by`` too.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from calibration_core.compare import METRIC_COLUMNS, METRIC_RANGES

from .common import (
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_data_arguments,
    fail,
    input_path,
    load_models,
    version,
)
from .groups import add_group_arguments, group_check_results

CHECK_SCHEMA = "calibration-dashboard/check/v1"


def add_parser(sub) -> None:
    """The ``check`` subcommand."""
    names = ", ".join(METRIC_COLUMNS)
    ck = sub.add_parser(
        "check",
        help="fail (exit 1) when a calibration metric exceeds its bound: a CI gate",
        description="Check upper bounds on calibration metrics of every model in a "
        "predictions file. Exit code 0 when every bound holds, 1 when one fails, 2 on bad "
        f"input. Metrics: {names}.",
    )
    add_data_arguments(ck)
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
    ck.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``check`` with its own exit codes: 0 pass, 1 a bound fails, 2 any bad input."""
    from calibration_core import CalibrationInputError

    try:
        buffer = io.StringIO()
        code = check(args, buffer)
    except KeyboardInterrupt:
        return fail("interrupted", EXIT_INTERRUPTED)
    except (CalibrationInputError, CommandError, OSError) as exc:
        return fail(exc, EXIT_USAGE)
    except Exception as exc:
        if args.traceback:
            raise
        return fail(f"{type(exc).__name__}: {exc} (rerun with --traceback for details)", EXIT_USAGE)
    sys.stdout.write(buffer.getvalue())
    sys.stdout.flush()
    return code


@dataclass(frozen=True)
class Bound:
    """One ``--max METRIC=VALUE`` bound."""

    metric: str
    limit: float


def parse_bounds(texts: Sequence[str]) -> list[Bound]:
    """The ``--max`` bounds; raises CommandError naming the bad one and the metric names."""
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
        check_range(metric, limit, text)
        bounds.append(Bound(metric, limit))
    return bounds


def check_range(metric: str, limit: float, text: str) -> None:
    """Refuse a bound that can never hold (below the metric's least value) or never fail."""
    least, greatest = METRIC_RANGES[metric]
    if limit < least:
        raise CommandError(
            f"impossible bound --max {text}: {metric} is never below {least:g}, so the check "
            f"would always fail; give a bound from {least:g} to {greatest:g}, e.g. {metric}=0.05"
        )
    if limit > greatest:
        raise CommandError(
            f"bound --max {text} can never fail: {metric} is at most {greatest:g}; give a "
            f"bound from {least:g} to {greatest:g} (a fraction: 0.05, not 5, for 5 %)"
        )


def checked_metrics(model, args: argparse.Namespace) -> dict[str, float]:
    """The metrics the bounds apply to: uncalibrated, or held-out after ``--after``."""
    from calibration_core import compare_maps
    from calibration_core.compare import score_probs

    if args.after is None:
        return score_probs(model.probs, model.labels, n_bins=args.bins, scheme=args.scheme)
    result = compare_maps(
        model, maps=[args.after], folds=args.folds, n_bins=args.bins, scheme=args.scheme,
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
        model, maps=[args.after], folds=args.folds, n_bins=args.bins, scheme=args.scheme,
        seed=args.seed,
    )  # fmt: skip
    label = next(name for name in result.calibrated if name != "uncalibrated")
    return result.calibrated[label].probs


def check(args: argparse.Namespace, out) -> int:
    """Run ``check``: 0 when every bound holds for every model, 1 when one fails."""
    bounds = parse_bounds(args.bounds)
    if args.per_group and not args.group_by:
        raise CommandError("--per-group needs the groups: add --group-by COLS")
    models = load_models(input_path(args.file), args)
    results = [r for model in models for r in model_results(model, bounds, args)]
    passed = all(r["passed"] for r in results)
    if args.format == "json":
        json.dump(check_document(args, results, passed), out, indent=2, allow_nan=False)
        out.write("\n")
    else:
        for r in results:
            out.write(check_line(r) + "\n")
    return EXIT_OK if passed else EXIT_INPUT


def model_results(model, bounds: list[Bound], args: argparse.Namespace) -> list[dict[str, Any]]:
    """One model's result per bound, then with ``--per-group`` per bound and group."""
    from calibration_core.compare import score_probs

    values = checked_metrics(model, args)
    results = [
        {
            "model": model.name,
            "metric": bound.metric,
            "value": values[bound.metric],
            "max": bound.limit,
            "after": args.after,
            "passed": values[bound.metric] <= bound.limit,
        }
        for bound in bounds
    ]
    if args.per_group:
        source = checked_probs(model, args)
        results.extend(group_check_results(model, lambda rows: score_probs(
            source[rows], model.labels[rows], n_bins=args.bins, scheme=args.scheme
        ), bounds, args))  # fmt: skip
    return results


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
        "version": version(),
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
