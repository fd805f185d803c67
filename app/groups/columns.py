"""Calibration per group of rows on the page (issue 19): the numbers of the "Per group" section.

The page groups the first selected model's rows by one of the file's other
columns (the group picker, :func:`group_choices`) and shows, from
:mod:`calibration_core.slices`:

* the per-group table (rows, accuracy, ECE/MCE of the current notion, Brier
  score, log-loss), groups under :data:`~calibration_core.slices.MIN_GROUP_ROWS`
  rows flagged and never the worst; the worst group and its ECE gap to all
  rows (:func:`group_view`, one grouped pass over the binning engine, no
  loop over groups);
* every group's reliability diagram as small multiples on one scale, the worst
  groups first, at most :data:`~app.settings.GROUPS_SHOWN` (:func:`group_panels`);
* bootstrap intervals of every number and the homogeneity test's p-value,
  computed by a background job (:func:`compute_group_intervals`) and stored,
  then read back (:func:`stored_group_intervals`);
* "does one global map calibrate every group?": per group, the held-out ECE of
  a global map against one map per group, for temperature and isotonic
  (:func:`~calibration_core.slices.group_maps`, the call of ``evaluate
  --group-maps``), computed by a second background job
  (:func:`compute_group_maps`), stored and read back (:func:`stored_group_maps`),
  shown as :func:`maps_table`.

The core's slices import pandas: they are imported when a group is first
asked for, never at server start. Nothing here draws (no Dash, no Plotly).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibration_core import Binning, BinStatistics, CalibrationInputError, ReliabilityCurve

from ..analysis import UNCALIBRATED, ModelView, Panel, band_of
from ..diagnostics.tables import TextTable
from ..settings import ALL_CLASSES, GROUPS_SHOWN, SCHEME_LABELS, SettingsError, ViewSettings
from ..store.data_store import DataStore
from ..store.records import ModelInfo

#: Bootstrap of the intervals: resamples, level and seed (those of the command line).
INTERVAL_RESAMPLES = 200
INTERVAL_LEVEL = 0.95
INTERVAL_SEED = 0
#: Null resamples of the homogeneity test.
TEST_RESAMPLES = 1000
#: Cross-fitting folds and seed of the global vs per-group maps (the command line's).
MAP_FOLDS = 5
MAP_SEED = 0
#: Largest minimum group size accepted from the page or its address.
MAX_MIN_ROWS = 1_000_000
#: Longest group column name accepted from the page or its address.
MAX_COLUMN_CHARS = 200


def parse_group(value) -> str | None:
    """The group picker's value: a column name, or None for no grouping.

    Raises
    ------
    SettingsError
        When it is not text of at most :data:`MAX_COLUMN_CHARS` characters.
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_COLUMN_CHARS:
        raise SettingsError("the group column must be one of the listed columns.")
    return value


def parse_min_rows(value) -> int:
    """The section's minimum group size: a whole number of at least 2 (empty: the core's).

    Raises
    ------
    SettingsError
        For anything else, saying what is accepted.
    """
    from calibration_core.slices import MIN_GROUP_ROWS

    if value is None or value == "":
        return MIN_GROUP_ROWS
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= MAX_MIN_ROWS:
        raise SettingsError(
            f"the minimum group size must be a whole number from 2 to {MAX_MIN_ROWS:,}, "
            f"got {str(value)[:20]!r}; groups with fewer rows are listed but not judged."
        )
    return value


def group_choices(store: DataStore, info: ModelInfo | None) -> list[str]:
    """The columns offered to group by: the model's other columns, without ``model`` and
    columns with more distinct values than a tenth of the rows (ids); cached per model.
    """
    if info is None:
        return []
    pred = store.predictions(info.handle)
    if not pred.extra:
        return []

    def compute():
        from calibration_core.slices import group_candidates

        return group_candidates(pred)

    return list(store.memo(("group-choices", info.handle), compute))


