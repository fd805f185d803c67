"""The panel grid of the binning-free diagrams (smooth reliability, cumulative differences).

One axis pair per panel, in the binned diagram's order and column count
(uncalibrated first; one panel per calibrator and, in the "all classes"
view, per class). Panel ``i`` draws on ``x{i+1}/y{i+1}`` (``x``/``y`` for
panel 0); every panel's axes match the first panel's, so that panels compare
at a glance. :func:`curve_figure` assembles the figure from per-panel traces
and notes given by :mod:`app.figures.smooth` or :mod:`app.figures.cumulative`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..analysis import UNCALIBRATED
from ..curves import CurvePanel, CurveView
from ..settings import DIAGRAM_LABELS, NOTION_LABELS, HeldOut, ViewSettings
from .common import (
    CALIBRATED_COLOUR,
    PANEL_COLUMNS,
    UNCALIBRATED_COLOUR,
    figure_frame,
    plot_text,
    wrapped_text,
)

PANEL_HEIGHT = 260
MARGIN = {"l": 64, "r": 16, "t": 100, "b": 52}
#: Extra top margin of a figure beside another: its subtitle takes two lines and its
#: legend may wrap onto two (as the binned diagram's).
SIDE_BY_SIDE_PX = 50
H_SPACING, V_GAP_PX, TITLE_PX = 0.045, 46, 24
#: Extra top margin for each note line under the subtitle.
NOTE_PX = 16

#: ``(traces, notes)`` of panel ``i`` from the panel, its axis suffix and the legend kinds shown.
PanelDrawer = Callable[[CurvePanel, str, set], tuple[list[dict], list[dict]]]


def colour_of(panel: CurvePanel) -> str:
    """Vermillion for the uncalibrated predictions, blue for every calibrator."""
    return UNCALIBRATED_COLOUR if panel.calibrator == UNCALIBRATED else CALIBRATED_COLOUR


def axis_suffix(i: int) -> str:
    """``""`` for panel 0, else ``str(i + 1)``: ``xaxis{s}``, trace ``x{s}``."""
    return "" if i == 0 else str(i + 1)


def grid_shape(n_panels: int, view: ViewSettings, side_by_side: bool = False) -> tuple[int, int]:
    """(rows, columns), at most the binned grid's columns (:data:`PANEL_COLUMNS`)."""
    cols = min(n_panels, PANEL_COLUMNS[view.all_classes][side_by_side]) or 1
    return math.ceil(n_panels / cols) or 1, cols


def panel_title(panel: CurvePanel, view: ViewSettings) -> str:
    """The calibrator, and the class in one-vs-rest views."""
    if view.notion == "class" and panel.class_label is not None:
        return f"{panel.calibrator} · class {panel.class_label}"
    return panel.calibrator


def corner_note(text: str, s: str) -> dict:
    """A small boxed note in panel ``s``'s top-left corner (its measures)."""
    return {
        "text": text,
        "x": 0.03,
        "y": 0.97,
        "xref": f"x{s} domain",
        "yref": f"y{s} domain",
        "xanchor": "left",
        "yanchor": "top",
        "align": "left",
        "showarrow": False,
        "font": {"size": 11, "color": "#222222"},
        "bgcolor": "rgba(255,255,255,0.8)",
    }


def centre_note(text: str, s: str) -> dict:
    """A grey message in the middle of a panel with no curve."""
    return {
        "text": wrapped_text(text),
        "x": 0.5,
        "y": 0.5,
        "xref": f"x{s} domain",
        "yref": f"y{s} domain",
        "showarrow": False,
        "font": {"color": "#444444"},
    }


def _domains(n_rows: int, n_cols: int):
    plot_px = PANEL_HEIGHT * n_rows
    width = (1.0 - H_SPACING * (n_cols - 1)) / n_cols
    xs = [(c * (width + H_SPACING), c * (width + H_SPACING) + width) for c in range(n_cols)]
    ys = []
    for r in range(n_rows):
        top = r * PANEL_HEIGHT + TITLE_PX
        bottom = (r + 1) * PANEL_HEIGHT - V_GAP_PX
        ys.append((max(1 - bottom / plot_px, 0.0), min(1 - top / plot_px, 1.0)))
    return xs, ys, plot_px


