"""The Diagnostics part of the HTML report (appended by :func:`app.exports.html_report`).

For every model of the exported view: the ECE sensitivity plot, the ECE
estimators, Hosmer-Lemeshow, the decision view (binary problems) and the
human-uncertainty measures (when soft labels were uploaded) are computed
again for the view's settings (they are cheap); the resampling test, the
bootstrap intervals, the "Over time" card's intervals (when the card was
opened) and the "Beyond bins" measures are taken from the disk
store, where the dashboard's background jobs put them, for the measure,
resamples and level last used in the Diagnostics section of this session
(otherwise the report says how to get them). The tables are the page's
(:mod:`app.diagnostics.tables`); every text is escaped here, and figures
reuse the plotly.js the report already embeds.
"""

from __future__ import annotations

import html
import logging

import plotly.graph_objects as go
import plotly.io as pio

from calibration_core import CalibrationInputError

from ..analysis import variants
from ..context import AppContext
from ..diagnostics.beyond import BEYOND_TITLE, NOT_COMPUTED, beyond_rows, beyond_table
from ..diagnostics.cards import decision_view, hosmer_lemeshow_rows, human_rows
from ..diagnostics.overview import estimator_rows, sensitivity_curves
from ..diagnostics.resampling import bootstrap_rows, calibration_tests
from ..diagnostics.tables import (
    HUMAN_MISSING,
    TextTable,
    bootstrap_table,
    decision_table,
    estimator_table,
    hosmer_lemeshow_table,
    human_table,
    resampling_table,
)
from ..diagnostics.target import (
    DEFAULT_BOOT_LEVEL,
    DEFAULT_RESAMPLES,
    HL_DEFAULT_GROUPS,
    DiagTarget,
    notion_spec,
    remembered,
)
from ..figures.diagnostics import cost_figure, null_figure, sensitivity_figure
from ..figures.groups import drift_figure
from ..groups.tables import drift_table
from ..groups.time import saved_settings, time_document, time_target
from ..metrics_table import METRICS, notion_short
from ..options import model_label
from ..settings import SCHEME_LABELS

log = logging.getLogger("calibration_dashboard.report")

STYLE = """<style>
.diag-notes { color: #57606a; font-size: 12.5px; margin: 6px 0 14px; padding-left: 18px; }
.diag-warning { margin: 8px 0; padding: 6px 10px; background: #fff8e1;
  border-left: 3px solid #E69F00; font-size: 13px; }
.diag-empty { color: #57606a; font-size: 13px; }
h2.diag-model { margin-top: 36px; border-top: 1px solid #d0d7de; padding-top: 16px; }
.diagnostics td:nth-child(2) { text-align: right; }
.diagnostics .beyond td:nth-child(2) { text-align: left; color: #57606a; }
tr.highlight td { background: #fde2e1; font-weight: 600; }
</style>"""


