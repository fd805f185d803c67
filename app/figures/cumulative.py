"""The cumulative-differences diagram (Tygert 2021; Arrieta-Ibarra et al. 2022).

In each panel (grid of :mod:`app.figures.curve_grid`): the cumulative
difference ``D_i = (1/N) sum_{j <= i} (y_j - s_j)`` of labels and scores
against the rank ``i/N`` of the score (the core's
:class:`~calibration_core.measures.CumulativeDifferences`, thinned to about
2000 points, extremes kept); the band ``0 +- z sd(D_i)`` expected under
calibration, shaded around 0; and the KS calibration error ``max |D|`` with
its p-value and Kuiper's p-value in the corner (computed on the full curve).
A calibrated model stays inside the band; a steady slope over a stretch of
ranks is a miscalibrated stretch of scores, and the slope is the gap there
(upwards: more events than predicted).

A server-side dataset's panel (:func:`app.curves.summary_curve_view`) is drawn
from its cell statistics: the curve with a marker at every cell edge, where
it is exact, joined by a dotted line (the path between two edges is not
known), a grey box per cell for where the curve can be between two edges,
and the KS error, its p-value and Kuiper's p-value as ranges (each shown as
one number when both ends agree to the digits shown).
"""

from __future__ import annotations

import numpy as np

from ..curves import CurvePanel, CurveView
from ..diagnostics.tables import format_p
from ..settings import HeldOut, ViewSettings
from .common import perfect_calibration_trace
from .curve_grid import curve_figure
from .grid import colour_of, corner_note, legend_once

BAND_FILL = "rgba(230, 159, 0, 0.28)"
CELLS_FILL = "rgba(90, 90, 90, 0.30)"


def _band(panel: CurvePanel, level: float, s: str, legend: set) -> dict:
    x, half = panel.cumulative.rank, panel.band
    return {
        "type": "scatter",
        "x": np.concatenate([x, x[::-1]]),
        "y": np.concatenate([half, -half[::-1]]),
        "xaxis": f"x{s}",
        "yaxis": f"y{s}",
        "fill": "toself",
        "fillcolor": BAND_FILL,
        "line": {"width": 0},
        "mode": "lines",
        "name": f"expected under calibration {level:.0%}",
        "legendgroup": "band",
        "showlegend": legend_once("band", legend),
        "hoverinfo": "skip",
    }


def _within_cells(panel: CurvePanel, s: str, legend: set) -> dict:
    """One box per cell, spanning its ranks and the curve's range inside it."""
    rank, cells = panel.cumulative.rank, panel.cells
    x = np.repeat(rank, 2)[1:-1]  # r0 r1 r1 r2 r2 ... r_M
    top, bottom = np.repeat(cells.upper[1:], 2), np.repeat(cells.lower[1:], 2)
    return {
        "type": "scatter",
        "x": np.concatenate([x, x[::-1]]),
        "y": np.concatenate([top, bottom[::-1]]),
        "xaxis": f"x{s}",
        "yaxis": f"y{s}",
        "fill": "toself",
        "fillcolor": CELLS_FILL,
        "line": {"width": 0},
        "mode": "lines",
        "name": "range between cell edges",
        "legendgroup": "cells",
        "showlegend": legend_once("cells", legend),
        "hoverinfo": "skip",
    }


def _curve(panel: CurvePanel, s: str, legend: set) -> dict:
    curve = panel.cumulative
    edges, line = {}, {"color": colour_of(panel), "width": 1.5}
    if panel.cells is not None:  # exact at the cell edges only: mark them, dot the path between
        edges = {"mode": "lines+markers", "marker": {"size": 3, "color": colour_of(panel)}}
        line["dash"] = "dot"
    return {
        "type": "scatter",
        "x": curve.rank,
        "y": curve.difference,
        "xaxis": f"x{s}",
        "yaxis": f"y{s}",
        "mode": "lines",
        "line": line,
        "name": "cumulative difference (labels − scores)",
        "legendgroup": "curve",
        "showlegend": legend_once("curve", legend),
        "customdata": curve.score,
        "hovertemplate": "rank %{x:.3f}<br>score %{customdata:.4f}"
        "<br>difference %{y:.5f}<extra></extra>",
        **edges,
    }


