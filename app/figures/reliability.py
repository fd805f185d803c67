"""The grid of reliability diagrams of one model: :func:`reliability_figure`.

One panel per calibrator (uncalibrated first), sharing their axes. The score
histograms of a row share one count axis, so their heights compare at a
glance. The one-vs-rest "all classes" view is a compact grid instead: one
small panel per calibrator and shown class, each calibrator from a new row
(named on its y axis), without histograms and without linked zoom, because
Plotly's drawing time grows with the number of axes (3 models x 36 panels
with four linked axes each took about 8 s in Chromium, 1.6-1.9 s without
the histograms and links, on a busy 2-core machine).
In each panel:

* the diagonal (perfect calibration);
* the band (binomial interval of each bin's frequency, or the consistency
  band of a calibrated forecaster), shaded, at the bins' mean scores;
* the curve: points at each bin's **mean score** (``ReliabilityCurve.x``,
  never the bin centre) against the observed frequency, marker area growing
  with the bin count; empty bins are left out;
* beneath, the histogram of the scores in the same bins.

Hovering a point gives the bin's edges, count, mean score, frequency and
interval. Colours are Okabe-Ito (colour-blind safe). Every user-supplied
name (model, class) is HTML-escaped (:func:`app.figures.common.plot_text`).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..analysis import ModelView, Panel
from ..settings import BANDS, HeldOut, ViewSettings
from .common import perfect_calibration_trace, plot_text, rgba, view_title
from .grid import (
    PANEL_COLUMNS,
    GridCell,
    RowLayout,
    axis_pair,
    centre_note,
    colour_of,
    corner_note,
    grid_figure,
    legend_once,
    linked,
    panel_grid,
    panel_title,
)

CONSISTENCY_FILL = "rgba(230, 159, 0, 0.28)"
HISTOGRAM_COLOUR = "#8c8c8c"
PANEL_HEIGHT = 300


def score_axis_label(view: ViewSettings) -> str:
    """x-axis title of the notion."""
    if view.notion == "confidence":
        return "confidence"
    if view.notion == "binary":
        return "P(positive)"
    return "P(class)"


def frequency_axis_label(view: ViewSettings) -> str:
    """y-axis title of the notion."""
    return "accuracy" if view.notion == "confidence" else "observed frequency"


def _point_trace(panel: Panel, colour: str, show_legend: bool, ax: str) -> dict:
    curve = panel.curve
    keep = curve.count > 0
    x, y, count = curve.x[keep], curve.y[keep], curve.count[keep]
    lo_edge, hi_edge = curve.edges[:-1][keep], curve.edges[1:][keep]
    if panel.band is not None:
        band_lo, band_hi = (np.asarray(b)[keep] for b in panel.band)
    else:
        band_lo = band_hi = np.full(x.shape, np.nan)
    custom = np.column_stack([lo_edge, hi_edge, count, band_lo, band_hi])
    interval = (
        "<br>interval [%{customdata[3]:.3f}, %{customdata[4]:.3f}]"
        if panel.band is not None
        else ""
    )
    size = 6.0 + 12.0 * np.sqrt(count / max(int(count.max(initial=1)), 1))
    return {
        "type": "scatter",
        "x": x,
        "y": y,
        "xaxis": f"x{ax}",
        "yaxis": f"y{ax}",
        "mode": "lines+markers",
        # Points at 0 or 1 sit on the panel edge: draw them whole.
        "cliponaxis": False,
        "name": "observed frequency at mean score",
        "legendgroup": "curve",
        "showlegend": show_legend,
        "line": {"color": colour, "width": 1.5},
        "marker": {"color": colour, "size": size, "line": {"color": "white", "width": 0.8}},
        "customdata": custom,
        "hovertemplate": (
            "bin [%{customdata[0]:.3f}, %{customdata[1]:.3f}]<br>count %{customdata[2]:,}"
            "<br>mean score %{x:.4f}<br>frequency %{y:.4f}" + interval + "<extra></extra>"
        ),
    }


def _band_trace(panel: Panel, fill: str, name: str, show_legend: bool, ax: str) -> dict | None:
    if panel.band is None:
        return None
    curve = panel.curve
    lo, hi = (np.asarray(b) for b in panel.band)
    keep = (curve.count > 0) & np.isfinite(lo) & np.isfinite(hi)
    if not keep.any():
        return None
    x = curve.x[keep]
    return {
        "type": "scatter",
        "x": np.concatenate([x, x[::-1]]),
        "y": np.concatenate([hi[keep], lo[keep][::-1]]),
        "xaxis": f"x{ax}",
        "yaxis": f"y{ax}",
        "fill": "toself",
        "fillcolor": fill,
        "line": {"width": 0},
        "mode": "lines",
        "name": name,
        "legendgroup": "band",
        "showlegend": show_legend,
        "hoverinfo": "skip",
    }


def _histogram_trace(panel: Panel, ax: str) -> dict:
    hist = _panel_histogram(panel)
    lo, hi = hist.edges[:-1], hist.edges[1:]
    return {
        "type": "bar",
        "x": (lo + hi) / 2.0,
        "y": hist.count,
        "width": hi - lo,
        "xaxis": f"x{ax}",
        "yaxis": f"y{ax}",
        "marker": {"color": HISTOGRAM_COLOUR, "line": {"color": "white", "width": 0.5}},
        "customdata": np.column_stack([lo, hi]),
        "hovertemplate": "bin [%{customdata[0]:.3f}, %{customdata[1]:.3f}]<br>count %{y:,}"
        "<extra></extra>",
        "showlegend": False,
        "name": "scores per bin",
    }


#: The rows of the grid (:class:`app.figures.grid.RowLayout`), by compactness. A row:
#: title, reliability plot, gap, histogram, then tick labels. The compact rows of the
#: "all classes" small multiples keep an empty histogram slot, so that panel ``i``'s
#: reliability axes are ``x{2i+1}/y{2i+1}`` in both grids.
ROWS = {
    False: RowLayout(row_px=PANEL_HEIGHT, plots=((26, 190), (224, 52)), trim_px=24),
    True: RowLayout(row_px=180, plots=((20, 132), (152, 0)), trim_px=24),
}
MARGIN = {"l": 64, "r": 16, "t": 100, "b": 52}
#: Extra top margin of a figure beside another (a two-line subtitle, a wrapped legend).
SIDE_BY_SIDE_PX = 50


def reliability_figure(
    mv: ModelView, view: ViewSettings, heldout: HeldOut, side_by_side: bool = False
) -> go.Figure:
    """The grid of reliability diagrams of one model.

    Parameters
    ----------
    mv : ModelView
        Panels from :func:`app.analysis.model_view` (uncalibrated first).
    view : ViewSettings
        Notion, binning and band, stated in the title.
    heldout : HeldOut
        Stated in the subtitle.
    side_by_side : bool
        Whether the page shows several models side by side (fewer columns).

    Returns
    -------
    plotly.graph_objects.Figure
        Panel ``i`` (at :func:`app.figures.grid.panel_positions`) draws on
        axes ``x{2i+1}/y{2i+1}`` (reliability; ``x``/``y`` for panel 0) and
        ``x{2i+2}/y{2i+2}`` (histogram). Built as a plain dict and wrapped
        without re-validation, because validating dozens of traces costs
        more than the whole re-binning.
    """
    return go.Figure(reliability_figure_dict(mv, view, heldout, side_by_side), skip_invalid=True)


def reliability_figure_dict(
    mv: ModelView,
    view: ViewSettings,
    heldout: HeldOut | None,
    side_by_side: bool = False,
    compact: bool | None = None,
) -> dict:
    """:func:`reliability_figure` as a plain ``{"data", "layout"}`` dict (what dcc.Graph takes).

    ``compact``: draw the small multiples of "all classes" (default: ``view.all_classes``;
    the per-group diagrams, :mod:`app.groups.columns`, use them too); ``heldout`` None:
    no held-out scheme in the subtitle (no map is drawn).
    """
    compact = view.all_classes if compact is None else compact
    panels = mv.panels
    max_cols = PANEL_COLUMNS[compact][side_by_side]
    grid = panel_grid(panels, ROWS[compact], max_cols, rows_by_calibrator=compact)
    row_counts = {} if compact else histogram_row_ranges(panels, grid.positions)
    legend: set[str] = set()

    def draw(panel: Panel, cell: GridCell) -> tuple[dict, list[dict], list[dict]]:
        if compact:
            axes = _compact_axes(cell, panel)
        else:
            axes = _panel_axes(cell, view, row_counts[cell.row])
        return (axes, *_panel_traces(cell, panel, view, legend, compact))

    figure = grid_figure(
        panels,
        grid,
        [_title(panel, view) for panel in panels],
        draw,
        name=mv.info.name,
        subtitle=_subtitle(mv, view, heldout, side_by_side),
        margin={**MARGIN, "t": MARGIN["t"] + SIDE_BY_SIDE_PX} if side_by_side else MARGIN,
    )
    figure["layout"]["bargap"] = 0
    return figure


def _title(panel: Panel, view: ViewSettings) -> str:
    """The panel's own title (a group's), else the calibrator and class.

    In the "all classes" grid only the class: the row's y axis names the calibrator.
    """
    if panel.title is not None:
        return panel.title
    return panel_title(panel, view, class_only=view.all_classes)


def _panel_histogram(panel: Panel):
    """The panel's score histogram (its own bins' statistics when none was given)."""
    if panel.curve is None:
        return None
    return panel.histogram if panel.histogram is not None else panel.curve.stats


def histogram_row_ranges(
    panels: list[Panel], positions: list[tuple[int, int]]
) -> dict[int, list[float]]:
    """One count-axis range ``[0, top]`` per grid row, shared by the row's histograms.

    ``top`` leaves 8 % headroom above the row's tallest bar, so a panel's
    bars read against its neighbours' (one panel's spike flattens the rest
    of its row, which is the honest picture).
    """
    tallest: dict[int, float] = {}
    for panel, (r, _) in zip(panels, positions, strict=True):
        hist = _panel_histogram(panel)
        top = float(np.max(hist.count, initial=0)) if hist is not None else 0.0
        tallest[r] = max(tallest.get(r, 0.0), top)
    return {r: [0.0, max(top, 1.0) * 1.08] for r, top in tallest.items()}


def _panel_axes(cell: GridCell, view: ViewSettings, count_range: list[float]) -> dict:
    """The four axes of a panel: reliability x/y above, histogram x/y below.

    Every panel's reliability axes match the first panel's; only the left
    column titles its y axes and only the bottom row its score axis.
    ``count_range``: the histogram's, shared by its row (:func:`histogram_row_ranges`).
    """
    rel, hist = cell.suffixes
    rel_y, hist_y = cell.y_domains
    tick = {"range": [0, 1], "dtick": 0.25, "tick0": 0}
    frequency = frequency_axis_label(view) if cell.left else ""
    score = score_axis_label(view) if cell.bottom else ""
    return {
        **axis_pair(
            rel,
            cell.x_domain,
            rel_y,
            {**tick, "showticklabels": False, **linked(cell, "x")},
            {**tick, "range": [-0.02, 1.02], "title": {"text": frequency}, **linked(cell, "y")},
        ),
        **axis_pair(
            hist,
            cell.x_domain,
            hist_y,
            {**tick, "matches": "x", "title": {"text": score}},
            {
                "nticks": 3,
                "showticklabels": cell.left,
                "title": {"text": "count" if cell.left else ""},
                "range": count_range,
            },
        ),
    }


def _compact_axes(cell: GridCell, panel: Panel) -> dict:
    """The two axes of a panel in the compact grid (fixed ranges, not linked).

    Only the left column labels its y axis, with the calibrator's name.
    """
    tick = {"range": [0, 1], "dtick": 0.5, "tick0": 0}
    name = plot_text(panel.calibrator) if cell.left else ""
    return axis_pair(
        cell.suffixes[0],
        cell.x_domain,
        cell.y_domains[0],
        {**tick, "title": {"text": ""}},
        {**tick, "range": [-0.02, 1.02], "showticklabels": cell.left, "title": {"text": name}},
    )


def _panel_traces(
    cell: GridCell, panel: Panel, view: ViewSettings, legend: set[str], compact: bool
) -> tuple[list[dict], list[dict]]:
    """A panel's traces (diagonal, band, points, histogram) and its in-plot notes.

    ``legend`` names the trace kinds already in the legend; each kind is
    shown there once per figure (it is updated here). A panel without a
    curve gets the diagonal and its message instead.
    """
    rel, hist = cell.suffixes
    traces = [perfect_calibration_trace(rel, legend_once("diagonal", legend))]
    if panel.curve is None:
        return traces, [centre_note(panel.message or "no data", rel)]
    colour = colour_of(panel)
    if BANDS[view.band][0] == "consistency":
        fill, band_name = CONSISTENCY_FILL, f"consistency band {view.level:.0%}"
    else:
        fill, band_name = rgba(colour, 0.2), f"{view.describe_band()} interval"
    band = _band_trace(panel, fill, band_name, "band" not in legend, rel)
    if band is not None:
        traces.append(band)
        legend.add("band")
    traces.append(_point_trace(panel, colour, legend_once("curve", legend), rel))
    if not compact:
        traces.append(_histogram_trace(panel, hist))
    return traces, [corner_note(f"ECE {panel.curve.ece:.4f}", rel)]


def _subtitle(
    mv: ModelView, view: ViewSettings, heldout: HeldOut | None, side_by_side: bool
) -> str:
    """The view, the held-out scheme and the rows scored (Plotly text).

    A figure beside another is narrow: its subtitle then takes two lines.
    """
    rest = [] if heldout is None else [heldout.describe()]
    if mv.n_scored is not None:
        rest.append(f"N = {mv.n_scored:,} scored rows")
    if mv.classes_note() is not None:
        rest.append(mv.classes_note())
    parts = [plot_text(view_title(view)), plot_text(" · ".join(rest))]
    return "<br>".join(parts) if side_by_side else " · ".join(parts)
