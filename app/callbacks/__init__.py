"""Thin callbacks: validate the raw inputs, call the core, build figures and tables.

Each module keeps its logic in plain functions (tested without a browser)
and registers the Dash callbacks in ``register(app, ctx)``.
"""

from __future__ import annotations

from ..context import AppContext
from . import datasets, diagnostics, drawer, exports, fit, models, view
from .groups import columns as group_columns
from .groups import time as group_time


def register_callbacks(app, ctx: AppContext) -> None:
    """Register every callback of the dashboard on ``app``."""
    models.register(app, ctx)
    fit.register(app, ctx)
    view.register(app, ctx)
    group_columns.register(app, ctx)
    exports.register(app, ctx)
    diagnostics.register(app, ctx)
    group_time.register(app, ctx)
    drawer.register(app, ctx)
    datasets.register(app, ctx)
