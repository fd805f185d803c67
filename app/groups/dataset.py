"""Per group and over time on a server-side dataset: settings, the job, the views.

The uploads' "Per group" section and "Over time" card read a model's rows in
memory; a dataset's rows are never all in memory (on the cluster, or streamed
piece by piece: :meth:`~app.datasets.Datasets.engine`). Here:

* the settings (:class:`SliceSettings`, :func:`parse_slices`): a column to group
  by and the minimum group size; a time column (default the one the core finds),
  a window (a day, a week, a month, or every N rows in the files' order) and the
  reference period. They are checked against the
  columns of the dataset's Parquet schema (:func:`offered_columns`) before any
  job runs, so a column it does not have is a message, not a cluster error;
* the job's body (:func:`compute_slices`): one pass over the dataset per kind
  (:func:`~calibration_core.distributed.slices.dataset_groups`), exact point
  estimates of every group or window on every row, then one reproducible sample
  per model for the intervals, the homogeneity test and the drift flags
  (:func:`~calibration_core.distributed.slices.model_slices`, what
  ``evaluate --engine dask --group-by/--window`` computes). The results are kept
  in the datasets' cache per session, dataset, kind and settings, so that going
  back to earlier settings is a cache read;
* the views (:func:`dataset_group_views`, :func:`dataset_time_views`): the
  uploads' :class:`~app.groups.columns.GroupView` and ``time`` documents, so that the
  page draws them with the uploads' tables and figures, plus lines saying what
  was computed on every row and what on the sample.

Core calls only (no Dash, no Plotly), like :mod:`app.groups.columns`; the core's
slices import pandas and are imported when used.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from calibration_core import Binning, CalibrationInputError
from calibration_core.errors import TimeZonesWarning

from ..dataset_view import model_info
from ..datasets import MAPS_SAMPLE_ROWS, Datasets, Progress
from ..settings import SCHEME_LABELS, SettingsError, ViewSettings
from .columns import (
    INTERVAL_LEVEL,
    INTERVAL_RESAMPLES,
    INTERVAL_SEED,
    MAX_COLUMN_CHARS,
    GroupView,
    parse_group,
    parse_min_rows,
)
from .time import WINDOW_CHOICES, parse_reference_text, parse_time

#: The windows a dataset offers: the uploads' (a day, an ISO week, a month, every N rows).
DATASET_WINDOWS = WINDOW_CHOICES
#: A calendar window in words.
CALENDAR_WORDS = {"1d": "a day", "1w": "a week", "1m": "a month"}
CONFIDENCE_NOTE = (
    "on a dataset the groups and windows are compared on the top-label confidence (its "
    "per-group sums are what the job keeps), whatever the view's notion"
)


@dataclass(frozen=True)
class SliceSettings:
    """The dataset's "Per group" and "Over time" settings (validated by :func:`parse_slices`).

    Attributes
    ----------
    group : str or None
        The column to group by (None: no groups).
    min_rows : int
        Groups with fewer rows are listed, flagged small and not judged.
    time_column : str or None
        The time column (None: ``timestamp``, ``time`` or ``date``).
    window : str or None
        As the engine reads it: ``1d``, ``1w``, ``1m`` or ``5000rows`` (None: no windows).
    reference : str
        The reference period as the core reads it (``"1"``: the first window).
    """

    group: str | None = None
    min_rows: int = 100
    time_column: str | None = None
    window: str | None = None
    reference: str = "1"

    def groups_key(self, sid: str, name: str, n_bins: int) -> tuple:
        """The datasets' cache key of the groups of these settings."""
        return (sid, name, "slices-groups", self.group, self.min_rows, int(n_bins))

    def time_key(self, sid: str, name: str, n_bins: int) -> tuple:
        """The datasets' cache key of the windows of these settings."""
        return (sid, name, "slices-time", self.time_column, self.window, self.reference,
                int(n_bins))  # fmt: skip