def _axes(i: int, x_dom, y_dom, axes: dict, *, left: bool, bottom: bool) -> dict:
    s = axis_suffix(i)
    match = {} if i == 0 else {"matches": "x"}
    match_y = {} if i == 0 else {"matches": "y"}
    return {
        f"xaxis{s}": {
            "domain": x_dom,
            "anchor": f"y{s}",
            "title": {"text": axes["x_title"] if bottom else ""},
            **axes["x"],
            **match,
        },
        f"yaxis{s}": {
            "domain": y_dom,
            "anchor": f"x{s}",
            "title": {"text": axes["y_title"] if left else ""},
            **axes["y"],
            **match_y,
            # every panel shares the first one's y range: its labels on the left
            # column only, so that narrow grids do not print them over a neighbour
            "showticklabels": left,
        },
    }


def _title(panel: CurvePanel, view: ViewSettings, x_dom, y_dom) -> dict:
    return {
        "text": plot_text(panel_title(panel, view)),
        "x": (x_dom[0] + x_dom[1]) / 2,
        "y": y_dom[1],
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "bottom",
        "yshift": 2,
        "showarrow": False,
        "font": {"size": 13},
    }


def subtitle(
    cv: CurveView,
    view: ViewSettings,
    heldout: HeldOut,
    n_scored: int | None,
    side_by_side: bool = False,
) -> str:
    """Kind, notion and held-out scheme (saying the bins do not apply); each note on a new line.

    A figure beside another is narrow: the view and the data then take a line each.
    """
    notion = NOTION_LABELS[view.notion]
    if view.notion == "class":
        notion += " (all classes)" if view.all_classes else f" (class {view.class_name})"
    what = [DIAGRAM_LABELS[cv.kind], notion, "no bins"]
    data = [heldout.describe()]
    if n_scored is not None:
        data.append(f"N = {n_scored:,} scored rows")
    lines = [" · ".join(what), " · ".join(data)] if side_by_side else [" · ".join(what + data)]
    return "\n".join([*lines, *cv.notes])


def curve_figure(
    name: str,
    cv: CurveView,
    view: ViewSettings,
    heldout: HeldOut,
    n_scored: int | None,
    axes: dict,
    draw: PanelDrawer,
    side_by_side: bool = False,
) -> dict:
    """The grid figure as a plain ``{"data", "layout"}`` dict.

    Parameters
    ----------
    name : str
        The model's name (the title; escaped here).
    cv : CurveView
    view, heldout : ViewSettings, HeldOut
        Stated in the subtitle.
    n_scored : int or None
    axes : dict
        ``{"x": {...}, "y": {...}, "x_title", "y_title"}``: axis settings of every panel.
    draw : callable(panel, axis suffix, legend kinds shown) -> (traces, notes)
    side_by_side : bool
        The figure shares the row with other models': fewer panel columns, a
        two-line subtitle and room above the panels for a wrapped legend.
    """
    n_rows, n_cols = grid_shape(len(cv.panels), view, side_by_side)
    xs, ys, plot_px = _domains(n_rows, n_cols)
    data: list[dict] = []
    layout: dict = {}
    notes: list[dict] = []
    legend: set[str] = set()
    for i, panel in enumerate(cv.panels):
        r, c = divmod(i, n_cols)
        layout.update(_axes(i, xs[c], ys[r], axes, left=c == 0, bottom=r == n_rows - 1))
        notes.append(_title(panel, view, xs[c], ys[r]))
        s = axis_suffix(i)
        if panel.message is not None:
            notes.append(centre_note(panel.message, s))
            continue
        traces, panel_notes = draw(panel, s, legend)
        data += traces
        notes += panel_notes
    extra = NOTE_PX * len(cv.notes) + (SIDE_BY_SIDE_PX if side_by_side else 0)
    margin = {**MARGIN, "t": MARGIN["t"] + extra}
    height = plot_px + margin["t"] + margin["b"]
    lines = subtitle(cv, view, heldout, n_scored, side_by_side).split("\n")
    sub = "<br>".join(plot_text(line) for line in lines)
    layout.update(figure_frame(name, sub, height, plot_px, margin, notes))
    return {"data": data, "layout": layout}


def legend_once(kind: str, legend: set) -> bool:
    """True the first time ``kind`` is drawn in a figure (then it is in ``legend``)."""
    first = kind not in legend
    legend.add(kind)
    return first
