"""Binning-free checks on cumulative differences: KS calibration error, Kuiper, Spiegelhalter.

Sort the rows by score ``s`` and accumulate the differences between labels
and scores, ``D_i = (1/N) sum_{j <= i} (y_j - s_j)``. A calibrated model keeps
``D`` near 0 everywhere (it is a martingale with mean 0); a slope in the plot
of ``D`` against the rank ``i/N`` is a miscalibrated stretch of scores, and
the slope is the gap there (Tygert 2021, "Plots of the cumulative
differences between observed and expected values of ordered Bernoulli
variates"; Arrieta-Ibarra et al., JMLR 2022).

* **KS calibration error** (Gupta et al. 2021, "Calibration of neural networks
  using splines", ICLR): ``max_i |D_i|``. Top-label with the confidence as
  score and "top class is right" as label; per class with ``probs[:, k]``
  against ``label == k``.
* **Kuiper's statistic**: ``max_i D_i - min_i D_i`` (with ``D_0 = 0``), the
  largest rise or fall of the cumulative difference over any stretch of
  scores, not only over a prefix.
* **Tests** (Tygert): under calibration ``D`` has variance
  ``V_i = (1/N^2) sum_{j <= i} s_j (1 - s_j)``. Divided by
  ``sigma = sqrt(V_N)``, ``D`` is asymptotically a standard Brownian motion on
  [0, 1] (in the time ``V_i / V_N``), so ``max |D| / sigma`` is compared with
  the law of ``sup_{t <= 1} |B_t|`` and the Kuiper statistic over sigma with
  that of the range ``max B - min B`` (Feller 1951). Both p-values are
  asymptotic and one-sided (large values mean miscalibration).
* **Spiegelhalter's Z** (Spiegelhalter 1986), as ``rms::val.prob``:
  ``z = sum (y - s)(1 - 2 s) / sqrt(sum (1 - 2 s)^2 s (1 - s))`` with the
  two-sided normal p-value ``2 Phi(-|z|)``; a test of the Brier score's
  calibration part, with power against over- and under-confidence alike.

Ties
----
Rows with equal scores have no order, and the order within a tie would move
``D``. ``D`` is therefore taken only at the end of each group of equal
scores (all of a tie enters at once), which makes every result independent
of the row order; without ties this is every row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..notions import notion_columns
from ..predictions import measure_inputs
from ..validation import check_level, check_whole_number

#: Terms of the Brownian-motion series are summed until ``k x`` passes this (Phi(-40) ~ 0).
SERIES_REACH = 40.0


# ------------------------------------------------------------ p-value laws
def _phi_tail(x: np.ndarray) -> np.ndarray:
    """``Phi(-x)``, the standard normal upper tail, without importing scipy.stats."""
    from scipy.special import ndtr

    return ndtr(-x)


def sup_abs_brownian_sf(x: float) -> float:
    """``P(sup_{t <= 1} |B_t| >= x)`` for a standard Brownian motion.

    ``4 sum_{k >= 0} (-1)^k Phi(-(2k + 1) x)`` (reflection principle), summed
    until the terms vanish.

    Parameters
    ----------
    x : float
        The normalised KS statistic ``max |D| / sigma``, >= 0.

    Returns
    -------
    float
        In [0, 1].
    """
    x = float(x)
    if x <= 0.05:  # P(sup |B| < 0.05) is below 1e-200
        return 1.0
    k = np.arange(int(SERIES_REACH / x) + 2)
    terms = _phi_tail((2 * k + 1) * x) * np.where(k % 2 == 0, 4.0, -4.0)
    return float(np.clip(terms[::-1].sum(), 0.0, 1.0))


def brownian_range_sf(x: float) -> float:
    """``P(max_{t <= 1} B_t - min_{t <= 1} B_t >= x)`` for a standard Brownian motion.

    From Feller's (1951) density of the range, ``8 sum_{k >= 1} (-1)^(k-1) k^2 phi(k r)``:
    the tail is ``8 sum_{k >= 1} (-1)^(k-1) k Phi(-k x)``.

    Parameters
    ----------
    x : float
        The normalised Kuiper statistic ``(max D - min D) / sigma``, >= 0.

    Returns
    -------
    float
        In [0, 1].
    """
    x = float(x)
    if x <= 0.1:  # P(range < 0.1) is below 1e-100
        return 1.0
    k = np.arange(1, int(SERIES_REACH / x) + 2)
    terms = 8.0 * k * _phi_tail(k * x) * np.where(k % 2 == 1, 1.0, -1.0)
    return float(np.clip(terms[::-1].sum(), 0.0, 1.0))


# ------------------------------------------------------------ the curve
@dataclass(frozen=True, eq=False)
class CumulativeDifferences:
    """The cumulative differences of one score column, at the end of each tie group.

    Attributes
    ----------
    rank : numpy.ndarray, shape (M + 1,)
        Share of rows with a score up to this point, ``i / N``, from 0 to 1
        (the x axis of the cumulative plot).
    score : numpy.ndarray, shape (M + 1,)
        The score at this point (NaN at the start), for hover text.
    difference : numpy.ndarray, shape (M + 1,)
        ``D_i = (1/N) sum_{j <= i} (y_j - s_j)``, from 0; above 0 means more
        positives than predicted (under-confidence), below 0 fewer.
    std : numpy.ndarray, shape (M + 1,)
        Standard deviation of ``D_i`` under calibration,
        ``sqrt(sum_{j <= i} s_j (1 - s_j)) / N``; ``+-z std`` is the expected band.
    n_samples : int
    """

    rank: np.ndarray
    score: np.ndarray
    difference: np.ndarray
    std: np.ndarray
    n_samples: int

    @property
    def sigma(self) -> float:
        """Standard deviation of the end point under calibration, ``std[-1]``."""
        return float(self.std[-1])

    def band(self, level: float = 0.95) -> np.ndarray:
        """Half-width of the pointwise band expected under calibration, shape (M + 1,).

        ``z std`` with ``z`` the two-sided normal quantile of ``level``.
        """
        from scipy.special import ndtri

        level = check_level(level)
        return ndtri(0.5 + level / 2) * self.std

    def thinned(self, max_points: int) -> CumulativeDifferences:
        """At most about ``max_points`` points for a plot, keeping both ends and the extremes.

        Evenly spaced points are kept, plus the largest and the smallest
        difference, so that the KS and Kuiper statistics read off the thinned
        curve are those of the full one.
        """
        max_points = check_whole_number(max_points, "max_points", minimum=4)
        m = self.rank.shape[0]
        if m <= max_points:
            return self
        keep = np.unique(
            np.concatenate(
                [
                    np.linspace(0, m - 1, max_points - 2).astype(np.intp),
                    [np.argmax(self.difference), np.argmin(self.difference)],
                ]
            )
        )
        return CumulativeDifferences(
            self.rank[keep], self.score[keep], self.difference[keep], self.std[keep], self.n_samples
        )


def cumulative_from_scores(scores: np.ndarray, targets: np.ndarray) -> CumulativeDifferences:
    """The cumulative differences of validated scores and 0/1 targets.

    Parameters
    ----------
    scores : numpy.ndarray, shape (N,)
        In [0, 1].
    targets : numpy.ndarray, shape (N,)
        0/1.

    Returns
    -------
    CumulativeDifferences
    """
    order = np.argsort(scores)
    s = scores[order]
    n = s.shape[0]
    ends = np.flatnonzero(np.append(s[1:] != s[:-1], True))  # last row of each tie group
    gap = np.cumsum(targets[order] - s)[ends]
    var = np.cumsum(s * (1.0 - s))[ends]
    return CumulativeDifferences(
        rank=np.concatenate([[0.0], (ends + 1) / n]),
        score=np.concatenate([[np.nan], s[ends]]),
        difference=np.concatenate([[0.0], gap / n]),
        std=np.concatenate([[0.0], np.sqrt(var) / n]),
        n_samples=n,
    )


def cumulative_differences(
    probs, labels=None, *, notion: str | None = None, class_index: int | None = None
) -> CumulativeDifferences:
    """The cumulative plot's data of one notion (top label, one class, binary).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    notion : {"confidence", "binary", "class"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
    class_index : int, optional
        The class for ``notion="class"``.

    Returns
    -------
    CumulativeDifferences
        Thin it with :meth:`CumulativeDifferences.thinned` before plotting a large N.
    """
    (column,) = _columns(
        probs, labels, notion, class_index, "cumulative_differences", allow_classwise=False
    )
    return cumulative_from_scores(*column)


def _columns(probs, labels, notion, class_index, measure: str, *, allow_classwise: bool = True):
    from ..errors import CalibrationInputError

    if notion == "classwise" and not allow_classwise:
        raise CalibrationInputError(
            "the cumulative plot is drawn for one score column; choose notion 'confidence', "
            "'binary' or 'class' with a class_index."
        )
    p, y, notion = measure_inputs(probs, labels, notion=notion, measure=measure)
    return notion_columns(p, y, notion, class_index)


# ------------------------------------------------------------ the tests
@dataclass(frozen=True)
class CumulativeTestResult:
    """KS calibration error and Kuiper's statistic of one score column, with p-values.

    Attributes
    ----------
    ks_error : float
        ``max |D|`` (Gupta et al. 2021), in probability units.
    kuiper : float
        ``max D - min D``.
    sigma : float
        Standard deviation of ``D_N`` under calibration.
    ks_p_value, kuiper_p_value : float
        Asymptotic p-values of ``ks_error / sigma`` and ``kuiper / sigma``
        (see the module docstring).
    n_samples : int
    """

    ks_error: float
    kuiper: float
    sigma: float
    ks_p_value: float
    kuiper_p_value: float
    n_samples: int

    def to_dict(self) -> dict:
        """Plain floats and ints, for JSON."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def cumulative_test_from_curve(curve: CumulativeDifferences) -> CumulativeTestResult:
    """KS error, Kuiper statistic and their p-values from a curve (full or thinned)."""
    d = curve.difference
    ks, kuiper, sigma = float(np.abs(d).max()), float(d.max() - d.min()), curve.sigma
    if sigma > 0:
        ks_p, kuiper_p = sup_abs_brownian_sf(ks / sigma), brownian_range_sf(kuiper / sigma)
    else:  # every score is 0 or 1: no randomness left, any difference is a miscalibration
        ks_p = kuiper_p = 1.0 if ks == 0 else 0.0
    return CumulativeTestResult(ks, kuiper, sigma, ks_p, kuiper_p, curve.n_samples)


