"""The ``calibration-dashboard`` command: its parser and :func:`main`.

One module per subcommand, each adding its parser and running it:

- ``evaluate`` (:mod:`.evaluate`): compare calibration maps on a predictions
  file and print the table, as text, CSV or JSON;
- ``fit`` and ``apply`` (:mod:`.deploy`): export a deployable map, calibrate a
  file with it;
- ``check`` (:mod:`.check`): a CI gate on upper bounds of the metrics;
- ``report`` (:mod:`.report`): the page's standalone HTML report;
- ``serve`` (:mod:`.serve`): start the dashboard; with no subcommand at all, the
  dashboard starts on its built-in demo.

What several of them share is in :mod:`.common` (program name, exit codes,
errors, arguments, reading FILE), what both engines write in :mod:`.outputs`;
:mod:`.distributed` is the Dask engine of ``evaluate``, ``fit`` and ``apply``,
:mod:`.slices` the ``--group-by``/``--window`` options.

Building the parser imports the standard library, numpy and the light parts of
the core only: scikit-learn, scipy.stats, pandas, pyarrow, dash and plotly load
inside the command that needs them, so ``--help`` and a refused command line
answer at once (tests/app/test_cli_start.py). Errors are printed to stderr as
one line, never as a traceback. Exit codes: 0 success, 1 bad input (file, data
or settings), 2 bad command line (for ``serve``, also a configuration from the
environment that cannot be used, every bad variable named), 130 interrupted;
``check`` alone uses 1 for a failed bound and 2 for any bad input, so that a CI
gate can tell them apart.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import check, deploy, evaluate, report, serve
from .common import (
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    PROG,
    CommandError,
    UsageError,
    fail,
    version,
)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`UsageError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``calibration-dashboard`` command.

    Each subcommand's parser sets ``run``, the function that runs it.
    """
    parser = _Parser(
        prog=PROG,
        description="Measure and fix the calibration of a classifier's probabilities. "
        "Without a subcommand, start the dashboard on its built-in demo.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="on an unexpected error, show the Python traceback (for bug reports)",
    )
    sub = parser.add_subparsers(dest="command", metavar="{evaluate,fit,apply,check,report,serve}")
    evaluate.add_parser(sub)
    deploy.add_parsers(sub)
    check.add_parser(sub)
    report.add_parser(sub)
    serve.add_parser(sub)
    return parser


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
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            args = parser.parse_args([*argv, "serve"])
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command; every error becomes one line on stderr and an exit code."""
    from calibration_core import CalibrationInputError

    try:
        return args.run(args)
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    except KeyboardInterrupt:
        return fail("interrupted", EXIT_INTERRUPTED)
    except CalibrationInputError as exc:
        return fail(exc, EXIT_INPUT)
    except (CommandError, OSError) as exc:
        return fail(str(exc), EXIT_INPUT)
    except Exception as exc:
        if args.traceback:
            raise
        return fail(f"{type(exc).__name__}: {exc} (rerun with --traceback for details)", EXIT_INPUT)
