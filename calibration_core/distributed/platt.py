"""Platt scaling fitted exactly on a whole dataset: distributed Newton.

The core's fit (:class:`~calibration_core.maps.PlattScaling`) minimises, for
every one-vs-rest column at once, the mean log-loss of
``sigmoid(w * t(s) + b)`` plus the tiny ridge
:data:`~calibration_core.maps.logistic_columns.RIDGE` towards its start, by
Newton's method with an Armijo line search
(:func:`~calibration_core.maps.logistic_columns.newton_columns`). Every
quantity that iteration reads is a sum over rows: the targets' sums (one
first pass), and, at each point it evaluates, the sums of ``softplus(z)``,
of the gradient and of the Hessian (one pass each, merged in a tree
reduction). The iteration itself is the core's, on a
:class:`~calibration_core.maps.logistic_columns.LogisticObjective` whose sums
come from every piece: the fitted coefficients are the in-memory fit's on
the same rows (the objective is strictly convex; both stop within about
1e-12 of its minimum), with the same transforms, targets and starting
point. Tasks read their piece in batches of
:data:`~calibration_core.distributed.pieces.BATCH_ROWS` rows (bounded memory).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from ..errors import CalibrationInputError
from ..maps.base import JSON_FORMAT, CalibrationMap
from ..maps.binary_columns import BinaryColumns
from ..maps.logistic_columns import RIDGE, LogisticObjective, newton_columns
from ..maps.platt import INPUT_TRANSFORMS, transform_scores
from .engine import require_dask, tree_merge
from .pieces import ReadOptions, dataset_name, find_pieces, read_piece_batches

__all__ = ["DatasetPlattObjective", "fit_platt_on_dataset"]


def _batches(piece, options: ReadOptions, model: str, transform: str):
    """Platt's inputs ``t(s)`` of the one-vs-rest columns (C, n), each row's positive column,
    and the batch's predictions, batch by batch (bounded memory)."""
    for batch in read_piece_batches(piece, options):
        for pred in batch:
            if pred.name == model:
                labels = np.asarray(pred.labels, dtype=np.intp)
                columns = BinaryColumns(np.asarray(pred.probs), labels)
                yield transform_scores(columns.scores, transform), columns.positive, pred


def count_sums(piece, options: ReadOptions, model: str, transform: str) -> dict | None:
    """Task: rows, and per column the positives and the sums of ``t(s)`` (all, positive rows)."""
    out = None
    for x, positive, pred in _batches(piece, options, model, transform):
        part = _count_block(x, positive, pred)
        out = part if out is None else add_sums([out, part])
    return out


def _count_block(x: np.ndarray, positive: np.ndarray, pred) -> dict:
    """:func:`count_sums` of one block."""
    rows = np.flatnonzero(positive >= 0)
    cols = positive[rows]
    c = x.shape[0]
    return {
        "classes": tuple(pred.class_names),
        "logits": pred.logits is not None,
        "sums": np.stack(
            [
                np.full(c, float(x.shape[1])),
                np.bincount(cols, minlength=c).astype(np.float64),
                x.sum(axis=1),
                np.bincount(cols, weights=x[cols, rows], minlength=c),
            ]
        ),
    }


def loss_sums(piece, options: ReadOptions, model: str, transform: str, theta) -> np.ndarray | None:
    """Task: per column, the sums of ``softplus(z)``, the gradient and the Hessian at ``theta``.

    Columns of the result, shape (C, 6): ``softplus(z)``, ``p x``, ``p``,
    ``w x^2``, ``w x``, ``w`` with ``z = theta_0 x + theta_1``,
    ``p = sigmoid(z)`` and ``w = p (1 - p)``.
    """
    out = None
    for x, _, _ in _batches(piece, options, model, transform):
        part = _loss_block(x, theta)
        out = part if out is None else out + part
    return out


