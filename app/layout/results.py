"""The results column's parts that wait for the first diagram (app.components.Deferred).

* :func:`metrics_grid`: the metrics table, rendered after every diagram is drawn;
* :func:`first_diagram_first`: on the page's first drawing, the second and later
  diagrams wait for the first one.
"""

from __future__ import annotations

import dash_ag_grid as dag

from .. import ids
from ..components import DIAGRAM_SLOT, UNDRAWN_DIAGRAM, UNDRAWN_DIAGRAMS, Deferred


def metrics_grid(rows: list[dict], cols: list[dict]) -> Deferred:
    """The metrics table (dash-ag-grid), built once the page's diagrams are drawn.

    Mounted together with them, its work delayed them (see :mod:`app.components`;
    figures in BENCHMARKS.md); its library's script runs just before it renders.

    Parameters
    ----------
    rows, cols : list of dict
        The grid's ``rowData`` and ``columnDefs`` (:func:`app.metrics_table.row_data`,
        :func:`app.metrics_table.column_defs`).
    """
    grid = dag.AgGrid(
        id=ids.METRICS_GRID,
        rowData=rows,
        columnDefs=cols,
        defaultColDef={
            "sortable": True,
            "resizable": True,
            "filter": False,
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
        },
        dashGridOptions={
            "domLayout": "autoHeight",
            "tooltipShowDelay": 300,
            "animateRows": False,
        },
        getRowId="params.data.id",
        className="ag-theme-quartz metrics-grid",
        style={"width": "100%"},
    )
    return Deferred(
        grid, pending=UNDRAWN_DIAGRAMS, libraries=["dash_ag_grid"], className="metrics-slot"
    )


def first_diagram_first(grid: list) -> list:
    """The page's first diagrams: the first one drawn alone, the others in the next task.

    Plotly draws every diagram mounted at once in one task; the first one
    shows sooner when the others wait in a :class:`Deferred`.
    Only the page's first drawing does this: the view callback's answers
    replace the grid with plain graphs.
    """
    if len(grid) < 2:
        return list(grid)
    rest = [Deferred(g, pending=UNDRAWN_DIAGRAM, className=DIAGRAM_SLOT) for g in grid[1:]]
    return [grid[0], *rest]