def cumulative_note(test) -> str:
    """The panel's corner: KS error with its p-value, Kuiper's p-value."""
    return (
        f"KS {test.ks_error:.4f} (p {format_p(test.ks_p_value)})"
        f"<br>Kuiper p {format_p(test.kuiper_p_value)}"
    )


def _span(bounds: tuple[float, float], show) -> str:
    """``"a"`` when both ends show alike, else ``"a–b"``."""
    low, high = (show(v) for v in bounds)
    return low if low == high else f"{low}–{high}"


def cells_note(bounds) -> str:
    """The corner of a panel from the cells: KS, its p-value and Kuiper's, as ranges."""
    return (
        f"KS {_span(bounds.ks_error, lambda v: f'{v:.4f}')} "
        f"(p {_span(bounds.ks_p_value, format_p)})"
        f"<br>Kuiper p {_span(bounds.kuiper_p_value, format_p)}"
    )


def cumulative_panel_traces(
    panel: CurvePanel, s: str, legend: set, level: float = 0.95, band: bool = True
) -> tuple[list[dict], list[dict]]:
    """Band, zero line, (a dataset's range between cell edges) and curve, and the KS/Kuiper note."""
    traces = [_band(panel, level, s, legend)] if band else []
    traces.append(perfect_calibration_trace(s, legend_once("diagonal", legend), y_end=0.0))
    if panel.cells is None:
        return [*traces, _curve(panel, s, legend)], [corner_note(cumulative_note(panel.test), s)]
    traces += [_within_cells(panel, s, legend), _curve(panel, s, legend)]
    return traces, [corner_note(cells_note(panel.test), s)]


def y_limit(cv: CurveView, band: bool) -> float:
    """Half the shared y range: 10% above the largest ``|D|`` (and band) of every panel."""
    top = 0.0
    for panel in cv.panels:
        if panel.cumulative is not None:
            top = max(top, float(np.max(np.abs(panel.cumulative.difference))))
            if panel.cells is not None:
                top = max(top, float(np.abs(panel.cells.lower).max()), panel.cells.upper.max())
            if band:
                top = max(top, float(np.max(panel.band)))
    return 1.1 * top if top > 0 else 0.01


def cumulative_figure_dict(
    name: str,
    cv: CurveView,
    view: ViewSettings,
    heldout: HeldOut,
    n_scored: int | None,
    side_by_side: bool = False,
) -> dict:
    """The grid of cumulative-difference plots of one model, as a plain figure dict.

    Parameters
    ----------
    name : str
        The model's name.
    cv : CurveView
        From :func:`app.curves.curve_view` with ``view.kind == "cumulative"``.
    view, heldout : ViewSettings, HeldOut
        The band level is the view's; band "none" leaves the band out.
    n_scored : int or None

    side_by_side : bool
        Beside other models' figures (:func:`app.figures.curve_grid.curve_figure`).

    Returns
    -------
    dict
        ``{"data", "layout"}``; panel ``i`` on axes ``x{i+1}/y{i+1}``, which
        share one y range, symmetric about 0 (:func:`y_limit`).
    """
    band = view.band != "none"
    lim = y_limit(cv, band)
    axes = {
        "x": {"range": [0, 1], "dtick": 0.25, "tick0": 0},
        "y": {"range": [-lim, lim], "zeroline": False, "tickformat": ".3f", "nticks": 6},
        "x_title": "rank of the score (fraction of rows)",
        "y_title": "cumulative difference",
    }

    def draw(panel: CurvePanel, s: str, legend: set):
        return cumulative_panel_traces(panel, s, legend, view.level, band)

    return curve_figure(name, cv, view, heldout, n_scored, axes, draw, side_by_side)
