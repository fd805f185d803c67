"""The small exports of a view and its standalone HTML report, shared by page and command line.

:func:`small_export` is what the page's export buttons download (metrics CSV
and JSON, fitted maps JSON, the HTML report) and what the command line's
``report`` writes (:mod:`app.offline_report`), so that both show the same
numbers. The report (:func:`report_html`) carries the view's figures, verdict,
metrics table and diagnostics (:mod:`app.report.diagnostics`), and the page's
"Per group" section (:func:`app.services.groups.group_report_html`).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

from calibration_core import CalibrationInputError, __version__

from .. import ids
from ..context import AppContext
from ..exports import (
    download_name,
    html_report,
    metrics_csv,
    metrics_json,
    params_json,
)
from ..figures.common import view_title
from ..figures.diagram import diagram_figure
from ..metrics_table import caption
from ..report.diagnostics import diagnostics_html
from ..settings import SCORE_PARTS_ON, RawSettings, ViewSettings
from .groups import group_report_html
from .view import compute_view


def settings_dict(result) -> dict:
    """The settings of a view, for export headers."""
    view: ViewSettings = result.view
    return {
        "models": [mv.info.name for mv in result.models],
        "maps": list(result.maps),
        "heldout": result.heldout.describe(),
        "notion": view.notion,
        "class": view.class_name,
        "binning": {"scheme": view.scheme, "n_bins": view.n_bins},
        "band": {"kind": view.band, "level": view.level},
    }


def fitted_params(ctx: AppContext, result) -> dict:
    """Model name -> map -> one exported map per fold, from the store."""
    out: dict = {}
    for mv in result.models:
        maps = {}
        for name in result.maps:
            record = ctx.store.get_fit(mv.info.handle, name, result.heldout, params=True)
            if record is not None and record.error is None:
                maps[name] = record.params
        out[mv.info.name] = maps
    return out


def small_export(ctx: AppContext, sid, which: str, raw: RawSettings, sections: str = "") -> dict:
    """``dcc.Download`` data for one of the small exports (raises SettingsError).

    Exports and the report always carry the Brier and log-loss parts, whether
    the page shows them or not. ``sections``: trusted HTML the report shows
    before its diagnostics (the slice sections of ``report --group-by``); the
    page's "Per group" section follows them when a group column is chosen.
    """
    result = compute_view(ctx, sid, replace(raw, score_parts=[SCORE_PARTS_ON]))
    if not result.models:  # e.g. the data expired: say so instead of an empty file
        raise CalibrationInputError(" ".join(result.messages) or "nothing to export: pick a model.")
    settings = settings_dict(result)
    if which == ids.EXPORT_METRICS_CSV:
        return {
            "content": metrics_csv(result.rows),
            "filename": download_name("metrics", "csv"),
            "type": "text/csv",
        }
    if which == ids.EXPORT_METRICS_JSON:
        return {
            "content": metrics_json(result.rows, settings),
            "filename": download_name("metrics", "json"),
            "type": "application/json",
        }
    if which == ids.EXPORT_PARAMS_JSON:
        return {
            "content": params_json(fitted_params(ctx, result), settings),
            "filename": download_name("fitted-maps", "json"),
            "type": "application/json",
        }
    sections += group_report_html(ctx, sid, raw)
    return {
        "content": report_html(ctx, sid, result, settings, sections),
        "filename": download_name("report", "html"),
        "type": "text/html",
    }


def report_details(result, settings: dict) -> dict[str, str]:
    """Date, version, input files and settings of a report, as plain text."""
    sources = dict.fromkeys(mv.info.source for mv in result.models)
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "version": f"calibration-dashboard {__version__}",
        "input files": ", ".join(sources),
        "settings": json.dumps(settings, ensure_ascii=False),
    }


def report_html(ctx: AppContext, sid, result, settings: dict, sections: str = "") -> str:
    """The standalone HTML report of a view: figures, verdict, metrics and diagnostics.

    ``sections``: trusted HTML placed between the metrics and the diagnostics.

    The verdict loads the comparison package (scikit-learn, pandas), which the page does
    not need until a report is asked for: imported here.
    """
    from ..report.verdict import verdict_html
    from ..verdict import view_verdicts

    figures = [diagram_figure(ctx.store, result, mv) for mv in result.models]
    return html_report(
        "Calibration report",
        f"{view_title(result.view)} · {result.heldout.describe()}",
        figures,
        result.rows,
        caption(result.view),
        extra_html=sections + diagnostics_html(ctx, sid, result),
        details=report_details(result, settings),
        lead_html=verdict_html(view_verdicts(ctx.store, result)),
    )
