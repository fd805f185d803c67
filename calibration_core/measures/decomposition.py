r"""Calibration + refinement decompositions of the Brier score and the log-loss.

Survey arXiv 2112.10327, §3.1: for a proper scoring rule with divergence
``d``, ``E[d(S, Y)] = E[d(S, C)] + E[d(C, Y)]`` with ``C = E[Y | S]``; the
first term is the *calibration loss*, the second the *refinement loss*.

Estimating C with the binning engine
------------------------------------
``C`` is unknown; it is estimated by binning, like every other number here.
Each class column ``j`` is binned on its own (one vs rest), and
``c_ij`` is the observed frequency of class ``j`` in the bin of ``s_ij``.
So ``c_ij`` estimates ``E[Y_j | S_j]`` -- classwise calibration, the notion
the classwise reliability diagrams show -- rather than ``E[Y_j | S]``, which
would need a bin per cell of the K-dimensional simplex (``M^K`` cells).
For K = 2 the positive-class column is binned and ``c_i0 = 1 - c_i1``:
``S`` is a function of ``S_1``, so this is exactly ``E[Y | S]`` on the bins of
the binary reliability diagram (binning column 0 separately would group
``1 - s`` with mirrored, differently closed edges and break ``c_i0 + c_i1 = 1``).

Why a third term
----------------
For *any* vectors ``c_i`` the Brier score splits exactly as

.. math::

    \|s_i - y_i\|^2 = \|s_i - c_i\|^2 + \|c_i - y_i\|^2
                     + 2 (s_i - c_i) \cdot (c_i - y_i).

With the true ``C = E[Y | S]`` the cross term has mean
``E[(S - C) . E[C - Y | S]] = 0``, which gives the survey's identity. The
binned ``c`` equals ``E[Y | bin]``, not ``E[Y | S]``: inside a bin ``b`` of
column ``j`` the deviations ``c_jb - y_ij`` still sum to zero, so the cross
term reduces to ``-2 sum_j sum_b (n_b / N) cov_b(s_j, y_j)``, the
**within-bin covariance** of score and outcome. It is exactly zero when the
scores inside every bin are equal ("pure" bins, e.g. one bin per distinct
score) and shrinks as bins get finer. Hence

``brier = calibration + refinement + residual`` with

* ``calibration = mean_i ||s_i - c_i||^2``
  ``= sum_j sum_b (n_b/N) [(sbar_jb - ybar_jb)^2 + var_b(s_j)]``: the binned
  reliability term plus the within-bin spread of the scores;
* ``refinement = mean_i ||c_i - y_i||^2 = sum_j sum_b (n_b/N) ybar_jb (1 - ybar_jb)``
  (Murphy's uncertainty minus resolution);
* ``residual = 2 mean_i (s_i - c_i) . (c_i - y_i)``.

For the log-loss, with ``c_i`` renormalised to a distribution (one-vs-rest
frequencies need not sum to one for K > 2) and ``c_{i, y_i} > 0`` (row ``i`` is
itself a positive of its own bin in column ``y_i``):

.. math::

    -\ln s_{i y_i} = \underbrace{\sum_j c_{ij} \ln(c_{ij} / s_{ij})}_{KL(c_i \| s_i)}
                   + \underbrace{(-\ln c_{i y_i})}_{\text{refinement}}
                   + \underbrace{\sum_j (y_{ij} - c_{ij}) \ln(c_{ij} / s_{ij})}_{\text{residual}},

whose last term again has mean zero when ``c = E[Y | S]``
(``E[Y_j - C_j | S] = 0``) and is zero on pure bins for binary problems.

In both cases ``total`` is exactly :func:`~calibration_core.brier_score` or
:func:`~calibration_core.log_loss` and ``total == calibration + refinement +
residual`` up to float rounding. The log-loss clips ``s`` below at ``eps``
(as :func:`~calibration_core.log_loss` does for the true class) inside the KL
term too, so a zero score never makes a term infinite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import Binning, Scheme
from ..metrics import LOG_LOSS_EPS, brier_score, log_loss
from ..predictions import measure_inputs


@dataclass(frozen=True)
class Decomposition:
    """A proper score split into calibration, refinement and a binning residual.

    Attributes
    ----------
    calibration : float
        Calibration loss ``mean_i d(s_i, c_i)``.
    refinement : float
        Refinement loss ``mean_i d(c_i, y_i)``.
    residual : float
        What the binned estimate of ``C`` leaves over (within-bin covariance
        for Brier); zero with pure bins.
    total : float
        The score itself; ``calibration + refinement + residual``.
    """

    calibration: float
    refinement: float
    residual: float
    total: float


def _bin_frequency(s: np.ndarray, target: np.ndarray, binning: Binning) -> np.ndarray:
    """Observed frequency of ``target`` in the bin of each score, shape (N,)."""
    idx, edges = binning.assign_with_edges(s)
    stats = binning.statistics_from_index(idx, s, target, edges)
    return stats.frequency[idx]


def _grouping(p: np.ndarray, y: np.ndarray, binning: Binning):
    """Yield ``(s_j, c_j, y_j)`` per class column, each of shape (N,).

    For K = 2 one grouping (the positive column's) serves both columns.
    """
    k = p.shape[1]
    if k == 2:
        s1 = np.ascontiguousarray(p[:, 1])
        y1 = (y == 1).astype(np.intp)
        c1 = _bin_frequency(s1, y1, binning)
        yield np.ascontiguousarray(p[:, 0]), 1.0 - c1, 1 - y1
        yield s1, c1, y1
        return
    for j in range(k):
        sj = np.ascontiguousarray(p[:, j])
        yj = (y == j).astype(np.intp)
        yield sj, _bin_frequency(sj, yj, binning), yj


def brier_decomposition(
    probs, labels, *, n_bins: int = 15, scheme: Scheme = "width"
) -> Decomposition:
    """Brier score = calibration + refinement + residual (survey §3.1).

    See the module docstring for the derivation and the binned estimate of
    ``C = E[Y | S]``.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
        Probability rows, or positive-class scores of a binary problem.
    labels : array-like, shape (N,), or None with a Predictions
        Class indices in 0..K-1.
    n_bins : int
        Bins M per class column.
    scheme : {"width", "frequency"}
        Binning scheme.

    Returns
    -------
    Decomposition
        ``total`` is :func:`~calibration_core.brier_score` (summed over
        classes, in [0, 2]); ``calibration = mean ||s - c||^2``,
        ``refinement = mean ||c - y||^2``,
        ``residual = 2 mean (s - c) . (c - y)``.
    """
    p, y, _ = measure_inputs(probs, labels, measure="brier_decomposition")
    binning = Binning(scheme, n_bins)
    n = p.shape[0]
    calibration = refinement = residual = 0.0
    for s, c, t in _grouping(p, y, binning):
        miscal = s - c
        spread = c - t
        calibration += float(miscal @ miscal)
        refinement += float(spread @ spread)
        residual += 2.0 * float(miscal @ spread)
    return Decomposition(
        calibration=calibration / n,
        refinement=refinement / n,
        residual=residual / n,
        total=brier_score(p, y),
    )


def log_loss_decomposition(
    probs, labels, *, n_bins: int = 15, scheme: Scheme = "width", eps: float = LOG_LOSS_EPS
) -> Decomposition:
    """Log-loss = calibration (KL) + refinement + residual (survey §3.1).

    See the module docstring for the derivation and the binned estimate of
    ``C = E[Y | S]`` (renormalised to a distribution per row).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
        Probability rows, or positive-class scores of a binary problem.
    labels : array-like, shape (N,), or None with a Predictions
        Class indices in 0..K-1.
    n_bins : int
        Bins M per class column.
    scheme : {"width", "frequency"}
        Binning scheme.
    eps : float
        Lower clip of the scores, as in :func:`~calibration_core.log_loss`.

    Returns
    -------
    Decomposition
        ``total`` is :func:`~calibration_core.log_loss`;
        ``calibration = mean_i KL(c_i || max(s_i, eps))``,
        ``refinement = mean_i -ln c_{i, y_i}``, ``residual`` the rest.
    """
    p, y, _ = measure_inputs(probs, labels, measure="log_loss_decomposition")
    binning = Binning(scheme, n_bins)
    n = p.shape[0]
    # Per row: Z = sum_j c_j, A = sum_j c_j ln(c_j / s_j), c_true = c_{y}; then with the
    # renormalised c' = c / Z:  KL(c' || s) = A / Z - ln Z  and  -ln c'_y = ln Z - ln c_true.
    z = np.zeros(n)
    a = np.zeros(n)
    c_true = np.zeros(n)
    for s, c, t in _grouping(p, y, binning):
        z += c
        positive = c > 0
        a[positive] += c[positive] * (np.log(c[positive]) - np.log(np.maximum(s[positive], eps)))
        c_true += np.where(t == 1, c, 0.0)
    log_z = np.log(z)
    calibration = float(np.mean(a / z - log_z))
    refinement = float(np.mean(log_z - np.log(c_true)))
    total = log_loss(p, y, eps=eps)
    return Decomposition(
        calibration=calibration,
        refinement=refinement,
        residual=total - calibration - refinement,
        total=total,
    )


#: The calibration and refinement parts of the Brier score and the log-loss, as
#: :func:`score_parts` names them (the dashboard's table columns and ``evaluate``'s JSON).
PART_FIELDS: tuple[str, ...] = (
    "brier_calibration",
    "brier_refinement",
    "log_loss_calibration",
    "log_loss_refinement",
)


def score_parts(probs, labels, *, n_bins: int = 15, scheme: Scheme = "width") -> dict[str, float]:
    """Calibration and refinement parts of the Brier score and the log-loss.

    :func:`brier_decomposition` and :func:`log_loss_decomposition` with one
    binning (``C = E[Y | S]`` estimated per class column, one vs rest, on
    ``n_bins`` bins of ``scheme``); what they leave over (the binning
    residual) is the total minus both parts.

    Returns
    -------
    dict
        The floats of :data:`PART_FIELDS`.
    """
    brier = brier_decomposition(probs, labels, n_bins=n_bins, scheme=scheme)
    loss = log_loss_decomposition(probs, labels, n_bins=n_bins, scheme=scheme)
    return {
        "brier_calibration": brier.calibration,
        "brier_refinement": brier.refinement,
        "log_loss_calibration": loss.calibration,
        "log_loss_refinement": loss.refinement,
    }
