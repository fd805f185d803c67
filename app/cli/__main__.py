"""``python -m app.cli``: the command line, as the ``calibration-dashboard`` script."""

from app.cli import main

raise SystemExit(main())
