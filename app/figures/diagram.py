"""The view's diagram of one model, of the kind the user picked (:func:`diagram_figure_dict`).

"binned" is the binned reliability grid (:mod:`app.figures.reliability`,
from the panels :mod:`app.analysis` already computed); "smooth" and
"cumulative" compute their curves (:mod:`app.curves`) and draw them
(:mod:`app.figures.smooth`, :mod:`app.figures.cumulative`) in the same grid
of calibrators and classes. The page and the HTML report both draw through
here, so they always show the same diagram.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ..analysis import PENDING, ModelView, ViewResult
from ..curves import CurveView, curve_view
from ..settings import ViewSettings
from ..store.data_store import DataStore
from .cumulative import cumulative_figure_dict
from .reliability import reliability_figure_dict
from .smooth import smooth_figure_dict


def diagram_figure_dict(
    store: DataStore,
    result: ViewResult,
    mv: ModelView,
    pending: str = PENDING,
    side_by_side: bool = False,
) -> dict:
    """The figure of model ``mv`` of ``result`` as a plain ``{"data", "layout"}`` dict.

    Parameters
    ----------
    store : DataStore
        Where the calibrators' predictions are (smooth and cumulative kinds).
    result : ViewResult
        The view (its ``view.kind`` picks the diagram), maps and held-out scheme.
    mv : ModelView
        One of ``result.models``.
    pending : str
        Panel text of calibrators not fitted yet.
    side_by_side : bool
        The figure shares the row with other models' (the page with several
        models): every kind then has fewer panel columns and a two-line subtitle.

    Raises
    ------
    CalibrationInputError
        As :func:`app.curves.curve_view`; not for models of ``result``, which
        were resolved with the same settings.
    """
    view = result.view
    if view.kind == "binned":
        return reliability_figure_dict(mv, view, result.heldout, side_by_side)
    cv = curve_view(store, mv.info, result.maps, result.heldout, view, pending, mv.class_rows)
    return curves_figure_dict(mv, cv, view, result.heldout, side_by_side)


def curves_figure_dict(
    mv: ModelView, cv: CurveView, view: ViewSettings, heldout, side_by_side: bool = False
) -> dict:
    """The smooth or the cumulative figure (``view.kind``) of model ``mv``'s curves ``cv``.

    ``heldout``: anything with ``describe()`` for the subtitle (the page's
    :class:`~app.settings.HeldOut`, or a dataset's sample,
    :class:`app.dataset_view.SampleHeldOut`).
    """
    draw = smooth_figure_dict if view.kind == "smooth" else cumulative_figure_dict
    return draw(mv.info.name, cv, view, heldout, mv.n_scored, side_by_side)


def diagram_figure(
    store: DataStore, result: ViewResult, mv: ModelView, pending: str = PENDING
) -> go.Figure:
    """:func:`diagram_figure_dict` wrapped without re-validation (for exports)."""
    return go.Figure(diagram_figure_dict(store, result, mv, pending), skip_invalid=True)
