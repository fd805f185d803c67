"""Calibration per group and per time window of a dataset, exact on every row (Dask).

Every batch of every piece is read by the loader (its checks and messages);
its rows are split by group (``--group-by``: one combination of values of the
group columns) or by time window (the window of every row's time, computed as
:func:`~calibration_core.slices.window_index` does: the same days, ISO weeks
and months, in UTC), and each group's rows are summarised by the compiled
kernel (:class:`~.summary.SummaryBuilder`, one :class:`~.summary.ModelSummary`
per model and group), then reduced to the equal-width bins asked for
(:class:`GroupTotals`: a few sums and (M,) bin arrays, so that 1,000 groups of
a K = 100 model stay small). Totals merge by addition in the engine's tree
reduction. The point estimates (rows, accuracy, mean confidence, confidence
ECE/MCE, Brier score, log-loss) equal the in-memory
:func:`~calibration_core.slices.slice_report` and
:func:`~calibration_core.slices.drift_report` to float rounding. With
equal-frequency bins, every group, window, the whole and the reference period
(the blocks of :class:`GroupLayout`) has its own edges, selected exactly in
four more passes (:func:`~.group_bins.group_frequency_bins`), whose bins
replace the equal-width ones (:func:`exact_groups` ``bins``).

Groups are numbered and labelled at the end, from the distinct combinations of
all pieces, by the in-memory rules
(:func:`~calibration_core.slices.value_groups`: sorted by value, missing values
one group, more than 1,000 groups refused); a single batch with more than
1,000 is refused at once, naming its rows. Windows are capped the same way
(:func:`~calibration_core.slices.times.check_window_count`): at the end, and
at once for a batch spanning more.

Windows of N rows number each model's rows from 0 in the order of the pieces
(files sorted by path, row groups in file order), as the in-memory engine
numbers a model's rows of one file (:func:`~calibration_core.slices.times.row_windows`):
the dataset is one file made of its files in that order. Every task gets the
number of its piece's first row of each model, counted on the client from the
files' footers (:func:`~.pieces.model_first_rows`: row counts, and the
statistics of a ``model`` column), so no pass over the data is added; a row
group holding several models is refused, naming it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..binning import BinStatistics, Scheme
from ..binning.width import width_edges
from ..errors import CalibrationInputError, TimeZonesWarning
from ..io.checks import Context
from ..io.tables import other_column_values
from ..predictions import Predictions
from ..slices.grouped import ROW_MEANS, metrics_from_sums
from ..slices.groups import MIN_GROUP_ROWS, GroupIndex, group_index, value_groups
from ..slices.reference import ReferencePeriod, parse_reference, reference_rows
from ..slices.times import (
    NO_ZONE,
    check_window_count,
    find_time_column,
    missing_time_column,
    parse_times,
    parse_window,
    row_window_label,
    row_windows,
    time_values,
    time_zones,
    window_index,
    window_label,
    window_starts,
    zone_notice,
)
from . import DEFAULT_SAMPLE_ROWS
from .engine import summary_batch_rows
from .frequency import PiecePasses, piece_passes
from .pieces import (
    ReadOptions,
    dataset_name,
    find_pieces,
    model_first_row,
    model_first_rows,
    read_piece_batches,
)
from .summary import ModelSummary, SummaryBuilder

__all__ = [
    "GroupLayout",
    "GroupSpec",
    "GroupTotals",
    "ModelGroups",
    "SliceSample",
    "dataset_groups",
    "exact_groups",
    "group_layout",
    "model_slices",
]


@dataclass(frozen=True)
class GroupSpec:
    """How rows are grouped: by columns, or by time window.

    Attributes
    ----------
    columns : tuple of str
        Group columns (empty for windows).
    window : str or None
        A calendar window (``1d``, ``1w``, ``1m``) or N rows (``5000rows``).
    time_column : str or None
        The time column; default the one the in-memory engine finds.
    reference : ReferencePeriod or None
        The reference period of the windows: rows of a period in dates are
        kept apart within their window (the reference block is exact too);
        windows of rows take window numbers only, as in memory.
    n_bins : int
        M of the equal-width bins of the ECE/MCE (1..100).
    """

    columns: tuple[str, ...] = ()
    window: str | None = None
    time_column: str | None = None
    reference: ReferencePeriod | None = None
    n_bins: int = 15

    def __post_init__(self) -> None:
        if self.rows_window and self.reference is not None and self.reference.kind == "dates":
            reference_rows(self.reference, row_windows(np.zeros(0, np.int64), 1, 0))  # refused

    @property
    def time_window(self) -> str:
        """The window of a grouping by time; an error for a grouping by columns."""
        if self.window is None:
            raise ValueError("a grouping by columns has no window")
        return self.window

    @property
    def rows_window(self) -> bool:
        """Windows of N rows (not of a time column)."""
        return self.window is not None and parse_window(self.window)[0] == "rows"


@dataclass(frozen=True, eq=False)
class GroupTotals:
    """Mergeable sums of one group's rows for the per-group metrics.

    Attributes
    ----------
    rows : int
    sums : numpy.ndarray, shape (4,)
        Sums over rows of :data:`~calibration_core.slices.grouped.ROW_MEANS`
        (correct, top-label confidence, Brier score, log-loss).
    bins : numpy.ndarray, shape (3, M)
        Count, confidence sum and hits per equal-width bin of the confidence
        (or per bin of the group's own equal-frequency edges: :func:`exact_groups`).
    """

    rows: int
    sums: np.ndarray
    bins: np.ndarray

    @classmethod
    def of_summary(cls, summary: ModelSummary, n_bins: int) -> GroupTotals:
        """The totals of a summary's rows, its confidence binned in ``n_bins`` equal bins."""
        stats = summary.statistics("confidence", n_bins)
        sums = [summary.hits, summary.confidence.sum_score.sum(), summary.brier_sum,
                summary.log_loss_sum]  # fmt: skip
        bins = np.stack([stats.count, stats.sum_score, stats.sum_target]).astype(np.float64)
        return cls(summary.n_samples, np.array(sums, dtype=np.float64), bins)

    def __add__(self, other: GroupTotals) -> GroupTotals:
        return GroupTotals(self.rows + other.rows, self.sums + other.sums, self.bins + other.bins)


@dataclass(eq=False)
class ModelGroups:
    """One model's totals per group key, and the times seen (windows).

    Attributes
    ----------
    totals : dict
        Group key (a tuple of values, missing ones None; or ``(first day,
        in reference period)`` for windows) to :class:`GroupTotals`.
    time_column : str or None
    first, last : numpy.datetime64 or None
        Earliest and latest time.
    in_period : numpy.datetime64 or None
        A time of a row of the reference period in dates, if any.
    zones : dict of str to str
        The zones the times are written in (:func:`~calibration_core.slices.times.time_zones`,
        or a Parquet timestamp column's), each with the first file seen holding one.
    """

    totals: dict = field(default_factory=dict)
    time_column: str | None = None
    first: Any = None
    last: Any = None
    in_period: Any = None
    zones: dict = field(default_factory=dict)

    def __add__(self, other: ModelGroups) -> ModelGroups:
        totals = dict(self.totals)
        for key, value in other.totals.items():
            totals[key] = totals[key] + value if key in totals else value
        return ModelGroups(
            totals,
            self.time_column or other.time_column,
            _extreme(min, self.first, other.first),
            _extreme(max, self.last, other.last),
            self.in_period if self.in_period is not None else other.in_period,
            {**other.zones, **self.zones},
        )


def check_zones(name: str, groups: ModelGroups) -> None:
    """Refuse times with a zone and times without one in a model's files; notice several zones.

    Each file may be of one kind; the dataset is refused as a file mixing them
    is in memory (:func:`~calibration_core.slices.times.check_one_kind_of_time`),
    naming a file of each kind. Times of several zones give a
    :class:`~calibration_core.errors.TimeZonesWarning`.
    """
    zones, column = groups.zones, groups.time_column
    zoned = [z for z in zones if z != NO_ZONE]
    if NO_ZONE in zones and zoned:
        raise CalibrationInputError(
            f"time column {column!r} has times with a zone in {zones[zoned[0]]} and times "
            f"without one in {zones[NO_ZONE]}, whose zone is unknown (model {name!r}); write "
            "every time with its zone (2024-03-01T12:30:00Z, a timestamp column with a "
            "time zone) or none with one, in every file."
        )
    if (notice := zone_notice(str(column), zones)) is not None:
        warnings.warn(notice, TimeZonesWarning, stacklevel=3)


def column_zones(values: np.ndarray, column: pa.ChunkedArray, display: str) -> dict[str, str]:
    """The zones of a batch's time column, each to ``display`` (the file).

    A Parquet timestamp column's zone is its type's (:data:`NO_ZONE` without
    one); text times have the zones they are written in.
    """
    if pa.types.is_timestamp(column.type):
        tz = column.type.tz
        return {NO_ZONE if tz is None else ("Z" if tz in ("UTC", "+00:00") else tz): display}
    return dict.fromkeys(time_zones(values), display)


def _extreme(pick: Callable, a, b):
    return b if a is None else a if b is None else pick(a, b)


def merge_groups(parts: list[dict[str, ModelGroups]]) -> dict[str, ModelGroups]:
    """Merge pieces' groups by model (addition; models keep first-seen order)."""
    out: dict[str, ModelGroups] = {}
    for part in parts:
        for name, groups in part.items():
            out[name] = out[name] + groups if name in out else groups
    return out


# ------------------------------------------------------------------ one batch
def _missing(value) -> bool:
    """Missing as :func:`~calibration_core.slices.group_index` counts it: NA or blank text."""
    if isinstance(value, str):
        return not value.strip()
    return value is None or bool(pd.isna(value))


def column_keys(pred: Predictions, spec: GroupSpec) -> tuple[np.ndarray, list[tuple]]:
    """Group of every row (codes) and each group's key (its values, missing as None)."""
    groups = group_index(pred, spec.columns, min_rows=0)  # its checks and messages
    _, first = np.unique(groups.codes, return_index=True)
    keys = [
        tuple(None if _missing(v) else v for v in (pred.extra[c][i] for c in spec.columns))
        for i in first
    ]
    return groups.codes, keys


def batch_times(pred: Predictions, spec: GroupSpec, table: pa.Table, ctx: Context):
    """The time column of a batch and its rows' times; bad values named by file row."""
    column = find_time_column(pred, spec.time_column)
    if column is None:
        raise missing_time_column(spec.time_window)
    times, bad = parse_times(pred.extra[column])
    if bad.any():
        values = other_column_values(table.column(column))
        rows = np.flatnonzero(parse_times(values)[1])
        shown = ", ".join(repr(v) for v in values[rows[:3]])
        raise CalibrationInputError(
            f"time column {column!r} has values that are not times ({shown}) at "
            f"{ctx.rows(rows)} of {ctx.display}; write ISO 8601 dates or times "
            "(2024-03-01, 2024-03-01T12:30:00Z) or epoch seconds, or fix those rows."
        )
    return column, times


def in_period(times: np.ndarray, period: ReferencePeriod | None) -> np.ndarray:
    """Rows of a reference period in dates (open ends reach every row); False otherwise."""
    inside = np.zeros(times.shape[0], dtype=bool)
    if period is None or period.kind != "dates":
        return inside
    inside[:] = True
    if period.start is not None:
        inside &= times >= period.start
    if period.end is not None:
        inside &= times < period.end
    return inside


def window_keys(pred: Predictions, spec: GroupSpec, table: pa.Table, ctx: Context):
    """Window codes, keys ``(first day, in period)``, and the batch's :class:`ModelGroups`."""
    column, times = batch_times(pred, spec, table, ctx)
    unit, count = parse_window(spec.time_window)
    inside = in_period(times, spec.reference)
    combined = window_starts(times, unit, count) * 2 + inside
    codes, uniques = pd.factorize(combined, sort=True)
    check_window_count(len(np.unique(uniques // 2)), spec.time_window)  # a batch's, at once
    keys = [(int(u) // 2, bool(u % 2)) for u in uniques]
    zones = column_zones(pred.extra[column], table.column(column), ctx.display)
    seen = ModelGroups({}, column, times.min(), times.max(),
                       times[inside][0] if inside.any() else None, zones)  # fmt: skip
    return codes, keys, seen


def row_keys(pred: Predictions, spec: GroupSpec, table: pa.Table, ctx: Context,
             next_rows: dict[str, int]):  # fmt: skip
    """Windows of N rows: codes, keys ``(window number, False)``, the batch's :class:`ModelGroups`.

    ``next_rows`` holds the number of every model's next row (among its rows)
    and is moved past this batch's. A time column is checked as in memory
    (an unknown ``time_column``, values that are not times) though not used.
    """
    column = find_time_column(pred, spec.time_column)
    if column is not None:
        batch_times(pred, spec, table, ctx)
    first = model_first_row(next_rows, pred.name)
    next_rows[pred.name] = first + pred.n_samples
    count = parse_window(spec.time_window)[1]
    windows = (first + np.arange(pred.n_samples)) // count
    check_window_count(int(windows[-1] - windows[0]) + 1, spec.time_window)
    keys = [(int(w), False) for w in range(windows[0], windows[-1] + 1)]
    return windows - windows[0], keys, ModelGroups({}, column)


def batch_keys(table: pa.Table, ctx: Context, options: ReadOptions, spec: GroupSpec,
               next_rows: dict[str, int] | None = None):  # fmt: skip
    """Per model of one batch: its predictions, every row's key code, the keys, times seen.

    Yields ``(pred, codes, keys, seen)``: row ``i`` has key ``keys[codes[i]]``
    (:func:`column_keys`, :func:`window_keys` or :func:`row_keys`); ``seen`` is an
    empty :class:`ModelGroups` with the batch's times (windows). ``next_rows``: for
    windows of rows, as :func:`row_keys` takes it.
    """
    from .pieces import table_predictions

    for pred in table_predictions(table, ctx, options):
        if spec.window is None:
            (codes, keys), seen = column_keys(pred, spec), ModelGroups()
        elif spec.rows_window:
            if next_rows is None:
                raise ValueError("windows of rows need next_rows (the models' next row numbers)")
            codes, keys, seen = row_keys(pred, spec, table, ctx, next_rows)
        else:
            codes, keys, seen = window_keys(pred, spec, table, ctx)
        yield pred, codes, keys, seen


def key_rows(codes: np.ndarray, n_keys: int) -> list[np.ndarray]:
    """The rows of every key code ``0..n_keys-1``, in row order."""
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n_keys + 1))
    return [order[bounds[g] : bounds[g + 1]] for g in range(n_keys)]


def batch_groups(table: pa.Table, ctx: Context, options: ReadOptions, spec: GroupSpec,
                 next_rows: dict[str, int] | None = None):  # fmt: skip
    """The :class:`ModelGroups` of every model of one batch (the loader's predictions).

    ``next_rows``: for windows of rows, as :func:`row_keys` takes it.
    """
    out = {}
    for pred, codes, keys, seen in batch_keys(table, ctx, options, spec, next_rows):
        for key, rows in zip(keys, key_rows(codes, len(keys)), strict=True):
            builder = SummaryBuilder()  # the kernel, on this group's rows
            builder.add_predictions(pred.subset(rows))
            seen.totals[key] = GroupTotals.of_summary(builder.summaries()[pred.name], spec.n_bins)
        out[pred.name] = seen
    return out


def groups_piece(item: tuple, options: ReadOptions, spec: GroupSpec) -> dict[str, ModelGroups]:
    """Task: the groups of one row group of one file, batch by batch.

    ``item`` is ``(piece, first_rows)``; ``first_rows``: for windows of rows, the
    number of the piece's first row of each model (:func:`~.pieces.model_first_rows`),
    else None.
    """
    piece, first_rows = item
    rows = summary_batch_rows(piece)
    next_rows = None if first_rows is None else dict(first_rows)
    use = lambda table, ctx, opts: batch_groups(table, ctx, opts, spec, next_rows)  # noqa: E731
    return merge_groups(list(read_piece_batches(piece, options, rows, use=use)))


def dataset_groups(
    source,
    spec: GroupSpec,
    *,
    client: Any = None,
    passes: PiecePasses | None = None,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
) -> dict[str, ModelGroups]:
    """Per model, the exact totals of every group or window of a Parquet dataset.

    Parameters
    ----------
    source, label_column, renormalize, name
        As in :func:`~calibration_core.distributed.dataset_summaries` (Parquet).
    spec : GroupSpec
    client : distributed.Client, optional
    passes : PiecePasses, optional
        Where the pass runs (:class:`~.frequency.InProcessPasses`: in this
        process, without Dask); default ``DaskPasses(client)``.

    Returns
    -------
    dict of str to ModelGroups
    """
    options = ReadOptions(label_column, renormalize, name or dataset_name(source))
    pieces = find_pieces(source)
    firsts = model_first_rows(pieces, options) if spec.rows_window else [None] * len(pieces)
    items = list(zip(pieces, firsts, strict=True))
    result = piece_passes(client, passes).run(groups_piece, items, (options, spec), merge_groups)
    if not result:
        raise CalibrationInputError("the dataset has no rows.")
    for model, groups in result.items():
        check_zones(model, groups)
    return result


# ------------------------------------------------------------------ exact tables
@dataclass(frozen=True, eq=False)
class ExactGroups:
    """The exact metrics of one model's groups or windows, in the in-memory order.

    Attributes
    ----------
    labels : tuple of str
    sizes : numpy.ndarray of int, shape (G,)
    metrics : dict of str to numpy.ndarray, shape (G,)
    whole : dict of str to float
        The same metrics on all rows.
    min_rows : int
    columns : tuple of str
    reference : dict of str to float, or None
        Windows: the reference period as one block.
    reference_rows : int
    in_reference : numpy.ndarray of bool, shape (G,), or None
        Windows holding rows of the reference period.
    statistics : BinStatistics or None
        Per-group equal-width bins of the confidence, shape (G, M): the
        groups' reliability diagrams (as ``SliceReport.statistics``); None
        with equal-frequency bins (their edges differ by group and are not kept).
    """

    labels: tuple[str, ...]
    sizes: np.ndarray
    metrics: dict
    whole: dict
    min_rows: int
    columns: tuple[str, ...]
    reference: dict | None = None
    reference_rows: int = 0
    in_reference: np.ndarray | None = None
    statistics: BinStatistics | None = None

    @property
    def small(self) -> np.ndarray:
        """Groups under ``min_rows`` rows."""
        return self.sizes < self.min_rows


def table_statistics(totals: list[GroupTotals], n_bins: int) -> BinStatistics:
    """The bins of every group's confidence, shape (G, M), with equal-width edges."""
    bins = np.stack([t.bins for t in totals], axis=1)  # (3, G, M)
    edges = np.broadcast_to(width_edges(n_bins), (len(totals), n_bins + 1))
    return BinStatistics(edges, bins[0], bins[1], bins[2])


def table_metrics(totals: list[GroupTotals], n_bins: int) -> dict[str, np.ndarray]:
    """Per-group metrics of totals, by the in-memory formulas (``metrics_from_sums``).

    ECE and MCE read only the bins' counts and sums, so the same formulas serve
    equal-frequency bins (the edges given here are never read).
    """
    stats = table_statistics(totals, n_bins)
    n = np.array([t.rows for t in totals], dtype=np.float64)
    sums = np.stack([t.sums for t in totals], axis=1)
    return metrics_from_sums(stats, n, dict(zip(ROW_MEANS, sums, strict=True)))


def _total(values: list[GroupTotals]) -> GroupTotals:
    out = values[0]
    for value in values[1:]:
        out = out + value
    return out


@dataclass(frozen=True, eq=False)
class GroupLayout:
    """The keys of one model's groups or windows, in the in-memory order, and its blocks.

    Attributes
    ----------
    labels : tuple of str
        The G groups or windows.
    blocks : tuple of tuple
        The keys of each group (``blocks[:G]``), then of all rows (``blocks[G]``),
        then, for windows, of the reference period (``blocks[G + 1]``).
    min_rows : int
    columns : tuple of str
    in_reference : numpy.ndarray of bool, shape (G,), or None
        Windows holding rows of the reference period.
    """

    labels: tuple[str, ...]
    blocks: tuple[tuple, ...]
    min_rows: int
    columns: tuple[str, ...]
    in_reference: np.ndarray | None = None

    @property
    def n_groups(self) -> int:
        """G."""
        return len(self.labels)

    def owners(self) -> dict:
        """The blocks of every key (a key is in its group's, the whole's, and the reference's)."""
        out: dict = {}
        for b, keys in enumerate(self.blocks):
            for key in keys:
                out.setdefault(key, []).append(b)
        return {key: tuple(blocks) for key, blocks in out.items()}

    def rows(self, groups: ModelGroups) -> list[int]:
        """Rows of every block."""
        return [sum(groups.totals[k].rows for k in keys) for keys in self.blocks]


def group_layout(groups: ModelGroups, spec: GroupSpec, min_rows: int = MIN_GROUP_ROWS):
    """The :class:`GroupLayout` of one model: groups numbered and labelled as in memory.

    Raises the in-memory errors: more than 1,000 groups; a reference period
    outside the data, in a gap, or covering every window.
    """
    keys = list(groups.totals)
    if spec.window is not None:
        return _window_layout(groups, keys, spec)
    values = {c: np.array([k[j] for k in keys], dtype=object) for j, c in enumerate(spec.columns)}
    index = value_groups(values, spec.columns, min_rows=min_rows)
    blocks = [tuple(keys[i] for i in np.flatnonzero(index.codes == g))
              for g in range(index.n_groups)]  # fmt: skip
    return GroupLayout(index.labels, (*blocks, tuple(keys)), int(min_rows), spec.columns)


def _window_layout(groups: ModelGroups, keys: list, spec: GroupSpec) -> GroupLayout:
    from ..slices.drift import check_windows_left

    starts = sorted({k[0] for k in keys})
    n_rows = sum(groups.totals[k].rows for k in keys)
    check_window_count(len(starts), spec.time_window, n_rows if spec.rows_window else None)
    blocks = [tuple(k for k in keys if k[0] == s) for s in starts]
    labels = _window_labels(starts, spec, n_rows)
    period = spec.reference or parse_reference(1)
    if period.kind == "windows":
        where = GroupIndex(np.arange(len(starts)), labels, ("time",), 0)
        in_reference = reference_rows(period, where)  # its checks: windows that exist
        reference = tuple(k for w in np.flatnonzero(in_reference) for k in blocks[w])
    else:
        seen = [groups.first, groups.last] + ([groups.in_period] if groups.in_period else [])
        where = GroupIndex(np.zeros(len(seen), np.intp), ("all",), ("time",), 0, np.array(seen))
        reference_rows(period, where)  # its checks: a period outside the data, or in a gap
        in_reference = np.array([(s, True) in groups.totals for s in starts])
        reference = tuple((s, True) for s in starts if (s, True) in groups.totals)
    check_windows_left(period, in_reference)
    return GroupLayout(labels, (*blocks, tuple(keys), reference), 0, ("time",), in_reference)


def exact_groups(
    groups: ModelGroups,
    spec: GroupSpec,
    min_rows: int = MIN_GROUP_ROWS,
    bins: list[np.ndarray] | None = None,
) -> ExactGroups:
    """The :class:`ExactGroups` of one model: groups numbered and labelled as in memory.

    Parameters
    ----------
    groups : ModelGroups
    spec : GroupSpec
    min_rows : int
    bins : list of numpy.ndarray, shape (3, M) each, optional
        Count, score sum and hits per bin of every block of the model's
        :class:`GroupLayout`, binned with the block's own edges
        (:func:`~.group_bins.group_frequency_bins`: equal-frequency bins); by
        default the equal-width bins of the totals.
    """
    layout = group_layout(groups, spec, min_rows)
    totals = [_total([groups.totals[k] for k in keys]) for keys in layout.blocks]
    if bins is not None:
        totals = [GroupTotals(t.rows, t.sums, b) for t, b in zip(totals, bins, strict=True)]
    g = layout.n_groups
    metrics = table_metrics(totals[:g], spec.n_bins)
    whole = {name: float(v[0]) for name, v in table_metrics([totals[g]], spec.n_bins).items()}
    sizes = np.array([t.rows for t in totals[:g]], dtype=np.int64)
    extra = {}
    if layout.in_reference is not None:
        reference = totals[g + 1]
        ref = {k: float(v[0]) for k, v in table_metrics([reference], spec.n_bins).items()}
        extra = {"reference": ref, "reference_rows": reference.rows,
                 "in_reference": layout.in_reference}  # fmt: skip
    if bins is None:
        extra["statistics"] = table_statistics(totals[:g], spec.n_bins)
    return ExactGroups(layout.labels, sizes, metrics, whole, layout.min_rows, layout.columns,
                       **extra)  # fmt: skip


def _window_labels(starts: list[int], spec: GroupSpec, n_rows: int) -> tuple[str, ...]:
    """Labels of windows by key: first days, or window numbers of N rows of ``n_rows``."""
    if spec.rows_window:
        count = parse_window(spec.time_window)[1]
        return tuple(row_window_label(w, count, n_rows) for w in starts)
    return tuple(window_label(s) for s in starts)


def sample_windows(
    sample: Predictions,
    column: str | None,
    window: str,
    rows: np.ndarray | None = None,
    n_rows: int = 0,
) -> GroupIndex:
    """The windows of a drawn sample, labelled as the dataset's.

    Parameters
    ----------
    sample : Predictions
        Calendar windows: its time column ``column`` kept by ``sample_predictions``.
    column : str or None
    window : str
    rows : numpy.ndarray of int, optional
        Windows of rows: the sampled rows' numbers among the model's rows
        (``draw_sample(..., row_numbers=True)``).
    n_rows : int
        Windows of rows: the model's rows in the dataset.
    """
    unit, count = parse_window(window)
    if unit == "rows":
        if rows is None:
            raise ValueError("windows of rows need the sampled rows' numbers")
        return row_windows(rows, count, n_rows)
    if column is None:
        raise missing_time_column(window)
    return window_index(time_values(sample, column), window, sample.n_samples)


# ------------------------------------------------------------------ JSON
def _num(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def _row(label: str, rows: int, small: bool, metrics: dict, drawn: dict | None) -> dict:
    """One ``groups[]`` entry: exact metrics, bounds of the sample's entry of that label.

    ``sample_rows``: the group's rows in the sample (0 when none was drawn; then
    the bounds are null).
    """
    out = {"group": label, "rows": int(rows), "small": bool(small)}
    for name, value in metrics.items():
        out[name] = _num(value)
        out[f"{name}_lower"] = None if drawn is None else drawn.get(f"{name}_lower")
        out[f"{name}_upper"] = None if drawn is None else drawn.get(f"{name}_upper")
    out["sample_rows"] = 0 if drawn is None else drawn["rows"]
    return out


def _rows(exact: ExactGroups, drawn_rows: list[dict], key: str = "group") -> list[dict]:
    drawn = {r[key]: r for r in drawn_rows}
    return [
        _row(
            label,
            exact.sizes[g],
            exact.small[g],
            {n: v[g] for n, v in exact.metrics.items()},
            drawn.get(label),
        )
        for g, label in enumerate(exact.labels)
    ]


def slices_dict(exact: ExactGroups, drawn: dict | None, on: dict, level: float) -> dict:
    """The ``slices`` object of a Dask run: exact point estimates, intervals of the sample.

    Parameters
    ----------
    exact : ExactGroups
    drawn : dict or None
        ``SliceReport.to_dict()`` of the in-memory :func:`~calibration_core.slices.slice_report`
        on the drawn sample (None: no intervals, no test).
    on : dict
        ``{"rows", "seed", "of"}`` of the sample.
    level : float
    """
    from ..slices.report import worst_group

    worst = worst_group(exact.metrics["ece"], exact.small)
    whole = _row(
        "", 0, False, exact.whole, None if drawn is None else {**drawn["whole"], "rows": 0}
    )
    whole = {k: v for k, v in whole.items() if k not in ("group", "rows", "small", "sample_rows")}
    test = None if drawn is None or drawn["homogeneity"] is None else drawn["homogeneity"]
    return {
        "columns": list(exact.columns),
        "min_rows": exact.min_rows,
        "level": level,
        "whole": whole,
        "groups": _rows(exact, [] if drawn is None else drawn["groups"]),
        "worst": None if worst is None else exact.labels[worst],
        "worst_gap": None
        if worst is None
        else float(exact.metrics["ece"][worst] - exact.whole["ece"]),
        "homogeneity": None if test is None else {**test, "evaluated_on": on},
        "evaluated_on": "all rows",
        "intervals_evaluated_on": on,
    }


def time_dict(exact: ExactGroups, drawn: dict | None, period: ReferencePeriod, on: dict,
              level: float) -> dict:  # fmt: skip
    """The ``time`` object of a Dask run: exact windows and reference, the sample's bounds.

    ``drawn`` is ``DriftReport.to_dict()`` of :func:`~calibration_core.slices.drift_report`
    on the sample (None: no bounds, nothing flagged). A window is flagged when the
    sample flags it and it holds no row of the reference period.
    """
    if exact.in_reference is None or exact.reference is None:
        raise ValueError("time_dict needs the exact groups of windows, with their reference")
    windows = _rows(exact, [] if drawn is None else drawn["windows"], key="window")
    flags = {} if drawn is None else {r["window"]: r["flagged"] for r in drawn["windows"]}
    for row, ref in zip(windows, exact.in_reference, strict=True):
        row["window"] = row.pop("group")
        row["flagged"] = bool(flags.get(row["window"], False)) and not bool(ref)
        row["reference"] = bool(ref)
    reference = _row("", exact.reference_rows, False, exact.reference,
                     None if drawn is None else drawn["reference"])  # fmt: skip
    del reference["group"]
    return {
        "reference_period": period.text,
        "reference_description": period.describe(),
        "reference_windows": int(exact.in_reference.sum()),
        "reference": {**reference, "window": None},
        "level": level,
        "windows": windows,
        "evaluated_on": "all rows",
        "intervals_evaluated_on": on,
    }


# ------------------------------------------------------------------ the sample's bounds
@dataclass(frozen=True)
class SliceSample:
    """The reproducible sample behind the bounds, the test, the flags and the group maps.

    Attributes
    ----------
    rows : int
        Largest sample per model (``--sample-rows``).
    seed : int
        Of the draw, the bootstrap and the maps' folds.
    n_resamples : int
        Bootstrap resamples of the intervals.
    level : float
        Level of the intervals.
    min_rows : int
        Groups with fewer rows are listed, not judged.
    scheme : str
        ``"width"`` or ``"frequency"``: the bins of the sample's reports.
    group_maps : tuple of str
        Maps compared globally and per group on the sample (``--group-maps``).
    folds : int
        Their cross-fitting folds.
    """

    rows: int = DEFAULT_SAMPLE_ROWS
    seed: int = 0
    n_resamples: int = 200
    level: float = 0.95
    min_rows: int = MIN_GROUP_ROWS
    scheme: Scheme = "width"
    group_maps: tuple[str, ...] = ()
    folds: int = 5


def model_slices(
    source,
    name: str,
    specs: dict[str, GroupSpec],
    exact: dict[str, ExactGroups],
    time_column: str | None,
    drawn: SliceSample,
    *,
    client: Any = None,
    passes: PiecePasses | None = None,
    label_column: str | None = None,
    renormalize: bool = False,
) -> dict[str, Any]:
    """One model's ``slices``/``group_maps``/``time`` objects: its exact groups, then its sample's.

    The sample is drawn once with the group and time columns
    (:func:`~calibration_core.distributed.draw_sample`); with windows of N rows
    its rows are numbered among the model's rows, which gives their windows. The
    in-memory reports run on it as one task each
    (:func:`~calibration_core.distributed.run_on_sample`).

    Parameters
    ----------
    source, label_column, renormalize
        As in :func:`dataset_groups`.
    name : str
        The model.
    specs, exact : dict
        ``"slices"`` and/or ``"time"`` to its :class:`GroupSpec` and its
        :class:`ExactGroups` (:func:`exact_groups`).
    time_column : str or None
        The time column the windows were computed on (:attr:`ModelGroups.time_column`).
    drawn : SliceSample
    client : distributed.Client, optional
        Where the sample is drawn and its reports run (None: the reports run here).
    passes : PiecePasses, optional
        Where the sample is drawn instead (:class:`~.frequency.InProcessPasses`:
        in this process, the same rows as on Dask).
    """
    from .sample import draw_sample

    columns = (*specs["slices"].columns,) if "slices" in specs else ()
    columns += (time_column,) if time_column else ()
    sample, info, numbers = draw_sample(
        source, size=drawn.rows, seed=drawn.seed, client=client, passes=passes, model=name,
        columns=columns, label_column=label_column, renormalize=renormalize,
        row_numbers="time" in specs and specs["time"].rows_window,
    )  # fmt: skip
    on = {"rows": info.rows, "seed": info.seed, "of": int(next(iter(exact.values())).sizes.sum())}
    out: dict[str, Any] = {}
    if "slices" in exact:
        out.update(sample_slices(sample, exact["slices"], specs["slices"], drawn, on, client))
    if "time" in exact:
        out["time"] = sample_time(sample, exact["time"], specs["time"], time_column, drawn, on,
                                  client, numbers)  # fmt: skip
    return out


def sample_slices(sample: Predictions, exact: ExactGroups, spec: GroupSpec, drawn: SliceSample,
                  on: dict, client: Any = None) -> dict[str, Any]:  # fmt: skip
    """The ``slices`` and ``group_maps`` objects: exact estimates, the sample's reports.

    ``slices`` has the exact estimates and ``slice_report``'s bounds and test
    on the sample; every ``group_maps`` entry (with ``drawn.group_maps``) is the
    in-memory entry of the sample's groups (fitted, held out and scored on
    sample rows only), with ``evaluated_on`` the sample.
    """
    from ..binning import Binning
    from ..slices import group_maps, slice_report
    from .sample import run_on_sample

    binning = Binning(drawn.scheme, spec.n_bins)
    index = group_index(sample, exact.columns, min_rows=drawn.min_rows)
    report = run_on_sample(slice_report, sample, client, groups=index, binning=binning,
                           n_resamples=drawn.n_resamples, level=drawn.level,
                           seed=drawn.seed)  # fmt: skip
    out: dict[str, Any] = {"slices": slices_dict(exact, report.to_dict(), on, drawn.level)}
    if drawn.group_maps:
        found = run_on_sample(group_maps, sample, client, groups=index, maps=drawn.group_maps,
                              folds=drawn.folds, seed=drawn.seed, binning=binning)  # fmt: skip
        out["group_maps"] = [{**row, "evaluated_on": on} for row in found.table]
    return out


def sample_time(sample: Predictions, exact: ExactGroups, spec: GroupSpec, column: str | None,
                drawn: SliceSample, on: dict, client: Any = None,
                numbers: np.ndarray | None = None) -> dict[str, Any]:  # fmt: skip
    """The ``time`` object: exact windows, ``drift_report``'s bounds and flags on the sample.

    ``numbers``: with windows of N rows, the sampled rows' numbers among the
    model's rows (their windows, labelled as the dataset's). When the sample
    cannot be judged on its own (e.g. no sampled row falls in the reference
    period), the bounds are null, nothing is flagged, and ``intervals_error``
    says why.
    """
    from ..binning import Binning
    from ..slices import drift_report
    from .sample import run_on_sample

    period = spec.reference or parse_reference(1)
    report, error = None, None
    try:
        windows = sample_windows(sample, column, spec.time_window, numbers, int(exact.sizes.sum()))
        report = run_on_sample(drift_report, sample, client, windows=windows, reference=period,
                               binning=Binning(drawn.scheme, spec.n_bins),
                               n_resamples=max(drawn.n_resamples, 1), level=drawn.level,
                               seed=drawn.seed)  # fmt: skip
    except CalibrationInputError as exc:
        error = f"on the sample: {exc}"
    doc = time_dict(exact, None if report is None else report.to_dict(), period, on, drawn.level)
    if error is not None:
        doc["intervals_error"] = error
    return {"time_column": column, "window": spec.window, **doc}
