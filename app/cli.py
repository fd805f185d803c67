"""The ``calibration-dashboard`` command.

``calibration-dashboard evaluate FILE ...``
    Load a predictions file, compare calibration maps on held-out folds
    (:func:`calibration_core.compare_maps`) and print the table of every
    model in the file, as text, CSV or JSON (schema
    ``calibration-dashboard/evaluate/v1``, see ``docs/evaluate-json-schema.md``).
``calibration-dashboard serve [--host H] [--port P] [--debug]``
    Start the dashboard; with no subcommand at all, the dashboard starts on
    its built-in demo.

This module never imports dash at module level: ``evaluate`` stays fast and
works without the web stack. Errors are printed to stderr as one line,
never as a traceback. Exit codes: 0 success, 1 bad input (file, data or
settings), 2 bad command line, 130 interrupted.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

PROG = "calibration-dashboard"
SCHEMA = "calibration-dashboard/evaluate/v1"
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
    sub = parser.add_subparsers(dest="command", metavar="{evaluate,serve}")

    ev = sub.add_parser(
        "evaluate",
        help="compare calibration maps on a predictions file and print the table",
        description="Cross-fit calibration maps on a predictions file (CSV/TSV, Parquet or "
        "NPZ) and print, for every model in the file, a table of accuracy, confidence and "
        "classwise ECE/MCE, Brier score and log-loss of the held-out calibrated "
        "predictions. The first row is always the uncalibrated model.",
    )
    ev.add_argument("file", metavar="FILE", help="predictions file (CSV/TSV, .gz, Parquet, NPZ)")
    ev.add_argument(
        "--label-column", metavar="C", default=None, help="name of the true-label column"
    )
    ev.add_argument(
        "--bins", type=_positive_int, default=15, metavar="M", help="bins for ECE/MCE (15)"
    )
    ev.add_argument(
        "--scheme",
        choices=("width", "frequency"),
        default="width",
        help="equal-width or equal-frequency bins (width)",
    )
    ev.add_argument(
        "--maps",
        default="all",
        metavar="NAMES",
        help="comma-separated map names (histogram,isotonic,platt,beta,temperature,vector,"
        "matrix,dirichlet) or 'all' (default)",
    )
    ev.add_argument(
        "--folds", type=_int, default=5, metavar="K", help="cross-fitting folds, >= 2 (5)"
    )
    ev.add_argument("--seed", type=_int, default=0, help="seed of the fold assignment (0)")
    ev.add_argument("--format", choices=FORMATS, default="table", help="output format (table)")
    ev.add_argument(
        "--renormalize",
        action="store_true",
        help="divide probability rows by their sum instead of rejecting rows that do not sum to 1",
    )

    sv = sub.add_parser("serve", help="start the dashboard web server")
    _add_serve_arguments(sv)
    return parser


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


def evaluate(args: argparse.Namespace, out) -> int:
    """Run ``evaluate`` and write the result to ``out``; returns the exit code."""
    import calibration_core
    from calibration_core import compare_maps

    path = Path(args.file)
    if not path.exists():
        raise FileNotFoundError(f"file not found: {args.file}")
    if path.is_dir():
        raise IsADirectoryError(f"{args.file} is a folder, not a predictions file")
    models = calibration_core.load_predictions(
        path, label_column=args.label_column, renormalize=args.renormalize
    )
    maps = parse_maps(args.maps)
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
    if args.format == "json":
        json.dump(evaluate_document(args, maps, results), out, indent=2, allow_nan=False)
        out.write("\n")
        return EXIT_OK
    for result in results:
        for note in result.warnings:
            print(f"{PROG}: warning: {result.settings['model']}: {note}", file=sys.stderr)
    if args.format == "csv":
        write_csv(results, out)
    else:
        write_tables(results, out)
    return EXIT_OK


def evaluate_document(args: argparse.Namespace, maps, results) -> dict[str, Any]:
    """The JSON document of ``evaluate --format json`` (see docs/evaluate-json-schema.md)."""
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
        },
        "models": [
            {
                "model": r.settings["model"],
                "n_samples": r.settings["n_samples"],
                "n_classes": r.settings["n_classes"],
                "splitter": r.settings["splitter"],
                "warnings": list(r.warnings),
                "rows": r.rows(),
            }
            for r in results
        ],
    }


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_csv(results, out) -> None:
    """One CSV with a ``model`` and a ``map`` column, then the table columns."""
    from calibration_core.compare import TABLE_COLUMNS

    from .exports import csv_writer, safe_cell

    writer = csv_writer(out)
    writer.writerow(["model", "map", *TABLE_COLUMNS])
    for result in results:
        for row in result.rows():
            cells = [result.settings["model"], row["map"], *(row[c] for c in TABLE_COLUMNS)]
            writer.writerow([_text(safe_cell(cell)) for cell in cells])


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
        out.write(table.reset_index().to_string(index=False) + "\n")
        for name, message in errors.items():
            if message is not None:
                out.write(f"  {name} failed: {message}\n")


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
    """Start the dashboard (imports dash only now)."""
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
def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return code


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
    try:
        if args.command == "evaluate":
            buffer = io.StringIO()
            code = evaluate(args, buffer)
            sys.stdout.write(buffer.getvalue())
            sys.stdout.flush()
            return code
        return serve(args)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except CalibrationInputError as exc:
        return _fail(str(exc), EXIT_INPUT)
    except (CommandError, OSError) as exc:
        return _fail(str(exc), EXIT_INPUT)
    except Exception as exc:
        if args.traceback:
            raise
        return _fail(
            f"{type(exc).__name__}: {exc} (rerun with --traceback for details)", EXIT_INPUT
        )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