def notion_of(info: ModelInfo, view: ViewSettings) -> tuple[str, int | None, str | None]:
    """The core notion and class of the per-group ECE/MCE, and a note when it differs.

    "All classes" has no single score per row: the groups are compared on the
    confidence notion then, and the note says so.
    """
    if view.notion != "class":
        return view.notion, None, None
    if view.class_name == ALL_CLASSES:
        return "confidence", None, "with “all classes” the groups are compared on confidence"
    if view.class_name not in info.class_names:
        raise CalibrationInputError(
            f"model {info.name!r} has no class {view.class_name!r}; pick one of its classes."
        )
    return "class", info.class_names.index(view.class_name), None


@dataclass
class GroupView:
    """The per-group section of one model.

    Attributes
    ----------
    info : ModelInfo
    column : str
    report : calibration_core.slices.SliceReport
        Point estimates, per-group bins, worst group, homogeneity test.
    binning : Binning
    notion : tuple of (str, int or None)
        The core notion and class of the ECE/MCE columns.
    notion_note : str or None
    sizes, small : numpy.ndarray, shape (G,)
        Rows of each group and whether it is under the minimum size (computed
        once: ``GroupIndex`` counts them anew at each access).
    intervals : dict or None
        The stored bootstrap intervals (:func:`stored_group_intervals`), once computed.
    maps : list of dict or None
        The stored global vs per-group maps (:func:`stored_group_maps`), once computed.
    """

    info: ModelInfo
    column: str
    report: object
    binning: Binning
    notion: tuple[str, int | None] = ("confidence", None)
    notion_note: str | None = None
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    small: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    intervals: dict | None = None
    maps: list | None = None

    @property
    def key(self) -> tuple:
        """What the numbers depend on (the stored intervals' key)."""
        return (self.info.handle, self.column, *self.notion, self.binning.scheme,
                self.binning.n_bins, self.report.groups.min_rows)  # fmt: skip


def group_view(
    store: DataStore, info: ModelInfo, column: str, view: ViewSettings, min_rows: int | None = None
) -> GroupView:
    """The per-group point estimates, bins and test of ``info``'s model grouped by ``column``.

    ``min_rows``: groups with fewer rows are flagged, not judged (None: the core's default).

    Raises
    ------
    CalibrationInputError
        For a column the model does not have, or one giving more than
        :data:`~calibration_core.slices.MAX_GROUPS` groups (pick a coarser one).
    """
    from calibration_core.slices import group_index, slice_report

    notion, class_index, note = notion_of(info, view)
    binning = Binning(view.scheme, view.n_bins)
    pred = store.predictions(info.handle)
    # Not cached: 0.06-0.09 s CPU for a million rows of text, and its codes (8 bytes a
    # row) would stay in the per-process memo, which is bounded in entries, not bytes.
    groups = group_index(pred, [column], min_rows=parse_min_rows(min_rows))
    report = slice_report(pred, groups, binning=binning, notion=notion, class_index=class_index,
                          n_resamples=0, test_resamples=0)  # fmt: skip
    sizes = groups.sizes
    small = sizes < groups.min_rows
    return GroupView(info, column, report, binning, (notion, class_index), note, sizes, small)


# ------------------------------------------------------------------ intervals
def _interval_key(gv: GroupView) -> str:
    return "groups:" + ":".join(str(part) for part in gv.key)


def stored_group_intervals(store: DataStore, gv: GroupView) -> dict | None:
    """The intervals of this view stored by :func:`compute_group_intervals`, or None."""
    return store.cache.get(_interval_key(gv), default=None)


