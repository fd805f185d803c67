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

p-value (``p_value=``)
    ``"bootstrap"`` (the default, here and on the page): a parametric
    bootstrap under the null that the predictions are the true
    probabilities of these rows, the situation of predictions evaluated on
    held-out rows. The groups depend on the scores only, so they stay fixed;
    R label sets are drawn from the predicted rows (the draws of
    :func:`calibration_core.measures.significance.calibration_test`), the statistic
    is recomputed on each, and the p-value is the package's Monte Carlo
    p-value with ties broken at random
    (:func:`calibration_core.measures.significance.monte_carlo_p_value`). Its size is
    alpha for any K, G and N (up to ``alpha (R + 1)`` being a whole number).

    ``"chi2"``: the chi-squared approximation. ``G - 2`` (``(G - 2)(K - 1)``)
    degrees of freedom is the reference distribution when the probabilities
    come from a logistic model fitted to the *same* rows (``holdout=False``).
    For held-out rows, Hosmer & Lemeshow recommend ``G`` degrees of freedom
    (Applied Logistic Regression, external validation); ``holdout=True`` (the
    default) uses ``G (K - 1)``, the multinomial analogue. Neither gives
    uniform p-values in general: with ``G - 2`` calibrated held-out
    predictions are rejected far more often than alpha, and with ``G (K - 1)``
    and K >= 3 far less often (the Pearson cells of one group are dependent
    and the rows of a group have different probabilities), with little
    power. With many classes most cells have small expected counts; read the
    statistic per group (``table``) rather than the p-value. Size of both
    rules by K, G and N: docs/statistics.md.

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

from ..binning import Binning
from ..errors import CalibrationInputError, SmallSampleWarning
from ..predictions import measure_inputs
from ..validation import check_seed, check_whole_number
from .significance import CategoricalSampler, monte_carlo_p_value


def _chi2_sf(statistic: float, dof: int) -> float:
    """``scipy.stats.chi2.sf(statistic, dof)`` (scipy.special imported on first use)."""
    from scipy import special

    return float(special.chdtrc(dof, statistic))


