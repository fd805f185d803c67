"""The "Per group" section for the page's settings, shared by its callbacks and the report.

* :func:`first_model`: the model the section groups (the first selected one);
* :func:`section_view`: its :class:`~app.groups.columns.GroupView` for the
  settings, with the intervals and maps the background jobs stored;
* :func:`group_figure`: the groups' reliability diagrams;
* :func:`group_report_html`: the section as the HTML report shows it.
"""

from __future__ import annotations

from dataclasses import replace

from calibration_core import CalibrationInputError

from ..context import AppContext
from ..figures.reliability import reliability_figure_dict
from ..groups.columns import (
    GroupView,
    group_panels,
    group_view,
    parse_group,
    stored_group_intervals,
    stored_group_maps,
)
from ..settings import RawSettings, parse_handles, parse_view
from ..store.records import ModelInfo


def first_model(ctx: AppContext, sid, raw: RawSettings) -> ModelInfo | None:
    """The model the section groups: the first selected one (None when none is)."""
    handles = parse_handles(raw.handles)
    return ctx.store.resolve(sid, handles[0]) if handles else None


def section_view(ctx: AppContext, sid, raw: RawSettings) -> GroupView | None:
    """The section's numbers for these settings (None: no group column or no model)."""
    column = parse_group(raw.group)
    info = first_model(ctx, sid, raw)
    if column is None or info is None:
        return None
    view = parse_view(raw.notion, raw.class_value, raw.scheme, raw.n_bins, raw.band, raw.level)
    gv = group_view(ctx.store, info, column, view, raw.group_min_rows)
    gv.intervals = stored_group_intervals(ctx.store, gv)
    gv.maps = stored_group_maps(ctx.store, gv)
    return gv


def group_figure(gv: GroupView, raw: RawSettings) -> dict:
    """The groups' reliability diagrams (a figure dict) for the view settings of ``raw``."""
    view = parse_view(raw.notion, raw.class_value, raw.scheme, raw.n_bins, raw.band, raw.level)
    if gv.notion_note is not None:  # "all classes": the groups are compared on confidence
        view = replace(view, notion="confidence", class_name=None)
    return reliability_figure_dict(group_panels(gv, view), view, None, compact=True)


def group_report_html(ctx: AppContext, sid, raw: RawSettings) -> str:
    """The report's "Calibration by group" of the page's section ("" without a group column).

    What the page shows: the stored intervals and maps when the jobs finished,
    point estimates otherwise. The report module imports the core's slices
    (pandas): imported here, when a report is asked for.
    """
    from ..report.groups import page_group_section

    try:
        gv = section_view(ctx, sid, raw)
    except CalibrationInputError as exc:
        return page_group_section(None, None, str(exc))
    return "" if gv is None else page_group_section(gv, group_figure(gv, raw))
