"""The results column's metrics table."""

from __future__ import annotations

import dash_ag_grid as dag

from .. import ids


def metrics_grid(rows: list[dict], cols: list[dict]) -> dag.AgGrid:
    """The metrics table (dash-ag-grid).

    Parameters
    ----------
    rows, cols : list of dict
        The grid's ``rowData`` and ``columnDefs`` (:func:`app.metrics_table.row_data`,
        :func:`app.metrics_table.column_defs`).
    """
    return dag.AgGrid(
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
