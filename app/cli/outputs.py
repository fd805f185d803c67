"""What both engines of ``evaluate``, ``fit`` and ``apply`` write.

The in-memory commands (:mod:`app.cli.evaluate`, :mod:`app.cli.deploy`) and the
Dask engine (:mod:`app.cli.distributed`) write the same documents: the schemas,
``evaluated_on``, the rows with their score parts, the verdict and measures lines
of the tables, the CSV cells, and the JSON summaries of ``fit`` and ``apply``.
The ``evaluate`` document has one builder, :func:`evaluate_document`, fed by
either engine's :class:`ModelResult` (its
:class:`~calibration_core.engines.CalibrationSummary`, comparison, measures and
slices); its CSV is written from that document's rows.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .common import EXIT_OK, PROG

if TYPE_CHECKING:
    from calibration_core.compare import Comparison, Verdict
    from calibration_core.engines import CalibrationSummary

SCHEMA = "calibration-dashboard/evaluate/v1"
FIT_SCHEMA = "calibration-dashboard/fit/v1"
APPLY_SCHEMA = "calibration-dashboard/apply/v1"

#: Said on stderr when ``--format csv`` meets ``--group-by``/``--window`` (either engine).
SLICES_NOT_IN_CSV = (
    f"{PROG}: warning: --group-by and --window results are in the table and JSON outputs "
    "only, not in CSV"
)

#: ``evaluated_on`` of what was computed on every row (rows, verdict, measures).
ALL_ROWS = "all rows"


def _num(value, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def measures_lines(m: dict[str, Any]) -> list[str]:
    """A few lines of one model's measures for the table output."""
    top = m["confidence"]
    cum, sp, sm = top["cumulative"], top["spiegelhalter"], top["smooth_ece"]
    sk = m["canonical"]["skce"]
    lines = [
        f"  top label: KS error {_num(cum['ks_error'])} (p {_p(cum['ks_p_value'])}), "
        f"Kuiper p {_p(cum['kuiper_p_value'])}, Spiegelhalter z {_num(sp['z'], 2)} "
        f"(p {_p(sp['p_value'])}), smooth ECE {_num(sm['value'])} "
        f"(bandwidth {_num(sm['bandwidth'])})",
        f"  classwise: mean KS error {_num(m['classwise']['ks_error_mean'])}, "
        f"ACE {_num(m['classwise']['ace'])}, TACE {_num(m['classwise']['tace'])}; "
        f"SKCE {sk['unbiased']:.3g} on {sk['n_quadratic']} rows (resampling p "
        f"{_p(sk['p_value'])}), linear {sk['linear']:.3g} (p {_p(sk['linear_p_value'])})",
    ]
    h = top["hierarchy"]
    if h is not None:
        r, c = h["recalibration"], h["curve"]
        lines.append(
            f"  top-label hierarchy: O/E {_num(h['in_the_large']['ratio']['value'], 3)}, "
            f"intercept {_num(r['intercept']['value'], 3)}, slope {_num(r['slope']['value'], 3)} "
            f"[{_num(r['slope']['lower'], 3)}, {_num(r['slope']['upper'], 3)}], ICI "
            f"{_num(c['ici'])}, E50 {_num(c['e50'])}, E90 {_num(c['e90'])}, Emax {_num(c['emax'])}"
        )
    return lines


def rows_with_parts(result, n_bins: int, scheme: str) -> list[dict[str, Any]]:
    """The comparison rows with the Brier and log-loss parts after ``log_loss``.

    :func:`calibration_core.score_parts` of each row's held-out predictions,
    binned as the ECE columns; null for a map that failed.
    """
    from calibration_core import PART_FIELDS, score_parts

    out = []
    for row in result.rows():
        pred = result.calibrated.get(row["map"])
        parts = (
            dict.fromkeys(PART_FIELDS)
            if pred is None
            else score_parts(pred.probs, pred.labels, n_bins=n_bins, scheme=scheme)
        )
        ordered: dict[str, Any] = {}
        for key, value in row.items():
            ordered[key] = value
            if key == "log_loss":
                ordered.update(parts)
        out.append(ordered)
    return out


