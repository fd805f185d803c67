"""``calibration-dashboard serve [--host H] [--port P] [--debug]``: start the dashboard.

With no subcommand at all, the dashboard starts on its built-in demo with these
defaults. The configuration from the environment is checked before dash loads.
"""

from __future__ import annotations

import argparse
import gc
import sys

from .common import EXIT_OK, EXIT_USAGE, CommandError, whole_number


def add_parser(sub) -> None:
    """The ``serve`` subcommand."""
    sv = sub.add_parser("serve", help="start the dashboard web server")
    sv.add_argument("--host", default="127.0.0.1", help="interface to bind (127.0.0.1)")
    sv.add_argument("--port", type=whole_number, default=8050, help="port (8050)")
    sv.add_argument("--debug", action="store_true", help="Dash debug mode (reloader)")
    sv.set_defaults(run=run)


def without_ipython() -> None:
    """Keep dash from importing IPython in the server process (a slower start for nothing).

    ``dash._jupyter`` imports IPython when it is installed (it usually is next
    to notebooks) and falls back when the import fails; the server started
    here never runs inside IPython. A ``None`` entry in ``sys.modules`` makes
    that import fail at once.
    """
    sys.modules.setdefault("IPython", None)


def run(args: argparse.Namespace) -> int:
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
    without_ipython()
    # Start-up creates many objects that live as long as the server: no collection
    # until it listens (app.server.serve freezes them and turns the collector back on).
    gc.disable()
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