def cumulative_test(
    probs, labels=None, *, notion: str | None = None, class_index: int | None = None
) -> CumulativeTestResult:
    """KS calibration error and Kuiper's statistic with their asymptotic p-values.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    notion : {"confidence", "binary", "class"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
    class_index : int, optional

    Returns
    -------
    CumulativeTestResult
    """
    return cumulative_test_from_curve(
        cumulative_differences(probs, labels, notion=notion, class_index=class_index)
    )


def ks_calibration_error(
    probs, labels=None, *, notion: str | None = None, class_index: int | None = None
) -> float:
    """KS calibration error of Gupta et al. (2021), ``max_i |D_i|``.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    notion : {"confidence", "binary", "class", "classwise"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
        ``"classwise"`` is the mean over classes of the per-class error
        (see :func:`classwise_ks_errors` for each class).
    class_index : int, optional

    Returns
    -------
    float
        In [0, 1].
    """
    columns = _columns(probs, labels, notion, class_index, "ks_calibration_error")
    return float(np.mean([_ks(s, t) for s, t in columns]))


def classwise_ks_errors(probs, labels=None) -> np.ndarray:
    """The KS calibration error of every class against the rest, shape (K,)."""
    return np.array(
        [_ks(s, t) for s, t in _columns(probs, labels, "classwise", None, "classwise_ks_errors")]
    )