def parse_slices(
    group: Any, min_rows: Any, time_column: Any, window: Any, reference: Any, rows: Any = None
) -> SliceSettings:
    """The settings from the section's controls (the "Over time" card's rules for the window,
    :func:`~app.groups.time.parse_time`; every N rows needs N here).

    Raises
    ------
    SettingsError
        A value of the wrong form (the message says what is accepted).
    """
    group, min_rows = parse_group(group), parse_min_rows(min_rows)
    if window in (None, ""):
        if time_column not in (None, "") and (
            not isinstance(time_column, str) or len(time_column) > MAX_COLUMN_CHARS
        ):
            raise SettingsError("the time column must be one of the dataset's columns.")
        return SliceSettings(group, min_rows, time_column or None, None,
                             parse_reference_text(reference))  # fmt: skip
    t = parse_time(time_column, window, rows, reference)
    if t.window == "rows" and t.rows is None:
        raise SettingsError(
            "every N rows needs N: write the rows per window under N rows (e.g. 5000)."
        )
    engine = t.row_window(0) if t.window == "rows" else t.window
    return SliceSettings(group, min_rows, t.column, engine, t.reference)


def offered_columns(datasets: Datasets, name: Any) -> list[str]:
    """The dataset's columns to group by or take the time from: its Parquet schema's
    other columns (not the label, model or score columns)."""
    from calibration_core.distributed.pieces import dataset_columns

    return dataset_columns(datasets.resolve(name))


def check_columns(s: SliceSettings, columns: list[str], name: str) -> None:
    """Refuse a column the dataset does not have, or windows without a time column."""
    from calibration_core.slices.times import TIME_CANDIDATES

    listed = ", ".join(columns) or "none"
    for what, column in (("group by", s.group), ("take the time from", s.time_column)):
        if column is not None and column not in columns:
            raise CalibrationInputError(
                f"dataset {name} has no column {column!r} to {what}; its columns besides the "
                f"label, model and scores are: {listed}."
            )
    lower = {c.lower() for c in columns}
    calendar = s.window in CALENDAR_WORDS
    if calendar and s.time_column is None and not lower & set(TIME_CANDIDATES):
        raise CalibrationInputError(
            f"dataset {name} has no time column (timestamp, time or date): pick the column "
            f"holding its times under Time column (its columns: {listed}), every N rows, or no "
            "window."
        )


def slice_bins(view: ViewSettings) -> int:
    """The bin count of the groups and windows: equal-width bins only (else a message)."""
    if view.scheme != "width":
        raise CalibrationInputError(
            f"per group and over time, the page bins a dataset in equal-width bins (one pass "
            f"sums each group's rows per bin); {SCHEME_LABELS[view.scheme]} bins "
            "of every group take four more passes: ask the command line for them (evaluate "
            "--engine dask --scheme frequency --group-by/--window), or choose equal-width bins "
            "here."
        )
    return view.n_bins


# ------------------------------------------------------------------ the job
def wanted_specs(datasets: Datasets, sid: str, name: str, s: SliceSettings, n_bins: int):
    """``{"slices"|"time": GroupSpec}`` of what these settings ask for and is not kept."""
    from calibration_core.distributed.slices import GroupSpec
    from calibration_core.slices import parse_reference

    specs = {}
    if s.group and datasets.results.get(s.groups_key(sid, name, n_bins)) is None:
        specs["slices"] = GroupSpec(columns=(s.group,), n_bins=n_bins)
    if s.window and datasets.results.get(s.time_key(sid, name, n_bins)) is None:
        period = parse_reference(s.reference)
        specs["time"] = GroupSpec(
            window=s.window, time_column=s.time_column, reference=period, n_bins=n_bins
        )
    return specs


def missing(datasets: Datasets, sid: str | None, name: Any, s: SliceSettings, view) -> bool:
    """Whether these settings ask for groups or windows that are not kept (a job is needed).

    False for settings the block refuses (it says why without a job).
    """
    if sid is None or not (s.group or s.window):
        return False
    try:
        check_columns(s, offered_columns(datasets, name), name)
        return bool(wanted_specs(datasets, sid, name, s, slice_bins(view)))
    except CalibrationInputError:
        return False