def table_html(table: TextTable) -> str:
    """A :class:`TextTable` as escaped HTML (cell line breaks become ``<br>``)."""

    def cell(text: str) -> str:
        return html.escape(text).replace("\n", "<br>")

    head = "".join(f"<th>{cell(h)}</th>" for h in table.header)
    marked = set(table.highlight)
    body = "".join(
        ('<tr class="highlight">' if i in marked else "<tr>")
        + "".join(f"<td>{cell(c)}</td>" for c in row)
        + "</tr>"
        for i, row in enumerate(table.rows)
    )
    parts = [f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"]
    parts += [f'<div class="diag-warning">{cell(w)}</div>' for w in table.warnings]
    if table.notes:
        items = "".join(f"<li>{cell(n)}</li>" for n in table.notes)
        parts.append(f'<ul class="diag-notes">{items}</ul>')
    return "".join(parts)


def figure_html(fig: dict, static: bool = False) -> str:
    """A figure dict as an HTML fragment using the plotly.js the report embeds.

    ``static``: no hover, zoom or mode bar (a figure read like a printed one).
    """
    config = {"displaylogo": False, **({"staticPlot": True} if static else {})}
    return pio.to_html(
        go.Figure(fig, skip_invalid=True), include_plotlyjs=False, full_html=False, config=config
    )


def _note(text: str) -> str:
    return f'<p class="diag-empty">{html.escape(text)}</p>'


def _section(title: str, body: str) -> str:
    return f"<h3>{html.escape(title)}</h3>{body}"


def model_diagnostics(ctx: AppContext, sid, target: DiagTarget) -> str:
    """Every diagnostic of one model, as an HTML fragment."""
    store, view, info = ctx.store, target.view, target.info
    spec = notion_spec(info, view)
    parts = [
        f'<h2 class="diag-model">Diagnostics · {html.escape(info.name)}</h2>',
        _note(
            f"{model_label(info)} · {spec.label} · {view.describe_binning()} · "
            f"{target.heldout.describe()} · calibrators: "
            + ", ".join(v.calibrator for v in target.variants)
        ),
    ]
    curves = sensitivity_curves(store, target)
    parts.append(
        _section(
            "ECE against the number of bins",
            figure_html(sensitivity_figure(curves, view.n_bins, spec.label, info.name)),
        )
    )
    parts.append(
        _section(
            "Plug-in, adaptive and debiased calibration errors",
            table_html(estimator_table(estimator_rows(store, target), SCHEME_LABELS[view.scheme])),
        )
    )
    groups = remembered(ctx.store, sid, "hl").get("groups", HL_DEFAULT_GROUPS)
    parts.append(
        _section(
            "Hosmer-Lemeshow goodness of fit",
            table_html(
                hosmer_lemeshow_table(
                    hosmer_lemeshow_rows(store, target, groups), info.n_classes, groups
                )
            ),
        )
    )
    parts.append(_section("Resampling test of calibration", _resampling(ctx, sid, target)))
    parts.append(_section("Bootstrap confidence intervals", _bootstrap(ctx, sid, target)))
    over_time = _over_time(ctx, sid, target)
    if over_time:
        parts.append(_section("Over time", over_time))
    parts.append(_section(BEYOND_TITLE, _beyond(ctx, target)))
    if info.n_classes == 2:
        parts.append(_section("Decision view", _decision(ctx, sid, target)))
    rows = human_rows(store, target)
    parts.append(
        _section(
            "Human-uncertainty calibration",
            _note(HUMAN_MISSING) if rows is None else table_html(human_table(rows)),
        )
    )
    return "".join(parts)


def _resampling(ctx: AppContext, sid, target: DiagTarget) -> str:
    saved = remembered(ctx.store, sid, "test")
    measure = saved.get("measure", "confidence_ece")
    n_resamples = saved.get("n_resamples", DEFAULT_RESAMPLES)
    try:
        rows = calibration_tests(ctx.store, target, measure, n_resamples)
    except CalibrationInputError as exc:
        return _note(str(exc))
    body = table_html(resampling_table(rows, measure, n_resamples))
    if any(r.result is not None for r in rows):
        body += figure_html(null_figure(rows, measure, target.info.name))
    else:
        body = (
            _note("Not run for these settings: press “Run test” in the Diagnostics section.") + body
        )
    return body


def _bootstrap(ctx: AppContext, sid, target: DiagTarget) -> str:
    saved = remembered(ctx.store, sid, "boot")
    if not saved:
        return _note(
            "Not computed: press “Compute intervals for every metric” in the Diagnostics "
            "section first."
        )
    level = saved.get("level", DEFAULT_BOOT_LEVEL)
    n_resamples = saved.get("n_resamples", DEFAULT_RESAMPLES)
    rows = bootstrap_rows(ctx.store, target, level, n_resamples)
    short = notion_short(target.view)
    headers = {"ece": f"ECE ({short})", "mce": f"MCE ({short})"} | {
        f: METRICS[f][0] for f in ("classwise_ece", "brier_score", "log_loss", "accuracy")
    }
    return table_html(bootstrap_table(rows, headers, level, n_resamples))


def _over_time(ctx: AppContext, sid, target: DiagTarget) -> str:
    """The "Over time" card with the settings it last used ("" if it was never opened)."""
    saved = saved_settings(remembered(ctx.store, sid, "time"))
    if saved is None:
        return ""
    settings, n_resamples = saved
    try:
        t = time_target(ctx.store, target, settings)
        doc, with_intervals = time_document(ctx.store, t, n_resamples)
    except CalibrationInputError as exc:
        return _note(str(exc))
    title = f"{target.info.name}: calibration over time"
    body = figure_html(drift_figure(doc, title=title, subtitle=t.describe()), static=True)
    if not with_intervals:
        return (
            _note("Intervals not computed: press “Compute intervals” in the “Over time” card.")
            + body
        )
    return body + table_html(drift_table(doc, n_resamples))


def _beyond(ctx: AppContext, target: DiagTarget) -> str:
    rows = beyond_rows(ctx.store, target)
    table = table_html(beyond_table(rows, notion_spec(target.info, target.view)))
    body = f'<div class="beyond">{table}</div>'
    if any(r.message == NOT_COMPUTED for r in rows):
        body = _note("Not computed: press “Compute measures” in the Diagnostics section.") + body
    return body


def _decision(ctx: AppContext, sid, target: DiagTarget) -> str:
    saved = remembered(ctx.store, sid, "decision")
    try:
        view = decision_view(
            target,
            saved.get("cost_fp", 1.0),
            saved.get("cost_fn", 1.0),
            saved.get("train_prior"),
            saved.get("deploy_prior"),
        )
    except CalibrationInputError as exc:
        return _note(str(exc))
    return table_html(decision_table(view)) + figure_html(cost_figure(view, target.info.name))


def diagnostics_html(ctx: AppContext, sid, result) -> str:
    """The report's Diagnostics part for every model of ``result`` (an analysis ViewResult).

    Problems of one model become a line of text; the report is always written.
    """
    parts = []
    for mv in result.models:
        target = DiagTarget(
            mv.info,
            result.view,
            result.heldout,
            result.maps,
            variants(ctx.store, mv.info, result.maps, result.heldout),
        )
        try:
            parts.append(model_diagnostics(ctx, sid, target))
        except CalibrationInputError as exc:
            parts.append(
                f'<h2 class="diag-model">Diagnostics · {html.escape(mv.info.name)}</h2>'
                + _note(str(exc))
            )
        except Exception:
            log.exception("report diagnostics of %r failed", mv.info.name)
            parts.append(
                f'<h2 class="diag-model">Diagnostics · {html.escape(mv.info.name)}</h2>'
                + _note("The diagnostics of this model could not be computed.")
            )
    return STYLE + '<div class="diagnostics">' + "".join(parts) + "</div>" if parts else ""
