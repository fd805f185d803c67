"""The panel grid of the binning-free diagrams (smooth reliability, cumulative differences).

One plot per panel of the grid of :mod:`app.figures.grid`, in the binned
diagram's order and column count (uncalibrated first; one panel per
calibrator and, in the "all classes" view, per class). Panel ``i`` draws on
``x{i+1}/y{i+1}`` (``x``/``y`` for panel 0); every panel's axes match the
first panel's, so that panels compare at a glance. :func:`curve_figure`
assembles the figure from per-panel traces and notes given by
:mod:`app.figures.smooth` or :mod:`app.figures.cumulative`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..curves import CurvePanel, CurveView
from ..settings import DIAGRAM_LABELS, NOTION_LABELS, HeldOut, ViewSettings
from .common import plot_text
from .grid import (
    PANEL_COLUMNS,
    GridCell,
    RowLayout,
    axis_pair,
    centre_note,
    grid_figure,
    linked,
    panel_grid,
    panel_title,
)

#: A 260 px row: the title (24 px), the plot (190 px), then its tick labels and axis title.
ROWS = RowLayout(row_px=260, plots=((24, 190),))
MARGIN = {"l": 64, "r": 16, "t": 100, "b": 52}
#: Extra top margin of a figure beside another: its subtitle takes two lines and its
#: legend may wrap onto two (as the binned diagram's).
SIDE_BY_SIDE_PX = 50
#: Extra top margin for each note line under the subtitle.
NOTE_PX = 16

#: ``(traces, notes)`` of panel ``i`` from the panel, its axis suffix and the legend kinds shown.
PanelDrawer = Callable[[CurvePanel, str, set], tuple[list[dict], list[dict]]]


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
    grid = panel_grid(cv.panels, ROWS, PANEL_COLUMNS[view.all_classes][side_by_side])
    legend: set[str] = set()

    def draw_cell(panel: CurvePanel, cell: GridCell) -> tuple[dict, list[dict], list[dict]]:
        s = cell.suffixes[0]
        layout = _axes(cell, axes)
        if panel.message is not None:
            return layout, [axes_anchor(s)], [centre_note(panel.message, s)]
        return (layout, *draw(panel, s, legend))

    extra = NOTE_PX * len(cv.notes) + (SIDE_BY_SIDE_PX if side_by_side else 0)
    lines = subtitle(cv, view, heldout, n_scored, side_by_side).split("\n")
    return grid_figure(
        cv.panels,
        grid,
        [panel_title(panel, view) for panel in cv.panels],
        draw_cell,
        name=name,
        subtitle="<br>".join(plot_text(line) for line in lines),
        margin={**MARGIN, "t": MARGIN["t"] + extra},
    )


def axes_anchor(s: str) -> dict:
    """An empty, hidden trace on plot ``s``: Plotly draws no subplot that no trace uses.

    Without it, a panel holding only a message ("fitting…") has no axes, and
    its ``x{s} domain`` note lands in the first panel.
    """
    return {
        "type": "scatter",
        "x": [],
        "y": [],
        "xaxis": f"x{s}",
        "yaxis": f"y{s}",
        "showlegend": False,
        "hoverinfo": "skip",
    }


def _axes(cell: GridCell, axes: dict) -> dict:
    """The axes of a panel: every panel shares the first one's ranges.

    The y tick labels are on the left column only, so that narrow grids do
    not print them over a neighbour.
    """
    x_title = axes["x_title"] if cell.bottom else ""
    y_title = axes["y_title"] if cell.left else ""
    x = {"title": {"text": x_title}, **axes["x"], **linked(cell, "x")}
    y = {"title": {"text": y_title}, **axes["y"], **linked(cell, "y"), "showticklabels": cell.left}
    return axis_pair(cell.suffixes[0], cell.x_domain, cell.y_domains[0], x, y)
