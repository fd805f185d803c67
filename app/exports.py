"""Exports of the current view: metrics (CSV, JSON), fitted maps (JSON),
calibrated predictions (CSV, streamed) and a standalone HTML report.

CSV cells are safe to open in a spreadsheet (OWASP "CSV injection"): a
*string* cell starting with ``=``, ``+``, ``-``, ``@`` or any control or
invisible formatting character (tab, carriage return, line feed, bidi
overrides...) gets a leading single quote; numbers are never touched. Every
CSV ends its lines with ``\r\n`` (RFC 4180), so the writer quotes any cell
holding a carriage return or a line feed: a bare ``\r`` inside a name can
never start a new row whose first cell is a formula. Every CSV export (the
page's and the command line's) is written by :func:`csv_writer`. Download
file names are generated here, never taken from user input.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import time
import unicodedata
from collections.abc import Iterable, Iterator
from typing import TextIO

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from calibration_core import Predictions

from .metrics_table import METRICS

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\n")
#: RFC 4180 line ends: the csv module quotes every cell that holds ``\r`` or ``\n``.
CSV_LINE_END = "\r\n"
EXPORT_FORMAT = "calibration-dashboard/export/v1"


def safe_cell(value):
    """A CSV cell: strings that a spreadsheet could run as a formula get a leading ``'``.

    A string is changed when it starts with one of :data:`FORMULA_PREFIXES`
    or with any other control or format character (Unicode category ``C``:
    ``\x00``, ``\x0b``, a right-to-left override...), since a reader or a
    spreadsheet may drop or split on such a character and see what follows
    as the cell's start. Only ``str`` values are changed; numbers (including
    negative ones) and None are returned as they are.
    """
    if isinstance(value, str) and value:
        first = value[0]
        if first in FORMULA_PREFIXES or unicodedata.category(first)[0] == "C":
            return "'" + value
    return value


def csv_writer(out: TextIO):
    """The :func:`csv.writer` of every CSV export (``\r\n`` line ends, see the module doc).

    Pass cells through :func:`safe_cell`; the line ends make the writer quote
    any cell with a line break inside, so a row can never be split.
    """
    return csv.writer(out, lineterminator=CSV_LINE_END)


def csv_text(header: list[str], rows: Iterable[Iterable]) -> str:
    """CSV text with every string cell (and header) passed through :func:`safe_cell`."""
    buf = io.StringIO()
    writer = csv_writer(buf)
    writer.writerow([safe_cell(h) for h in header])
    for row in rows:
        writer.writerow(["" if v is None else safe_cell(v) for v in row])
    return buf.getvalue()


def download_name(kind: str, ext: str) -> str:
    """A generated download name, e.g. ``calibration-metrics-20250101-120000.csv``."""
    return f"calibration-{kind}-{time.strftime('%Y%m%d-%H%M%S')}.{ext}"


METRIC_FIELDS = ("model", "map", "n", *METRICS, "fit_seconds", "status")


def metrics_csv(rows: list[dict]) -> str:
    """The metrics table as CSV (columns :data:`METRIC_FIELDS`)."""
    return csv_text(list(METRIC_FIELDS), ([r.get(f) for f in METRIC_FIELDS] for r in rows))


def _json_number(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def metrics_json(rows: list[dict], settings: dict) -> str:
    """The metrics table and the settings it was computed with, as JSON."""
    doc = {
        "format": EXPORT_FORMAT,
        "kind": "metrics",
        "settings": settings,
        "rows": [{f: _json_number(r.get(f)) for f in METRIC_FIELDS} for r in rows],
    }
    return json.dumps(doc, indent=2, allow_nan=False)


def params_json(fits: dict[str, dict[str, list[dict]]], settings: dict) -> str:
    """Fitted map parameters: model -> map -> one ``CalibrationMap.to_dict()`` per fold."""
    doc = {"format": EXPORT_FORMAT, "kind": "fitted-maps", "settings": settings, "models": fits}
    return json.dumps(doc, indent=2, allow_nan=False)


def calibrated_csv_chunks(
    items: list[tuple[str, str, Predictions, np.ndarray | None]], chunk_rows: int = 50_000
) -> Iterator[str]:
    """Calibrated predictions as CSV text chunks (for a streamed download).

    Parameters
    ----------
    items : list of (model name, calibrator, Predictions, row indices or None)
        Row indices map each row back to the uploaded file's rows (0-based);
        None means the rows are the file's rows in order.
    chunk_rows : int
        Rows per yielded chunk.

    Yields
    ------
    str
        The header first (``model, calibrator, row, label, p_<class>...`` over
        the union of class names), then the rows.
    """
    classes: list[str] = []
    for _, _, pred, _ in items:
        for c in pred.class_names:
            if c not in classes:
                classes.append(c)
    yield csv_text(["model", "calibrator", "row", "label", *[f"p_{c}" for c in classes]], [])
    import pandas as pd  # its fast CSV writer, loaded on the first export

    for model, calibrator, pred, rows in items:
        col_of = [classes.index(c) for c in pred.class_names]
        names = np.asarray([safe_cell(c) for c in pred.class_names], dtype=object)
        model_cell, cal_cell = safe_cell(model), safe_cell(calibrator)
        for start in range(0, pred.n_samples, chunk_rows):
            stop = min(start + chunk_rows, pred.n_samples)
            probs = np.full((stop - start, len(classes)), np.nan)
            probs[:, col_of] = pred.probs[start:stop]
            index = np.arange(start, stop) if rows is None else np.asarray(rows)[start:stop]
            frame = pd.DataFrame(probs, columns=[f"p{j}" for j in range(len(classes))])
            frame.insert(0, "label", names[pred.labels[start:stop]])
            frame.insert(0, "row", index)
            frame.insert(0, "calibrator", cal_cell)
            frame.insert(0, "model", model_cell)
            yield frame.to_csv(header=False, index=False, lineterminator=CSV_LINE_END)


def html_report(
    title: str,
    subtitle: str,
    figures: list[go.Figure],
    rows: list[dict],
    caption: str,
    extra_html: str = "",
    *,
    details: dict[str, str] | None = None,
    lead_html: str = "",
) -> str:
    """A standalone HTML report that opens offline (plotly.js is embedded).

    Parameters
    ----------
    title, subtitle, caption : str
        Plain text (escaped here).
    figures : list of plotly Figure
    rows : list of dict
        Metric rows (:data:`METRIC_FIELDS`).
    extra_html : str
        Trusted, already escaped HTML appended after the metrics (the
        diagnostics, :func:`app.diagnostics.report.diagnostics_html`).
    details : dict of str to str, optional
        Plain-text facts shown under the title (date, version, input files,
        settings), escaped here.
    lead_html : str
        Trusted, already escaped HTML placed before the metrics (the verdict,
        :func:`app.verdict.verdict_html`).
    """
    parts = []
    for i, fig in enumerate(figures):
        parts.append(
            pio.to_html(
                fig,
                include_plotlyjs=(i == 0),
                full_html=False,
                config={"displaylogo": False},
            )
        )

    def cell(v):
        if isinstance(v, float):
            return "" if not math.isfinite(v) else f"{v:.4f}"
        return html.escape("" if v is None else str(v))

    facts = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
        for k, v in (details or {}).items()
    )
    facts_html = f'<table class="details">{facts}</table>' if facts else ""
    head = "".join(f"<th>{html.escape(f)}</th>" for f in METRIC_FIELDS)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(r.get(f))}</td>" for f in METRIC_FIELDS) + "</tr>"
        for r in rows
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #1f2328; }}
table {{ border-collapse: collapse; font-size: 13px; margin-top: 8px; }}
th, td {{ border: 1px solid #d0d7de; padding: 4px 8px; text-align: right; }}
th {{ background: #f6f8fa; }} td:first-child, td:nth-child(2) {{ text-align: left; }}
.caption {{ color: #57606a; font-size: 13px; }}
table.details th, table.details td {{ text-align: left; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p class="caption">{html.escape(subtitle)}</p>
{facts_html}
{"".join(parts)}
{lead_html}
<h2>Metrics</h2>
<p class="caption">{html.escape(caption)}</p>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
{extra_html}
</body></html>
"""