@dataclass
class ModelResult:
    """What an engine found for one model of ``evaluate``: :func:`evaluate_document`'s input.

    Attributes
    ----------
    summary : CalibrationSummary
        The model's uncalibrated rows, every one of them
        (:class:`~calibration_core.engines.PredictionsSummary` in memory,
        :class:`~calibration_core.distributed.ModelSummary` on Dask): the
        ``uncalibrated`` row.
    comparison : Comparison or None
        The maps held out (``--maps``): on every row in memory, on the model's
        sample on Dask; None when no map was compared.
    measures : dict or None
        ``measures_summary`` (``--measures``) of the same rows as ``comparison``.
    on : str or dict
        ``evaluated_on`` of the comparison's map rows, its verdict and the
        measures: :data:`ALL_ROWS`, or a sample's ``{"rows", "seed", "of"}``.
    slices : dict
        The ``slices``, ``group_maps`` and ``time`` objects (``--group-by``,
        ``--window``), added to the model's entry as they are.
    """

    summary: CalibrationSummary
    comparison: Comparison | None = None
    measures: dict[str, Any] | None = None
    on: str | dict[str, int] = ALL_ROWS
    slices: dict[str, Any] = field(default_factory=dict)


def evaluate_document(
    args: argparse.Namespace,
    maps: list[str],
    results: list[ModelResult],
    engine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON document of ``evaluate --format json`` (docs/evaluate-json-schema.md).

    The one builder of that document, for every engine.

    Parameters
    ----------
    args : argparse.Namespace
        The command's options.
    maps : list of str
        The maps compared, in table order (``--maps all`` expanded).
    results : list of ModelResult
        One per model, in file order.
    engine : dict, optional
        Settings only an engine other than the in-memory one writes (the Dask
        engine's ``engine`` and ``sample_rows``; absent in memory, as the schema says).
    """
    from calibration_core import __version__

    return {
        "schema": SCHEMA,
        "version": __version__,
        "file": str(args.file),
        "settings": {
            "n_bins": args.bins,
            "scheme": args.scheme,
            "folds": args.folds,
            "seed": args.seed,
            "maps": list(maps),
            "label_column": args.label_column,
            "renormalize": bool(args.renormalize),
            "level": args.level,
            "measures": bool(args.measures),
            "group_by": getattr(args, "group_by", None),
            "window": getattr(args, "window", None),
            **(engine or {}),
        },
        "models": [model_document(result, args) for result in results],
    }


def model_document(result: ModelResult, args: argparse.Namespace) -> dict[str, Any]:
    """One ``models[]`` entry: the exact uncalibrated row, then the maps, measures, slices.

    Without a comparison the verdict has the single candidate ``uncalibrated``
    and the splitter is ``"none"`` (nothing was cross-fitted). With one, the map
    rows are the comparison's (parts included) without its ``uncalibrated`` row
    (the summary's is on every row); the verdict is the comparison's, whose
    candidates include ``uncalibrated`` scored on the comparison's rows.
    """
    summary, found = result.summary, result.comparison
    row = {**uncalibrated_row(summary, args.bins, args.scheme), "evaluated_on": ALL_ROWS}
    verdict = single_verdict(summary, row, args.level).to_dict()
    entry: dict[str, Any] = {
        "model": summary.name,
        "n_samples": summary.n_samples,
        "n_classes": summary.n_classes,
        "splitter": "none",
        "warnings": [],
        "rows": [row],
        "verdict": {**verdict, "evaluated_on": ALL_ROWS},
    }
    if found is not None:
        maps = rows_with_parts(found, args.bins, args.scheme)[1:]
        entry |= {
            "splitter": found.settings["splitter"],
            "warnings": list(found.warnings),
            "rows": [row, *({**r, "evaluated_on": result.on} for r in maps)],
            "verdict": {**found.verdict(level=args.level).to_dict(), "evaluated_on": result.on},
        }
    if result.measures is not None:
        entry["measures"] = {**result.measures, "evaluated_on": result.on}
    return entry | result.slices


def uncalibrated_row(summary: CalibrationSummary, n_bins: int, scheme: str) -> dict[str, Any]:
    """The ``uncalibrated`` row of any engine's summary: its metrics and score parts, no fit.

    The parts follow ``log_loss``; a part the engine does not know is None
    (the Dask engine's log-loss parts for K > 2).
    """
    row: dict[str, Any] = {"map": "uncalibrated"}
    for key, value in summary.metrics(n_bins, scheme).items():
        row[key] = value
        if key == "log_loss":
            row.update(summary.score_parts(n_bins, scheme))
    return {**row, "fit_seconds": 0.0, "converged": None, "error": None}


def single_verdict(summary: CalibrationSummary, row: dict[str, Any], level: float) -> Verdict:
    """The verdict of a table whose only row is ``uncalibrated`` (nothing was cross-fitted)."""
    from calibration_core.compare import UNCALIBRATED, Contender, Verdict
    from calibration_core.compare.verdict import FITS_FIXED

    return Verdict(
        winner=UNCALIBRATED,
        runner_up=None,
        recommended=UNCALIBRATED,
        clear=False,
        difference=None,
        lower=None,
        upper=None,
        level=level,
        interval=FITS_FIXED,
        n_rows=summary.n_samples,
        log_loss={UNCALIBRATED: row["log_loss"]},
        contenders=(Contender((UNCALIBRATED,), row["log_loss"], 0),),
        confidence_ece={UNCALIBRATED: row["confidence_ece"]},
    )


def write_csv(models: list[dict[str, Any]], out) -> None:
    """The CSV of ``evaluate`` (either engine): a ``model`` and a ``map`` column, then the
    table's, one line per row of the document's ``models`` (:func:`evaluate_document`)."""
    from calibration_core.compare import TABLE_COLUMNS

    from ..exports import csv_writer, safe_cell

    writer = csv_writer(out)
    writer.writerow(["model", "map", *TABLE_COLUMNS])
    for m in models:
        for row in m["rows"]:
            cells = [m["model"], row["map"], *(row[c] for c in TABLE_COLUMNS)]
            writer.writerow([csv_text(safe_cell(cell)) for cell in cells])


def csv_text(value) -> str:
    """One CSV cell of ``evaluate``: empty for None, ``true``/``false``, else ``str``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def verdict_line(verdict: dict[str, Any]) -> str:
    """One line: the summary, the winner's parameters in words, the recommendation, merges.

    ``verdict``: ``Verdict.to_dict()`` (both engines' JSON verdict). A merged
    contender ("matrix = dirichlet") is followed by why its maps coincide.
    """
    words = verdict["parameters"].get(verdict["winner"])
    parts = [f"verdict: {verdict['summary']}"]
    if words:
        parts.append(f"{verdict['winner']}: {words}.")
    if verdict.get("recommendation"):
        parts.append(verdict["recommendation"])
    parts += [
        f"{c['label']}: {c['same_because']}."
        for c in verdict.get("contenders", ())
        if c["same_because"]
    ]
    return " ".join(parts)


def write_fit_summary(
    args: argparse.Namespace,
    deployable,
    out,
    *,
    model: str,
    map_name: str,
    settings: dict,
    comparison: list[dict],
    verdict: dict,
    n_rows: int | None = None,
    held_out: dict | str | None = "deployable",
) -> int:
    """Write ``fit``'s JSON summary (schema :data:`FIT_SCHEMA`) for either engine.

    ``n_rows`` and ``held_out`` default to the deployable map's own (``held_out``
    ``"deployable"``); a map fitted on a whole dataset passes its row count and
    None (no rows were held out).
    """
    from calibration_core import __version__

    summary = {
        "schema": FIT_SCHEMA,
        "version": __version__,
        "file": str(args.file),
        "output": str(args.output),
        "model": model,
        "map": map_name,
        "selected": args.select or "given",
        "settings": settings,
        "input": deployable.input,
        "n_rows": deployable.n_rows if n_rows is None else n_rows,
        "n_classes": deployable.n_classes,
        "held_out": deployable.held_out if held_out == "deployable" else held_out,
        "comparison": comparison,
        "verdict": verdict,
    }
    json.dump(summary, out, indent=2, allow_nan=False)
    out.write("\n")
    return EXIT_OK


def write_apply_summary(args: argparse.Namespace, deployable, rows: int, out, **extra) -> int:
    """Write ``apply``'s JSON summary (schema :data:`APPLY_SCHEMA`, ``extra`` fields last)."""
    from calibration_core import __version__

    summary = {
        "schema": APPLY_SCHEMA,
        "version": __version__,
        "map_file": str(args.map_file),
        "file": str(args.file),
        "output": str(args.output),
        "model": deployable.model,
        "map": deployable.map.name,
        "input": deployable.input,
        "n_classes": deployable.n_classes,
        "rows": rows,
        **extra,
    }
    json.dump(summary, out, indent=2, allow_nan=False)
    out.write("\n")
    return EXIT_OK
