"""``calibration-dashboard report FILE -o REPORT.html``: the page's standalone HTML report.

Figures, verdict, metrics and diagnostics of a predictions file, with date, input
file, settings and version (:mod:`app.offline_report`); with ``--group-by`` a
"Calibration by group" section, with ``--window`` (and ``--time-column``) a
"Calibration over time" section. The web stack loads only when the report is built.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import (
    EXIT_OK,
    MAPS_HELP,
    PROG,
    CommandError,
    add_data_arguments,
    input_path,
    parse_maps,
)
from .groups import add_group_arguments, slice_settings


def add_parser(sub) -> None:
    """The ``report`` subcommand (the page's HTML report)."""
    rp = sub.add_parser(
        "report",
        help="write the dashboard's standalone HTML report of a predictions file",
        description="Fit calibration maps on held-out folds as the dashboard does and write "
        "its offline HTML report (reliability diagrams, verdict, metrics, diagnostics), with "
        "the date, input file, settings and version.",
    )
    add_data_arguments(rp, seed=False)
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
    rp.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
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
