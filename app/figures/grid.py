"""The panel grid every diagram of one model is drawn in: :func:`grid_figure`.

A diagram is a grid of panels, one per calibrator (and class in one-vs-rest
views), uncalibrated first, in at most :data:`PANEL_COLUMNS` columns. The
binned reliability diagrams (:mod:`app.figures.reliability`) and the
binning-free ones (:mod:`app.figures.curve_grid`) share this grid:

* the columns tile ``[0, 1]`` (paper fractions) with a gap of
  :data:`H_SPACING` between neighbours;
* every row is :attr:`RowLayout.row_px` pixels tall; a panel stacks one or
  more plots (a reliability diagram over its histogram), each at a fixed
  pixel offset from its row's top; the plot area is ``row_px * n_rows -
  trim_px`` pixels tall;
* the ``j``-th plot of panel ``i`` draws on the axes ``x{n}/y{n}``, with
  ``n = i * k + j + 1`` for ``k`` plots per panel (``x``/``y`` for ``n = 1``);
* a panel's title is centred just above its first plot; only the left column
  titles its y axes and only the bottom row its x axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ..analysis import UNCALIBRATED
from ..settings import ViewSettings
from .common import CALIBRATED_COLOUR, UNCALIBRATED_COLOUR, figure_frame, plot_text, wrapped_text

#: Most panel columns of a diagram, by ``view.all_classes`` (or the compact grid):
#: (one model on the page, several side by side).
PANEL_COLUMNS = {False: (4, 2), True: (6, 3)}
#: Gap between panel columns, as a fraction of the plot width.
H_SPACING = 0.045

Domain = tuple[float, float]


class GridPanel(Protocol):
    """What the grid reads of a panel: its calibrator and (one-vs-rest) class."""

    calibrator: str
    class_label: str | None


@dataclass(frozen=True)
class RowLayout:
    """The pixel layout of one grid row.

    Attributes
    ----------
    row_px : int
        Height of a row, title and tick labels included.
    plots : tuple of (int, int)
        ``(offset from the row's top, height)`` of each plot a panel stacks,
        top to bottom; the title sits above the first.
    trim_px : int
        Pixels taken off the bottom of the plot area (the last row's tick labels
        reach into the bottom margin).
    """

    row_px: int
    plots: tuple[tuple[int, int], ...]
    trim_px: int = 0

    def plot_px(self, n_rows: int) -> int:
        """Height of the plot area of ``n_rows`` rows, in pixels."""
        return self.row_px * n_rows - self.trim_px


@dataclass(frozen=True)
class GridCell:
    """Where panel ``index`` is drawn.

    Attributes
    ----------
    index, row, col : int
        The panel's position in the panel list and in the grid.
    x_domain : (float, float)
        Its column, as paper fractions.
    y_domains : tuple of (float, float)
        One paper-fraction domain per plot of :attr:`RowLayout.plots`.
    suffixes : tuple of str
        One axis suffix per plot: its axes are ``xaxis{s}/yaxis{s}`` in the
        layout, ``x{s}/y{s}`` in traces.
    left, bottom : bool
        Whether the panel is in the left column (titles its y axes) or the
        bottom row (titles its x axis).
    """

    index: int
    row: int
    col: int
    x_domain: Domain
    y_domains: tuple[Domain, ...]
    suffixes: tuple[str, ...]
    left: bool
    bottom: bool


@dataclass(frozen=True)
class PanelGrid:
    """The cells of every panel (in panel order) and the grid's size."""

    cells: list[GridCell]
    n_rows: int
    n_cols: int
    plot_px: int

    @property
    def positions(self) -> list[tuple[int, int]]:
        """``(row, column)`` of every panel."""
        return [(cell.row, cell.col) for cell in self.cells]


def axis_suffix(n: int) -> str:
    """Suffix of the ``n``-th axis pair (1-based): ``""`` for the first, else ``str(n)``."""
    return "" if n == 1 else str(n)


def panel_positions(
    panels: Sequence[GridPanel], max_cols: int, *, rows_by_calibrator: bool = False
) -> tuple[list[tuple[int, int]], int, int]:
    """``(row, column)`` of every panel, the number of rows and of columns.

    Parameters
    ----------
    panels : sequence of GridPanel
        In drawing order; a calibrator's panels are consecutive.
    max_cols : int
        At most this many columns (:data:`PANEL_COLUMNS`).
    rows_by_calibrator : bool
        Start each calibrator's panels on a new row, in rows of even length
        (the compact "all classes" grid: 4 panels in 2 x 2, not 3 + 1);
        otherwise fill the rows in order.

    Returns
    -------
    positions : list of (int, int)
        One per panel.
    n_rows, n_cols : int
        At least 1 each.
    """
    if not rows_by_calibrator:
        cols = min(len(panels), max_cols) or 1
        positions = [divmod(i, cols) for i in range(len(panels))]
        return positions, max(math.ceil(len(panels) / cols), 1), cols
    groups: dict[str, int] = {}
    for panel in panels:
        groups[panel.calibrator] = groups.get(panel.calibrator, 0) + 1
    largest = max(groups.values(), default=1)
    cols = math.ceil(largest / math.ceil(largest / max_cols))
    positions = []
    row = 0
    for count in groups.values():
        positions += [(row + i // cols, i % cols) for i in range(count)]
        row += math.ceil(count / cols)
    return positions, max(row, 1), cols


def _domains(n_rows: int, n_cols: int, rows: RowLayout):
    """x domain of each column and the y domains of each row's plots, as paper fractions.

    The columns have equal widths and tile ``[0, 1]`` with :data:`H_SPACING`
    gaps; a plot's domain is its pixel span in the plot area of
    ``rows.plot_px(n_rows)`` pixels (top = 1), clipped to ``[0, 1]``.
    """
    width = (1.0 - H_SPACING * (n_cols - 1)) / n_cols
    xs = [(c * (width + H_SPACING), c * (width + H_SPACING) + width) for c in range(n_cols)]
    plot_px = rows.plot_px(n_rows)

    def frac(px: float) -> float:
        return min(max(1.0 - px / plot_px, 0.0), 1.0)

    ys = [
        tuple(
            (frac(r * rows.row_px + top + px), frac(r * rows.row_px + top))
            for top, px in rows.plots
        )
        for r in range(n_rows)
    ]
    return xs, ys


def panel_grid(
    panels: Sequence[GridPanel], rows: RowLayout, max_cols: int, *, rows_by_calibrator=False
) -> PanelGrid:
    """Every panel's cell in the grid (see :func:`panel_positions` for the arguments)."""
    positions, n_rows, n_cols = panel_positions(
        panels, max_cols, rows_by_calibrator=rows_by_calibrator
    )
    xs, ys = _domains(n_rows, n_cols, rows)
    k = len(rows.plots)
    cells = [
        GridCell(
            index=i,
            row=r,
            col=c,
            x_domain=xs[c],
            y_domains=ys[r],
            suffixes=tuple(axis_suffix(i * k + j + 1) for j in range(k)),
            left=c == 0,
            bottom=r == n_rows - 1,
        )
        for i, (r, c) in enumerate(positions)
    ]
    return PanelGrid(cells, n_rows, n_cols, rows.plot_px(n_rows))


def axis_pair(s: str, x_domain: Domain, y_domain: Domain, x: dict, y: dict) -> dict:
    """Layout entries of the axes ``x{s}/y{s}``: at the domains, anchored to each other.

    ``x`` and ``y`` hold the rest of each axis' settings (range, ticks, title, matches).
    """
    return {
        f"xaxis{s}": {"domain": x_domain, "anchor": f"y{s}", **x},
        f"yaxis{s}": {"domain": y_domain, "anchor": f"x{s}", **y},
    }


def linked(cell: GridCell, axis: str) -> dict:
    """``{"matches": axis}`` except on the first panel, which owns the shared axis."""
    return {} if cell.index == 0 else {"matches": axis}


def panel_title(panel: GridPanel, view: ViewSettings, *, class_only: bool = False) -> str:
    """A panel's title: the calibrator, and the class in one-vs-rest views.

    ``class_only``: only the class (a grid whose rows name the calibrator on their y axis).
    """
    if class_only:
        return f"class {panel.class_label}"
    if view.notion == "class" and panel.class_label is not None:
        return f"{panel.calibrator} · class {panel.class_label}"
    return panel.calibrator


def title_annotation(text: str, cell: GridCell) -> dict:
    """The panel's title (escaped here), centred just above its first plot."""
    x_domain, y_domain = cell.x_domain, cell.y_domains[0]
    return {
        "text": plot_text(text),
        "x": (x_domain[0] + x_domain[1]) / 2,
        "y": y_domain[1],
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "bottom",
        "yshift": 2,
        "showarrow": False,
        "font": {"size": 13},
    }


def corner_note(text: str, s: str) -> dict:
    """A small boxed note (Plotly text) in the top-left corner of plot ``s``: its measures."""
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
    """A grey message (escaped and wrapped here) in the middle of plot ``s`` with no curve."""
    return {
        "text": wrapped_text(text),
        "x": 0.5,
        "y": 0.5,
        "xref": f"x{s} domain",
        "yref": f"y{s} domain",
        "showarrow": False,
        "font": {"color": "#444444"},
    }


def colour_of(panel: GridPanel) -> str:
    """Vermillion for the uncalibrated predictions, blue for every calibrator."""
    return UNCALIBRATED_COLOUR if panel.calibrator == UNCALIBRATED else CALIBRATED_COLOUR


def legend_once(kind: str, legend: set[str]) -> bool:
    """True the first time ``kind`` is drawn in a figure (then it is in ``legend``)."""
    first = kind not in legend
    legend.add(kind)
    return first


P = TypeVar("P", bound=GridPanel)


def grid_figure(
    panels: Sequence[P],
    grid: PanelGrid,
    titles: Sequence[str],
    draw: Callable[[P, GridCell], tuple[dict, list[dict], list[dict]]],
    *,
    name: str,
    subtitle: str,
    margin: dict,
) -> dict:
    """The grid figure as a plain ``{"data", "layout"}`` dict.

    Parameters
    ----------
    panels : sequence of GridPanel
        In drawing order, one per cell of ``grid``.
    grid : PanelGrid
        From :func:`panel_grid` on ``panels``.
    titles : sequence of str
        One per panel (escaped here): :func:`panel_title` or the caller's own.
    draw : callable(panel, cell) -> (axes layout, traces, notes)
        Everything of one panel but its title.
    name : str
        The model's name (the figure's title; escaped here).
    subtitle : str
        Plotly text (already escaped).
    margin : dict
        Plotly margins; the figure is the plot area plus the top and bottom margins tall.
    """
    data: list[dict] = []
    layout: dict = {}
    notes: list[dict] = []
    for panel, cell, title in zip(panels, grid.cells, titles, strict=True):
        axes, traces, panel_notes = draw(panel, cell)
        layout.update(axes)
        notes.append(title_annotation(title, cell))
        data += traces
        notes += panel_notes
    height = grid.plot_px + margin["t"] + margin["b"]
    layout.update(figure_frame(name, subtitle, height, grid.plot_px, margin, notes))
    return {"data": data, "layout": layout}
