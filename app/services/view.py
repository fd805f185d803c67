"""The validated view of a session: the one entry the page, the exports and the notebook share.

:func:`compute_view` validates the raw settings and re-bins the stored
predictions (:func:`app.analysis.build_view`); the view callback
(:mod:`app.callbacks.view`) draws it, the exports (:mod:`app.services.report`)
write it, and the notebook (:mod:`app.notebook.diagrams`) shows it.
"""

from __future__ import annotations

from ..analysis import PENDING, ViewResult, build_view
from ..context import AppContext
from ..settings import RawSettings


def compute_view(ctx: AppContext, sid, raw: RawSettings, pending: str = PENDING) -> ViewResult:
    """The validated view of a session (raises SettingsError on a bad setting)."""
    handles, maps, heldout, view = raw.parse()
    return build_view(ctx.store, sid, handles, maps, heldout, view, pending)
