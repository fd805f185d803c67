"""Figures of calibration by group and over time (issue 19).

* :func:`drift_figure`: ECE (the view's notion), accuracy and mean confidence
  per window, one stacked panel each on a shared window axis, with their
  bootstrap intervals as error bars when computed; the reference period's ECE
  interval is a shaded band and its upper bound a dashed line; windows whose
  interval lies above it are drawn in vermillion. Each point carries its
  window's index as ``customdata`` (the page's click shows that window).
* :func:`slice_diagrams`: reliability diagrams of some groups or windows as
  small multiples on a shared scale, drawn by the page's own grid
  (:func:`app.figures.reliability.reliability_figure_dict`).
"""

from __future__ import annotations

import numpy as np

from calibration_core import ReliabilityCurve
from calibration_core.binning import Binning, BinStatistics

from ..analysis import ModelView, Panel, band_of
from ..settings import HeldOut, ViewSettings
from ..store.records import ModelInfo
from .common import CALIBRATED_COLOUR, UNCALIBRATED_COLOUR, plot_text, wrapped_text
from .reliability import reliability_figure_dict

#: The panels of the time chart: metric, axis title.
DRIFT_PANELS = (("ece", "ECE"), ("accuracy", "accuracy"), ("confidence", "mean confidence"))
REFERENCE_COLOUR = "#8c8c8c"
#: Most small multiples drawn in one figure (the table lists every group).
MAX_DIAGRAMS = 24


def _colours(doc: dict) -> list[str]:
    colours = []
    for row in doc["windows"]:
        if row.get("flagged"):
            colours.append(UNCALIBRATED_COLOUR)
        else:
            colours.append(REFERENCE_COLOUR if row["reference"] else CALIBRATED_COLOUR)
    return colours


def has_intervals(doc: dict) -> bool:
    """Whether a ``time`` document carries bootstrap intervals (not only point estimates)."""
    return (doc.get("reference") or {}).get("ece_upper") is not None


def _column(doc: dict, key: str) -> np.ndarray:
    return np.array([np.nan if r.get(key) is None else r[key] for r in doc["windows"]], float)


def _error_bars(doc: dict, name: str) -> dict | None:
    if not has_intervals(doc):
        return None
    est = _column(doc, name)
    lower, upper = _column(doc, f"{name}_lower"), _column(doc, f"{name}_upper")
    return {
        "type": "data",
        "symmetric": False,
        "array": np.nan_to_num(upper - est),
        "arrayminus": np.nan_to_num(est - lower),
        "color": "#57606a",
        "thickness": 1,
        "width": 3,
    }


def _metric_trace(doc: dict, name: str, axis: str, colours, selected) -> dict:
    labels = [r["window"] for r in doc["windows"]]
    sizes = [r["rows"] for r in doc["windows"]]
    line_width = [3 if label == selected else 0.8 for label in labels]
    trace = {
        "type": "scatter",
        "mode": "lines+markers",
        "x": labels,
        "y": _column(doc, name),
        "xaxis": "x" if axis == "" else f"x{axis}",
        "yaxis": f"y{axis}",
        "customdata": np.column_stack([np.arange(len(labels)), sizes]),
        "line": {"color": "#b0b7bf", "width": 1},
        "marker": {
            "color": colours,
            "size": 9,
            "line": {"color": "#1f2328", "width": line_width},
        },
        "showlegend": False,
        "name": name,
        "hovertemplate": "%{x}<br>%{y:.4f}<br>%{customdata[1]:,} rows<extra></extra>",
    }
    bars = _error_bars(doc, name)
    if bars is not None:
        trace["error_y"] = bars
    return trace


def _reference_shapes(lower: float, upper: float) -> list[dict]:
    band = {
        "type": "rect",
        "xref": "x domain",
        "yref": "y",
        "x0": 0,
        "x1": 1,
        "y0": lower,
        "y1": upper,
        "fillcolor": "rgba(140, 140, 140, 0.18)",
        "line": {"width": 0},
        "layer": "below",
    }
    line = {
        "type": "line",
        "xref": "x domain",
        "yref": "y",
        "x0": 0,
        "x1": 1,
        "y0": upper,
        "y1": upper,
        "line": {"color": UNCALIBRATED_COLOUR, "width": 1.2, "dash": "dash"},
    }
    return [band, line]


