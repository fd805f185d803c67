"""ECE variants: adaptive (equal-mass) bins and a debiased estimator, beside the plug-in one.

Which is which
--------------
* **Plug-in** (the usual ECE, :func:`calibration_core.confidence_ece` and
  :func:`plugin_calibration_error`): replace each bin's expectations by
  sample means, ``(sum_b n_b/N |ybar_b - sbar_b|^p)^(1/p)``. With ``p = 1``
  this is the ECE; with ``p = 2`` the L2 calibration error. It is biased
  upwards: even a perfectly calibrated model gets a positive value, by about
  ``sqrt(sum_b (n_b/N) ybar_b (1 - ybar_b) / n_b)`` for p = 2.
* **Adaptive** (:func:`adaptive_ece`, Nixon et al. 2019, "Measuring
  Calibration in Deep Learning"): the plug-in ECE with equal-mass
  (equal-frequency) bins instead of equal-width ones, so that no bin is
  nearly empty. Identical to the core ECE with ``scheme="frequency"``; the
  bin edges follow the project's binning rule (ties are never split).
  :func:`adaptive_classwise_ece` is Nixon et al.'s ACE: equal-mass ranges
  per class, and the *unweighted* mean of the range gaps over classes and
  ranges, ``1/(K R) sum_k sum_r |acc(r, k) - conf(r, k)|`` (empty ranges,
  possible only with ties, are left out of the mean).
  :func:`thresholded_adaptive_ece` is their TACE: the same, on the
  probabilities above a threshold only, so that the mass of tiny
  probabilities of the non-predicted classes (most of the K N values when K
  is large) does not wash out the gaps.
* **Debiased** (:func:`debiased_ece`, Kumar, Liang & Ma 2019, "Verified
  Uncertainty Calibration", NeurIPS; their library's
  ``calibration.get_calibration_error(..., p=2, debias=True)``): an estimate
  of the **squared L2** calibration error with the per-bin sampling variance
  removed, ``sum_b n_b/N [(sbar_b - ybar_b)^2 - ybar_b (1 - ybar_b) / (n_b - 1)]``;
  bins with fewer than 2 rows add 0. The reported value is the square root
  of ``max(estimate, 0)``. This correction only exists for p = 2: it is an
  estimate of the L2 error, not of the usual (L1) ECE, and the two should
  not be compared with each other. Kumar et al. use 15 equal-mass bins,
  our default too. For classwise ("marginal") calibration their library
  averages the clipped squared estimates over classes before the square
  root; so does ``notion="classwise"`` here.
"""

from __future__ import annotations

import numpy as np

from ..binning import Binning, BinStatistics, Scheme, check_binning_args
from ..errors import CalibrationInputError
from ..notions import notion_columns
from ..predictions import measure_inputs
from ..validation import check_non_negative, check_whole_number


def _statistics(
    probs, labels, notion, class_index, n_bins, scheme, measure: str
) -> list[BinStatistics]:
    """Bin statistics of each score column of a notion (one, or K for classwise)."""
    p, y, notion = measure_inputs(probs, labels, notion=notion, measure=measure)
    n_bins, scheme = check_binning_args(n_bins, scheme)
    binning = Binning(scheme, n_bins)
    return [binning.statistics(s, t) for s, t in notion_columns(p, y, notion, class_index)]


def squared_error_terms(count, sum_score, sum_target, *, debias: bool) -> np.ndarray:
    """Estimate of the squared L2 calibration error from per-bin sums.

    Parameters
    ----------
    count, sum_score, sum_target : numpy.ndarray, shape (..., M)
        Per-bin statistics (any leading axes, e.g. resamples or classes).
    debias : bool
        Subtract ``ybar (1 - ybar) / (n_b - 1)`` per bin (Kumar et al. 2019);
        bins with ``n_b < 2`` then add 0.

    Returns
    -------
    numpy.ndarray, shape (...)
        ``sum_b n_b/N * term_b``, not clipped at 0 and not square-rooted.
    """
    count = np.asarray(count, dtype=np.float64)
    n = count.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ybar = np.where(count > 0, sum_target / count, 0.0)
        sbar = np.where(count > 0, sum_score / count, 0.0)
        term = (sbar - ybar) ** 2
        if debias:
            term = np.where(count >= 2, term - ybar * (1 - ybar) / (count - 1), 0.0)
    return (count * term).sum(axis=-1) / n


def plugin_calibration_error(
    probs,
    labels=None,
    *,
    p: int = 2,
    notion: str | None = None,
    class_index: int | None = None,
    n_bins: int = 15,
    scheme: Scheme = "frequency",
) -> float:
    """Plug-in Lp calibration error ``(sum_b n_b/N |ybar_b - sbar_b|^p)^(1/p)``.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    p : int
        1 gives the ECE, 2 the L2 calibration error (the biased estimate
        that :func:`debiased_ece` corrects).
    notion : {"confidence", "binary", "class", "classwise"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
        ``classwise`` averages the p-th powers over classes before the root.
    class_index : int, optional
        The class for ``notion="class"``.
    n_bins, scheme
        Binning; equal-mass 15 bins by default, as Kumar et al.

    Returns
    -------
    float
    """
    p = check_whole_number(p, "p")
    stats = _statistics(
        probs, labels, notion, class_index, n_bins, scheme, "plugin_calibration_error"
    )
    powers = [float(np.sum(s.count * np.nan_to_num(s.gap) ** p) / s.total) for s in stats]
    return float(np.mean(powers) ** (1.0 / p))