def compute_group_intervals(store: DataStore, gv: GroupView) -> dict:
    """Bootstrap every number of the table (resampling rows within groups) and store it.

    The homogeneity test (a resampling test too, a quarter of a second on a
    million rows) is run here as well, so the table and the diagrams come first.

    Returns
    -------
    dict
        ``{"groups": {metric: [[lower, upper] per group]}, "whole": {metric: [lower, upper]},
        "test": HomogeneityResult.to_dict() or None}``.
    """
    from calibration_core.slices import slice_report

    found = stored_group_intervals(store, gv)
    if found is not None:
        return found
    pred = store.predictions(gv.info.handle)
    notion, class_index = gv.notion
    report = slice_report(pred, gv.report.groups, binning=gv.binning, notion=notion,
                          class_index=class_index, n_resamples=INTERVAL_RESAMPLES,
                          level=INTERVAL_LEVEL, test_resamples=TEST_RESAMPLES,
                          seed=INTERVAL_SEED)  # fmt: skip
    out = {"groups": {}, "whole": {}, "test": None}
    if report.homogeneity is not None:
        out["test"] = report.homogeneity.to_dict()
    for name, bounds in report.intervals.items():
        out["groups"][name] = np.column_stack([bounds.lower, bounds.upper]).tolist()
        whole = report.whole_intervals[name]
        out["whole"][name] = [float(whole.lower[0]), float(whole.upper[0])]
    store.cache.set(_interval_key(gv), out, expire=store.ttl, tag=store.owner(gv.info.handle))
    return out


# ----------------------------------------------------------------------- maps
def _maps_key(gv: GroupView) -> str:
    parts = (gv.info.handle, gv.column, *gv.notion, gv.binning.scheme, gv.binning.n_bins,
             gv.report.groups.min_rows, MAP_FOLDS, MAP_SEED)  # fmt: skip
    return "group-maps:" + ":".join(str(part) for part in parts)


def stored_group_maps(store: DataStore, gv: GroupView) -> list | None:
    """The global vs per-group maps of this view stored by :func:`compute_group_maps`."""
    return store.cache.get(_maps_key(gv), default=None)


def compute_group_maps(store: DataStore, gv: GroupView) -> list:
    """Compare, held out and per group, a global map against one map per group; store it.

    The core's :func:`~calibration_core.slices.group_maps` (temperature and
    isotonic, :data:`MAP_FOLDS` cross-fitted folds) on the ECE of the section's
    notion: one fit per group and map, seconds on a million rows, hence a
    background job of its own.

    Returns
    -------
    list of dict
        ``GroupMaps.table``: one row per (group, map).
    """
    from calibration_core.slices import group_maps

    found = stored_group_maps(store, gv)
    if found is not None:
        return found
    pred = store.predictions(gv.info.handle)
    notion, class_index = gv.notion
    result = group_maps(pred, gv.report.groups, notion=notion, class_index=class_index,
                        folds=MAP_FOLDS, seed=MAP_SEED, binning=gv.binning)  # fmt: skip
    store.cache.set(_maps_key(gv), result.table, expire=store.ttl, tag=store.owner(gv.info.handle))
    return result.table


def _ece_text(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.4f}"


BETTER_TEXT = {"group": "per-group map", "global": "global map", None: ""}


def maps_table(gv: GroupView) -> TextTable | None:
    """Per group: uncalibrated ECE, then per map the held-out ECE of the global map and of
    the group's own map and which is better (None until :func:`compute_group_maps` ran)."""
    if gv.maps is None:
        return None
    names = list(dict.fromkeys(row["map"] for row in gv.maps))
    by_key = {(row["group"], row["map"]): row for row in gv.maps}
    ece = f"ECE ({notion_name(gv)})"
    header = ["group", "rows", f"{ece} uncalibrated"]
    for name in names:
        header += [f"{name}: {ece} global map", f"{name}: {ece} per-group map", f"{name}: better"]
    table = TextTable(header)
    for g in ordered_groups(gv):
        label = gv.report.groups.labels[g]
        first = by_key[(label, names[0])]
        cells = [label, f"{int(gv.sizes[g]):,}", _ece_text(first["ece_uncalibrated"])]
        for name in names:
            row = by_key[(label, name)]
            better = "small: not judged" if row["small"] else BETTER_TEXT[row["better"]]
            cells += [_ece_text(row["ece_global"]), _ece_text(row["ece_group"]), better]
        table.rows.append(cells)
    table.notes.append(
        f"Held-out {notion_name(gv)} ECE of each group's rows ({MAP_FOLDS}-fold "
        "cross-fitting): one map fitted on all rows against one fitted on the group's rows "
        "alone; the better one by held-out log-loss. Small groups get no map of their own."
    )
    return table


