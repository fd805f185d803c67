"""``calibration-dashboard fit`` and ``apply``: deployable maps (``docs/deployable-map.md``).

``fit FILE (--map NAME | --select best [--maps NAMES]) -o MAP`` compares maps on
held-out folds, refits the chosen one on all rows and writes the deployable map
document; it prints a JSON summary (schema ``calibration-dashboard/fit/v1``).
``apply MAP FILE -o OUT`` calibrates a predictions file (CSV/TSV, Parquet, NPZ)
with a deployable map, streaming it in batches; it prints a JSON summary
(``calibration-dashboard/apply/v1``). With ``--engine dask`` both run on a Parquet
dataset (:mod:`app.cli.distributed`).
"""

from __future__ import annotations

import argparse
import os
import sys

from .common import (
    PROG,
    ProgressBar,
    UsageError,
    add_data_arguments,
    add_engine_arguments,
    add_sample_argument,
    input_path,
    load_models,
    one_model,
    parse_maps,
)
from .outputs import APPLY_SCHEMA, FIT_SCHEMA, write_apply_summary, write_fit_summary


def add_parsers(sub) -> None:
    """The ``fit`` and ``apply`` subcommands (deployable maps, docs/deployable-map.md)."""
    ft = sub.add_parser(
        "fit",
        help="refit a calibration map on all rows and export it as a deployable JSON map",
        description="Compare maps on held-out folds, refit the chosen one on all rows of a "
        "predictions file and write the deployable map document (JSON). Prints a JSON "
        f"summary ({FIT_SCHEMA}).",
    )
    add_data_arguments(ft)
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
    ft.set_defaults(run=lambda args: fit_map(args, sys.stdout))
    ap.set_defaults(run=lambda args: apply_map(args, sys.stdout))


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
    model = one_model({m.name: m for m in models}, args.model, args.file)
    comparison = compare_maps(
        model, maps=maps, folds=args.folds, n_bins=args.bins, scheme=args.scheme, seed=args.seed
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


def map_limits(env) -> dict[str, int]:
    """``load_deployable``'s limits from ``MAX_CLASSES`` (the dashboard's setting, 1000 by default).

    The byte limit is :func:`calibration_core.deploy.map_byte_limit` of that many
    classes, so that a map the dashboard can fit is always read back.
    """
    from app.config import AppConfig, ConfigError, int_env
    from calibration_core.deploy import map_byte_limit

    try:
        max_classes = int_env(env, "MAX_CLASSES", AppConfig.max_classes, minimum=2)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    max_classes = max_classes or AppConfig.max_classes  # int_env returns the default when unset
    return {"max_classes": max_classes, "max_bytes": map_byte_limit(max_classes)}


def apply_map(args: argparse.Namespace, out) -> int:
    """Run ``apply``: stream a predictions file through a deployable map."""
    from calibration_core.deploy import apply_map_to_file, load_deployable

    from .distributed import apply_on_dask, check_cluster_options

    check_cluster_options(args)
    deployable = load_deployable(args.map_file, **map_limits(os.environ))
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