def _legend_notes(has_intervals: bool) -> dict:
    text = (
        f"<span style='color:{REFERENCE_COLOUR}'>●</span> reference  "
        f"<span style='color:{CALIBRATED_COLOUR}'>●</span> window  "
        f"<span style='color:{UNCALIBRATED_COLOUR}'>●</span> ECE interval above the "
        "reference's upper bound (dashed)"
    )
    if not has_intervals:
        text = "point estimates only: intervals and flags once they are computed"
    return {
        "text": text,
        "x": 0,
        "y": 1.0,
        "xref": "paper",
        "yref": "paper",
        "xanchor": "left",
        "yanchor": "bottom",
        "yshift": 8,
        "showarrow": False,
        "font": {"size": 11, "color": "#444444"},
    }


def drift_figure(doc: dict, *, title: str = "", subtitle: str = "", selected=None) -> dict:
    """The time chart: ECE, accuracy and mean confidence per window.

    Parameters
    ----------
    doc : dict
        A ``time`` document (:meth:`calibration_core.slices.DriftReport.to_dict`,
        the evaluate JSON's), or its point estimates only (``drift_report`` with
        ``n_resamples=0``: no bounds, no flags) until the intervals are computed.
    title, subtitle : str
        Plain text (escaped here; the subtitle wrapped onto at most two lines).
    selected : str, optional
        The label of the window whose reliability diagram is shown (thick outline).

    Returns
    -------
    dict
        ``{"data", "layout"}``; points carry ``customdata = [window index, rows]``.
    """
    colours = _colours(doc)
    data, layout = [], {}
    n = len(DRIFT_PANELS)
    gap = 0.06
    height = (1.0 - gap * (n - 1)) / n
    for i, (name, label) in enumerate(DRIFT_PANELS):
        axis = "" if i == 0 else str(i + 1)
        data.append(_metric_trace(doc, name, axis, colours, selected))
        top = 1.0 - i * (height + gap)
        layout[f"yaxis{axis}"] = {
            "domain": [top - height, top],
            "anchor": "x" if i == 0 else f"x{axis}",
            "title": {"text": label},
            "rangemode": "tozero" if name == "ece" else "normal",
        }
        layout[f"xaxis{axis}"] = {
            "type": "category",
            "anchor": f"y{axis}",
            "showticklabels": i == n - 1,
            **({} if i == 0 else {"matches": "x"}),
        }
    reference = doc.get("reference") or {}
    shapes = []
    if reference.get("ece_upper") is not None:
        shapes = _reference_shapes(reference["ece_lower"], reference["ece_upper"])
    layout.update(
        title={
            "text": plot_text(title),
            "subtitle": {"text": wrapped_text(subtitle, 120, 2)},
            "x": 0.0,
            "xanchor": "left",
            "y": 1.0,
            "yref": "container",
            "yanchor": "top",  # two subtitle lines then clear the legend note
            "pad": {"l": 10, "t": 12},
            "font": {"size": 15},
        },
        height=580,
        margin={"l": 64, "r": 48, "t": 116, "b": 72},  # r: the last tilted tick label
        shapes=shapes,
        annotations=[_legend_notes(has_intervals(doc))],
        hovermode="closest",
        clickmode="event",
        template="plotly_white",
    )
    return {"data": data, "layout": layout}


def slice_diagrams(
    info: ModelInfo,
    panels: list[tuple[str, BinStatistics]],
    view: ViewSettings,
    *,
    title: str,
    subtitle: str,
) -> dict:
    """Reliability diagrams of groups (or windows) as small multiples on shared axes.

    Parameters
    ----------
    info : ModelInfo
    panels : list of (str, BinStatistics)
        Label and bins of each group drawn (at most :data:`MAX_DIAGRAMS`, the first
        ones); e.g. rows of :attr:`calibration_core.slices.SliceReport.statistics`.
    view : ViewSettings
        Binning and band (each panel's band is the view's, on its own bins).
    title, subtitle : str
        Plain text (escaped here).

    Returns
    -------
    dict
        ``{"data", "layout"}``.
    """
    binning = Binning(view.scheme, view.n_bins)
    mv = ModelView(info)
    for label, stats in panels[:MAX_DIAGRAMS]:
        curve = ReliabilityCurve.from_statistics(stats, binning)
        band = band_of(stats, curve, view)
        mv.panels.append(Panel(label, None, curve, band, histogram=stats))
    fig = reliability_figure_dict(mv, view, HeldOut("folds"), side_by_side=False)
    fig["layout"]["title"]["text"] = plot_text(title)
    fig["layout"]["title"]["subtitle"]["text"] = plot_text(subtitle)
    return fig
