"""Exact equal-frequency bins of a dataset on Dask: a radix selection of the edges.

The core's equal-frequency edges of ``N`` scores are the order statistics
``s_(floor(m * N / M))``, ``m = 1..M-1`` (:class:`~calibration_core.binning.Binning`).
They are found here **exactly** (no rank error) without sorting the dataset:
non-negative float64 values order as their bit patterns (as unsigned
integers), so each edge is selected digit by digit, most significant first,
in three passes over the data (digits of 22, 21 and 21 bits). Each pass
counts, per column and per known prefix, the next digit of the values
carrying that prefix (sparse counts: only digits present are kept, so memory
is bounded by the distinct digits, never by N), merged in a tree reduction.
A fourth pass bins every column with its exact edges
(:class:`~calibration_core.binning.ScoreBinCounter`, scores equal to an edge
go up, as in the core), so the statistics equal the in-memory core's; it also
sums what the Brier and log-loss decompositions need in the classwise bins
(:class:`~.parts.PartSums`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..binning import BinStatistics, ScoreBinCounter, stack_statistics
from ..errors import CalibrationInputError
from ..notions import notion_columns
from .engine import require_dask, tree_merge
from .parts import PartSums
from .pieces import ReadOptions, dataset_name, find_pieces, read_piece
from .summary import Summaries

__all__ = [
    "DIGIT_BITS",
    "FREQUENCY_NOTIONS",
    "DaskPasses",
    "InProcessPasses",
    "OrderStatistic",
    "PiecePasses",
    "add_digit_counts",
    "edge_targets",
    "frequency_statistics",
    "merge_lists",
    "piece_passes",
    "select_edges",
    "shared_value",
]

#: Bits of the digit selected by each pass (most significant first; 64 in all).
DIGIT_BITS = (22, 21, 21)
#: The notions binned: top label (one column) and every class (K columns).
FREQUENCY_NOTIONS = ("confidence", "classwise")

Sparse = tuple[np.ndarray, np.ndarray]  # (digits, counts), digits sorted


def _bits(values: np.ndarray) -> np.ndarray:
    """The bit patterns of non-negative floats (``-0.0`` as ``0.0``), as uint64."""
    return np.ascontiguousarray(values + 0.0, dtype=np.float64).view(np.uint64)


def _columns(pred, notion: str) -> list[tuple[np.ndarray, np.ndarray]]:
    return notion_columns(np.asarray(pred.probs, dtype=np.float64), pred.labels, notion)


def _digit_counts(bits: np.ndarray, prefixes: np.ndarray, level: int) -> dict[int, Sparse]:
    """Counts of the next digit of the values under each prefix (prefixes sorted)."""
    done = sum(DIGIT_BITS[:level])
    width = DIGIT_BITS[level]
    digit = (bits >> np.uint64(64 - done - width)) & np.uint64((1 << width) - 1)
    if level == 0:
        pos = np.zeros(bits.shape[0], dtype=np.intp)
        keep = slice(None)
    else:
        high = bits >> np.uint64(64 - done)
        pos = np.minimum(np.searchsorted(prefixes, high), prefixes.shape[0] - 1)
        keep = prefixes[pos] == high
        pos = pos[keep]
    key = pos.astype(np.uint64) << np.uint64(width) | digit[keep]
    uniq, counts = np.unique(key, return_counts=True)
    out: dict[int, Sparse] = {}
    owner = (uniq >> np.uint64(width)).astype(np.intp)
    cuts = np.searchsorted(owner, np.arange(prefixes.shape[0] + 1))
    mask = np.uint64((1 << width) - 1)
    for i, prefix in enumerate(prefixes.tolist()):
        a, b = cuts[i], cuts[i + 1]
        if b > a:
            out[int(prefix)] = (uniq[a:b] & mask, counts[a:b])
    return out


def add_digit_counts(out: dict, key, scores: np.ndarray, prefixes: np.ndarray, level: int):
    """Add to ``out`` the digit counts of ``scores`` under ``(key, prefix)`` per prefix.

    The one step of every selection pass (whole columns here, groups in
    :mod:`~.group_frequency`); nothing is added without a prefix (M = 1: no
    interior edge) or a score.
    """
    if not prefixes.size or not scores.size:
        return
    for prefix, sparse in _digit_counts(_bits(scores), prefixes, level).items():
        out[(key, prefix)] = sparse


def selection_pass(piece, options: ReadOptions, requests: dict, level: int) -> dict:
    """Task: digit counts of one piece for every requested (model, notion, column) prefix."""
    out: dict = {}
    for pred in read_piece(piece, options):
        for notion in FREQUENCY_NOTIONS:
            if (pred.name, notion, 0) not in requests:
                continue
            for j, (scores, _) in enumerate(_columns(pred, notion)):
                add_digit_counts(out, (pred.name, notion, j), scores,
                                 requests[(pred.name, notion, j)], level)  # fmt: skip
    return out


def merge_counts(parts: Sequence[dict]) -> dict:
    """Merge sparse digit counts by key (addition of counts of equal digits)."""
    grouped: dict = {}
    for part in parts:
        for key, sparse in part.items():
            grouped.setdefault(key, []).append(sparse)
    out = {}
    for key, items in grouped.items():
        if len(items) == 1:
            out[key] = items[0]
            continue
        digits = np.concatenate([d for d, _ in items])
        counts = np.concatenate([c for _, c in items])
        uniq, inverse = np.unique(digits, return_inverse=True)
        out[key] = (uniq, np.bincount(inverse, weights=counts).astype(np.int64))
    return out


def binning_pass(piece, options: ReadOptions, edges: dict) -> dict:
    """Task: per (model, notion) the bin statistics of one piece with the exact edges.

    Also per (model, ``"parts"``) the decompositions' sums in the classwise bins,
    as a one-item list.
    """
    out: dict = {}
    for pred in read_piece(piece, options):
        for notion in FREQUENCY_NOTIONS:
            cuts = edges.get((pred.name, notion))
            if cuts is None:
                continue
            counters = [
                ScoreBinCounter(len(e) - 1, e).add(s, t.astype(np.int8))
                for (s, t), e in zip(_columns(pred, notion), cuts, strict=True)
            ]
            out[(pred.name, notion)] = [
                c.statistics(e) for c, e in zip(counters, cuts, strict=True)
            ]
            if notion == "classwise":
                positive = np.stack([c.positive_score() for c in counters])
                parts = PartSums.of_rows(pred.probs, pred.labels, cuts, positive)
                out[(pred.name, "parts")] = [parts]
    return out


def merge_statistics(parts: Sequence[dict]) -> dict:
    """Merge per-column bin statistics by (model, notion)."""
    out: dict = {}
    for part in parts:
        for key, stats in part.items():
            out[key] = (
                [a + b for a, b in zip(out[key], stats, strict=True)] if key in out else stats
            )
    return out


class OrderStatistic:
    """One order statistic being selected: its rank left in the prefix, the prefix bits."""

    __slots__ = ("prefix", "rank")

    def __init__(self, rank: int) -> None:
        self.rank, self.prefix = rank, 0

    def step(self, sparse: Sparse, width: int) -> None:
        """Fix the next digit from the counts of the digits under the current prefix."""
        digits, counts = sparse
        cum = np.cumsum(counts)
        i = int(np.searchsorted(cum, self.rank, side="right"))
        self.rank -= int(cum[i - 1]) if i else 0
        self.prefix = (self.prefix << width) | int(digits[i])

    @property
    def value(self) -> float:
        """The selected value (once every digit is fixed)."""
        return float(np.array([self.prefix], dtype=np.uint64).view(np.float64)[0])


def edge_targets(n: int, n_bins: int) -> list[OrderStatistic]:
    """The interior edges of ``n`` scores in ``n_bins`` bins: ranks ``floor(m n / M)``."""
    ranks = (np.arange(1, n_bins, dtype=np.int64) * int(n)) // n_bins
    return [OrderStatistic(int(r)) for r in ranks] if n else []


def _targets(summaries: Summaries, n_bins: int) -> dict:
    """The order statistics to select, per (model, notion, column)."""
    targets = {}
    for name, summary in summaries.items():
        for notion in FREQUENCY_NOTIONS:
            n_columns = 1 if notion == "confidence" else summary.n_classes
            for j in range(n_columns):
                targets[(name, notion, j)] = edge_targets(summary.n_samples, n_bins)
    return targets


def run_graph(client, graph):
    """Compute a delayed result on ``client``, or on Dask's current scheduler."""
    return graph.compute() if client is None else client.compute(graph).result()