def maps_line(gv: GroupView) -> str:
    """The line above the maps table: how many judged groups a map of their own helps."""
    if gv.maps is None:
        return "The global and per-group maps are being compared in the background."
    parts = []
    for name in dict.fromkeys(row["map"] for row in gv.maps):
        judged = [r for r in gv.maps if r["map"] == name and r["better"] is not None]
        own = sum(r["better"] == "group" for r in judged)
        parts.append(f"{name}: a map per group is better for {own} of {len(judged)} groups")
    return "Does one global map calibrate every group? " + "; ".join(parts) + "."


# ---------------------------------------------------------------------- rows
def _bounds(gv: GroupView, name: str, g: int | None) -> tuple[float, float] | None:
    if gv.intervals is None:
        return None
    pair = gv.intervals["whole"][name] if g is None else gv.intervals["groups"][name][g]
    lo, hi = (np.nan if v is None else float(v) for v in pair)
    return (lo, hi) if np.isfinite(lo) and np.isfinite(hi) else None


def table_rows(gv: GroupView) -> list[dict]:
    """One row per group, all rows first: group, rows, flags, metrics and their intervals.

    A small group's metrics are given but marked ``"small"``; the worst group is
    marked ``"worst"``.
    """
    from calibration_core.slices import GROUP_METRICS

    r = gv.report
    whole = {"group": "all rows", "rows": int(gv.sizes.sum()), "flag": ""}
    for name in GROUP_METRICS:
        whole[name] = r.whole[name]
        whole[f"{name}_interval"] = _bounds(gv, name, None)
    out = [whole]
    sizes, small = gv.sizes, gv.small
    for g in ordered_groups(gv):
        row = {"group": r.groups.labels[g], "rows": int(sizes[g])}
        row["flag"] = "worst" if g == r.worst else ("small" if small[g] else "")
        for name in GROUP_METRICS:
            row[name] = float(r.metrics[name][g])
            row[f"{name}_interval"] = _bounds(gv, name, g)
        out.append(row)
    return out


def ordered_groups(gv: GroupView) -> list[int]:
    """Group indices, the worst first: judged groups by ECE (largest first), then small ones."""
    r = gv.report
    ece = np.where(np.isfinite(r.metrics["ece"]), r.metrics["ece"], -np.inf)
    return [int(g) for g in np.lexsort((-ece, gv.small))]


def summary(gv: GroupView) -> list[str]:
    """The lines above the table: worst group and gap, the test, the small groups."""
    r = gv.report
    n_small = int(gv.small.sum())
    lines = []
    if r.worst is None:
        lines.append(
            f"Every group has fewer than {r.groups.min_rows} rows: none is judged; pick a "
            "coarser column."
        )
    else:
        label = r.groups.labels[r.worst]
        lines.append(
            f"Worst group: {label}, ECE {r.metrics['ece'][r.worst]:.4f}, "
            f"{r.worst_gap:+.4f} against all rows ({r.whole['ece']:.4f})."
        )
    lines.append(_test_line(gv))
    if n_small:
        lines.append(
            f"{n_small} of {r.groups.n_groups} groups have fewer than {r.groups.min_rows} rows: "
            "listed, marked small, not judged."
        )
    if gv.notion_note:
        lines.append(gv.notion_note[0].upper() + gv.notion_note[1:] + ".")
    return lines


def _test_line(gv: GroupView) -> str:
    """The homogeneity test's p-value (from the background job), or that it is coming."""
    if gv.report.groups.n_groups < 2:
        return "One group only: nothing to compare."
    test = None if gv.intervals is None else gv.intervals.get("test")
    if test is None:
        return (
            "Same calibration in every group? The test runs in the background with the intervals."
        )
    p = float(test["p_value"])
    verdict = "the groups differ" if p <= 0.05 else "no evidence that they differ"
    return (
        f"Same calibration in every group? p = {p:.3g}: {verdict} at 5 % "
        f"({int(test['n_resamples']):,} resamples against the pooled curve, "
        f"{gv.binning.n_bins} shared bins)."
    )


