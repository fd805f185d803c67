"""Curve data of the binning-free diagram kinds: smooth reliability and cumulative differences.

Like :mod:`app.analysis` for the binned diagram, this module only calls the
core (:mod:`calibration_core.measures`, imported lazily: it loads
``scipy.special`` and the server must start without it) and returns plain
panels; :mod:`app.figures.smooth` and :mod:`app.figures.cumulative` draw
them. The panel grid is the binned diagram's: one panel per calibrator
(uncalibrated first) and, in the "all classes" view, per class, for the same
notions (top label, binary, one class vs rest).

* **smooth**: :func:`calibration_core.measures.smooth_reliability_curve`,
  its automatic bandwidth and a percentile bootstrap band of
  :data:`SMOOTH_RESAMPLES` resamples (seed 0) at the view's band level;
  beyond :data:`MAX_SMOOTH_BANDS` panels or :data:`MAX_BAND_ROWS` rows over
  the panels the band is left out (it costs about 0.3 s a panel on the demo
  and 21 s at a million rows) and the figure says so;
* **cumulative**: :func:`calibration_core.measures.cumulative_differences`
  thinned to :data:`CURVE_POINTS` points (keeping the extremes, so the KS
  and Kuiper statistics read off the plot are the full curve's), its band
  under calibration at the view's level, and the KS/Kuiper test of the full
  curve.

The band setting "none" leaves both bands out; any other band draws the
kind's own band at the chosen level (the binomial methods are for bins).

Results are kept in the store's per-process memo by predictions handle,
notion, class and level.

A server-side dataset's cumulative panels (:func:`summary_curve_view`) come
from its cell statistics instead
(:func:`calibration_core.distributed.cumulative.summary_cumulative`): exact
at the cell edges, with the curve's range between them and its KS and Kuiper
statistics bracketed. Its smooth curve is not drawn from the cells (see
:data:`SMOOTH_FROM_CELLS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .analysis import PENDING, UNCALIBRATED, Variant, targets, variants
from .settings import HeldOut, ViewSettings
from .store.data_store import DataStore
from .store.records import ModelInfo

if TYPE_CHECKING:
    from calibration_core import Predictions

#: Points of a cumulative curve in a figure (the core's ``thinned``).
CURVE_POINTS = 2000
#: Bootstrap resamples of the smooth curve's band.
SMOOTH_RESAMPLES = 100
#: Above this many panels in one figure, smooth curves are drawn without their band.
MAX_SMOOTH_BANDS = 12
#: ... and above this many rows summed over its panels: 100 resamples cost about 0.2 s
#: per 10,000 rows (21 s a panel at 1e6 rows, against 1.1 s without the band).
MAX_BAND_ROWS = 250_000


@dataclass
class CurvePanel:
    """One binning-free diagram: a calibrator (and class) of one model.

    Exactly one of ``smooth``, ``cumulative`` (with ``test`` and ``band``) or
    ``message`` is set.
    """

    calibrator: str
    class_label: str | None
    smooth: Any = None  # calibration_core.measures.SmoothReliabilityCurve
    cumulative: Any = None  # calibration_core.measures.CumulativeDifferences (thinned)
    band: np.ndarray | None = None  # half-width under calibration, at the thinned points
    test: Any = None  # calibration_core.measures.CumulativeTestResult (full curve)
    message: str | None = None
    #: A whole dataset's curve from its cells: the bounds between cell edges
    #: (calibration_core.distributed.cumulative.CellCumulative); ``test`` is then its
    #: bracketed test (CumulativeBounds).
    cells: Any = None


@dataclass
class CurveView:
    """The panels of one model for a binning-free kind, and what the figure must say."""

    kind: str
    panels: list[CurvePanel]
    notes: list[str]


def smooth_panel(pred: Predictions, notion: str, k: int | None, level: float, band: bool):
    """The smooth reliability curve of one score column (band: bootstrap or none)."""
    from calibration_core.measures import smooth_reliability_curve

    return smooth_reliability_curve(
        pred,
        notion=notion,
        class_index=k,
        n_resamples=SMOOTH_RESAMPLES if band else 0,
        level=level,
        seed=0,
    )


def cumulative_panel(pred: Predictions, notion: str, k: int | None, level: float):
    """``(thinned curve, band half-width at its points, test of the full curve)``."""
    from calibration_core.measures import cumulative_differences
    from calibration_core.measures.cumulative import cumulative_test_from_curve

    curve = cumulative_differences(pred, notion=notion, class_index=k)
    thin = curve.thinned(CURVE_POINTS)
    return thin, thin.band(level), cumulative_test_from_curve(curve)


def _one_panel(
    store: DataStore | None, variant: Variant, label, k, view: ViewSettings, band: bool
) -> CurvePanel:
    panel = CurvePanel(variant.calibrator, label)
    key = (view.kind, variant.handle, view.notion, k, view.level)
    if view.kind == "smooth":

        def compute():
            return smooth_panel(variant.pred, view.notion, k, view.level, band)

        panel.smooth = compute() if variant.handle is None else store.memo((*key, band), compute)
    else:

        def compute():
            return cumulative_panel(variant.pred, view.notion, k, view.level)

        result = compute() if variant.handle is None else store.memo(key, compute)
        panel.cumulative, panel.band, panel.test = result
    return panel


def _smooth_band(view: ViewSettings, n_classes: int, found: list) -> tuple[bool, list[str]]:
    """Whether smooth panels get their bootstrap band, and the note when they do not."""
    if view.kind != "smooth" or view.band == "none":
        return False, []
    n_panels = n_classes * len(found)
    n_rows = n_classes * sum(v.pred.n_samples for v in found if v.pred is not None)
    if n_panels > MAX_SMOOTH_BANDS:
        why = f"{n_panels} panels (at most {MAX_SMOOTH_BANDS} get one); pick one class for it"
    elif n_rows > MAX_BAND_ROWS:
        why = f"{n_rows:,} rows over the panels (at most {MAX_BAND_ROWS:,}: it would take too long)"
    else:
        return True, []
    return False, [f"no bootstrap band: {why}"]


def curve_view(
    store: DataStore,
    info: ModelInfo,
    maps: tuple[str, ...],
    heldout: HeldOut,
    view: ViewSettings,
    pending: str = PENDING,
    rows: list[tuple[int | None, str | None]] | None = None,
) -> CurveView:
    """The smooth or cumulative panels of one model (``view.kind`` decides).

    ``rows``: the ``(column, class label)`` panel rows to draw per calibrator,
    the binned view's (:attr:`app.analysis.ModelView.class_rows`: in "all
    classes" only the worst few); default every target of the notion.

    Raises
    ------
    CalibrationInputError
        As :func:`app.analysis.targets` (binary notion on K != 2, unknown class).
    """
    rows = targets(info, view) if rows is None else rows
    found = variants(store, info, maps, heldout, pending)
    return variants_curve_view(store, found, rows, view)


def variants_curve_view(
    store: DataStore | None,
    found: list[Variant],
    rows: list[tuple[int | None, str | None]],
    view: ViewSettings,
) -> CurveView:
    """The smooth or cumulative panels of the given calibrators' predictions.

    What :func:`curve_view` draws for a model of the store, and what a
    dataset's maps draw from the held-out predictions of their sample
    (:func:`app.dataset_view.maps_view`): variants without a handle are
    computed on every call (``store`` may then be None), the others kept in
    the store's memo.
    """
    band, notes = _smooth_band(view, len(rows), found)
    panels: list[CurvePanel] = []
    for variant in found:
        for k, label in rows:
            if variant.pred is None:
                panels.append(CurvePanel(variant.calibrator, label, message=variant.message))
            else:
                panels.append(_one_panel(store, variant, label, k, view, band))
    return CurveView(view.kind, panels, notes)


#: Why a whole dataset has no smooth curve from its cells (the page's note, docs/dask.md).
SMOOTH_FROM_CELLS = (
    "Smooth diagram: on the sample only. Its kernel weighs each row by where its score "
    "lies, which the cells do not keep (they are up to 0.01 wide at both ends of [0, 1], "
    "where most rows of an overconfident network are): drawn from the cells' means, the "
    "curve moved by up to 0.048 (DenseNet on CIFAR-100, same bandwidth), and its automatic "
    "bandwidth is a fixed point on the rows. No bound in the cell width holds."
)


def summary_cumulative_panel(summary, notion: str, k: int | None, label, level: float):
    """One cumulative panel of a whole dataset from a model's cells (label: its class)."""
    from calibration_core.distributed.cumulative import summary_cumulative

    cells = summary_cumulative(summary, notion, k)
    panel = CurvePanel(UNCALIBRATED, label, cumulative=cells.curve, cells=cells)
    panel.band, panel.test = cells.curve.band(level), cells.test()
    return panel


def summary_curve_view(
    summary, rows: list[tuple[int | None, str | None]], view: ViewSettings
) -> CurveView:
    """The cumulative panels of a dataset model's uncalibrated scores, one per panel row.

    ``summary``: its :class:`~calibration_core.distributed.ModelSummary`;
    ``rows``: as :func:`variants_curve_view`'s. Milliseconds: at most 3,098
    points a panel, no rows read.
    """
    panels = [
        summary_cumulative_panel(summary, view.notion, k, label, view.level) for k, label in rows
    ]
    return CurveView("cumulative", panels, [CELLS_NOTE])


#: The figure's note of a dataset's cumulative panels.
CELLS_NOTE = "exact at the cell edges (markers) · grey: its range between edges"
