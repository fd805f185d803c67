"""The shared pieces of every figure: text helpers, palette, font, template and graph config.

* :func:`plot_text`, :func:`wrapped_text`: user-supplied names made safe for
  Plotly, which renders a subset of HTML in titles (names always show as
  text); :func:`safe_file_stem` for download names; :func:`view_title`;
* :data:`OKABE_ITO` (Okabe & Ito 2008, colour-blind safe), the colours of
  uncalibrated and calibrated predictions, and :data:`FONT`;
* :func:`plotly_template`: a small white template understood by plotly.js itself;
* :func:`empty_figure` (a message instead of a figure) and
  :data:`MODEBAR_CONFIG` and :func:`graph_config` (``dcc.Graph``'s modebar and
  PNG/SVG export).

The panel grid of every diagram is in :mod:`app.figures.grid`, the
reliability diagrams in :mod:`app.figures.reliability`, the diagnostics
figures in :mod:`app.figures.diagnostics`.
"""

from __future__ import annotations

import html
import re
import textwrap

import plotly.graph_objects as go

from ..settings import DIAGRAM_LABELS, NOTION_LABELS, ViewSettings

#: Okabe & Ito (2008), colour-blind safe.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "black": "#000000",
}
UNCALIBRATED_COLOUR = OKABE_ITO["vermillion"]
CALIBRATED_COLOUR = OKABE_ITO["blue"]
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


def plot_text(value) -> str:
    """A user-supplied string made safe for Plotly text (tags show literally)."""
    return html.escape(str(value), quote=False)


def wrapped_text(value, width: int = 26, max_lines: int = 6) -> str:
    """A user-visible message for a small panel: escaped, wrapped with ``<br>``."""
    lines = textwrap.wrap(str(value), width=width) or [""]
    if len(lines) > max_lines:
        lines = [*lines[: max_lines - 1], lines[max_lines - 1] + " …"]
    return "<br>".join(plot_text(line) for line in lines)


def safe_file_stem(value, default: str = "figure") -> str:
    """A file-name stem of ``[A-Za-z0-9_-]`` only (for downloads)."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", str(value)).strip("-")[:60]
    return stem or default


def view_title(view: ViewSettings) -> str:
    """Notion, binning and band, e.g. ``"confidence (top label) · 15 equal-width bins · ..."``."""
    notion = NOTION_LABELS[view.notion]
    if view.notion == "class":
        which = "all classes" if view.all_classes else f"class {view.class_name}"
        notion = f"{notion} ({which})"
    if view.kind != "binned":
        band = "none" if view.band == "none" else f"{view.level:.0%}"
        return f"{notion} · {DIAGRAM_LABELS[view.kind]} (no bins) · band: {band}"
    return f"{notion} · {view.describe_binning()} · band: {view.describe_band()}"


_AXIS_STYLE = {
    "gridcolor": "#e6e6e6",
    "linecolor": "#9a9a9a",
    "showline": True,
    "zeroline": False,
    "ticks": "outside",
    "tickcolor": "#9a9a9a",
    "ticklen": 3,
    "automargin": False,
}


def plotly_template() -> dict:
    """A small white template understood by plotly.js itself (no Python-side lookup)."""
    return {
        "layout": {
            "paper_bgcolor": "white",
            "plot_bgcolor": "white",
            "xaxis": _AXIS_STYLE,
            "yaxis": _AXIS_STYLE,
            "hovermode": "closest",
        }
    }


def empty_figure(message: str) -> go.Figure:
    """A blank figure carrying a message (no axes)."""
    fig = go.Figure()
    fig.add_annotation(
        text=plot_text(message),
        x=0.5,
        y=0.5,
        showarrow=False,
        xref="paper",
        yref="paper",
        font={"size": 14, "color": "#444444"},
    )
    fig.update_layout(
        template="plotly_white",
        height=240,
        xaxis={"visible": False},
        yaxis={"visible": False},
        margin={"l": 20, "r": 20, "t": 20, "b": 20},
    )
    return fig


#: The modebar of every ``dcc.Graph``: no logo, no "Share chart..." (it offers to
#: upload the figure to Plotly's cloud), no selection tools; zoom, pan and the
#: image download stay. ``assets/modebar.js`` keeps its buttons out of the tab order.
MODEBAR_CONFIG = {
    "displaylogo": False,
    "showSendToCloud": False,
    "showEditInChartStudio": False,
    "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d", "sendChartToCloud"],
}


def graph_config(file_stem: str, fmt: str = "png") -> dict:
    """``dcc.Graph`` config: :data:`MODEBAR_CONFIG` and Plotly's own PNG/SVG export
    named after the model."""
    fmt = fmt if fmt in ("png", "svg") else "png"
    options = {"format": fmt, "filename": f"reliability-{safe_file_stem(file_stem)}"}
    if fmt == "png":
        options["scale"] = 2
    return {**MODEBAR_CONFIG, "toImageButtonOptions": options}


def figure_frame(
    name: str, subtitle: str, height: float, plot_px: float, margin: dict, annotations: list
) -> dict:
    """The figure-wide layout every diagram shares: title and subtitle, size, template, legend.

    Parameters
    ----------
    name : str
        The model's name (escaped here).
    subtitle : str
        Plotly text (already escaped; ``<br>`` between lines).
    height, plot_px : float
        The figure's height and the height of one panel row in pixels (the
        legend sits 6 px above the panels).
    margin : dict
        Plotly margins (``t``, ``b``, ``l``, ``r``).
    annotations : list of dict
        The panels' titles and notes.
    """
    return {
        "title": {
            "text": plot_text(name),
            "subtitle": {"text": subtitle},
            "x": 0.0,
            "xanchor": "left",
            "xref": "container",
            "y": 1.0 - 10.0 / height,
            "yref": "container",
            "yanchor": "top",
            "pad": {"l": 10},
            "font": {"size": 15},
        },
        "annotations": annotations,
        "height": int(height),
        "margin": margin,
        "template": plotly_template(),
        "font": {"family": FONT, "size": 12, "color": "#1f2328"},
        "legend": {
            "orientation": "h",
            "x": 0.0,
            "xanchor": "left",
            "y": 1.0 + 6.0 / plot_px,
            "yanchor": "bottom",
            "font": {"size": 11},
        },
        "hoverlabel": {"font": {"family": FONT}},
    }


def rgba(hex_colour: str, alpha: float) -> str:
    """``"#rrggbb"`` with opacity ``alpha`` as a CSS ``rgba(...)`` colour."""
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def perfect_calibration_trace(axis_suffix: str, show_legend: bool, y_end: float = 1.0) -> dict:
    """The dashed line of perfect calibration on the axes ``x<suffix>``/``y<suffix>``.

    From (0, 0) to (1, ``y_end``): the diagonal of a reliability diagram
    (``y_end=1``) or the zero line of a cumulative-differences plot (``0``).
    """
    return {
        "type": "scatter",
        "x": [0, 1],
        "y": [0, y_end],
        "xaxis": f"x{axis_suffix}",
        "yaxis": f"y{axis_suffix}",
        "mode": "lines",
        "line": {"color": "#555555", "dash": "dash", "width": 1},
        "name": "perfect calibration",
        "legendgroup": "diagonal",
        "showlegend": show_legend,
        "hoverinfo": "skip",
    }
