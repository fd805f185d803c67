"""The results column's part that waits for the diagrams (app.components.Deferred)."""

from __future__ import annotations

import dash_ag_grid as dag

from .. import ids
from ..components import UNDRAWN_DIAGRAM, Deferred


def metrics_grid(rows: list[dict], cols: list[dict]) -> Deferred:
    """The metrics table (dash-ag-grid), built once the page's diagrams are drawn.

    Mounted together with them, its work delayed them (see :mod:`app.components`;
    figures in BENCHMARKS.md).

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
    return Deferred(grid, pending=UNDRAWN_DIAGRAM, className="metrics-slot")
