"""Decision view of binary calibration (survey arXiv 2112.10327, §2.1).

Notation
--------
``C(a|b)`` is the cost of predicting class ``a`` when the truth is ``b``;
``cost_fp = C(+|-)`` (a false positive), ``cost_fn = C(-|+)`` (a false
negative); correct decisions cost 0. Scores are ``s = P(+ | x)``, the
positive-class probability. A row is predicted positive when ``s >= t``.

Cost-sensitive threshold
------------------------
If ``s`` is calibrated, predicting + costs ``(1 - s) C(+|-)`` in expectation
and predicting - costs ``s C(-|+)``; + is the cheaper decision exactly when
``s >= c = C(+|-) / (C(+|-) + C(-|+))`` (at ``s = c`` both cost the same).

Changed class prior
-------------------
Let the scores be calibrated for the positive rate ``pi`` (of the data the
model was calibrated on) and let the deployment rate be ``pi'``; write the
class ratios ``r = pi / (1 - pi)`` and ``r' = pi' / (1 - pi')``. By Bayes'
rule the deployment posterior has odds ``odds(s) * r' / r``, i.e.
``s' = s r' / (s r' + (1 - s) r)`` (:func:`adjust_scores_for_prior`).
Thresholding ``s'`` at ``c`` is the same as thresholding ``s`` at::

    t = c r / (c r + (1 - c) r')            (:func:`prior_shift_threshold`)

With equal costs (``c = 1/2``) this is ``t = r / (r + r')``, the survey's
formula, which is the special case, not the general rule.

Expected cost
-------------
:func:`expected_cost` is the mean cost per row on the given rows,
``(C(+|-) #FP + C(-|+) #FN) / N``; with ``prior=pi'`` it is instead the
cost per row expected at that positive rate,
``pi' C(-|+) FNR + (1 - pi') C(+|-) FPR``, from the class-conditional error
rates of the rows (both classes must be present).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .errors import CalibrationInputError
from .predictions import Predictions
from .validation import (
    check_binary_targets,
    check_fraction,
    check_non_negative,
    check_prob_matrix,
)

#: How the message of a bad prior names what is expected.
RATE_HINT = " (a positive-class rate)"


def _scores_labels(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(scores, Predictions):
        if scores.n_classes != 2:
            raise CalibrationInputError(
                f"the decision view is for binary problems; these predictions have "
                f"{scores.n_classes} classes."
            )
        labels = scores.labels if labels is None else labels
        scores = scores.probs
    if labels is None:
        raise CalibrationInputError("labels are missing: pass the true 0/1 class of every row.")
    arr = np.asarray(scores)
    if arr.ndim == 2 and arr.shape[1] != 2:
        raise CalibrationInputError(
            f"the decision view is for binary problems; got {arr.shape[1]} probability columns."
        )
    s = check_prob_matrix(arr)[:, 1]
    return s, check_binary_targets(labels, s.shape[0])


def cost_threshold(cost_fp: float, cost_fn: float) -> float:
    """Cost-sensitive threshold ``c = C(+|-) / (C(+|-) + C(-|+))``.

    Parameters
    ----------
    cost_fp : float
        ``C(+|-)``, the cost of a false positive.
    cost_fn : float
        ``C(-|+)``, the cost of a false negative.
    """
    fp, fn = check_non_negative(cost_fp, "cost_fp"), check_non_negative(cost_fn, "cost_fn")
    if fp + fn == 0:
        raise CalibrationInputError("cost_fp and cost_fn are both 0: every decision is free.")
    return fp / (fp + fn)


def adjust_scores_for_prior(scores, train_prior: float, deploy_prior: float) -> np.ndarray:
    """Re-calibrate positive-class scores for a new class prior (Bayes' rule).

    Parameters
    ----------
    scores : array-like, shape (N,)
        Scores calibrated at positive rate ``train_prior``.
    train_prior, deploy_prior : float
        Positive-class rates before and after, in (0, 1).

    Returns
    -------
    numpy.ndarray, shape (N,)
        ``s r' / (s r' + (1 - s) r)`` with ``r``, ``r'`` the class ratios.
    """
    s = check_prob_matrix(np.asarray(scores, dtype=np.float64).ravel())[:, 1]
    pi, pi2 = (
        check_fraction(train_prior, "train_prior", RATE_HINT),
        check_fraction(deploy_prior, "deploy_prior", RATE_HINT),
    )
    r, r2 = pi / (1 - pi), pi2 / (1 - pi2)
    return s * r2 / (s * r2 + (1 - s) * r)


def prior_shift_threshold(threshold: float, train_prior: float, deploy_prior: float) -> float:
    """Threshold on the original scores after a class-prior change.

    ``t = c r / (c r + (1 - c) r')`` (module docstring), with ``c`` the
    threshold that would be used on scores calibrated for the new prior.
    """
    if not isinstance(threshold, (int, float, np.integer, np.floating)) or not 0 <= threshold <= 1:
        raise CalibrationInputError(f"threshold must lie in [0, 1], got {threshold!r}.")
    pi, pi2 = (
        check_fraction(train_prior, "train_prior", RATE_HINT),
        check_fraction(deploy_prior, "deploy_prior", RATE_HINT),
    )
    r, r2 = pi / (1 - pi), pi2 / (1 - pi2)
    c = float(threshold)
    return c * r / (c * r + (1 - c) * r2)


def _costs_at(fp, fn, n_neg, n_pos, cost_fp, cost_fn, prior):
    if prior is None:
        return (cost_fp * fp + cost_fn * fn) / (n_neg + n_pos)
    if n_neg == 0 or n_pos == 0:
        raise CalibrationInputError(
            "a cost at another class prior needs rows of both classes, to estimate the "
            "false-positive and false-negative rates."
        )
    return prior * cost_fn * fn / n_pos + (1 - prior) * cost_fp * fp / n_neg


def expected_cost(scores, labels, cost_fp, cost_fn, threshold=None, *, prior=None) -> float:
    """Mean cost per row of predicting + when ``score >= threshold``.

    Parameters
    ----------
    scores : array-like, shape (N,) or (N, 2), or Predictions (K = 2)
    labels : array-like, shape (N,), or None with a Predictions
        0/1 truth.
    cost_fp, cost_fn : float
        ``C(+|-)`` and ``C(-|+)``.
    threshold : float, optional
        Defaults to :func:`cost_threshold` of the costs.
    prior : float, optional
        Evaluate at this positive-class rate instead of the rows' own
        (module docstring).
    """
    s, y = _scores_labels(scores, labels)
    fp_cost, fn_cost = (
        check_non_negative(cost_fp, "cost_fp"),
        check_non_negative(cost_fn, "cost_fn"),
    )
    t = cost_threshold(fp_cost, fn_cost) if threshold is None else float(threshold)
    pi = None if prior is None else check_fraction(prior, "prior", RATE_HINT)
    positive = s >= t
    fp = int(np.count_nonzero(positive & (y == 0)))
    fn = int(np.count_nonzero(~positive & (y == 1)))
    n_pos = int(y.sum())
    return float(_costs_at(fp, fn, y.shape[0] - n_pos, n_pos, fp_cost, fn_cost, pi))


def cost_curve(scores, labels, cost_fp, cost_fn, *, prior=None) -> tuple[np.ndarray, np.ndarray]:
    """Expected cost of every distinct threshold, for a cost-versus-threshold plot.

    Returns
    -------
    thresholds : numpy.ndarray, shape (T,)
        Increasing: each distinct score, then one value above the largest
        (predict + for no row).
    costs : numpy.ndarray, shape (T,)
        :func:`expected_cost` at each threshold.
    """
    s, y = _scores_labels(scores, labels)
    fp_cost, fn_cost = (
        check_non_negative(cost_fp, "cost_fp"),
        check_non_negative(cost_fn, "cost_fn"),
    )
    pi = None if prior is None else check_fraction(prior, "prior", RATE_HINT)
    order = np.argsort(s, kind="stable")
    s_sorted, y_sorted = s[order], y[order]
    thresholds, first = np.unique(s_sorted, return_index=True)
    thresholds = np.append(thresholds, np.nextafter(s_sorted[-1], np.inf))
    first = np.append(first, s.shape[0])
    neg_below = np.concatenate(([0], np.cumsum(1 - y_sorted)))[first]  # true negatives
    pos_below = np.concatenate(([0], np.cumsum(y_sorted)))[first]  # false negatives
    n_pos = int(y.sum())
    n_neg = s.shape[0] - n_pos
    costs = _costs_at(n_neg - neg_below, pos_below, n_neg, n_pos, fp_cost, fn_cost, pi)
    return thresholds, np.asarray(costs, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class DecisionComparison:
    """Expected cost of thresholding each set of scores (see :func:`compare_expected_costs`).

    Attributes
    ----------
    names : tuple of str, length M
    threshold : float
        The threshold applied to every set (cost threshold, prior-shifted if asked).
    expected_cost : numpy.ndarray, shape (M,)
    false_positives, false_negatives : numpy.ndarray, shape (M,), int64
    best_threshold, best_cost : numpy.ndarray, shape (M,)
        The threshold with the lowest cost on these rows, and that cost: what
        a threshold tuned on the rows would reach. ``expected_cost - best_cost``
        is the price of thresholding the scores at face value.
    cost_fp, cost_fn : float
    prior : float or None
        The deployment positive rate the costs are evaluated at, if any.
    """

    names: tuple[str, ...]
    threshold: float
    expected_cost: np.ndarray
    false_positives: np.ndarray
    false_negatives: np.ndarray
    best_threshold: np.ndarray
    best_cost: np.ndarray
    cost_fp: float
    cost_fn: float
    prior: float | None = None


def compare_expected_costs(
    score_sets: Mapping,
    labels=None,
    *,
    cost_fp: float,
    cost_fn: float,
    train_prior: float | None = None,
    deploy_prior: float | None = None,
) -> DecisionComparison:
    """Expected cost before and after each calibration map.

    Parameters
    ----------
    score_sets : mapping of str to scores (N,) / (N, 2) arrays or Predictions
        E.g. ``Comparison.calibrated`` of :func:`~calibration_core.compare_maps`
        (uncalibrated first); all on the same rows.
    labels : array-like, shape (N,), optional
        0/1 truth; taken from the first Predictions when omitted.
    cost_fp, cost_fn : float
        ``C(+|-)`` and ``C(-|+)``.
    train_prior : float, optional
        Positive rate the scores are calibrated for; defaults to the rows' own.
    deploy_prior : float, optional
        Deployment positive rate: the threshold is moved by
        :func:`prior_shift_threshold` and costs are evaluated at this rate.
    """
    if not score_sets:
        raise CalibrationInputError("no score sets to compare.")
    if labels is None:
        first = next((v for v in score_sets.values() if isinstance(v, Predictions)), None)
        if first is None:
            raise CalibrationInputError("labels are missing: pass the true 0/1 class of every row.")
        labels = first.labels
    c = cost_threshold(cost_fp, cost_fn)
    y = _scores_labels(next(iter(score_sets.values())), labels)[1]
    if deploy_prior is not None:
        pi = float(y.mean()) if train_prior is None else train_prior
        c = prior_shift_threshold(c, pi, deploy_prior)
    rows: dict[str, list[float]] = {"cost": [], "fp": [], "fn": [], "best_t": [], "best_c": []}
    for scores in score_sets.values():
        s, y = _scores_labels(scores, labels)
        positive = s >= c
        rows["fp"].append(int(np.count_nonzero(positive & (y == 0))))
        rows["fn"].append(int(np.count_nonzero(~positive & (y == 1))))
        rows["cost"].append(expected_cost(s, y, cost_fp, cost_fn, c, prior=deploy_prior))
        thresholds, costs = cost_curve(s, y, cost_fp, cost_fn, prior=deploy_prior)
        best = int(np.argmin(costs))
        rows["best_t"].append(thresholds[best])
        rows["best_c"].append(costs[best])
    return DecisionComparison(
        names=tuple(str(name) for name in score_sets),
        threshold=float(c),
        expected_cost=np.array(rows["cost"]),
        false_positives=np.array(rows["fp"], dtype=np.int64),
        false_negatives=np.array(rows["fn"], dtype=np.int64),
        best_threshold=np.array(rows["best_t"]),
        best_cost=np.array(rows["best_c"]),
        cost_fp=float(cost_fp),
        cost_fn=float(cost_fn),
        prior=None if deploy_prior is None else float(deploy_prior),
    )