def _loss_block(x: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """:func:`loss_sums` of one block."""
    z = theta[:, 0:1] * x + theta[:, 1:2]
    p = expit(z)
    w = p * (1.0 - p)
    # softplus(z) = max(z, 0) - ln max(p, 1 - p), as the in-memory objective takes it
    softplus = np.maximum(z, 0.0).sum(axis=1) - np.log(np.maximum(p, 1.0 - p)).sum(axis=1)
    wx = w * x
    return np.column_stack(
        [
            softplus,
            (p * x).sum(axis=1),
            p.sum(axis=1),
            (wx * x).sum(axis=1),
            wx.sum(axis=1),
            w.sum(axis=1),
        ]
    )


def add_sums(parts: list):
    """Merge per-piece sums (arrays, or dicts holding ``"sums"``); pieces without rows are None."""
    found = [p for p in parts if p is not None]
    if not found:
        return None
    if isinstance(found[0], dict):
        for p in found[1:]:
            if p["classes"] != found[0]["classes"]:
                raise CalibrationInputError(
                    f"partitions disagree on the classes ({', '.join(found[0]['classes'])} vs "
                    f"{', '.join(p['classes'])}); every file of a dataset needs the same "
                    "prediction columns."
                )
        return {**found[0], "sums": np.sum([p["sums"] for p in found], axis=0)}
    return np.sum(found, axis=0)


class DatasetPlattObjective(LogisticObjective):
    """The core's Platt objective with its sums taken over a whole dataset (one pass each).

    Parameters
    ----------
    run : callable
        ``run(task, *args)``: the tree-reduced sum of ``task(piece, *args)`` over the pieces.
    transform : str
        Platt's input transform.
    n : float
        Rows.
    init, target_sums, ridge
        As in :class:`~calibration_core.maps.logistic_columns.LogisticObjective`.
    """

    def __init__(self, run, transform: str, n: float, init, target_sums, ridge=RIDGE) -> None:
        super().__init__(n, init, target_sums, np.ones(init.shape, bool), ridge)
        self._run, self._transform = run, transform
        self._grad: np.ndarray | None = None
        self._hess: np.ndarray | None = None

    def evaluate(self, th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Loss and objective at ``th``; keeps the gradient and Hessian sums for the step."""
        s = self._run(loss_sums, self._transform, np.asarray(th, dtype=np.float64))
        self._grad = s[:, 1:3].copy()
        self._hess = np.stack(
            [np.column_stack([s[:, 3], s[:, 4]]), np.column_stack([s[:, 4], s[:, 5]])], axis=1
        )
        return self.objective(th, s[:, 0])

    def newton_step(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The Newton step at the point last evaluated (no pass over the data)."""
        if self._grad is None or self._hess is None:
            raise RuntimeError("newton_step needs a point evaluated first (evaluate)")
        return self.step(theta, self._grad, self._hess)


def _start(transform: str, n_pos: np.ndarray, n: float) -> np.ndarray:
    """The core's starting point (and ridge centre): identity, or the smoothed base rate."""
    init = np.empty((n_pos.shape[0], 2))
    if transform == "logit":
        init[:] = (1.0, 0.0)
    else:
        init[:, 0] = 0.0
        init[:, 1] = np.log((n_pos + 1.0) / (n - n_pos + 1.0))
    return init


def _check_classes(n_pos: np.ndarray, n: float, k: int, model: str) -> None:
    """The core's refusal of labels of a single class."""
    present = int(np.count_nonzero(n_pos)) if k > 2 else int(0 < n_pos[0]) + int(n_pos[0] < n)
    if present < 2:
        raise CalibrationInputError(
            f"PlattScaling needs labels of at least two classes to fit; every row of model "
            f"{model!r} in the dataset has the same label."
        )


def _check_transform(input_transform: str) -> None:
    """The core's refusal of an unknown ``input_transform``."""
    if input_transform not in INPUT_TRANSFORMS:
        raise CalibrationInputError(
            f"PlattScaling input_transform must be one of {', '.join(INPUT_TRANSFORMS)}, "
            f"got {input_transform!r}."
        )


def _target_sums(sums: tuple, platt_targets: bool) -> np.ndarray:
    """Per column, the sums of target x feature over the rows, shape (K', 2).

    ``sums``: ``(n_rows, n_pos, sum_x, sum_x_pos)`` of :func:`count_sums`. The
    target is 1/0, or Platt's smoothed ``(n+ + 1) / (n+ + 2)`` and ``1 / (n- + 2)``;
    the features are the transformed score and the constant 1.
    """
    n_rows, n_pos, sum_x, sum_x_pos = sums
    n = float(n_rows[0])
    t_pos, t_neg = np.ones_like(n_pos), np.zeros_like(n_pos)
    if platt_targets:
        t_pos, t_neg = (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n - n_pos + 2.0)
    everything = np.column_stack([sum_x, np.full_like(sum_x, n)])
    positives = np.column_stack([sum_x_pos, n_pos])
    return t_neg[:, None] * everything + (t_pos - t_neg)[:, None] * positives


def _fitted_platt(params: dict, k: int, theta, converged, n_iter) -> CalibrationMap:
    """The fitted :class:`~calibration_core.maps.PlattScaling`, through its JSON form."""
    return CalibrationMap.from_dict(
        {
            "format": JSON_FORMAT,
            "map": "platt",
            "params": params,
            "n_classes": k,
            "converged": bool(converged.all()),
            "state": {"coef": theta.tolist(), "n_iter": int(n_iter.max())},
        }
    )


def fit_platt_on_dataset(
    source,
    *,
    model: str | None = None,
    client: Any = None,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
    input_transform: str = "logit",
    platt_targets: bool = False,
    max_iter: int = 100,
    xtol: float = 1e-10,
) -> CalibrationMap:
    """A :class:`~calibration_core.maps.PlattScaling` fitted on every row of a dataset.

    Parameters
    ----------
    source, label_column, renormalize, name
        As in :func:`~calibration_core.distributed.dataset_summaries` (Parquet).
    model : str, optional
        The model to fit; default the dataset's name (files without a model column).
    client : distributed.Client, optional
    input_transform, platt_targets
        As in :class:`~calibration_core.maps.PlattScaling`.
    max_iter, xtol
        As in :func:`~calibration_core.maps.logistic_columns.fit_logistic_columns`.

    Returns
    -------
    PlattScaling
        Fitted (``coef_``, ``n_iter_``, ``converged_``), exportable with ``to_dict``;
        its ``input`` is ``"logits"`` when the files hold logits (as
        :func:`~calibration_core.deploy.deployable_map` sets it); ``passes_``
        holds the passes over the data it took.
    """
    dask = require_dask()
    _check_transform(input_transform)
    options = ReadOptions(label_column, renormalize, name or dataset_name(source))
    model = model or options.name
    pieces = find_pieces(source)
    passes = 0

    def run(task, *args):
        nonlocal passes
        parts = [dask.delayed(task, pure=True)(p, options, model, *args) for p in pieces]
        graph = tree_merge(parts, merge=add_sums)
        passes += 1
        return graph.compute() if client is None else client.compute(graph).result()

    counts = run(count_sums, input_transform)
    if counts is None:
        raise CalibrationInputError(f"the dataset has no rows of model {model!r}.")
    n_rows, n_pos, _, _ = counts["sums"]
    n, k = float(n_rows[0]), len(counts["classes"])
    _check_classes(n_pos, n, k, model)
    targets = _target_sums(counts["sums"], platt_targets)
    init = _start(input_transform, n_pos, n)
    objective = DatasetPlattObjective(run, input_transform, n, init, targets)
    theta, converged, n_iter, _ = newton_columns(objective, init.copy(), max_iter, xtol)
    if not np.isfinite(theta).all():
        raise CalibrationInputError("the distributed Platt fit diverged; fit on a sample instead.")
    params = {
        "input_transform": input_transform,
        "platt_targets": bool(platt_targets),
        "input": "logits" if counts["logits"] else "probs",
    }
    fitted = _fitted_platt(params, k, theta, converged, n_iter)
    fitted.passes_ = passes
    return fitted
