"""Temperature scaling fitted exactly on a whole dataset: distributed Newton.

The core's fit (:func:`~calibration_core.maps.temperature.fit_temperature`)
minimises the mean log-loss of ``softmax(x / T)`` by a safeguarded Newton
iteration whose derivatives are means over rows. Here every mean is a sum of
per-piece sums, merged in a tree reduction, so each Newton step is one pass
over the dataset and the iteration itself is the core's
(:func:`~calibration_core.maps.temperature.newton_temperature`): the fitted T
is the one the in-memory fit finds on the same rows (to its step tolerance).
Inputs are those of the core's map: the logits when the files have them,
else the log-probabilities clipped at 1e-12.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import CalibrationInputError
from ..maps.base import JSON_FORMAT, CalibrationMap, log_inputs
from ..maps.temperature import T_MAX, T_MIN, newton_temperature
from .engine import require_dask, tree_merge
from .pieces import ReadOptions, dataset_name, find_pieces, read_piece

__all__ = ["DatasetTemperatureObjective", "fit_temperature_on_dataset"]


def _shifted(pred) -> tuple[np.ndarray, np.ndarray]:
    """The map's inputs with each row's maximum at 0, and the labels."""
    x = np.asarray(log_inputs(pred.probs, pred.logits), dtype=np.float64)
    x = x - x.max(axis=1, keepdims=True)
    return x, np.asarray(pred.labels, dtype=np.intp)


def start_sums(piece, options: ReadOptions, model: str) -> np.ndarray:
    """Task: ``[rows, sum of x_y, sum of row means of x, rows whose x_y < 0]`` of one piece."""
    out = np.zeros(4)
    for pred in read_piece(piece, options):
        if pred.name != model:
            continue
        x, y = _shifted(pred)
        true = x[np.arange(x.shape[0]), y]
        out += [x.shape[0], true.sum(), x.mean(axis=1).sum(), np.count_nonzero(true < 0)]
    return out


def derivative_sums(piece, options: ReadOptions, model: str, a: float) -> np.ndarray:
    """Task: ``[sum of E_p[x], sum of Var_p[x]]`` under ``softmax(a x)`` over one piece's rows."""
    out = np.zeros(2)
    for pred in read_piece(piece, options):
        if pred.name != model:
            continue
        x, _ = _shifted(pred)
        w = np.exp(a * x)
        s0 = w.sum(axis=1)
        w *= x
        m1 = w.sum(axis=1) / s0
        w *= x
        m2 = w.sum(axis=1) / s0
        out += [m1.sum(), (m2 - m1 * m1).sum()]
    return out


def add_arrays(parts: list[np.ndarray]) -> np.ndarray:
    """Merge per-piece sums (element-wise addition)."""
    return np.sum(parts, axis=0)


class DatasetTemperatureObjective:
    """The core's temperature objective with its means taken over a whole dataset.

    Parameters
    ----------
    pieces : list of Piece
    options : ReadOptions
    model : str
    client : distributed.Client or None

    Attributes
    ----------
    separable : bool
        The true class attains every row's maximum.
    slope_at_infinite_temperature : float
    passes : int
        Passes over the data so far.
    """

    def __init__(self, pieces, options: ReadOptions, model: str, client: Any = None) -> None:
        self._pieces, self._options, self._model, self._client = pieces, options, model, client
        self.passes = 0
        n, sum_true, sum_mean, below = self._sums(start_sums)
        if n == 0:
            raise CalibrationInputError(f"the dataset has no rows of model {model!r}.")
        self._n, self._mean_true = n, sum_true / n
        self.separable = below == 0
        self.slope_at_infinite_temperature = sum_mean / n - self._mean_true

    def _sums(self, task, *args) -> np.ndarray:
        dask = require_dask()
        delayed = dask.delayed(task, pure=True)
        parts = [delayed(p, self._options, self._model, *args) for p in self._pieces]
        graph = tree_merge(parts, merge=add_arrays)
        self.passes += 1
        return graph.compute() if self._client is None else self._client.compute(graph).result()

    def derivatives(self, u: float) -> tuple[float, float]:
        """First and second derivatives of the mean log-loss in ``u = ln T`` (one pass)."""
        a = math.exp(-u)
        sum_m1, sum_var = self._sums(derivative_sums, a)
        fa = sum_m1 / self._n - self._mean_true
        faa = sum_var / self._n
        return -a * fa, a * a * faa + a * fa


def fit_temperature_on_dataset(
    source,
    *,
    model: str | None = None,
    client: Any = None,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
    step_tol: float = 1e-6,
    max_iter: int = 100,
) -> CalibrationMap:
    """A :class:`~calibration_core.maps.TemperatureScaling` fitted on every row of a dataset.

    Parameters
    ----------
    source, label_column, renormalize, name
        As in :func:`~calibration_core.distributed.dataset_summaries` (Parquet).
    model : str, optional
        The model to fit; default the dataset's name (files without a model column).
    client : distributed.Client, optional
    step_tol, max_iter
        As in the core's fit.

    Returns
    -------
    TemperatureScaling
        Fitted (``temperature_``, ``n_iter_``, ``converged_``), exportable with
        ``to_dict``; its ``input`` is ``"logits"`` when the files hold logits (it
        was fitted on them); ``passes_`` holds the passes over the data it took.
    """
    options = ReadOptions(label_column, renormalize, name or dataset_name(source))
    pieces = find_pieces(source)
    objective = DatasetTemperatureObjective(pieces, options, model or options.name, client)
    temperature, n_iter, converged = newton_temperature(
        objective, (T_MIN, T_MAX), 1.0, step_tol, max_iter
    )
    first = read_piece(pieces[0], options)[0]
    fitted = CalibrationMap.from_dict(
        {
            "format": JSON_FORMAT,
            "map": "temperature",
            "params": {"input": "probs" if first.logits is None else "logits"},
            "n_classes": len(first.class_names),
            "converged": converged,
            "state": {"temperature": temperature, "n_iter": n_iter},
        }
    )
    fitted.passes_ = objective.passes
    return fitted
