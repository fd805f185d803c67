"""Slices and time windows on the command line (issue 19).

``evaluate --group-by col1,col2`` adds, per model, the per-group table (with
bootstrap intervals, the worst group and the homogeneity test) and
``--group-maps`` the held-out global vs per-group maps; ``--window 1w`` (with
the time column found or named by ``--time-column``) adds the windows against
the reference period (``--reference``: the first K windows, windows A:B, dates
START:END or one date or month alone; ``--reference-windows K`` is kept).
``check --per-group`` bounds every judged group.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_group_arguments(
    parser: argparse.ArgumentParser, *, evaluate: bool, group_maps: bool = True
) -> None:
    """``--group-by`` and ``--min-group-rows`` (evaluate, check, report), the rest for evaluate.

    ``report`` takes evaluate's arguments without ``--group-maps`` (``group_maps=False``).
    """
    parser.add_argument(
        "--group-by",
        metavar="COLS",
        default=None,
        help="comma-separated columns of the file: metrics per group (combination of values)",
    )
    parser.add_argument(
        "--min-group-rows",
        type=int,
        default=100,
        metavar="N",
        help="groups with fewer rows are listed but not judged (100)",
    )
    if not evaluate:
        parser.add_argument(
            "--per-group",
            action="store_true",
            help="check every bound on every group of --group-by too (small groups listed, "
            "not judged)",
        )
        return
    if group_maps:
        parser.add_argument(
            "--group-maps",
            default=None,
            metavar="NAMES",
            help="with --group-by: compare held out one global map against one map per group "
            "(e.g. temperature,isotonic)",
        )
    parser.add_argument(
        "--time-column",
        default=None,
        metavar="C",
        help="the time column (default: timestamp, time or date; ISO 8601 or epoch seconds)",
    )
    parser.add_argument(
        "--window",
        default=None,
        metavar="W",
        help="calibration over time per window: 1d, 1w, 1m or 5000rows",
    )
    parser.add_argument(
        "--reference",
        default=None,
        metavar="PERIOD",
        help="the reference period of --window: K (the first K windows), A:B (windows A to B, "
        "from 1), START:END (ISO dates, both included, e.g. 2024-01-01:2024-01-31; an end "
        "may be left out) or one date or month alone, that day or month (e.g. 2024-01-15); "
        "default: the first window",
    )
    parser.add_argument(
        "--reference-windows",
        type=int,
        default=None,
        metavar="K",
        help="the first K windows are the reference period (same as --reference K)",
    )
    parser.add_argument(
        "--slice-resamples",
        type=int,
        default=200,
        metavar="B",
        help="bootstrap resamples of per-group and per-window intervals (200)",
    )


def group_columns(text: str | None) -> list[str]:
    """The ``--group-by`` columns."""
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def reference_argument(args: argparse.Namespace) -> str:
    """The reference period of ``--reference`` or ``--reference-windows`` (default: ``"1"``)."""
    from calibration_core import CalibrationInputError

    if args.reference is not None and args.reference_windows is not None:
        raise CalibrationInputError(
            "give the reference period once: --reference or --reference-windows, not both."
        )
    if args.reference_windows is not None:
        return str(args.reference_windows)
    return "1" if args.reference is None else args.reference


def slice_settings(args: argparse.Namespace):
    """The report's :class:`~app.report.groups.SliceSettings` from its arguments."""
    from app.report.groups import SliceSettings

    return SliceSettings(
        group_by=tuple(group_columns(args.group_by)),
        min_group_rows=args.min_group_rows,
        time_column=args.time_column,
        window=args.window,
        reference=reference_argument(args),
        n_resamples=args.slice_resamples,
    )


def model_slices(model, args: argparse.Namespace) -> dict[str, Any]:
    """The ``slices``, ``group_maps`` and ``time`` objects of one model (those asked for)."""
    from calibration_core.binning import Binning
    from calibration_core.slices import group_index, group_maps, slice_report

    binning = Binning(args.scheme, args.bins)
    out: dict[str, Any] = {}
    columns = group_columns(args.group_by)
    if columns:
        groups = group_index(model, columns, min_rows=args.min_group_rows)
        report = slice_report(model, groups, binning=binning, n_resamples=args.slice_resamples,
                              level=args.level, seed=args.seed)  # fmt: skip
        out["slices"] = report.to_dict()
        if args.group_maps:
            names = group_columns(args.group_maps)
            maps = group_maps(model, groups, names, folds=args.folds, seed=args.seed,
                              binning=binning)  # fmt: skip
            out["group_maps"] = maps.table
    if args.window:
        out["time"] = model_windows(model, args, binning)
    return out