def _ks(scores: np.ndarray, targets: np.ndarray) -> float:
    return float(np.abs(cumulative_from_scores(scores, targets).difference).max())


@dataclass(frozen=True)
class SpiegelhalterResult:
    """Spiegelhalter's Z test of one score column.

    Attributes
    ----------
    z : float
        ``sum (y - s)(1 - 2 s) / sqrt(sum (1 - 2 s)^2 s (1 - s))``; NaN when
        every score is 0, 1/2 or 1 (no variance).
    p_value : float
        Two-sided, ``2 Phi(-|z|)`` (as ``rms::val.prob``'s ``S:p``).
    n_samples : int
    """

    z: float
    p_value: float
    n_samples: int

    def to_dict(self) -> dict:
        """Plain floats and ints, for JSON (NaN as None)."""
        return {
            "z": None if np.isnan(self.z) else self.z,
            "p_value": None if np.isnan(self.p_value) else self.p_value,
            "n_samples": self.n_samples,
        }


def spiegelhalter_from_scores(scores: np.ndarray, targets: np.ndarray) -> SpiegelhalterResult:
    """Spiegelhalter's Z of validated scores (N,) and 0/1 targets (N,)."""
    w = 1.0 - 2.0 * scores
    numerator = float(np.dot(targets - scores, w))
    variance = float(np.dot(w * w, scores * (1.0 - scores)))
    if variance <= 0:
        return SpiegelhalterResult(float("nan"), float("nan"), int(scores.shape[0]))
    z = numerator / np.sqrt(variance)
    return SpiegelhalterResult(float(z), float(2.0 * _phi_tail(abs(z))), int(scores.shape[0]))


def spiegelhalter_test(
    probs, labels=None, *, notion: str | None = None, class_index: int | None = None
) -> SpiegelhalterResult:
    """Spiegelhalter's Z test of calibration (two-sided normal p-value).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    notion : {"confidence", "binary", "class"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
    class_index : int, optional

    Returns
    -------
    SpiegelhalterResult
    """
    (column,) = _columns(
        probs, labels, notion, class_index, "spiegelhalter_test", allow_classwise=False
    )
    return spiegelhalter_from_scores(*column)
