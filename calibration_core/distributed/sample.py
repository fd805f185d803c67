"""A reproducible uniform sample of a dataset, and any map fitted on it.

Every row is kept independently with probability ``q = min(1, size / N)`` (N the
dataset's rows from the Parquet footers), decided by a generator seeded with
``(seed, 0, piece index)``: the same files and seed give the same rows, on any
cluster and in any task order, and every row has the same chance to be drawn.
When more than ``size`` rows of the model were drawn, a seeded draw without
replacement keeps ``size`` of them (still uniform). The sample is gathered on
the client, so ``size`` must fit in its memory (default 1e6 rows).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import CalibrationInputError
from ..maps.registry import make_map
from ..predictions import Predictions, with_extra
from . import DEFAULT_SAMPLE_ROWS
from .frequency import PiecePasses, merge_lists, piece_passes
from .pieces import (
    ReadOptions,
    dataset_name,
    find_pieces,
    model_first_row,
    model_first_rows,
    read_piece,
)

__all__ = [
    "SampleInfo",
    "draw_sample",
    "fit_map_on_sample",
    "fit_on_sample",
    "run_on_sample",
    "sample_predictions",
]


@dataclass(frozen=True)
class SampleInfo:
    """How a sample was drawn (recorded with a map fitted on it).

    Attributes
    ----------
    rows : int
        Rows in the sample.
    seed : int
    fraction : float
        Probability ``q`` with which every row of the dataset was drawn.
    dataset_rows : int
        Rows N of the dataset (all models).
    """

    rows: int
    seed: int
    fraction: float
    dataset_rows: int


def sample_piece(
    item: tuple,
    options: ReadOptions,
    model: str,
    q: float,
    seed: int,
    columns: tuple[str, ...] = (),
) -> list:
    """Task: the sampled rows of ``model`` in one piece, as a list of at most one.

    ``item`` is ``(piece, index, first_rows)``: the piece, its index among the
    dataset's pieces (which seeds its draw) and, to number the sampled rows among
    the model's rows, the piece's first row of each model
    (:func:`~.pieces.model_first_rows`; else None). The one result is ``(probs,
    logits or None, labels, class names, other columns, row numbers or None)``;
    the other columns are those of ``columns`` the piece has (``Predictions.extra``).
    """
    piece, index, first_rows = item
    for pred in read_piece(piece, options):
        if pred.name != model:
            continue
        draw = np.random.default_rng([seed, 0, index]).random(pred.n_samples)
        rows = np.flatnonzero(draw < q)
        logits = None if pred.logits is None else pred.logits[rows]
        extra = {c: pred.extra[c][rows] for c in columns if c in pred.extra}
        numbers = None
        if first_rows is not None:
            try:
                numbers = model_first_row(first_rows, model) + rows
            except CalibrationInputError as exc:
                raise CalibrationInputError(f"{piece.where}: {exc}") from None
        found = pred.probs[rows], logits, pred.labels[rows], tuple(pred.class_names), extra
        return [(*found, numbers)]
    return []


def sample_predictions(source, **options) -> tuple[Predictions, SampleInfo]:
    """A reproducible uniform sample of at most ``size`` rows of one model.

    :func:`draw_sample` without the rows' numbers: the same parameters but
    ``row_numbers``, and its first two results.
    """
    pred, info, _ = draw_sample(source, **options)
    return pred, info


def draw_sample(
    source,
    *,
    size: int = DEFAULT_SAMPLE_ROWS,
    seed: int = 0,
    model: str | None = None,
    client: Any = None,
    passes: PiecePasses | None = None,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
    columns: tuple[str, ...] = (),
    row_numbers: bool = False,
) -> tuple[Predictions, SampleInfo, np.ndarray | None]:
    """A reproducible uniform sample of at most ``size`` rows of one model, and their numbers.

    Parameters
    ----------
    source, label_column, renormalize, name
        As in :func:`~calibration_core.distributed.dataset_summaries` (Parquet).
    size : int
        Largest number of rows.
    seed : int
    model : str, optional
        Default the dataset's name (files without a model column).
    client : distributed.Client, optional
    passes : PiecePasses, optional
        Where the pieces are read instead (:class:`~.frequency.InProcessPasses`:
        in this process, without Dask); the same rows are drawn either way.
    columns : tuple of str
        Other columns of the files kept with the sampled rows
        (``Predictions.extra``: group or time columns); the same rows are drawn
        with or without them.
    row_numbers : bool
        Also number the sampled rows among the model's rows in the order of
        the pieces (:func:`~.pieces.model_first_rows`, which may refuse a row
        group of several models); the same rows are drawn either way.

    Returns
    -------
    Predictions, SampleInfo, numpy.ndarray of int64 or None
        The sample, how it was drawn, and (with ``row_numbers``) the 0-based
        numbers of its rows, shape (rows,), increasing.
    """
    if int(size) < 1:
        raise CalibrationInputError(f"the sample size must be at least 1, got {size!r}.")
    options = ReadOptions(label_column, renormalize, name or dataset_name(source))
    model = model or options.name
    pieces = find_pieces(source)
    total = sum(p.n_rows for p in pieces)
    q = min(1.0, int(size) / total)
    firsts = model_first_rows(pieces, options) if row_numbers else [None] * len(pieces)
    items = [(p, i, f) for i, (p, f) in enumerate(zip(pieces, firsts, strict=True))]
    args = (options, model, q, int(seed), tuple(columns))
    found = piece_passes(client, passes).run(sample_piece, items, args, merge_lists)
    if not found:
        raise CalibrationInputError(f"the dataset has no rows of model {model!r}.")
    pred, numbers = _gathered(found, model, int(size), int(seed))
    return pred, SampleInfo(pred.n_samples, int(seed), q, total), numbers


def _gathered(found: list[tuple], model: str, size: int, seed: int):
    """The pieces' sampled rows as one :class:`Predictions` of at most ``size`` rows.

    When more were drawn, a draw seeded by ``(seed, 1)`` keeps ``size`` of them.
    Returns the predictions and the rows' numbers (None when not numbered).
    """
    probs = np.concatenate([r[0] for r in found])
    labels = np.concatenate([r[2] for r in found])
    logits = None if found[0][1] is None else np.concatenate([r[1] for r in found])
    kept = [c for c in found[0][4] if all(c in r[4] for r in found)]
    extra = {c: np.concatenate([r[4][c] for r in found]) for c in kept}
    numbers = None if found[0][5] is None else np.concatenate([r[5] for r in found])
    if labels.shape[0] > size:
        keep = np.sort(np.random.default_rng([seed, 1]).choice(labels.shape[0], size, False))
        probs, labels = probs[keep], labels[keep]
        logits = None if logits is None else logits[keep]
        extra = {c: v[keep] for c, v in extra.items()}
        numbers = None if numbers is None else numbers[keep]
    common = {"class_names": found[0][3], "name": model}
    pred = (
        Predictions.from_probs(probs, labels, **common)
        if logits is None
        else Predictions.from_logits(logits, labels, **common)
    )
    if extra:
        pred = with_extra(pred, extra)
    return pred, numbers


def run_on_sample(function, sample: Predictions, client: Any = None, /, **kwargs):
    """``function(sample, **kwargs)``: here, or as one task on the cluster.

    What runs on a drawn sample (the maps' comparison, the measures) is bounded
    by the sample's size, so it is one task: with a client the sample is
    scattered (data, not a large task graph) and the caller only waits on a
    future, so a web job that runs it holds no rows and does no work itself.

    Parameters
    ----------
    function : callable
        Takes the sample first (``compare_maps``, ``measures_summary``).
    sample : Predictions
    client : distributed.Client, optional
    **kwargs
        Passed to ``function``.

    Returns
    -------
    object
        What ``function`` returns (its exceptions are raised here, as they are).
    """
    if client is None:
        return function(sample, **kwargs)
    rows = client.scatter(sample, hash=False)  # its own key: a released twin cannot take it
    return client.submit(function, rows, pure=False, **kwargs).result()


def fit_map_on_sample(
    source, map_name: str, *, size: int = DEFAULT_SAMPLE_ROWS, seed: int = 0, **options
):
    """A map of the registry fitted on :func:`sample_predictions`; the sample is recorded.

    Parameters
    ----------
    source : str or list
    map_name : str
        A registry name (``"isotonic"``, ``"histogram"``, ``"dirichlet"``, ...).
    size, seed, **options
        As in :func:`draw_sample`.

    Returns
    -------
    CalibrationMap
        Fitted (its ``input`` is ``"logits"`` when the files hold logits);
        ``fit_sample_`` holds the :class:`SampleInfo` as a dict, and ``to_dict()``
        exports it as ``"fit_sample"``.
    """
    pred, info = sample_predictions(source, size=size, seed=seed, **options)
    return fit_on_sample(map_name, pred, info)


def fit_on_sample(map_name: str, sample: Predictions, info: SampleInfo):
    """A map of the registry fitted on a drawn sample, which it records (``fit_sample_``)."""
    # Logits when the files have them, as deploy.deployable_map fits a map.
    fitted = make_map(map_name, input="probs" if sample.logits is None else "logits")
    fitted.fit(sample, None)
    fitted.fit_sample_ = asdict(info)
    return fitted