def model_windows(model, args: argparse.Namespace, binning) -> dict[str, Any]:
    """The ``time`` object: windows against the reference period."""
    from calibration_core.slices import drift_report, time_windows

    column, windows = time_windows(model, args.window, args.time_column)
    report = drift_report(model, windows, reference=reference_argument(args), binning=binning,
                          n_resamples=max(args.slice_resamples, 1), level=args.level,
                          seed=args.seed)  # fmt: skip
    return {"time_column": column, "window": args.window, **report.to_dict()}


def _cell(row: dict, name: str) -> str:
    value = row.get(name)
    if value is None:
        return "-"
    low, high = row.get(f"{name}_lower"), row.get(f"{name}_upper")
    if low is None or high is None:
        return f"{value:.4f}"
    return f"{value:.4f} [{low:.4f}, {high:.4f}]"


def slice_lines(name: str, doc: dict[str, Any]) -> list[str]:
    """Plain-text lines of one model's slices, group maps and windows."""
    lines = []
    s = doc.get("slices")
    if s is not None:
        lines.append(f"{name}: per group of {', '.join(s['columns'])} (ECE, accuracy, "
                     f"{s['level']:.0%} intervals)")  # fmt: skip
        for row in s["groups"]:
            flag = f"  SMALL (< {s['min_rows']} rows, not judged)" if row["small"] else ""
            lines.append(f"  {row['group']}: {row['rows']} rows, ECE {_cell(row, 'ece')}, "
                         f"accuracy {_cell(row, 'accuracy')}{flag}")  # fmt: skip
        if s["worst"] is not None:
            lines.append(f"  worst group: {s['worst']} (ECE {s['worst_gap']:+.4f} vs all rows)")
        h = s["homogeneity"]
        if h is not None:
            lines.append(f"  same calibration in every group: p = {h['p_value']:.3g}")
    for row in doc.get("group_maps", []):
        if row["ece_group"] is not None:
            lines.append(f"  {row['map']} on {row['group']}: held-out ECE global "
                         f"{row['ece_global']:.4f}, per group {row['ece_group']:.4f}; "
                         f"better: {row['better']}")  # fmt: skip
    t = doc.get("time")
    if t is not None:
        lines.append(f"{name}: per {t['window']} window ({t['time_column'] or 'row order'}); "
                     f"reference: {t['reference_description']}, ECE "
                     f"{_cell(t['reference'], 'ece')}")  # fmt: skip
        for row in t["windows"]:
            flag = "  ABOVE REFERENCE" if row["flagged"] else ""
            lines.append(f"  {row['window']}: {row['rows']} rows, ECE {_cell(row, 'ece')}, "
                         f"accuracy {_cell(row, 'accuracy')}, confidence "
                         f"{_cell(row, 'confidence')}{flag}")  # fmt: skip
    return lines


def group_check_results(model, values_of, bounds, args) -> list[dict[str, Any]]:
    """``check --per-group``: one result per bound and group; small groups listed, not judged.

    ``values_of(rows)`` gives the checked metrics of some rows.
    """
    import numpy as np

    from calibration_core.slices import group_index

    groups = group_index(model, group_columns(args.group_by), min_rows=args.min_group_rows)
    out = []
    for g, label in enumerate(groups.labels):
        rows = np.flatnonzero(groups.codes == g)
        small = bool(groups.small[g])
        values = None if small else values_of(rows)
        for bound in bounds:
            value = None if values is None else values[bound.metric]
            out.append({
                "model": model.name, "group": label, "rows": int(rows.size),
                "metric": bound.metric, "value": value, "max": bound.limit,
                "after": args.after, "judged": not small,
                "passed": True if small else bool(value <= bound.limit),
            })  # fmt: skip
    return out
