"""Calibration by group and over time as tables (issue 19): the page's and the report's.

The numbers are :mod:`calibration_core.slices`' (a
:class:`~calibration_core.slices.SliceReport` or
:class:`~calibration_core.slices.DriftReport`), written as
:class:`~app.diagnostics.tables.TextTable` so that the page
(:func:`~app.layout.diagnostics.table_component`) and the HTML report
(:func:`~app.report.diagnostics.table_html`) show the same cells. A cell is the
estimate, then its bootstrap interval on a second line.

Core calls only (no Dash, no Plotly), like :mod:`app.analysis`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..diagnostics.tables import TextTable, number

if TYPE_CHECKING:  # calibration_core.slices loads pandas: not at server start
    from calibration_core.slices import SliceReport

#: Columns of the per-group table: metric name -> header.
GROUP_COLUMNS = {
    "accuracy": "accuracy",
    "ece": "ECE",
    "mce": "MCE",
    "brier_score": "Brier",
    "log_loss": "log-loss",
}
#: Columns of the per-window table.
WINDOW_COLUMNS = {"ece": "ECE", "accuracy": "accuracy", "confidence": "mean confidence"}
#: Flag of a window whose ECE interval lies above the reference's upper bound.
ABOVE_REFERENCE = "above reference"


def interval_cell(row: dict, name: str) -> str:
    """``"0.0412\\n[0.0301, 0.0533]"`` from a report row (estimate only without bounds)."""
    value = row.get(name)
    if value is None:
        return "n/a"
    low, high = row.get(f"{name}_lower"), row.get(f"{name}_upper")
    if low is None or high is None:
        return number(value)
    return f"{number(value)}\n[{number(low)},\u00a0{number(high)}]"


def slice_table(report: SliceReport, n_resamples: int) -> TextTable:
    """Per-group metrics with intervals; small groups flagged, the worst named.

    Parameters
    ----------
    report : SliceReport
    n_resamples : int
        Bootstrap resamples behind the intervals (stated in the notes).
    """
    doc = report.to_dict()
    table = TextTable(["group", "rows", *GROUP_COLUMNS.values(), "note"])
    for g, row in enumerate(doc["groups"]):
        flag = "worst group" if g == report.worst else ""
        if row["small"]:
            flag = f"under {doc['min_rows']} rows: shown, not judged"
        cells = [row["group"], f"{row['rows']:,}"]
        table.rows.append([*cells, *(interval_cell(row, m) for m in GROUP_COLUMNS), flag])
    whole = doc["whole"]
    whole_cells = ["all rows", f"{report.groups.sizes.sum():,}"]
    table.rows.append([*whole_cells, *(interval_cell(whole, m) for m in GROUP_COLUMNS), ""])
    table.notes = slice_notes(report, n_resamples)
    if report.worst is None:
        table.warnings.append(
            f"Every group has fewer than {doc['min_rows']} rows: none is judged (pick a coarser "
            "column or lower the minimum)."
        )
    return table


def slice_notes(report: SliceReport, n_resamples: int) -> list[str]:
    """The worst group and its gap, the homogeneity test, how the intervals are made."""
    notes = []
    if report.worst is not None:
        notes.append(
            f"Worst group: {report.groups.labels[report.worst]}, ECE "
            f"{number(report.worst_gap)} above all rows' ECE ({number(report.whole['ece'])})."
        )
    test = report.homogeneity
    if test is not None:
        notes.append(
            f"Same calibration in every group? p = {test.p_value:.3g} (resampling test of the "
            "spread of the groups' reliability diagrams around the pooled one, "
            f"{test.n_resamples:,} resamples); a small p-value says the groups differ."
        )
    notes.append(
        f"{report.level:.0%} bootstrap intervals from {n_resamples:,} resamples of the rows within "
        "each group; ECE and MCE use each group's own bins."
    )
    return notes


def drift_table(doc: dict, n_resamples: int) -> TextTable:
    """ECE, accuracy and mean confidence per window; windows above the reference highlighted.

    Parameters
    ----------
    doc : dict
        A ``time`` document with intervals
        (:meth:`calibration_core.slices.DriftReport.to_dict`).
    n_resamples : int
        Bootstrap resamples behind the intervals (stated in the notes).

    Returns
    -------
    TextTable
        The reference period first; ``highlight`` lists the flagged windows' rows.
    """
    table = TextTable(["window", "rows", *WINDOW_COLUMNS.values(), "note"])
    ref = doc["reference"]
    ref_name = f"reference ({doc['reference_description']})"
    ref_cells = [interval_cell(ref, m) for m in WINDOW_COLUMNS]
    table.rows.append([ref_name, f"{ref['rows']:,}", *ref_cells, ""])
    for row in doc["windows"]:
        note = ABOVE_REFERENCE if row["flagged"] else ("reference" if row["reference"] else "")
        cells = [interval_cell(row, m) for m in WINDOW_COLUMNS]
        table.rows.append([row["window"], f"{row['rows']:,}", *cells, note])
        if row["flagged"]:
            table.highlight.append(len(table.rows) - 1)
    table.notes = drift_notes(doc, n_resamples)
    return table


def drift_notes(doc: dict, n_resamples: int) -> list[str]:
    """Notices on the times (zones converted), what is flagged, how the intervals are made."""
    flagged = sum(bool(r["flagged"]) for r in doc["windows"])
    return [
        *doc.get("notices", ()),
        f"{flagged} window{'' if flagged == 1 else 's'} whose ECE interval lies entirely above "
        f"the reference period's upper bound ({number(doc['reference']['ece_upper'])}): "
        "calibration got worse there.",
        f"{doc['level']:.0%} bootstrap intervals from {n_resamples:,} resamples of the rows "
        "within each window; each window's ECE uses its own bins.",
    ]