def compute_slices(
    datasets: Datasets, sid: str | None, name: Any, s: SliceSettings, n_bins: int,
    progress: Progress,
) -> None:  # fmt: skip
    """Compute and keep the groups and windows these settings ask for (the job's body).

    The dataset's summaries come first (:meth:`Datasets.compute`: the models' classes).
    Groups and windows are computed and kept one after the other, so that a bad group
    column does not cost the windows (the message names what failed). Every failure
    the user can act on is a :class:`CalibrationInputError`, file paths shown
    relative to ``DATASETS_DIR``.
    """
    check_columns(s, offered_columns(datasets, name), name)
    specs = {} if sid is None else wanted_specs(datasets, sid, name, s, n_bins)
    if not specs:
        return
    datasets.compute(sid, name, progress)
    keys = {"slices": s.groups_key(sid, name, n_bins), "time": s.time_key(sid, name, n_bins)}
    errors = []
    for i, (kind, spec) in enumerate(specs.items()):
        start = time.perf_counter()
        steps = Steps(progress, i, len(specs))
        try:
            models = run_slices(datasets, datasets.resolve(name), kind, spec, s, steps)
        except CalibrationInputError as exc:
            errors.append(f"{KIND_NAMES[kind]}: {datasets.relative(str(exc))}")
            continue
        entry = {"models": models, "seconds": time.perf_counter() - start, "settings": s}
        datasets.results.set(keys[kind], entry, expire=datasets.ttl_seconds)
    progress(1, 1, "per group and over time: done" if not errors else "")
    if errors:
        raise CalibrationInputError(" ".join(errors))


#: A kind's name in messages.
KIND_NAMES = {"slices": "Per group", "time": "Over time"}


@dataclass(frozen=True)
class Steps:
    """The progress of kind ``index`` of ``count``, each in two steps (the pass, the samples)."""

    progress: Progress
    index: int
    count: int

    def __call__(self, step: int, text: str) -> None:
        self.progress(2 * self.index + step, 2 * self.count, text)


