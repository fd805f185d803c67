"""Calibration against human label distributions: EntCE, RankCS, DistCE.

When several annotators label every instance, their label distribution
``h_i`` (the share of annotators choosing each class, e.g. columns
``h_<class>``) is a better target than the majority label where humans
disagree. Three instance-level measures compare the model's vector ``p_i``
with ``h_i``. Sources: Baan, Aziz, Plank & Fernandez (2022), "Stop Measuring
Calibration When Humans Disagree", EMNLP, and their code
(github.com/jsbaan/calibration-on-disagreement-data, ``calibration_metrics.py``
and ``analysis_utils.py``), as summarised by Pavlovic (arXiv 2501.19047, §3.3).

Definitions used here
---------------------
``h_i``
    Rows of non-negative annotator counts or shares, each divided by its sum
    (the maximum-likelihood estimate of the human judgement distribution,
    Baan et al.'s ``mle``).
EntCE (entropy calibration error)
    Per instance ``H(p_i) - H(h_i)`` with ``H(q) = -sum_k q_k ln q_k`` in nats
    (``0 ln 0 = 0``). Reported as the mean of its absolute value (``entce``,
    as in Baan et al.'s Table 1, ``ent_ce(absolute=True)``) and as the signed
    mean (``entce_signed``: > 0 when the model is on average *less* certain
    than the annotators, < 0 when more). Two distributions with the same
    entropy have EntCE 0 even if they disagree on every class (Pavlovic, fig. 17).
RankCS (rank calibration score; higher is better)
    Share of instances whose ranking of the classes by the model matches the
    ranking by the annotators. Baan et al.'s code compares full argsorts,
    ``all(argsort(p_i) == argsort(h_i))``. Ties need a rule:
    ``ties="index"`` (default) breaks ties in both rankings by class index
    (a stable argsort), i.e. Baan et al.'s comparison with a defined tie
    order (their code uses numpy's default argsort, whose order of ties is
    not specified); ``ties="weak"`` counts a match when the model orders
    strictly every pair of classes that the annotators order strictly
    (``h_a > h_b`` implies ``p_a > p_b``); pairs tied by the annotators are
    free.
DistCE (distribution calibration error)
    Total variation distance ``TVD(p_i, h_i) = 1/2 sum_k |p_ik - h_ik|`` per
    instance, in [0, 1], averaged over instances (Baan et al.'s ``tvd``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CalibrationInputError, describe_rows
from ..predictions import Predictions
from ..validation import check_prob_matrix

TIES = ("index", "weak")


@dataclass(frozen=True, eq=False)
class HumanUncertaintyResult:
    """EntCE, RankCS and DistCE of one model against human label distributions.

    Attributes
    ----------
    entce : float
        Mean of ``|H(p_i) - H(h_i)|`` (nats).
    entce_signed : float
        Mean of ``H(p_i) - H(h_i)``.
    rankcs : float
        Share of instances whose class rankings match (higher is better).
    distce : float
        Mean total variation distance.
    model_entropy, human_entropy : numpy.ndarray, shape (N,)
    tvd : numpy.ndarray, shape (N,)
        Per-instance total variation distance (for a histogram).
    rank_match : numpy.ndarray, shape (N,), bool
    ties : str
        The RankCS tie rule used.
    """

    entce: float
    entce_signed: float
    rankcs: float
    distce: float
    model_entropy: np.ndarray
    human_entropy: np.ndarray
    tvd: np.ndarray
    rank_match: np.ndarray
    ties: str


def human_distributions(human, n: int | None = None, k: int | None = None) -> np.ndarray:
    """Validate annotator counts or shares and divide each row by its sum.

    Parameters
    ----------
    human : array-like, shape (N, K)
        Non-negative votes or shares per class.
    n, k : int, optional
        Expected shape (that of the model's probabilities).

    Returns
    -------
    numpy.ndarray, shape (N, K)
    """
    h = np.asarray(human)
    if h.dtype == object or h.dtype.kind not in "biuf" or h.ndim != 2:
        raise CalibrationInputError(
            f"human label distributions must be a numeric (N, K) array (one column per class, "
            f"e.g. h_<class>), got dtype {h.dtype} and shape {h.shape}."
        )
    if (n is not None and h.shape[0] != n) or (k is not None and h.shape[1] != k):
        raise CalibrationInputError(
            f"human label distributions have shape {h.shape} but the predictions are "
            f"({n}, {k}); give one row per prediction and one column per class."
        )
    h = h.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(h).all(axis=1) | (h < 0).any(axis=1))
    if bad.size:
        raise CalibrationInputError(
            f"human label distributions must be finite and >= 0; {describe_rows(bad)} are not."
        )
    sums = h.sum(axis=1)
    zero = np.flatnonzero(sums <= 0)
    if zero.size:
        raise CalibrationInputError(
            f"human label distributions at {describe_rows(zero)} are all zero (no annotations); "
            "drop those rows."
        )
    return h / sums[:, None]


def _inputs(probs, human) -> tuple[np.ndarray, np.ndarray]:
    p = probs.probs if isinstance(probs, Predictions) else check_prob_matrix(probs)
    return p, human_distributions(human, *p.shape)


def _entropy(q: np.ndarray) -> np.ndarray:
    from scipy.special import entr  # on first use: scipy.special is slow to import

    return entr(q).sum(axis=1)


def _rank_match(p: np.ndarray, h: np.ndarray, ties: str) -> np.ndarray:
    if ties not in TIES:
        raise CalibrationInputError(f"ties must be 'index' or 'weak', got {ties!r}.")
    if ties == "index":
        same = np.argsort(p, axis=1, kind="stable") == np.argsort(h, axis=1, kind="stable")
        return same.all(axis=1)
    n, k = p.shape
    out = np.empty(n, dtype=bool)
    step = max(1, (1 << 22) // (k * k))
    for start in range(0, n, step):
        pb, hb = p[start : start + step], h[start : start + step]
        human_orders = hb[:, :, None] > hb[:, None, :]
        model_orders = pb[:, :, None] > pb[:, None, :]
        out[start : start + step] = ~(human_orders & ~model_orders).any(axis=(1, 2))
    return out


def entropy_calibration_error(probs, human, *, absolute: bool = True) -> float:
    """EntCE: mean of ``|H(p_i) - H(h_i)|`` (or of the signed difference), in nats.

    Parameters
    ----------
    probs : array-like, shape (N, K), or Predictions
    human : array-like, shape (N, K)
        Annotator counts or shares per class.
    absolute : bool
        Mean absolute difference (Baan et al.'s Table 1) or signed mean.
    """
    p, h = _inputs(probs, human)
    diff = _entropy(p) - _entropy(h)
    return float(np.mean(np.abs(diff) if absolute else diff))


def rank_calibration_score(probs, human, *, ties: str = "index") -> float:
    """RankCS: share of instances whose class ranking matches the annotators' (module docstring)."""
    p, h = _inputs(probs, human)
    return float(np.mean(_rank_match(p, h, ties)))


def distribution_calibration_error(probs, human) -> float:
    """DistCE: mean total variation distance ``1/2 sum_k |p_ik - h_ik|``."""
    p, h = _inputs(probs, human)
    return float(np.mean(0.5 * np.abs(p - h).sum(axis=1)))


def human_uncertainty_calibration(probs, human, *, ties: str = "index") -> HumanUncertaintyResult:
    """EntCE, RankCS and DistCE with their per-instance values.

    Parameters
    ----------
    probs : array-like, shape (N, K), or Predictions
        The model's probability rows.
    human : array-like, shape (N, K)
        Annotator counts or shares per class (rows are normalised).
    ties : {"index", "weak"}
        Tie rule of RankCS (module docstring).

    Returns
    -------
    HumanUncertaintyResult
    """
    p, h = _inputs(probs, human)
    model_entropy, human_entropy = _entropy(p), _entropy(h)
    diff = model_entropy - human_entropy
    tvd = 0.5 * np.abs(p - h).sum(axis=1)
    match = _rank_match(p, h, ties)
    return HumanUncertaintyResult(
        entce=float(np.mean(np.abs(diff))),
        entce_signed=float(np.mean(diff)),
        rankcs=float(np.mean(match)),
        distce=float(np.mean(tvd)),
        model_entropy=model_entropy,
        human_entropy=human_entropy,
        tvd=tvd,
        rank_match=match,
        ties=ties,
    )