def shared_value(value):
    """``value`` as one node of a task graph, which every task that takes it depends on.

    A dict given to each of P tasks as it is would be tokenized and copied P
    times (with 1,000 groups, most of the client's time); as one node it is
    sent once per worker.
    """
    return require_dask().delayed(value, traverse=False)


class PiecePasses(Protocol):
    """Where a pass over the pieces runs: on Dask (:class:`DaskPasses`) or in this
    process, piece after piece (:class:`InProcessPasses`, the streaming engine)."""

    def share(self, value):
        """``value`` as the tasks of :meth:`run` take it (one graph node on Dask)."""
        ...

    def run(self, task: Callable, pieces: Sequence, args: tuple, merge: Callable[[list], Any]):
        """``merge`` of ``task(piece, *args)`` over every piece."""
        ...


@dataclass(frozen=True)
class DaskPasses:
    """Passes as Dask graphs: one task per piece, merged in a tree (:func:`~.engine.tree_merge`).

    Attributes
    ----------
    client : distributed.Client or None
        Where to compute; None: Dask's current scheduler.
    """

    client: Any = None

    def share(self, value):
        """:func:`shared_value`: one node of the graph."""
        return shared_value(value)

    def run(self, task: Callable, pieces: Sequence, args: tuple, merge: Callable[[list], Any]):
        """Compute the tree-merged tasks on the client."""
        delayed = require_dask().delayed(task, pure=True)
        parts = [delayed(p, *args) for p in pieces]
        return run_graph(self.client, tree_merge(parts, merge=merge))


