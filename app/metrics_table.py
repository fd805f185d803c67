"""The metrics table (dash-ag-grid): column definitions, rows and best-value flags.

One row per model and calibrator. ECE and MCE are those of the chosen notion
and binning (the column headers say which); classwise ECE uses the same
binning. The best value of each metric column *within each model* is flagged
(``best_<field>``) and highlighted by a ``cellClassRules`` rule; dash-ag-grid
evaluates such rules with its own expression parser, not ``eval``.
Cells render as text (no HTML renderer anywhere).
"""

from __future__ import annotations

import math

from .settings import NOTION_LABELS, ViewSettings

#: Metric field -> (header, True if larger is better).
METRICS: dict[str, tuple[str, bool]] = {
    "ece": ("ECE", False),
    "mce": ("MCE", False),
    "classwise_ece": ("classwise ECE", False),
    "brier_score": ("Brier", False),
    "brier_calibration": ("Brier cal.", False),
    "brier_refinement": ("Brier ref.", False),
    "log_loss": ("log-loss", False),
    "log_loss_calibration": ("log-loss cal.", False),
    "log_loss_refinement": ("log-loss ref.", False),
    "accuracy": ("accuracy", True),
}
#: The parts of Brier and log-loss (:data:`calibration_core.PART_FIELDS`): shown when
#: the "calibration + refinement" box is ticked, always in exports and reports.
PARTS: dict[str, str] = {
    "brier_calibration": "Brier calibration part: mean ||s - c||², c the class frequency "
    "in the score's bin",
    "brier_refinement": "Brier refinement part: mean ||c - y||² (what calibration cannot remove)",
    "log_loss_calibration": "log-loss calibration part: mean KL(c || s), c the class "
    "frequencies in the score's bins",
    "log_loss_refinement": "log-loss refinement part: mean -ln c(true class) (what "
    "calibration cannot remove)",
}
#: The table's one-line explanation of the parts (caption and the checkbox's help).
PARTS_CAPTION = (
    "Brier and log-loss = calibration (cal.) + refinement (ref.) + a binning residual: "
    "calibration is what a perfect recalibration would remove, refinement what it cannot; "
    "c = E[Y | S] is estimated per class column (one vs rest) on the same bins as the "
    "classwise ECE, so the residual (score - cal. - ref.) is small unless the scores in a "
    "bin differ widely (e.g. log-loss with scores near 0)"
)
NUMBER_FORMAT = "params.value == null ? '' : d3.format('.4f')(params.value)"
COUNT_FORMAT = "params.value == null ? '' : d3.format(',')(params.value)"
#: Fit time from seconds: "12 ms" under a second (fast fits read "0.00" in seconds),
#: "1.23 s" above; "< 1 ms" for what rounds to 0 ms. Exports keep the seconds.
SECONDS_FORMAT = (
    "params.value == null ? '' "
    ": params.value < 0.0005 ? '< 1 ms' "
    ": params.value < 0.9995 ? d3.format('.0f')(params.value * 1000) + ' ms' "
    ": d3.format('.2f')(params.value) + ' s'"
)


def notion_short(view: ViewSettings) -> str:
    """The notion for a column header."""
    if view.notion == "class":
        return "all classes" if view.all_classes else f"class {view.class_name}"
    return {"confidence": "confidence", "binary": "binary"}[view.notion]


def caption(view: ViewSettings) -> str:
    """What the ECE/MCE columns measure, e.g. for the table's caption."""
    extra = " (mean of the classes' ECE, largest MCE)" if view.all_classes else ""
    notion = NOTION_LABELS[view.notion]
    if view.notion == "class":
        notion = f"{notion}, {notion_short(view)}"
    parts = f" {PARTS_CAPTION}." if view.score_parts else ""
    return (
        f"ECE and MCE: {notion}{extra}; "
        f"classwise ECE: mean over classes. Binning: {view.describe_binning()}. "
        f"Brier score summed over classes.{parts} Highlighted: best value per column within "
        "each model."
    )


def column_defs(view: ViewSettings) -> list[dict]:
    """ag-grid column definitions for the current view."""
    binning = view.describe_binning()
    cols: list[dict] = [
        # Model and status pinned to the edges: visible however narrow the window.
        # (pinned columns take no flex: a width that fits the demo's names)
        {"field": "model", "headerName": "model", "width": 160, "pinned": "left"},
        {"field": "map", "headerName": "calibrator", "minWidth": 92, "flex": 1},
        {
            "field": "n",
            "headerName": "N scored",
            "type": "numericColumn",
            "valueFormatter": {"function": COUNT_FORMAT},
            "minWidth": 64,
            "flex": 1,
        },
    ]
    for field, (header, _) in METRICS.items():
        tip = None
        if field in PARTS and not view.score_parts:
            continue
        if field in ("ece", "mce"):
            header = f"{header} ({notion_short(view)})"
            tip = f"{NOTION_LABELS[view.notion]}; {binning}"
        elif field == "classwise_ece":
            tip = binning
        elif field in PARTS:
            tip = f"{PARTS[field]}; {binning}, one vs rest per class"
        col = {
            "field": field,
            "headerName": header,
            "type": "numericColumn",
            "valueFormatter": {"function": NUMBER_FORMAT},
            "cellClassRules": {"cell-best": f"params.data.best_{field} === true"},
            # Wide enough that "ECE (confidence)" wraps between words, not inside one.
            "minWidth": 96 if field in ("ece", "mce") else 76,
            "flex": 1,
        }
        if tip:
            col["headerTooltip"] = tip
        cols.append(col)
    cols.append(
        {
            "field": "fit_seconds",
            "headerName": "fit time",
            "headerTooltip": "time to fit the map (all folds); exported in seconds",
            "type": "numericColumn",
            "valueFormatter": {"function": SECONDS_FORMAT},
            "minWidth": 64,
            "flex": 1,
        }
    )
    cols.append(
        {
            "field": "status",
            "headerName": "status",
            "width": 110,
            "pinned": "right",
            "tooltipField": "status",
        }
    )
    return cols


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def row_data(rows: list[dict]) -> list[dict]:
    """Rows with ``best_<field>`` flags (per model) and JSON-safe numbers (NaN -> None)."""
    out = [dict(r) for r in rows]
    for r in out:
        r["id"] = f"{r['model']}\u241f{r['map']}"
        for key, value in list(r.items()):
            if isinstance(value, float) and not math.isfinite(value):
                r[key] = None
    for model in dict.fromkeys(r["model"] for r in out):
        group = [r for r in out if r["model"] == model]
        for field, (_, larger) in METRICS.items():
            values = [r[field] for r in group if _finite(r.get(field))]
            if len(values) < 2:
                continue
            best = max(values) if larger else min(values)
            for r in group:
                if _finite(r.get(field)) and r[field] == best:
                    r[f"best_{field}"] = True
    return out
