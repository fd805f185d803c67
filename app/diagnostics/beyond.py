"""The "Beyond bins" card: binning-free, whole-vector and clinical measures per calibrator.

For the Diagnostics section's model and each of its calibrators, on the
view's notion (top label, binary, or one class vs rest):

* the **smooth ECE** (Błasiok & Nakkiran 2023), the **KS calibration error**
  with its p-value and **Kuiper's** p-value (Gupta et al. 2021; Tygert), and
  **Spiegelhalter's Z** test, all on the notion's score column;
* **TACE** (Nixon et al. 2019, all classes) and the **SKCE** with its
  consistency-resampling p-value (Widmann et al. 2019, the whole vector);
* for binary and one-vs-rest problems, the **calibration hierarchy**
  (Van Calster et al.): observed/expected events with its interval, the
  calibration intercept and slope with intervals and the slope's reading,
  and the lowess curve's ICI, E50, E90 and Emax (as R's ``rms::val.prob``).

They cost seconds per calibrator (the SKCE's resampling test, the lowess
curve), so they are computed on demand by a background job and kept in the
disk store (plain JSON-safe dicts), where the page and the HTML report read
them. The core (:mod:`calibration_core.measures`) is imported lazily: it
loads ``scipy.special``, which the server does not need at start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from calibration_core import CalibrationInputError, Predictions

from ..store.data_store import DataStore
from .resampling import SEED, Progress
from .tables import TextTable, format_p, number
from .target import DiagTarget, NotionSpec, notion_spec

#: Bump when a stored record's fields change (old records are then recomputed).
RECORD_VERSION = 1
BEYOND_TITLE = "Beyond bins: smooth, cumulative, whole-vector and clinical measures"
NOT_COMPUTED = "not computed yet: press “Compute measures”"

#: (row label, one line on what the measure detects), in the table's order.
MEASURES = {
    "smooth_ece": (
        "smooth ECE",
        "size of the miscalibration, without bins (kernel-smoothed gap; its bandwidth is "
        "chosen by the data)",
    ),
    "ks": (
        "KS calibration error (p)",
        "largest gap between the cumulative labels and scores along the sorted scores; "
        "the p-value tests calibration",
    ),
    "kuiper": (
        "Kuiper p-value",
        "a miscalibrated stretch of scores anywhere (largest rise plus fall of the cumulative gap)",
    ),
    "spiegelhalter": (
        "Spiegelhalter z (p)",
        "over- or under-confidence over all rows (the Brier score's calibration part)",
    ),
    "tace": (
        "TACE",
        "class-wise gaps over all classes on equal-mass ranges of the scores above 0.01",
    ),
    "skce": (
        "SKCE (p)",
        "miscalibration of the whole probability vector (canonical), with a resampling test",
    ),
    "ratio": (
        "observed / expected events",
        "calibration in the large: as many events as predicted? (1 is right)",
    ),
    "intercept": (
        "calibration intercept",
        "mean calibration with the slope fixed at 1: > 0 under-predicts, < 0 over-predicts",
    ),
    "slope": (
        "calibration slope",
        "spread of the predictions: < 1 too extreme (over-fitted), > 1 too moderate",
    ),
    "reading": ("reading", "the slope in words"),
    "ici": ("ICI (Eavg)", "mean distance of the lowess calibration curve from the diagonal"),
    "e50": ("E50", "median distance of the curve from the diagonal, over the rows"),
    "e90": ("E90", "90th percentile of that distance: how bad it gets for most rows"),
    "emax": ("Emax", "largest distance: the worst stretch of scores"),
}
HIERARCHY_ROWS = ("ratio", "intercept", "slope", "reading", "ici", "e50", "e90", "emax")


@dataclass
class BeyondRow:
    """The measures of one calibrator: a stored record, or why there is none."""

    calibrator: str
    record: dict | None = None
    message: str | None = None


def beyond_key(variant_handle: str, spec: NotionSpec) -> str:
    """Disk-store key of a calibrator's record for a notion."""
    return f"diag:beyond:v{RECORD_VERSION}:{variant_handle}:{spec.kind}:{spec.class_index}:{SEED}"


def _column(pred: Predictions, spec: NotionSpec) -> dict[str, Any]:
    from calibration_core.measures import (
        calibration_hierarchy,
        cumulative_test,
        smooth_ece,
        spiegelhalter_test,
    )

    kw = {"notion": spec.kind, "class_index": spec.class_index}
    out: dict[str, Any] = {
        "cumulative": cumulative_test(pred, **kw).to_dict(),
        "spiegelhalter": spiegelhalter_test(pred, **kw).to_dict(),
        "smooth_ece": smooth_ece(pred, **kw).to_dict(),
        "hierarchy": None,
        "hierarchy_message": "for binary and one-vs-rest views only",
    }
    if spec.kind in ("binary", "class"):
        try:
            out["hierarchy"] = calibration_hierarchy(pred, **kw).to_dict()
            out["hierarchy_message"] = None
        except CalibrationInputError as exc:
            out["hierarchy_message"] = str(exc)
    return out


