"""Exports of the current view: metrics (CSV, JSON), fitted maps (JSON),
calibrated predictions (one CSV per model and map, zipped when several;
streamed) and a standalone HTML report.

CSV cells are safe to open in a spreadsheet (OWASP "CSV injection"): a
*string* cell starting with ``=``, ``+``, ``-``, ``@`` or any control or
invisible formatting character (tab, carriage return, line feed, bidi
overrides...) gets a leading single quote; numbers are never touched. Every
table CSV ends its lines with ``\r\n`` (RFC 4180), so the writer quotes any
cell holding a carriage return or a line feed: a bare ``\r`` inside a name can
never start a new row whose first cell is a formula. Every table CSV (the
page's metrics and the command line's) is written by :func:`csv_writer`. The
calibrated predictions are written by the command line's ``apply`` writer
(:func:`calibration_core.deploy.text_writer`, Arrow's), which quotes every text
cell, so the same holds; their labels pass through :func:`safe_cell`. Download
file names are generated here, never taken from user input.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
import time
import unicodedata
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from calibration_core import Predictions

from .metrics_table import METRICS

if TYPE_CHECKING:
    import pyarrow as pa

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


@dataclass(frozen=True)
class CalibratedFile:
    """One file of the calibrated export: one map's held-out predictions of one model.

    Attributes
    ----------
    model, calibrator : str
        The model's name and the map's registry name.
    pred : Predictions
        The calibrated (held-out) predictions.
    rows : numpy.ndarray or None
        The input row (0-based) of each row of ``pred``; None: all rows, in order.
    score : bool
        The model was read from one ``score`` column: written back as one.
    """

    model: str
    calibrator: str
    pred: Predictions
    rows: np.ndarray | None
    score: bool


def calibrated_batches(item: CalibratedFile, chunk_rows: int = 50_000) -> Iterator[pa.RecordBatch]:
    """The rows of one calibrated file: ``row, label`` and the calibrated columns.

    The calibrated columns follow the input's layout exactly as the command
    line's ``apply`` writes them (:func:`calibration_core.deploy.output_names`):
    a binary ``score`` input gives one ``score`` column, probabilities or
    logits one ``p_<class>`` column per class. Labels pass through
    :func:`safe_cell` (a class named ``=cmd`` is written ``'=cmd``).
    """
    import pyarrow as pa  # loaded on the first export

    from calibration_core.deploy import output_arrays, output_names

    pred = item.pred
    names = output_names(pred.class_names, item.score)
    labels = pa.array([safe_cell(c) for c in pred.class_names], pa.string())
    header = ["row", "label", *names]
    for start in range(0, pred.n_samples, chunk_rows):
        stop = min(start + chunk_rows, pred.n_samples)
        index = np.arange(start, stop) if item.rows is None else np.asarray(item.rows)[start:stop]
        label = labels.take(pa.array(pred.labels[start:stop]))
        columns = [pa.array(index, pa.int64()), label]
        columns += output_arrays(pred.probs[start:stop], item.score)
        yield pa.RecordBatch.from_arrays(columns, names=header)


class ByteChunks(io.RawIOBase):
    """A write-only, unseekable file that hands what was written on to a streamed response."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        """Everything written since the last call."""
        out = b"".join(self.parts)
        self.parts.clear()
        return out


def write_calibrated_csv(out, item: CalibratedFile) -> Iterator[int]:
    """Write one calibrated file as CSV to the binary file ``out``, with ``apply``'s writer.

    A generator: it writes one batch per step and yields the rows written so
    far, so a streamed response passes the bytes on as they are made.
    """
    from calibration_core.deploy import text_writer

    writer, done = None, 0
    try:
        for batch in calibrated_batches(item):
            writer = writer or text_writer(out, batch.schema)
            writer.write_batch(batch)
            done += batch.num_rows
            yield done
    finally:
        if writer is not None:
            writer.close()


def member_names(items: list[CalibratedFile]) -> list[str]:
    """File names in the zip, e.g. ``densenet-100.temperature.csv`` (unique, path-free).

    Names come from the model names, reduced to letters, digits, ``-`` and ``_``
    (no folder, no leading dot), so that unzipping writes where it is asked to.
    """
    seen: set[str] = set()
    out = []
    for item in items:
        stem = re.sub(r"[^A-Za-z0-9_-]+", "_", item.model).strip("_")[:60] or "model"
        name, n = f"{stem}.{item.calibrator}.csv", 2
        while name in seen:
            name, n = f"{stem}-{n}.{item.calibrator}.csv", n + 1
        seen.add(name)
        out.append(name)
    return out


def calibrated_download(items: list[CalibratedFile]) -> tuple[str, str, Iterator[bytes]]:
    """``(file name, mimetype, byte chunks)`` of the calibrated export.

    One CSV when there is one file, else a zip (deflate level 1: 3.1x smaller
    than the CSVs on CIFAR-100 probabilities, BENCHMARKS.md) of one CSV per
    model and map, written as the chunks are read.
    """
    if len(items) == 1:
        return download_name("calibrated", "csv"), "text/csv", _csv_chunks(items[0])
    return download_name("calibrated", "zip"), "application/zip", _zip_chunks(items)


def _csv_chunks(item: CalibratedFile) -> Iterator[bytes]:
    sink = ByteChunks()
    for _ in write_calibrated_csv(sink, item):
        yield sink.take()
    yield sink.take()


def _zip_chunks(items: list[CalibratedFile]) -> Iterator[bytes]:
    sink = ByteChunks()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for item, name in zip(items, member_names(items), strict=True):
            with archive.open(name, "w") as member:
                for _ in write_calibrated_csv(member, item):
                    yield sink.take()
    yield sink.take()


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
        diagnostics, :func:`app.report.diagnostics.diagnostics_html`).
    details : dict of str to str, optional
        Plain-text facts shown under the title (date, version, input files,
        settings), escaped here.
    lead_html : str
        Trusted, already escaped HTML placed before the metrics (the verdict,
        :func:`app.report.verdict.verdict_html`).
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