#: Below this many rows a :class:`SmallSampleWarning` is issued (survey §6).
MIN_RECOMMENDED_SAMPLES = 400
#: How the p-value is computed (module docstring); the first is the default.
P_VALUE_METHODS = ("bootstrap", "chi2")
DEFAULT_RESAMPLES = 1000
#: About this many (resample, row) pairs are drawn at once.
BLOCK_ELEMENTS = 1 << 21


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
        Degrees of freedom of the chi-squared approximation (``holdout`` rule).
    p_value : float
        The p-value of ``method``: parametric bootstrap or ``chi2.sf(statistic, dof)``.
    n_groups : int
        Non-empty groups used (may be fewer than asked with tied scores).
    reference : int
        The reference class of the grouping score.
    table : HosmerLemeshowTable
    method : str
        ``"bootstrap"`` or ``"chi2"`` (module docstring).
    n_resamples, seed : int or None
        Of the parametric bootstrap (None with ``"chi2"``).
    """

    statistic: float
    dof: int
    p_value: float
    n_groups: int
    reference: int
    table: HosmerLemeshowTable
    method: str = "chi2"
    n_resamples: int | None = None
    seed: int | None = None


def _pearson_cells(observed: np.ndarray, expected: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = (observed - expected) ** 2 / expected
    cells[(expected == 0) & (observed == 0)] = 0.0
    cells[(expected == 0) & (observed != 0)] = np.inf
    return cells


def _bootstrap_null(p, group, expected, kept, rng, n_resamples) -> np.ndarray:
    """The statistic on ``n_resamples`` label sets drawn from ``p`` (groups fixed), shape (R,)."""
    n, k = p.shape
    g = kept.shape[0]
    sampler = CategoricalSampler(p)
    cell_of_row = group * k - sampler.base  # + flat index i*K + class -> group*K + class
    size = max(1, min(n_resamples, BLOCK_ELEMENTS // max(n, 1)))
    null = []
    for start in range(0, n_resamples, size):
        r = min(size, n_resamples - start)
        codes = (
            sampler.draw(rng, r) + cell_of_row + (np.arange(r, dtype=np.intp) * (g * k))[:, None]
        )
        observed = np.bincount(codes.ravel(), minlength=r * g * k).reshape(r, g, k)[:, kept]
        null.append(_pearson_cells(observed.astype(np.float64), expected).sum(axis=(1, 2)))
    return np.concatenate(null)


def _check_arguments(k, n_groups, p_value, n_resamples, reference) -> tuple[int, int]:
    """Validated ``(G, R)``; raises CalibrationInputError naming the bad argument."""
    g = check_whole_number(n_groups, "n_groups", minimum=3)
    if p_value not in P_VALUE_METHODS:
        raise CalibrationInputError(
            f"p_value must be one of {', '.join(map(repr, P_VALUE_METHODS))}, got {p_value!r}."
        )
    r = check_whole_number(n_resamples, "n_resamples")
    if isinstance(reference, bool) or not isinstance(reference, (int, np.integer)):
        raise CalibrationInputError(f"reference must be a class index, got {reference!r}.")
    if not 0 <= reference < k:
        raise CalibrationInputError(
            f"reference must be a class index in 0..{k - 1}, got {reference}."
        )
    return g, r


def _warn_small_sample(n: int) -> None:
    if n < MIN_RECOMMENDED_SAMPLES:
        warnings.warn(
            f"Hosmer-Lemeshow on {n} rows: the test has little power below about "
            f"{MIN_RECOMMENDED_SAMPLES} instances (survey §6); read its p-value with care.",
            SmallSampleWarning,
            stacklevel=3,
        )


@dataclass(frozen=True, eq=False)
class _Groups:
    """Equal-frequency groups of the grouping score and their observed/expected counts."""

    score: np.ndarray  # (N,) grouping score 1 - p_ref
    group: np.ndarray  # (N,) group of every row (all G, empty ones included)
    kept: np.ndarray  # (G,) bool: non-empty groups
    count: np.ndarray  # (G_eff,) rows per non-empty group
    observed: np.ndarray  # (G_eff, K)
    expected: np.ndarray  # (G_eff, K)


def _form_groups(p: np.ndarray, y: np.ndarray, g: int, reference: int) -> _Groups:
    """Group rows by ``1 - p_ref`` (the project's equal-frequency binning); drop empty groups."""
    k = p.shape[1]
    score = np.clip(1.0 - p[:, reference], 0.0, 1.0)
    group = Binning("frequency", g).assign(score)
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
    return _Groups(score, group, kept, count[kept], observed[kept], expected[kept])


def _group_table(groups: _Groups) -> HosmerLemeshowTable:
    """Per-group table; each group's score range is read in sorted score order (contiguous)."""
    order = np.argsort(groups.score, kind="stable")
    sorted_group = groups.group[order]
    present = np.flatnonzero(groups.kept)
    first = np.searchsorted(sorted_group, present, side="left")
    last = np.searchsorted(sorted_group, present, side="right") - 1
    return HosmerLemeshowTable(
        lower=groups.score[order[first]],
        upper=groups.score[order[last]],
        count=groups.count.astype(np.int64),
        observed=groups.observed,
        expected=groups.expected,
        contribution=_pearson_cells(groups.observed, groups.expected).sum(axis=1),
    )


def hosmer_lemeshow(
    probs,
    labels=None,
    *,
    n_groups: int = 10,
    reference: int = 0,
    p_value: str = "bootstrap",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = 0,
    holdout: bool = True,
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
    p_value : {"bootstrap", "chi2"}
        Parametric bootstrap under calibration (default; valid size for held-out
        predictions) or the chi-squared approximation (module docstring).
    n_resamples : int
        R, label sets drawn by the bootstrap.
    seed : None, int or numpy.random.Generator
        Source of randomness of the bootstrap; the same int gives the same p-value.
    holdout : bool
        Degrees of freedom of the chi-squared approximation: ``G (K - 1)``
        (True, the probabilities were not fitted on these rows) or
        ``(G - 2)(K - 1)`` (False). Only ``p_value="chi2"`` uses them.

    Returns
    -------
    HosmerLemeshowResult
        ``.statistic``, ``.dof``, ``.p_value`` and the per-group ``.table``;
        size of each p-value method: docs/statistics.md.

    Warns
    -----
    SmallSampleWarning
        With fewer than 400 rows.
    """
    p, y, _ = measure_inputs(probs, labels, measure="hosmer_lemeshow")
    n, k = p.shape
    g, r = _check_arguments(k, n_groups, p_value, n_resamples, reference)
    _warn_small_sample(n)
    groups = _form_groups(p, y, g, int(reference))
    table = _group_table(groups)
    statistic = float(table.contribution.sum())
    g_eff = groups.count.shape[0]
    dof = g_eff * (k - 1) if holdout else (g_eff - 2) * (k - 1)
    resamples: int | None = None  # the chi-squared p-value draws none
    if p_value == "chi2":
        value, seed = _chi2_sf(statistic, dof), None
    else:
        rng = check_seed(seed)
        null = _bootstrap_null(p, groups.group, groups.expected, groups.kept, rng, r)
        value = monte_carlo_p_value(statistic, null, rng=rng)
        resamples = r
    return HosmerLemeshowResult(
        statistic=statistic,
        dof=int(dof),
        p_value=value,
        n_groups=g_eff,
        reference=int(reference),
        table=table,
        method=p_value,
        n_resamples=resamples,
        seed=seed if isinstance(seed, (int, type(None))) else None,
    )