def beyond_record(pred: Predictions, spec: NotionSpec) -> dict[str, Any]:
    """Every measure of the card for one calibrator's predictions, as JSON-safe values.

    Parameters
    ----------
    pred : Predictions
        Held-out scores of shape ``(N, K)`` and labels of shape ``(N,)``.
    spec : NotionSpec
        The view's notion; "classwise" (all classes) has no single score
        column, so its column measures and hierarchy are left out.

    Returns
    -------
    dict
        ``column`` (None for all classes): ``cumulative``, ``spiegelhalter``,
        ``smooth_ece``, ``hierarchy`` (None with ``hierarchy_message``);
        ``tace``; ``skce``. NaN becomes None.
    """
    from calibration_core.measures import skce
    from calibration_core.measures.ece_variants import thresholded_adaptive_ece
    from calibration_core.measures.summary import finite_or_none

    record = {
        "column": None if spec.kind == "classwise" else _column(pred, spec),
        "tace": thresholded_adaptive_ece(pred),
        "skce": skce(pred, seed=SEED).to_dict(),
    }
    return finite_or_none(record)


def beyond_rows(
    store: DataStore,
    target: DiagTarget,
    *,
    compute: bool = False,
    progress: Progress | None = None,
) -> list[BeyondRow]:
    """The card's records of every calibrator: from the store, or computed (and stored).

    Parameters
    ----------
    store : DataStore
    target : DiagTarget
    compute : bool
        Compute the missing records (the background job); otherwise they carry
        :data:`NOT_COMPUTED`.
    progress : callable(done, total, text), optional

    Returns
    -------
    list of BeyondRow
        One per calibrator, in the target's order.
    """
    spec = notion_spec(target.info, target.view)
    todo = [v for v in target.ready if store.cache.get(beyond_key(v.handle, spec)) is None]
    rows: list[BeyondRow] = []
    done = 0
    for v in target.variants:
        if v.pred is None:
            rows.append(BeyondRow(v.calibrator, message=v.message))
            continue
        key = beyond_key(v.handle, spec)
        record = store.cache.get(key)
        if record is None and compute:
            if progress is not None:
                progress(done, len(todo), f"measuring {v.calibrator} ({done + 1}/{len(todo)}) …")
            record = beyond_record(v.pred, spec)
            store.cache.set(key, record, expire=store.ttl)
            done += 1
        rows.append(BeyondRow(v.calibrator, record, None if record else NOT_COMPUTED))
    if progress is not None and compute:
        progress(len(todo), max(len(todo), 1), "")
    return rows


# ---------------------------------------------------------------------- table
def _p(value) -> str:
    return "n/a" if value is None else format_p(value)


def _interval(est: dict | None) -> str:
    if est is None:
        return ""
    return f"{number(est['value'], 3)} [{number(est['lower'], 3)}, {number(est['upper'], 3)}]"


def _column_cells(column: dict | None) -> dict[str, str]:
    if column is None:  # said once, in the first row
        return {"smooth_ece": "all classes have no single score column: pick one class"}
    cum, sp = column["cumulative"], column["spiegelhalter"]
    return {
        "smooth_ece": number(column["smooth_ece"]["value"]),
        "ks": f"{number(cum['ks_error'])} ({_p(cum['ks_p_value'])})",
        "kuiper": _p(cum["kuiper_p_value"]),
        "spiegelhalter": f"{number(sp['z'], 2)} ({_p(sp['p_value'])})",
    }


def _hierarchy_cells(column: dict | None) -> dict[str, str]:
    h = None if column is None else column["hierarchy"]
    if h is None:
        why = "pick one class" if column is None else column["hierarchy_message"] or ""
        return {HIERARCHY_ROWS[0]: why}  # said once, in the hierarchy's first row
    large, recal, curve = h["in_the_large"], h["recalibration"], h["curve"]
    return {
        "ratio": f"{_interval(large['ratio'])}\n{large['observed']:,.0f} / "
        f"{large['expected']:,.1f}",
        "intercept": _interval(recal["intercept"]),
        "slope": _interval(recal["slope"]),
        "reading": recal["reading"] + ("" if recal["converged"] else " (fit did not converge)"),
        **{k: number(curve[k]) for k in ("ici", "e50", "e90", "emax")},
    }


def record_cells(record: dict) -> dict[str, str]:
    """The card's cells of one calibrator's record, by measure key."""
    sk = record["skce"]
    return {
        **_column_cells(record["column"]),
        "tace": number(record["tace"]),
        "skce": f"{number(sk['unbiased'], 6)} ({_p(sk['p_value'])})",
        **_hierarchy_cells(record["column"]),
    }


def beyond_notes(spec: NotionSpec) -> list[str]:
    """How to read the card, for the page and the report."""
    return [
        f"Measured on {spec.label}, on the held-out rows of each calibrator. Estimates "
        "(smooth ECE, KS error, TACE, SKCE, ICI/E50/E90/Emax) say how large a "
        "miscalibration is; p-values test whether there is any: a small p rejects "
        "calibration, a large one does not prove it.",
        "KS and Kuiper p-values are asymptotic (Brownian-motion limits); Spiegelhalter's is "
        "two-sided normal; the SKCE's is a consistency-resampling test on at most 2,000 rows "
        f"(seed {SEED}). The hierarchy's intervals are 95% Wald intervals; its curve is "
        "R's lowess(p, y, iter = 0), as rms::val.prob. See docs/measures.md.",
    ]


def beyond_table(rows: list[BeyondRow], spec: NotionSpec) -> TextTable:
    """One row per measure (with what it detects), one column per calibrator."""
    table = TextTable(
        ["measure", "what it detects", *(r.calibrator for r in rows)], notes=beyond_notes(spec)
    )
    cells = [record_cells(r.record) if r.record else {} for r in rows]
    for i, (key, (label, detects)) in enumerate(MEASURES.items()):
        missing = [(r.message or "") if i == 0 else "" for r in rows]  # a cell no record fills
        table.rows.append(
            [label, detects, *(c.get(key, m) for c, m in zip(cells, missing, strict=True))]
        )
    return table