def debiased_ece(
    probs,
    labels=None,
    *,
    p: int = 2,
    notion: str | None = None,
    class_index: int | None = None,
    n_bins: int = 15,
    scheme: Scheme = "frequency",
) -> float:
    """Debiased L2 calibration error of Kumar, Liang & Ma (2019).

    ``sqrt(max(0, sum_b n_b/N [(sbar_b - ybar_b)^2 - ybar_b(1 - ybar_b)/(n_b - 1)]))``,
    the square root of an unbiased estimate of the squared binned L2 error
    (see the module docstring). Compare it with
    ``plugin_calibration_error(..., p=2)``, the biased plug-in estimate of the
    same quantity, not with the (L1) ECE.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    p : int
        Must be 2: the variance correction is defined for the squared error only.
    notion : {"confidence", "binary", "class", "classwise"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
        ``classwise``: ``sqrt(mean_k max(0, estimate_k))``, as their "marginal" mode.
    class_index : int, optional
    n_bins, scheme
        Binning; 15 equal-mass bins by default, as Kumar et al.

    Returns
    -------
    float
    """
    if p != 2:
        raise CalibrationInputError(
            f"the debiased estimator exists for the L2 (p=2) calibration error only, got p={p!r}; "
            "use plugin_calibration_error(p=1) or confidence_ece for the usual (L1) ECE."
        )
    stats = _statistics(probs, labels, notion, class_index, n_bins, scheme, "debiased_ece")
    squares = [
        max(float(squared_error_terms(s.count, s.sum_score, s.sum_target, debias=True)), 0.0)
        for s in stats
    ]
    return float(np.sqrt(np.mean(squares)))


def adaptive_ece(
    probs,
    labels=None,
    *,
    n_bins: int = 15,
    notion: str | None = None,
    class_index: int | None = None,
) -> float:
    """Adaptive (equal-mass) ECE: the plug-in ECE with equal-frequency bins (Nixon et al. 2019).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    n_bins : int
    notion : {"confidence", "binary", "class", "classwise"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
        ``classwise`` is the count-weighted mean over classes (the classwise
        ECE with equal-mass bins); see :func:`adaptive_classwise_ece` for ACE.
    class_index : int, optional

    Returns
    -------
    float
        Equals ``confidence_ece(probs, labels, n_bins=n_bins, scheme="frequency")``
        for the confidence notion.
    """
    stats = _statistics(probs, labels, notion, class_index, n_bins, "frequency", "adaptive_ece")
    return float(np.mean([s.ece() for s in stats]))


def adaptive_classwise_ece(probs, labels=None, *, n_bins: int = 15) -> float:
    """ACE of Nixon et al. (2019): ``1/(K R) sum_k sum_r |acc(r, k) - conf(r, k)|``.

    Every class column is split into ``R = n_bins`` equal-mass ranges; the
    gaps are averaged without weights over all classes and non-empty ranges.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    n_bins : int

    Returns
    -------
    float
    """
    stats = _statistics(
        probs, labels, "classwise", None, n_bins, "frequency", "adaptive_classwise_ece"
    )
    gaps = np.concatenate([s.gap[s.count > 0] for s in stats])
    return float(gaps.mean())


def thresholded_adaptive_ece(
    probs, labels=None, *, n_bins: int = 15, threshold: float = 0.01
) -> float:
    """TACE of Nixon et al. (2019): ACE on the class probabilities above a threshold.

    For every class ``k``, the rows with ``probs[:, k] > threshold`` are split
    into ``R = n_bins`` equal-mass ranges of that probability; the gaps
    ``|acc(r, k) - conf(r, k)|`` are averaged without weights over all classes
    and non-empty ranges, as in :func:`adaptive_classwise_ece`. Classes with no
    probability above the threshold add nothing. ``threshold=0`` keeps every
    positive probability (ACE without the zeros).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    n_bins : int
        Ranges per class, R.
    threshold : float
        Keep probabilities strictly above it; in [0, 1). Nixon et al. leave it
        as a parameter; 0.01 drops the near-zero probabilities of the classes
        a model rules out.

    Returns
    -------
    float
    """
    p, y, _ = measure_inputs(probs, labels, measure="thresholded_adaptive_ece")
    threshold = check_non_negative(threshold, "threshold")
    if threshold >= 1.0:
        raise CalibrationInputError(
            f"threshold must be in [0, 1): no probability lies above {threshold!r}; use e.g. 0.01."
        )
    n_bins, _ = check_binning_args(n_bins, "frequency")
    binning = Binning("frequency", n_bins)
    gaps = []
    for scores, targets in notion_columns(p, y, "classwise"):
        kept = scores > threshold
        if kept.any():
            stats = binning.statistics(scores[kept], targets[kept])
            gaps.append(stats.gap[stats.count > 0])
    if not gaps:
        raise CalibrationInputError(
            f"no class probability lies above the threshold {threshold!r}; lower it."
        )
    return float(np.concatenate(gaps).mean())
