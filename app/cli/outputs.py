"""What both engines of ``evaluate``, ``fit`` and ``apply`` write.

The in-memory commands (:mod:`app.cli.evaluate`, :mod:`app.cli.deploy`) and the
Dask engine (:mod:`app.cli.distributed`) write the same documents: the schemas,
``evaluated_on``, the rows with their score parts, the verdict and measures lines
of the tables, the CSV cells, and the JSON summaries of ``fit`` and ``apply``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .common import EXIT_OK, PROG

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
