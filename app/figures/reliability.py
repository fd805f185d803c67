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

import math

import numpy as np
import plotly.graph_objects as go

from ..analysis import UNCALIBRATED, ModelView, Panel
from ..settings import BANDS, HeldOut, ViewSettings
from .common import (
    CALIBRATED_COLOUR,
    PANEL_COLUMNS,
    UNCALIBRATED_COLOUR,
    figure_frame,
    perfect_calibration_trace,
    plot_text,
    rgba,
    view_title,
    wrapped_text,
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


def panel_title(panel: Panel, view: ViewSettings) -> str:
    """A panel's title: the calibrator, and the class in one-vs-rest views.

    In the "all classes" grid only the class: the row's y axis names the calibrator.
    """
    if panel.title is not None:
        return panel.title
    if view.all_classes:
        return f"class {panel.class_label}"
    if view.notion == "class" and panel.class_label is not None:
        return f"{panel.calibrator} · class {panel.class_label}"
    return panel.calibrator


def panel_positions(
    panels: list[Panel], view: ViewSettings, side_by_side: bool, compact: bool | None = None
) -> tuple[list[tuple[int, int]], int, int]:
    """``(row, column)`` of every panel, the number of rows and of columns.

    Figures shown side by side get fewer columns. In the "all classes" view
    (``compact``, by default ``view.all_classes``) each calibrator's panels
    start on a new row, in rows of even length.
    """
    compact = view.all_classes if compact is None else compact
    max_cols = PANEL_COLUMNS[compact][side_by_side]
    if not compact:
        cols = min(len(panels), max_cols) or 1
        return [divmod(i, cols) for i in range(len(panels))], math.ceil(len(panels) / cols), cols
    groups: dict[str, int] = {}
    for panel in panels:
        groups[panel.calibrator] = groups.get(panel.calibrator, 0) + 1
    largest = max(groups.values(), default=1)
    cols = math.ceil(largest / math.ceil(largest / max_cols))  # balanced rows: 4 -> 2 x 2
    positions: list[tuple[int, int]] = []
    row = 0
    for count in groups.values():
        positions += [(row + i // cols, i % cols) for i in range(count)]
        row += math.ceil(count / cols)
    return positions, max(row, 1), cols


def _axis_names(i: int) -> tuple[str, str, str, str]:
    """Layout keys and trace references of panel ``i``: (rel axis suffix, hist axis suffix)."""
    a, b = 2 * i + 1, 2 * i + 2
    rel = "" if a == 1 else str(a)
    return rel, str(b), f"x{rel}", f"x{b}"


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


# Pixel layout of one grid row: title, reliability axes, gap, histogram (then tick
# labels, up to the row height); compact rows for the "all classes" small multiples.
_ROW_PX = {False: (26, 190, 8, 52, PANEL_HEIGHT), True: (20, 132, 0, 0, 180)}
_MARGIN = {"l": 64, "r": 16, "t": 100, "b": 52}
_H_SPACING = 0.045


def _domains(n_rows: int, n_cols: int, compact: bool):
    """x domain of each column and (rel, hist) y domains of each row, as paper fractions."""
    title_px, rel_px, gap_px, hist_px, row_px = _ROW_PX[compact]
    plot_px = row_px * n_rows - 24
    width = (1.0 - _H_SPACING * (n_cols - 1)) / n_cols
    x_domains = [
        (c * (width + _H_SPACING), c * (width + _H_SPACING) + width) for c in range(n_cols)
    ]

    def frac(px: float) -> float:
        return min(max(1.0 - px / plot_px, 0.0), 1.0)

    y_domains = []
    for r in range(n_rows):
        top = r * row_px + title_px
        rel = (frac(top + rel_px), frac(top))
        hist_top = top + rel_px + gap_px
        hist = (frac(hist_top + hist_px), frac(hist_top))
        y_domains.append((rel, hist))
    return x_domains, y_domains, plot_px


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
        Panel ``i`` (at :func:`panel_positions`) draws on
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
    the per-group diagrams, :mod:`app.group_view`, use them too); ``heldout`` None:
    no held-out scheme in the subtitle (no map is drawn).
    """
    compact = view.all_classes if compact is None else compact
    panels = mv.panels
    positions, n_rows, n_cols = panel_positions(panels, view, side_by_side, compact)
    x_domains, y_domains, plot_px = _domains(n_rows, n_cols, compact)
    row_counts = {} if compact else histogram_row_ranges(panels, positions)
    data: list[dict] = []
    layout: dict = {}
    annotations: list[dict] = []
    legend_done: set[str] = set()
    for i, panel in enumerate(panels):
        r, c = positions[i]
        (rel_y, hist_y), x_dom = y_domains[r], x_domains[c]
        if compact:
            layout.update(_compact_axes(i, view, panel, x_dom, rel_y, left=c == 0))
        else:
            axes = _panel_axes(i, view, x_dom, rel_y, hist_y, left=c == 0, bottom=r == n_rows - 1)
            axes[f"yaxis{_axis_names(i)[1]}"]["range"] = row_counts[r]
            layout.update(axes)
        annotations.append(_panel_title(panel, view, x_dom, rel_y))
        traces, notes = _panel_traces(i, panel, view, legend_done, compact)
        data += traces
        annotations += notes
    layout.update(_figure_layout(mv, view, heldout, plot_px, annotations, side_by_side))
    return {"data": data, "layout": layout}


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


def _panel_axes(
    i: int, view: ViewSettings, x_dom, rel_y, hist_y, *, left: bool, bottom: bool
) -> dict:
    """The four axes of panel ``i``: reliability x/y above, histogram x/y below.

    Every panel's reliability axes match the first panel's; only the left
    column titles its y axes and only the bottom row its score axis.
    """
    rel, hist, rel_ref, hist_ref = _axis_names(i)
    return {
        f"xaxis{rel}": {
            "domain": x_dom,
            "anchor": f"y{rel}",
            "range": [0, 1],
            "dtick": 0.25,
            "tick0": 0,
            "showticklabels": False,
            **({} if i == 0 else {"matches": "x"}),
        },
        f"yaxis{rel}": {
            "domain": rel_y,
            "anchor": rel_ref,
            "range": [-0.02, 1.02],
            "dtick": 0.25,
            "tick0": 0,
            "title": {"text": frequency_axis_label(view) if left else ""},
            **({} if i == 0 else {"matches": "y"}),
        },
        f"xaxis{hist}": {
            "domain": x_dom,
            "anchor": f"y{hist}",
            "range": [0, 1],
            "dtick": 0.25,
            "tick0": 0,
            "matches": "x",
            "title": {"text": score_axis_label(view) if bottom else ""},
        },
        f"yaxis{hist}": {
            "domain": hist_y,
            "anchor": hist_ref,
            "nticks": 3,
            "showticklabels": left,
            "title": {"text": "count" if left else ""},
        },
    }


def _compact_axes(i: int, view: ViewSettings, panel: Panel, x_dom, rel_y, *, left: bool) -> dict:
    """The two axes of panel ``i`` in the "all classes" grid (fixed ranges, not linked).

    Only the left column labels its y axis, with the calibrator's name.
    """
    rel, _, rel_ref, _ = _axis_names(i)
    return {
        f"xaxis{rel}": {
            "domain": x_dom,
            "anchor": f"y{rel}",
            "range": [0, 1],
            "dtick": 0.5,
            "tick0": 0,
            "title": {"text": ""},
        },
        f"yaxis{rel}": {
            "domain": rel_y,
            "anchor": rel_ref,
            "range": [-0.02, 1.02],
            "dtick": 0.5,
            "tick0": 0,
            "showticklabels": left,
            "title": {"text": plot_text(panel.calibrator) if left else ""},
        },
    }


def _panel_title(panel: Panel, view: ViewSettings, x_dom, rel_y) -> dict:
    """The panel's title, centred above its reliability plot."""
    return {
        "text": plot_text(panel_title(panel, view)),
        "x": (x_dom[0] + x_dom[1]) / 2,
        "y": rel_y[1],
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "bottom",
        "yshift": 2,
        "showarrow": False,
        "font": {"size": 13},
    }


def _panel_traces(
    i: int, panel: Panel, view: ViewSettings, legend_done: set[str], compact: bool
) -> tuple[list[dict], list[dict]]:
    """Panel ``i``'s traces (diagonal, band, points, histogram) and its in-plot notes.

    ``legend_done`` names the trace kinds already in the legend; each kind
    is shown there once per figure (it is updated here). A panel without a
    curve gets the diagonal and its message instead.
    """
    rel, hist, rel_ref, _ = _axis_names(i)
    traces = [perfect_calibration_trace(rel, "diagonal" not in legend_done)]
    legend_done.add("diagonal")
    if panel.curve is None:
        return traces, [_in_plot_note(wrapped_text(panel.message or "no data"), rel, rel_ref)]
    colour = UNCALIBRATED_COLOUR if panel.calibrator == UNCALIBRATED else CALIBRATED_COLOUR
    if BANDS[view.band][0] == "consistency":
        fill, band_name = CONSISTENCY_FILL, f"consistency band {view.level:.0%}"
    else:
        fill, band_name = rgba(colour, 0.2), f"{view.describe_band()} interval"
    band = _band_trace(panel, fill, band_name, "band" not in legend_done, rel)
    if band is not None:
        traces.append(band)
        legend_done.add("band")
    traces.append(_point_trace(panel, colour, "curve" not in legend_done, rel))
    legend_done.add("curve")
    if not compact:
        traces.append(_histogram_trace(panel, hist))
    return traces, [_ece_label(panel.curve.ece, rel, rel_ref)]


def _in_plot_note(text: str, rel: str, rel_ref: str) -> dict:
    """A grey message in the middle of a reliability plot (a panel with no curve)."""
    return {
        "text": text,
        "x": 0.5,
        "y": 0.5,
        "xref": f"{rel_ref} domain",
        "yref": f"y{rel} domain",
        "showarrow": False,
        "font": {"color": "#444444"},
    }


def _ece_label(ece: float, rel: str, rel_ref: str) -> dict:
    """The panel's ECE in its top-left corner."""
    return {
        "text": f"ECE {ece:.4f}",
        "x": 0.03,
        "y": 0.97,
        "xref": f"{rel_ref} domain",
        "yref": f"y{rel} domain",
        "xanchor": "left",
        "yanchor": "top",
        "showarrow": False,
        "font": {"size": 11, "color": "#222222"},
        "bgcolor": "rgba(255,255,255,0.8)",
    }


def _figure_layout(
    mv: ModelView,
    view: ViewSettings,
    heldout: HeldOut | None,
    plot_px: float,
    annotations: list,
    side_by_side: bool = False,
) -> dict:
    """The figure-wide layout: title and subtitle, size, template, legend, annotations.

    A figure beside another is narrow: its subtitle takes two lines and the
    top margin leaves room for a legend wrapped onto two lines.
    """
    rest = [] if heldout is None else [heldout.describe()]
    if mv.n_scored is not None:
        rest.append(f"N = {mv.n_scored:,} scored rows")
    if mv.classes_note() is not None:
        rest.append(mv.classes_note())
    parts = [plot_text(view_title(view)), plot_text(" · ".join(rest))]
    subtitle = "<br>".join(parts) if side_by_side else " · ".join(parts)
    margin = {**_MARGIN, "t": _MARGIN["t"] + 50} if side_by_side else _MARGIN
    height = plot_px + margin["t"] + margin["b"]
    frame = figure_frame(mv.info.name, subtitle, height, plot_px, margin, annotations)
    return {**frame, "bargap": 0}
