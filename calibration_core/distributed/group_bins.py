"""Exact equal-frequency bins of every group and time window of a dataset (Dask).

The in-memory :func:`~calibration_core.slices.slice_report` and
:func:`~calibration_core.slices.drift_report` bin every group, window, the
whole and the reference period with **its own** equal-frequency edges: the
order statistics ``s_(floor(m * n / M))`` of that block's ``n`` top-label
confidences (:func:`~calibration_core.slices.grouped.grouped_bins`). Here they
are selected exactly, all blocks of all models at once, by the digit selection
of :mod:`~.frequency` (:func:`~.frequency.select_edges`: three passes over the
data, sparse counts per block and prefix), after the pass of
:func:`~.slices.dataset_groups` has counted every block's rows; a fifth pass
bins every block's rows with its edges (:class:`~calibration_core.binning.ScoreBinCounter`,
scores equal to an edge go up, as in the core). A row belongs to its group's
block, the whole's, and for windows the reference period's, so every edge
is selected among exactly the rows the in-memory report would sort.

Rows are split as :func:`~.slices.dataset_groups` splits them
(:func:`~.slices.batch_keys`: the loader's checks and messages; windows of N
rows numbered from each piece's first row, read from the footers); at most
1,000 groups (refused before these passes, by :func:`~.slices.group_layout`),
so at most about 1,000 x (M - 1) order statistics are selected.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..binning import ScoreBinCounter
from ..notions import top_label
from ..predictions import Predictions
from ..slices.groups import MIN_GROUP_ROWS
from .engine import summary_batch_rows
from .frequency import (
    PiecePasses,
    add_digit_counts,
    edge_targets,
    merge_counts,
    piece_passes,
    select_edges,
)
from .pieces import (
    ReadOptions,
    dataset_name,
    find_pieces,
    model_first_rows,
    read_piece_batches,
)
from .slices import GroupSpec, ModelGroups, batch_keys, group_layout, key_rows

__all__ = ["block_rows", "group_frequency_bins"]


def block_rows(codes: np.ndarray, keys: list, owners: dict) -> dict[int, np.ndarray]:
    """The rows of a batch in every block (``owners``: the blocks of each key)."""
    parts: dict[int, list[np.ndarray]] = {}
    for key, rows in zip(keys, key_rows(codes, len(keys)), strict=True):
        for b in owners.get(key, ()):
            parts.setdefault(b, []).append(rows)
    return {b: np.concatenate(rows) for b, rows in parts.items()}


def _confidences(pred: Predictions) -> tuple[np.ndarray, np.ndarray]:
    """Top-label confidence and correctness (0/1) of every row, as the in-memory report."""
    confidence, correct = top_label(np.asarray(pred.probs, dtype=np.float64), pred.labels)
    return confidence, correct.astype(np.int8)


def _batches(piece, options: ReadOptions, spec: GroupSpec, owners: dict, firsts, step):
    """``step(out, model, scores, targets, rows by block)`` over every batch of a piece.

    ``firsts``: for windows of rows, every piece's first row of each model, by
    ``(path, row group)`` (:func:`~.pieces.model_first_rows`); else None.
    """
    next_rows = None if firsts is None else dict(firsts[(piece.path, piece.row_group)])

    def use(table, ctx, opts: ReadOptions) -> dict:
        out: dict = {}
        for pred, codes, keys, _ in batch_keys(table, ctx, opts, spec, next_rows):
            scores, targets = _confidences(pred)
            step(out, pred.name, scores, targets, block_rows(codes, keys, owners[pred.name]))
        return out

    return list(read_piece_batches(piece, options, summary_batch_rows(piece), use=use))


def selection_piece(
    piece, options: ReadOptions, spec: GroupSpec, owners: dict, firsts, requests: dict, level: int
) -> dict:
    """Task: digit counts of every block's confidences under its requested prefixes."""

    def step(out, model, scores, _, rows):
        for b, r in rows.items():
            add_digit_counts(out, (model, b), scores[r], requests[(model, b)], level)

    return merge_counts(_batches(piece, options, spec, owners, firsts, step))


def binning_piece(
    piece, options: ReadOptions, spec: GroupSpec, owners: dict, firsts, edges: dict
) -> dict:
    """Task: per (model, block) count, score sum and hits per bin, shape (3, M)."""

    def step(out, model, scores, targets, rows):
        for b, r in rows.items():
            cuts = edges[(model, b)]
            stats = ScoreBinCounter(len(cuts) - 1, cuts).add(scores[r], targets[r])
            stats = stats.statistics(cuts)
            out[(model, b)] = np.stack([stats.count, stats.sum_score, stats.sum_target])

    return merge_bins(_batches(piece, options, spec, owners, firsts, step))


def merge_bins(parts: list[dict]) -> dict:
    """Merge per-(model, block) bin arrays by addition."""
    out: dict = {}
    for part in parts:
        for key, bins in part.items():
            out[key] = out[key] + bins if key in out else bins.astype(np.float64)
    return out


def group_frequency_bins(
    source,
    spec: GroupSpec,
    groups: dict[str, ModelGroups],
    *,
    min_rows: int = MIN_GROUP_ROWS,
    client: Any = None,
    passes: PiecePasses | None = None,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
) -> dict[str, list[np.ndarray]]:
    """Per model, the equal-frequency bins of every block of its groups: four passes.

    Parameters
    ----------
    source, label_column, renormalize, name
        As given to :func:`~.slices.dataset_groups` (Parquet files).
    spec : GroupSpec
        ``n_bins`` is M.
    groups : dict of str to ModelGroups
        :func:`~.slices.dataset_groups` of the same files and spec (rows per key).
    min_rows : int
    client : distributed.Client, optional
    passes : PiecePasses, optional
        Where the passes run (:class:`~.frequency.InProcessPasses`: in this
        process, without Dask); default ``DaskPasses(client)``.

    Returns
    -------
    dict of str to list of numpy.ndarray
        Per model, per block of its :class:`~.slices.GroupLayout`, the count,
        score sum and hits per bin (3, M), each block binned with its own
        exact edges; give them to :func:`~.slices.exact_groups` as ``bins``.
    """
    passes = piece_passes(client, passes)
    options = ReadOptions(label_column, renormalize, name or dataset_name(source))
    pieces = find_pieces(source)
    layouts = {model: group_layout(g, spec, min_rows) for model, g in groups.items()}
    owners = passes.share({model: layout.owners() for model, layout in layouts.items()})
    targets = {
        (model, b): edge_targets(n, spec.n_bins)
        for model, layout in layouts.items()
        for b, n in enumerate(layout.rows(groups[model]))
    }
    firsts = None
    if spec.rows_window:  # each piece's first row of each model, from the footers
        found = model_first_rows(pieces, options)
        firsts = passes.share(
            {(p.path, p.row_group): f for p, f in zip(pieces, found, strict=True)}
        )
    args = (options, spec, owners, firsts)
    edges = select_edges(passes, pieces, selection_piece, targets, *args)
    merged = passes.run(binning_piece, pieces, (*args, passes.share(edges)), merge_bins)
    empty = np.zeros((3, spec.n_bins))  # a block without rows (none is expected)
    return {
        model: [merged.get((model, b), empty) for b in range(len(layout.blocks))]
        for model, layout in layouts.items()
    }