class InProcessPasses:
    """Passes in this process: each piece's result merged into the running total.

    Imports neither Dask nor distributed.
    """

    def share(self, value):
        """``value`` itself."""
        return value

    def run(self, task: Callable, pieces: Sequence, args: tuple, merge: Callable[[list], Any]):
        """Fold ``merge`` over the pieces' results, one piece at a time."""
        if not pieces:
            raise CalibrationInputError("the dataset has no rows (no non-empty row group).")
        total = merge([task(pieces[0], *args)])
        for piece in pieces[1:]:
            total = merge([total, task(piece, *args)])
        return total


def piece_passes(client: Any = None, passes: PiecePasses | None = None) -> PiecePasses:
    """``passes``, or by default the Dask passes on ``client`` (None: Dask's current scheduler)."""
    return DaskPasses(client) if passes is None else passes


def merge_lists(parts: Sequence[list]) -> list:
    """Concatenate the pieces' lists, in the order of the pieces."""
    return [item for part in parts for item in part]


def select_edges(passes: PiecePasses, pieces, count_pass, targets: dict, *args) -> dict:
    """The exact edges ``[0, e_1, ..., e_{M-1}, 1]`` of every key: three selection passes.

    Parameters
    ----------
    passes : PiecePasses
        Where the passes run.
    pieces : list
        The dataset's pieces (:func:`~.pieces.find_pieces`).
    count_pass : callable
        Task ``count_pass(piece, *args, requests, level)``: the digit counts of
        the piece's scores of each key under the requested prefixes
        (``{(key, prefix): (digits, counts)}``, see :func:`add_digit_counts`),
        where ``requests`` is ``{key: sorted prefixes}``.
    targets : dict
        Key to its :class:`OrderStatistic` list (:func:`edge_targets`); stepped here.
    *args
        Given to ``count_pass`` before ``requests`` and ``level``.
    """
    for level, width in enumerate(DIGIT_BITS):
        requests = {
            key: np.unique([t.prefix for t in ts]).astype(np.uint64) for key, ts in targets.items()
        }
        shared = passes.share(requests)
        counts = passes.run(count_pass, pieces, (*args, shared, level), merge_counts)
        for key, ts in targets.items():
            for t in ts:
                t.step(counts[(key, t.prefix)], width)
    return {key: np.array([0.0, *(t.value for t in ts), 1.0]) for key, ts in targets.items()}


def frequency_statistics(
    source,
    summaries: Summaries,
    n_bins: int,
    *,
    client: Any = None,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
    passes: PiecePasses | None = None,
) -> dict[str, dict[str, BinStatistics]]:
    """Exact equal-frequency statistics of every model: four passes over the data.

    Parameters
    ----------
    source, label_column, renormalize, name
        As given to :func:`~calibration_core.distributed.dataset_summaries` (Parquet
        sources only: the passes read the pieces again).
    summaries : dict of str to ModelSummary
        The dataset's summaries (their row counts fix the ranks of the edges).
    n_bins : int
        M.
    client : distributed.Client, optional
        Where the passes run on Dask (None: Dask's current scheduler).
    passes : PiecePasses, optional
        Where the passes run instead (:class:`InProcessPasses`: in this process,
        without Dask); default ``DaskPasses(client)``.

    Returns
    -------
    dict
        ``{model: {"confidence": BinStatistics (M,), "classwise": BinStatistics (K, M),
        "parts": PartSums}}``, equal to the core's ``confidence_statistics`` /
        ``classwise_statistics`` with ``scheme="frequency"`` (counts and edges
        exactly, sums to float rounding); ``parts`` are the sums of
        :meth:`~.summary.ModelSummary.score_parts` in the classwise bins.
    """
    passes = piece_passes(client, passes)
    if hasattr(source, "to_delayed"):
        raise CalibrationInputError(
            "equal-frequency bins on Dask read Parquet files again; pass the files (a path, "
            "folder or glob), not a dask.dataframe."
        )
    opts = ReadOptions(label_column, renormalize, name or dataset_name(source))
    pieces = find_pieces(source)
    found = select_edges(passes, pieces, selection_pass, _targets(summaries, n_bins), opts)
    edges: dict = {}
    for (model, notion, _), cuts in found.items():
        edges.setdefault((model, notion), []).append(cuts)
    args = (opts, passes.share(edges))
    merged = passes.run(binning_pass, pieces, args, merge_statistics)
    out: dict[str, dict[str, BinStatistics]] = {}
    for (model, notion), stats in merged.items():
        combined = stats[0] if notion != "classwise" else stack_statistics(stats)
        out.setdefault(model, {})[notion] = combined
    return out
