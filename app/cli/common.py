"""What the subcommands share: the program's name, exit codes and errors, the
arguments several of them take, reading FILE, and the progress bar.

Nothing here imports more than the standard library and the light parts of the
core (numpy) at module level: the parser is built from it before any command runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from calibration_core.maps import MAP_NAMES

PROG = "calibration-dashboard"
EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

MAPS_HELP = f"comma-separated map names ({','.join(MAP_NAMES)})"

#: How the command line applies each remedy of a CalibrationInputError.
CLI_REMEDIES = {
    "renormalize": "To divide each row by its sum, add --renormalize.",
    "label_column": "Or choose the label column with --label-column C.",
}

T = TypeVar("T")


class UsageError(Exception):
    """A bad command line (exit code 2)."""


class CommandError(Exception):
    """A command that cannot run, with a message for the user (exit code 1)."""


def version() -> str:
    """The version of the installed package."""
    from calibration_core import __version__

    return __version__


def fail(message, code: int) -> int:
    """Print ``message`` (an exception: input errors with their remedy as a flag) as an error."""
    text = message.phrased(CLI_REMEDIES) if hasattr(message, "phrased") else str(message)
    print(f"{PROG}: error: {' '.join(text.split())}", file=sys.stderr)
    return code


# ----------------------------------------------------------------- arguments
def positive_int(text: str) -> int:
    """An argument type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def whole_number(text: str) -> int:
    """An argument type: a whole number."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def add_data_arguments(parser: argparse.ArgumentParser, *, seed: bool = True) -> None:
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
        "--bins", type=positive_int, default=15, metavar="M", help="bins for ECE/MCE (15)"
    )
    parser.add_argument(
        "--scheme",
        choices=("width", "frequency"),
        default="width",
        help="equal-width or equal-frequency bins (width)",
    )
    parser.add_argument(
        "--folds", type=whole_number, default=5, metavar="K", help="cross-fitting folds, >= 2 (5)"
    )
    if seed:
        parser.add_argument(
            "--seed", type=whole_number, default=0, help="seed of the fold assignment (0)"
        )
    parser.add_argument(
        "--renormalize",
        action="store_true",
        help="divide probability rows by their sum instead of rejecting rows that do not sum to 1",
    )


def add_engine_arguments(
    parser: argparse.ArgumentParser, dask_help: str, stream_help: str | None = None
) -> None:
    """``--engine``, ``--scheduler`` and ``--workers`` (evaluate, fit, apply).

    ``dask_help`` says what ``--engine dask`` does for the command
    (:mod:`app.cli.distributed`); ``stream_help`` what ``--engine stream`` does, for a
    command that has it (evaluate, :mod:`app.cli.stream`): its default is then
    chosen from FILE (:func:`app.cli.stream.default_engine`).
    """
    if stream_help is None:
        parser.add_argument(
            "--engine",
            choices=("memory", "dask"),
            default="memory",
            help=f"'memory' (default): load FILE in memory; 'dask': {dask_help} (needs the "
            "'dask' extra)",
        )
    else:
        parser.add_argument(
            "--engine",
            choices=("memory", "stream", "dask"),
            default=None,
            help=f"'memory': load FILE in memory; 'stream': {stream_help}; 'dask': "
            f"{dask_help}. Default: 'stream' for a folder or a glob of Parquet files, else "
            "'memory' ('stream' and 'dask' need the 'dask' extra)",
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


def add_sample_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--sample-rows`` of ``evaluate`` and ``fit``; ``what`` says what is done on the sample."""
    from calibration_core.distributed import DEFAULT_SAMPLE_ROWS

    parser.add_argument(
        "--sample-rows",
        type=int,
        default=None,
        metavar="N",
        help=f"with --engine dask: {what} (default {DEFAULT_SAMPLE_ROWS:,}; seed --seed)",
    )


def parse_maps(text: str):
    """``"all"`` or a tuple of map names from the ``--maps`` option."""
    text = text.strip()
    if text.lower() == "all":
        return "all"
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    return names


# ---------------------------------------------------------------------- FILE
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


def one_model(models: Mapping[str, T], wanted: str | None, file: str) -> T:
    """The model ``--model`` names among ``models`` (by name), or the only one.

    Raises CommandError naming the file's models when ``wanted`` is missing
    from a file of several models, or is not among them.
    """
    names = list(models)
    if wanted is None and len(names) == 1:
        return models[names[0]]
    if wanted in models:
        return models[wanted]
    listed = ", ".join(repr(n) for n in names)
    if wanted is None:
        raise CommandError(f"{file} holds {len(names)} models ({listed}); choose one with --model")
    raise CommandError(f"{file} has no model {wanted!r}; it holds {listed}")


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
