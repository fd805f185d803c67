"""The smoothed reliability diagram (Błasiok & Nakkiran 2023): :func:`smooth_figure_dict`.

In each panel (grid of :mod:`app.figures.curve_grid`): the diagonal; the
pointwise bootstrap band of the curve, shaded; the kernel-smoothed observed
frequency ``E[y | s]`` on the core's 200-point mesh; beneath, the smoothed
density of the scores (scaled to a fifth of the panel, so that stretches
with few scores, where the curve means little, show); and the smooth ECE
with its bandwidth in the corner. Where the smoothed score density is
below :data:`MIN_DENSITY` (a tenth of a uniform density) the kernel averages
almost no rows: there the band is left out and the curve is only dotted. The numbers are the core's
(:func:`calibration_core.measures.smooth_reliability_curve`).
"""

from __future__ import annotations

import numpy as np

from ..curves import CurvePanel, CurveView
from ..settings import HeldOut, ViewSettings
from .common import perfect_calibration_trace, rgba
from .curve_grid import curve_figure
from .grid import colour_of, corner_note, legend_once
from .reliability import frequency_axis_label, score_axis_label

DENSITY_COLOUR = "rgba(140, 140, 140, 0.35)"
#: The density's peak reaches this fraction of the panel's height.
DENSITY_HEIGHT = 0.2
#: The curve and band are drawn only where the smoothed score density is at least this
#: (1 is a uniform density): elsewhere the kernel has almost no rows to average.
MIN_DENSITY = 0.1


def shown(curve) -> np.ndarray:
    """Mesh points where the curve is drawn (enough score density), shape (M,)."""
    return curve.density >= MIN_DENSITY


def _density(curve, s: str, legend: set) -> dict:
    peak = float(np.max(curve.density)) or 1.0
    return {
        "type": "scatter",
        "x": curve.mesh,
        "y": curve.density / peak * DENSITY_HEIGHT,
        "xaxis": f"x{s}",
        "yaxis": f"y{s}",
        "mode": "lines",
        "fill": "tozeroy",
        "fillcolor": DENSITY_COLOUR,
        "line": {"width": 0},
        "name": "score density",
        "legendgroup": "density",
        "showlegend": legend_once("density", legend),
        "hoverinfo": "skip",
    }


def runs(mask: np.ndarray) -> list[slice]:
    """The stretches of consecutive True values of ``mask``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return [slice(a, b) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _band(curve, colour: str, s: str, legend: set) -> dict | None:
    """The bootstrap band where the curve is drawn: one closed shape per stretch.

    The shapes are separated by None, which plotly's ``fill="toself"`` closes
    one by one (a shape never bridges a stretch without scores).
    """
    keep = np.isfinite(curve.lower) & np.isfinite(curve.upper) & shown(curve)
    xs: list = []
    ys: list = []
    for run in runs(keep):
        x = curve.mesh[run]
        xs += [*x, *x[::-1], None]
        ys += [*curve.upper[run], *curve.lower[run][::-1], None]
    if not xs:
        return None
    return {
        "type": "scatter",
        "x": xs[:-1],
        "y": ys[:-1],
        "xaxis": f"x{s}",
        "yaxis": f"y{s}",
        "fill": "toself",
        "fillcolor": rgba(colour, 0.2),
        "line": {"width": 0},
        "mode": "lines",
        "name": f"bootstrap {curve.level:.0%} ({curve.n_resamples}×)",
        "legendgroup": "band",
        "showlegend": legend_once("band", legend),
        "hoverinfo": "skip",
    }


def _sparse(curve, colour: str, s: str, legend: set) -> dict:
    """The whole curve, thin and dotted: read it only where the solid curve is."""
    return {
        "type": "scatter",
        "x": curve.mesh,
        "y": curve.observed,
        "xaxis": f"x{s}",
        "yaxis": f"y{s}",
        "mode": "lines",
        "line": {"color": rgba(colour, 0.55), "width": 1, "dash": "dot"},
        "name": "few scores (dotted)",
        "legendgroup": "sparse",
        "showlegend": legend_once("sparse", legend),
        "hoverinfo": "skip",
    }


def _curve(curve, colour: str, s: str, legend: set) -> dict:
    return {
        "type": "scatter",
        "x": curve.mesh,
        "y": np.where(shown(curve), curve.observed, None),
        "xaxis": f"x{s}",
        "yaxis": f"y{s}",
        "mode": "lines",
        "line": {"color": colour, "width": 2},
        "name": "smoothed frequency",
        "legendgroup": "curve",
        "showlegend": legend_once("curve", legend),
        "hovertemplate": "score %{x:.3f}<br>smoothed frequency %{y:.4f}<extra></extra>",
    }


def smooth_panel_traces(panel: CurvePanel, s: str, legend: set) -> tuple[list[dict], list[dict]]:
    """Diagonal, density, band and curve of one panel, and its smooth ECE note."""
    curve, colour = panel.smooth, colour_of(panel)
    traces = [
        perfect_calibration_trace(s, legend_once("diagonal", legend)),
        _density(curve, s, legend),
    ]
    band = _band(curve, colour, s, legend)
    if band is not None:
        traces.append(band)
    traces += [_sparse(curve, colour, s, legend), _curve(curve, colour, s, legend)]
    sece = curve.smooth_ece
    note = f"smooth ECE {sece.value:.4f}<br>bandwidth {sece.bandwidth:.4f}"
    return traces, [corner_note(note, s)]


def smooth_figure_dict(
    name: str,
    cv: CurveView,
    view: ViewSettings,
    heldout: HeldOut,
    n_scored: int | None,
    side_by_side: bool = False,
) -> dict:
    """The grid of smoothed reliability diagrams of one model, as a plain figure dict.

    Parameters
    ----------
    name : str
        The model's name.
    cv : CurveView
        From :func:`app.curves.curve_view` with ``view.kind == "smooth"``.
    view, heldout : ViewSettings, HeldOut
    n_scored : int or None
        Rows scored (stated in the subtitle).

    side_by_side : bool
        Beside other models' figures (:func:`app.figures.curve_grid.curve_figure`).

    Returns
    -------
    dict
        ``{"data", "layout"}``; panel ``i`` on axes ``x{i+1}/y{i+1}``.
    """
    tick = {"range": [0, 1], "dtick": 0.25, "tick0": 0}
    axes = {
        "x": tick,
        "y": {**tick, "range": [-0.02, 1.02]},
        "x_title": score_axis_label(view),
        "y_title": frequency_axis_label(view),
    }
    return curve_figure(name, cv, view, heldout, n_scored, axes, smooth_panel_traces, side_by_side)