# --------------------------------------------------------------------- panels
def _group_stats(stats: BinStatistics, g: int) -> BinStatistics:
    return BinStatistics(stats.edges[g], stats.count[g], stats.sum_score[g], stats.sum_target[g])


def short_label(gv: GroupView, g: int) -> str:
    """A group's label in a panel title: its value alone when one column is grouped by."""
    label = gv.report.groups.labels[g]
    return label.split("=", 1)[1] if len(gv.report.groups.columns) == 1 else label


def group_panels(gv: GroupView, view: ViewSettings, limit: int = GROUPS_SHOWN) -> ModelView:
    """The groups' reliability diagrams as the small multiples of "all classes" (one scale).

    The worst groups first (:func:`ordered_groups`), at most ``limit``;
    ``ModelView.classes_shown`` gives the count for the figure's note.
    """
    r = gv.report
    order = ordered_groups(gv)
    shown = order[:limit]
    mv = ModelView(gv.info, n_scored=int(gv.sizes.sum()), panels_noun="groups")
    mv.classes_shown = (len(shown), r.groups.n_groups)
    for g in shown:
        stats = _group_stats(r.statistics, g)
        curve = ReliabilityCurve.from_statistics(stats, gv.binning)
        if gv.small[g]:  # the table gives every size; the title only the flag
            flag = f" · small, n={int(gv.sizes[g]):,}"
        else:
            flag = " · worst" if g == r.worst else ""
        title = short_label(gv, g) + flag
        panel = Panel(UNCALIBRATED, title, curve, band_of(stats, curve, view), title=title)
        mv.panels.append(panel)
    return mv


# ---------------------------------------------------------------------- table
#: Columns of the per-group table after group, rows and flag: (metric, header).
TABLE_METRICS = (
    ("accuracy", "accuracy"),
    ("ece", "ECE"),
    ("mce", "MCE"),
    ("brier_score", "Brier"),
    ("log_loss", "log-loss"),
)
FLAG_TEXT = {"worst": "worst", "small": "small: not judged", "": ""}


def _cell(row: dict, name: str) -> str:
    value = row[name]
    if not np.isfinite(value):
        return "n/a"
    bounds = row[f"{name}_interval"]
    if bounds is None:
        return f"{value:.4f}"
    return f"{value:.4f}\n[{bounds[0]:.4f}, {bounds[1]:.4f}]"  # the table keeps line breaks


def notion_name(gv: GroupView) -> str:
    """The section's notion in a header: ``confidence``, ``binary`` or ``class cat``."""
    notion, class_index = gv.notion
    return notion if class_index is None else f"class {gv.info.class_names[class_index]}"


def group_table(gv: GroupView) -> TextTable:
    """The per-group table as text (all rows first, then the groups, the worst first)."""
    short = notion_name(gv)
    header = ["group", "rows", "", *(f"{h} ({short})" if m in ("ece", "mce") else h
                                     for m, h in TABLE_METRICS)]  # fmt: skip
    table = TextTable(header)
    for row in table_rows(gv):
        cells = [row["group"], f"{row['rows']:,}", FLAG_TEXT[row["flag"]]]
        table.rows.append(cells + [_cell(row, m) for m, _ in TABLE_METRICS])
    shown = "95 % bootstrap intervals (rows resampled within groups)"
    if gv.intervals is None:
        table.notes.append(f"The {shown} are being computed in the background.")
    else:
        table.notes.append(f"In brackets: {shown}, {INTERVAL_RESAMPLES} resamples.")
    table.notes.append(
        f"{gv.binning.n_bins} {SCHEME_LABELS[gv.binning.scheme]} bins per "
        f"group; groups under {gv.report.groups.min_rows} rows are listed but never the worst."
    )
    return table
