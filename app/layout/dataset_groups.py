"""A picked dataset's "Per group" and "Over time" controls and view (app.callbacks.groups.dataset).

The controls are the uploads' (the group column and the minimum group size of the
"Per group" section; the time column, the window and the reference period of the
"Over time" card), with the dataset's own ids: the columns come from the
dataset's Parquet schema, filled when it is picked. The block is hidden until a
dataset is picked. All ids come from :mod:`app.ids`.
"""

from __future__ import annotations

from dash import dcc, html

from .. import ids
from ..groups.dataset import DATASET_WINDOWS
from ..groups.time import MAX_REFERENCE_CHARS
from .diagnostics import REFERENCE_HINT
from .groups import MIN_GROUP_ROWS
from .jobs import job_controls

CAPTION = (
    "Calibration per group of a column and per time window of the dataset, computed on the "
    "cluster: every number of the tables is exact on all rows; the intervals, the "
    "homogeneity test and the windows flagged above the reference come from a reproducible "
    "sample of each model. Picking a column or a window starts the job when its results are "
    "not kept yet; kept ones are shown at once."
)


def labelled(text: str, control, hint: str | None = None) -> html.Label:
    """A control with its label (and a hint under it), as on the Diagnostics cards."""
    kids = [html.Span(text, className="diag-label"), control]
    if hint:
        kids.append(html.Span(hint, className="field-hint"))
    return html.Label(kids, className="diag-control")


def slice_controls() -> list[html.Label]:
    """Group by, minimum group size, time column, window, reference period."""
    windows = [{"label": label, "value": key} for key, label in DATASET_WINDOWS.items()]
    return [
        labelled(
            "Group by",
            dcc.Dropdown(
                id=ids.DATASET_GROUP_SELECT,
                options=[],
                placeholder="no grouping",
                className="diag-measure",
            ),
            "a column of the dataset",
        ),
        labelled(
            "Minimum group size",
            dcc.Input(
                id=ids.DATASET_GROUP_MIN_ROWS,
                type="number",
                min=2,
                step=1,
                debounce=True,
                placeholder=f"{MIN_GROUP_ROWS} (default)",
                className="diag-number",
            ),
        ),
        labelled(
            "Time column",
            dcc.Dropdown(
                id=ids.DATASET_TIME_COLUMN,
                options=[],
                placeholder="timestamp, time or date",
                className="diag-measure",
            ),
        ),
        labelled(
            "Window",
            dcc.Dropdown(
                id=ids.DATASET_WINDOW,
                options=windows,
                placeholder="no windows",
                className="diag-small-dropdown",
            ),
        ),
        labelled(
            "N rows",
            dcc.Input(
                id=ids.DATASET_WINDOW_ROWS,
                type="number",
                min=1,
                step=1,
                debounce=True,
                placeholder="N",
                className="diag-number",
            ),
            "every N rows, in the files' order",
        ),
        labelled(
            "Reference",
            dcc.Input(
                id=ids.DATASET_REFERENCE,
                type="text",
                value="1",
                debounce=True,
                placeholder="1",
                maxLength=MAX_REFERENCE_CHARS,
                className="diag-number diag-period",
            ),
            REFERENCE_HINT,
        ),
    ]


def dataset_slices_section() -> html.Section:
    """The controls, the job's buttons and progress, and where the tables and figures go."""
    return html.Section(
        [
            html.H2("Per group and over time, on the dataset", className="section-title"),
            html.P(CAPTION, className="caption"),
            job_controls(
                "Compute",
                ids.DATASET_SLICES_RUN,
                ids.DATASET_SLICES_CANCEL,
                ids.DATASET_SLICES_PROGRESS,
                ids.DATASET_SLICES_STATUS,
                *slice_controls(),
            ),
            dcc.Store(id=ids.DATASET_SLICES_DONE),
            dcc.Store(id=ids.DATASET_SLICES_REQUEST),
            dcc.Loading(html.Div(id=ids.DATASET_SLICES_VIEW), type="dot", delay_show=400),
        ],
        id=ids.DATASET_SLICES,
        className="dataset-view dataset-slices",
        hidden=True,
    )