def run_slices(datasets: Datasets, path: Path, kind: str, spec, s: SliceSettings,
               steps: Steps) -> dict:  # fmt: skip
    """``{model: {"exact": ExactGroups, "doc": dict}}`` of one kind: one pass over the
    dataset, then each model's sample, on the cluster or streamed (:meth:`Datasets.engine`)."""
    from calibration_core.distributed.slices import (
        SliceSample,
        dataset_groups,
        exact_groups,
        model_slices,
    )
    from calibration_core.slices.times import zone_notice

    drawn = SliceSample(MAPS_SAMPLE_ROWS, INTERVAL_SEED, INTERVAL_RESAMPLES, INTERVAL_LEVEL,
                        s.min_rows)  # fmt: skip
    what = f"groups of {s.group}" if kind == "slices" else f"windows of {window_words(s.window)}"
    out: dict[str, dict] = {}
    with datasets.engine() as where:
        steps(0, f"{what}: exact sums of every row {datasets.where}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TimeZonesWarning)  # the page notes it per model
            found = dataset_groups(str(path), spec, **where)
        for j, (model, groups) in enumerate(found.items()):
            steps(1, f"{what}, {model}: intervals on a sample of up to "
                  f"{MAPS_SAMPLE_ROWS:,} rows ({j + 1} of {len(found)})")  # fmt: skip
            exact = exact_groups(groups, spec, s.min_rows)
            docs = model_slices(str(path), model, {kind: spec}, {kind: exact},
                                groups.time_column, drawn, **where)  # fmt: skip
            notice = zone_notice(str(groups.time_column), groups.zones)
            doc = docs[kind] if notice is None else {**docs[kind], "notices": [notice]}
            out[model] = {"exact": exact, "doc": doc}
    return out


# ------------------------------------------------------------------ the views
def kept_slices(datasets: Datasets, sid: str | None, name: Any, key: tuple) -> dict | None:
    """The kept groups or windows under ``key``, or None (no session, nothing kept)."""
    if sid is None or not isinstance(name, str):
        return None
    return datasets.results.get(key)


def sample_intervals(doc: dict) -> dict:
    """The ``slices`` document's sample bounds and test in :class:`GroupView`'s form."""
    from calibration_core.slices import GROUP_METRICS

    groups = {m: [[row[f"{m}_lower"], row[f"{m}_upper"]] for row in doc["groups"]]
              for m in GROUP_METRICS}  # fmt: skip
    whole = {m: [doc["whole"][f"{m}_lower"], doc["whole"][f"{m}_upper"]] for m in GROUP_METRICS}
    return {"groups": groups, "whole": whole, "test": doc["homogeneity"]}


def group_view_of(info, exact, doc: dict, column: str, view: ViewSettings) -> GroupView:
    """The uploads' :class:`GroupView` of one dataset model's exact groups and sample bounds."""
    from calibration_core.slices import GroupIndex, SliceReport, worst_group

    labels = exact.labels
    groups = GroupIndex(np.arange(len(labels)), labels, exact.columns, exact.min_rows)
    report = SliceReport(groups, exact.metrics, None, exact.whole, None, exact.statistics,
                         worst_group(exact.metrics["ece"], exact.small), None,
                         doc["level"])  # fmt: skip
    note = None if view.notion == "confidence" else CONFIDENCE_NOTE
    binning = Binning("width", exact.statistics.count.shape[-1])
    return GroupView(info, column, report, binning, ("confidence", None), note, exact.sizes,
                     exact.small, sample_intervals(doc))  # fmt: skip


def evaluated_line(doc: dict, what: str, where: str) -> str:
    """Which numbers are exact on every row (summed ``where``: :attr:`Datasets.where`) and
    which come from the sample (and its size)."""
    on = doc["intervals_evaluated_on"]
    found = (
        "the windows flagged above the reference" if "windows" in doc else "the homogeneity test"
    )
    return (
        f"Exact on all {on['of']:,} rows (summed {where}): rows, {what}. On a "
        f"reproducible uniform sample of {on['rows']:,} rows (seed {on['seed']}): the "
        f"intervals in brackets (bounds of the sample's estimates) and {found}."
    )


@dataclass
class DatasetSlice:
    """One model's groups or windows on the page: what to draw and the lines above it."""

    model: str
    lines: list[str]
    group: GroupView | None = None
    time: dict | None = None


def dataset_group_views(
    datasets: Datasets, sid: str | None, name: Any, s: SliceSettings, view: ViewSettings
) -> list[DatasetSlice] | None:
    """Per model, the :class:`DatasetSlice` of its groups (None: not computed for these)."""
    entry = kept_slices(datasets, sid, name, s.groups_key(sid, name, slice_bins(view)))
    stats = datasets.cached(sid, name)
    if entry is None or stats is None:
        return None
    out = []
    for model, found in entry["models"].items():
        info = model_info(name, stats["summaries"][model])
        doc = found["doc"]
        gv = group_view_of(info, found["exact"], doc, s.group, view)
        what = "accuracy, ECE, MCE, Brier score, log-loss, the worst group"
        line = evaluated_line(doc, what, datasets.where)
        out.append(DatasetSlice(model, [line], group=gv))
    return out


def dataset_time_views(
    datasets: Datasets, sid: str | None, name: Any, s: SliceSettings, view: ViewSettings
) -> list[DatasetSlice] | None:
    """Per model, the :class:`DatasetSlice` of its windows (None: not computed for these)."""
    entry = kept_slices(datasets, sid, name, s.time_key(sid, name, slice_bins(view)))
    if entry is None:
        return None
    out = []
    for model, found in entry["models"].items():
        doc = found["doc"]
        what = "ECE, accuracy and mean confidence of every window and of the reference period"
        lines = [evaluated_line(doc, what, datasets.where)]
        if doc.get("intervals_error"):
            lines.append(f"No intervals: {doc['intervals_error']}")
        if view.notion != "confidence":
            lines.append(CONFIDENCE_NOTE[0].upper() + CONFIDENCE_NOTE[1:] + ".")
        out.append(DatasetSlice(model, lines, time=doc))
    return out


def window_words(window: str) -> str:
    """``"a week"``, ``"5,000 rows"``."""
    if window in CALENDAR_WORDS:
        return CALENDAR_WORDS[window]
    return f"{int(window.removesuffix('rows')):,} rows"


def time_subtitle(doc: dict, view: ViewSettings) -> str:
    """E.g. ``"12 windows of a week (time column 'timestamp') · ... · reference: ..."``."""
    n = len(doc["windows"])
    binning = replace(view, scheme="width").describe_binning()
    column = doc["time_column"]
    source = "row order" if column is None else f"time column {column!r}"
    return (
        f"{n} windows of {window_words(doc['window'])} ({source}) · ECE of the confidence "
        f"notion · {binning} · reference: {doc['reference_description']} · uncalibrated "
        "predictions"
    )
