"""The group picker (in the controls) and the "Per group" section (below the metrics).

The picker offers the first selected model's other columns
(:func:`app.groups.columns.group_choices`), none by default; its options are
filled by :mod:`app.callbacks.groups.columns` once the page is loaded. The section is
hidden until a column is picked. All ids come from :mod:`app.ids`.
"""

from __future__ import annotations

from dash import dcc, html

from .. import ids
from ..figures.common import graph_config
from ..settings import GROUPS_SHOWN, RawSettings

#: The core's default minimum group size (calibration_core.slices.MIN_GROUP_ROWS: the
#: slices import pandas, which the page does not load at start).
MIN_GROUP_ROWS = 100

GROUP_HINT = (
    "per-group metrics and diagrams of the first selected model (columns of its file "
    f"other than model and ids; the {GROUPS_SHOWN} worst groups drawn)"
)
HIDDEN = {"display": "none"}


def group_picker(raw: RawSettings, options: list[dict] | None = None) -> html.Div:
    """The "Group by" field: a dropdown of column names.

    ``options``: the first selected model's columns (then the model-selection
    callback keeps them); None offers the column of ``raw`` alone, if any.
    """
    value = raw.group if isinstance(raw.group, str) and raw.group else None
    if options is None:
        options = [{"label": value, "value": value}] if value else []
    return html.Div(
        [
            html.Div("Group by", className="field-label"),
            dcc.Dropdown(
                id=ids.GROUP_SELECT,
                options=options,
                value=value,
                clearable=True,
                placeholder="no grouping",
            ),
            html.Div(GROUP_HINT, className="field-hint"),
        ],
        className="field",
    )


def group_graph(figure: dict) -> dcc.Graph:
    """The groups' reliability diagrams (made anew each time: a graph drawn while hidden
    makes Plotly warn)."""
    return dcc.Graph(figure=figure, config=graph_config("per-group"))


def min_rows_field(raw: RawSettings) -> html.Div:
    """The section's minimum group size (empty: the core's default, 100 rows)."""
    value = raw.group_min_rows if isinstance(raw.group_min_rows, int) else None
    return html.Div(
        [
            html.Label("Minimum group size", htmlFor=ids.GROUP_MIN_ROWS, className="field-label"),
            dcc.Input(
                id=ids.GROUP_MIN_ROWS,
                type="number",
                min=2,
                step=1,
                value=value,
                placeholder=f"{MIN_GROUP_ROWS} (default)",
                debounce=True,
            ),
            html.Div(
                "groups with fewer rows are listed, flagged small and not judged",
                className="field-hint",
            ),
        ],
        className="field group-min-rows",
    )


def group_section(raw: RawSettings) -> html.Section:
    """The "Per group" section: summary, table, diagrams, the intervals' status, and the
    global vs per-group maps."""
    shown = isinstance(raw.group, str) and bool(raw.group)
    return html.Section(
        [
            html.H2("Per group", className="section-title"),
            min_rows_field(raw),
            html.Div(id=ids.GROUP_SUMMARY, className="group-summary", role="status"),
            html.Div(id=ids.GROUP_STATUS, className="field-hint"),
            dcc.Loading(html.Div(id=ids.GROUP_TABLE), type="dot", delay_show=400),
            html.Div(id=ids.GROUP_GRAPH, className="group-graph"),
            html.H3("Maps per group", className="group-maps-title"),
            html.Div(id=ids.GROUP_MAPS_STATUS, className="field-hint"),
            dcc.Loading(html.Div(id=ids.GROUP_MAPS), type="dot", delay_show=400),
            dcc.Store(id=ids.GROUP_GATE),
            dcc.Store(id=ids.GROUP_REQUEST),
            dcc.Store(id=ids.GROUP_DONE),
            dcc.Store(id=ids.GROUP_MAPS_DONE),
        ],
        id=ids.GROUP_SECTION,
        className="group-section",
        style={} if shown else HIDDEN,
    )
