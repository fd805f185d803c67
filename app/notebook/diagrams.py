"""The page's diagrams as Plotly figures in a notebook: :func:`reliability_diagram`.

A figure is made by the very functions the page uses: the model goes into a
throwaway store (in a temporary folder, removed when the figure is made) as
the one shared model, the maps are fitted by the page's fit
(:func:`app.services.fit.run_fits`), the view is the page's
(:func:`app.services.view.compute_view`, so the same validation and the same
numbers) and the figure is the page's (:func:`app.figures.diagram.diagram_figure_dict`).
:class:`ReliabilityDisplay` wraps it in scikit-learn's display idiom.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import plotly.graph_objects as go

from calibration_core import CalibrationInputError, Predictions

from ..analysis import opening_class
from ..config import AppConfig
from ..context import AppContext
from ..figures.diagram import diagram_figure_dict
from ..services.fit import run_fits
from ..services.view import compute_view
from ..session import SessionManager
from ..settings import RawSettings
from ..store.data_store import DataStore
from .inputs import as_predictions, from_estimator

#: Store bounds of a throwaway store: the models given are the whole of it.
NO_LIMIT = 1 << 50


@contextmanager
def scratch_context(preds: list[Predictions]) -> Iterator[AppContext]:
    """An app context whose store (in a temporary folder) shares ``preds`` with every session."""
    with tempfile.TemporaryDirectory(prefix="calibration-notebook-") as tmp:
        root = Path(tmp)
        config = AppConfig(cache_dir=root, secret_key=secrets.token_hex(16))
        store = DataStore(
            root / "store", size_limit_bytes=NO_LIMIT, max_session_bytes=NO_LIMIT, shared=preds
        )
        try:
            yield AppContext(config, store, SessionManager(config.secret_key, 3600))
        finally:
            store.close()


def ignore_progress(_value) -> None:
    """The page's fit reports progress to its progress bar; a notebook figure has none."""


def settings_of(handles: list[str], maps, notion, class_name, options: dict) -> RawSettings:
    """The page's raw settings for these choices (validated by the page's parser)."""
    return RawSettings(
        handles=handles,
        maps=list(maps),
        folds=options.get("folds", 5),
        notion=notion,
        class_value=class_name,
        scheme=options.get("scheme", "width"),
        n_bins=options.get("n_bins", 15),
        band=options.get("band", "wilson"),
        level=options.get("level", 0.95),
        kind=options.get("kind", "binned"),
    )


def figure_dict(pred: Predictions, raw: RawSettings) -> dict:
    """The page's figure of ``pred`` for ``raw`` (its maps fitted first) as a plain dict.

    Raises
    ------
    CalibrationInputError
        Invalid settings, or a fit that failed (the page's message).
    """
    with scratch_context([pred]) as ctx:
        handles = [info.handle for info in ctx.store.demo_models()]
        raw = replace(raw, handles=handles)
        if raw.notion == "class" and raw.class_value is None:  # as the page opens it
            worst = opening_class(ctx.store, None, handles, raw.scheme, raw.n_bins)
            raw = replace(raw, class_value=worst)
        state = run_fits(
            ctx, None, handles, raw.maps, raw.heldout, raw.folds, raw.fraction, ignore_progress
        )
        if state.get("error"):
            raise CalibrationInputError(state["error"])
        result = compute_view(ctx, None, raw)
        if result.messages or not result.models:
            raise CalibrationInputError(" ".join(result.messages) or "nothing to draw.")
        return diagram_figure_dict(ctx.store, result, result.models[0])


def reliability_diagram(
    probs_or_predictions,
    labels=None,
    *,
    notion: str = "confidence",
    class_name: str | None = None,
    n_bins: int = 15,
    scheme: str = "width",
    band: str = "wilson",
    level: float = 0.95,
    maps=(),
    kind: str = "binned",
    folds: int = 5,
    name: str = "model",
) -> go.Figure:
    """The dashboard's reliability diagram of one model, as a Plotly figure.

    Parameters
    ----------
    probs_or_predictions : array-like (N, K) or (N,), Predictions, or (probs, labels)
        Probability rows (or one positive-class column) and ``labels`` (class
        indices), or a :class:`~calibration_core.Predictions`.
    labels : array-like (N,), optional
    notion : {"confidence", "class", "binary"}
        What is binned: the top-label confidence, one class vs rest
        (``class_name``; None: the worst class, as the page opens it;
        ``"__all__"``: every class), or the positive class of a binary model.
    n_bins, scheme : int, {"width", "frequency"}
        The bins (2 to 100, equal-width or equal-frequency).
    band : {"wilson", "clopper-pearson", "jeffreys", "consistency", "none"}
        Interval at each bin's mean score, at ``level``.
    maps : sequence of str
        Calibration maps (``calibration_core.maps.MAP_NAMES``) fitted with
        ``folds``-fold cross-fitting and drawn beside the uncalibrated panel.
    kind : {"binned", "smooth", "cumulative"}
        The page's three diagrams.
    name : str
        The model's name in the title (a Predictions keeps its own).

    Returns
    -------
    plotly.graph_objects.Figure
        The figure the page draws for the same settings.

    Raises
    ------
    CalibrationInputError
        Malformed predictions or settings, with the page's message.
    """
    pred = as_predictions(probs_or_predictions, labels, name=name)
    options = dict(n_bins=n_bins, scheme=scheme, band=band, level=level, kind=kind, folds=folds)
    raw = settings_of([], maps, notion, class_name, options)  # the handles come with the store
    return go.Figure(figure_dict(pred, raw), skip_invalid=True)


class ReliabilityDisplay:
    """Reliability diagram in scikit-learn's display idiom (``CalibrationDisplay``'s).

    ``ReliabilityDisplay.from_predictions(y, P)`` or
    ``.from_estimator(clf, X, y)`` draws at once; ``.plot(**settings)`` draws
    again with other settings (those of :func:`reliability_diagram`). The
    display shows itself in a notebook as its figure, ``figure_``.

    Attributes
    ----------
    predictions : Predictions
    figure_ : plotly.graph_objects.Figure or None
        The last figure drawn.
    """

    def __init__(self, predictions: Predictions) -> None:
        self.predictions = predictions
        self.figure_: go.Figure | None = None

    @classmethod
    def from_predictions(cls, y_true, y_prob, *, name: str = "model", **settings):
        """Display of ``y_prob`` (N, K) or (N,) against class indices ``y_true``, drawn."""
        return cls(as_predictions(y_prob, y_true, name=name)).plot(**settings)

    @classmethod
    def from_estimator(cls, estimator, X, y, *, name: str | None = None, **settings):
        """Display of a fitted classifier's ``predict_proba(X)`` against ``y``, drawn."""
        return cls(from_estimator(estimator, X, y, name=name)).plot(**settings)

    def plot(self, **settings) -> ReliabilityDisplay:
        """Draw the diagram (keyword settings of :func:`reliability_diagram`); returns self."""
        self.figure_ = reliability_diagram(self.predictions, **settings)
        return self

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Shown as its figure (Plotly's renderers)."""
        if self.figure_ is None:
            self.plot()
        return self.figure_._repr_mimebundle_(include, exclude)
