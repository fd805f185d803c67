"""Bootstrap confidence intervals for any metric: :func:`bootstrap_ci`.

Each resample draws N rows with replacement (uniform row indices; the
number of copies of each row is then Multinomial(N, 1/N)), the metric is
recomputed on it, and ``q_lo, q_hi`` are the ``(1 - level)/2`` and
``(1 + level)/2`` quantiles of the R resampled values (numpy's default
linear interpolation). The estimate is the metric on the original rows.

What the interval covers
------------------------
The target is the metric of the *population* the rows were drawn from,
with the same binning: for a binned ECE, ``sum_m P(B_m) |E[Y | B_m] -
E[S | B_m]|`` with the same bins. The plug-in estimate (the number in the
metrics table) is biased **upwards** for binned errors: sampling noise in
each bin's gap only adds to an absolute value. The bias is largest when the
true error is small and bins hold few rows (a calibrated model with a
million rows still gets a positive ECE). A resample, with its duplicated
rows, is noisier still, so the bootstrap values sit *above* the estimate.

Intervals (``interval=``)
-------------------------
``"hybrid"`` (the default, here and on the page)
    ``[2 estimate - q_hi, q_hi]``. The lower bound is the basic bootstrap
    bound, which subtracts the bootstrap estimate of the bias (Davison &
    Hinkley 1997, §5.2); the upper bound is the percentile bound, which the
    upward bias makes conservative. The interval always contains the
    estimate; for metrics without bias (row means) it is close to the
    percentile interval.
``"basic"``
    ``[2 estimate - q_hi, 2 estimate - q_lo]``, centred on the bias-corrected
    estimate; it can lie entirely below the plug-in estimate and it is
    narrower than the hybrid interval, with coverage a few points under
    nominal for binned errors.
``"percentile"``
    ``[q_lo, q_hi]``: for binned errors this misses the population value
    whenever the bias exceeds the noise (a calibrated model: always).

``"max-of-bins"`` (the default of ``binary_mce`` and ``confidence_mce``)
    Not from the resamples: :func:`max_gap_bounds`. The MCE is the largest of
    several nearly tied, noisy bin gaps; the plug-in is biased upwards by the
    noise of the maximum and the bootstrap does not reproduce its
    distribution (the hybrid interval covered 84-90 % in half the simulated
    cells at N >= 1000). Each non-empty bin gets a Wilson interval for its
    mean target minus its mean score; the upper bound is the largest upper
    bound of ``|gap|`` at the one-sided level ``(1 + level)/2`` (only the bin
    of the true maximum must be covered), the lower bound the largest lower
    bound of ``|gap|`` at the Bonferroni level ``1 - (1 - level)/(2 B)`` over
    the B non-empty bins (every bin must be covered at once). Coverage
    97-100 % in those cells, widths close to the hybrid interval's. Bins
    empty in the sample are ignored, as by the estimate. The classwise MCE
    keeps the hybrid interval.

Every interval of a named metric is clipped to the metric's range (all of
them are >= 0; accuracy is <= 1), so no bound is negative.
:attr:`BootstrapResult.corrected` is the bias-corrected estimate
``2 estimate - mean(samples)``, clipped the same way. Coverage of each
interval by true ECE, K and N: docs/statistics.md (``benchmarks/stats_sim.py``).

How resamples are computed (all exact; chosen from the metric's name)
----------------------------------------------------------------------
``"row-mean"`` (accuracy, brier_score, log_loss)
    The metric is a mean of per-row values; a resample is the mean of the
    drawn rows' values.
``"sorted-counts"`` (confidence/binary ECE and MCE, adaptive_ece,
debiased_ece, for one score column)
    Rows are sorted by score once. A block of resamples becomes a matrix of
    per-row copy counts (one ``np.bincount``); cumulative sums of counts,
    counts x scores and counts x targets give every bin's count and sums by
    differences at the bin bounds. Equal-width bounds are fixed; for
    equal-frequency bins the edges are the order statistics of *each
    resample* (found by a search in the cumulative counts), exactly as the
    metric computes them on the resampled rows.
``"sparse-counts"`` (classwise ECE/MCE with equal-width bins)
    Per-(class, bin) counts and sums are linear in the copy counts: one
    sparse-matrix product with an (N x 3KM) indicator matrix per block.
``"sparse-counts-fixed-edges"`` (classwise ECE/MCE with equal-frequency bins)
    The same, with each class's equal-frequency edges computed once on the
    original rows and kept for every resample (a fixed-edge bootstrap: the
    resampled bins hold about, not exactly, N/M rows). Re-binning every
    class of every resample would cost a full classwise ECE per resample;
    pass the metric as a function, e.g.
    ``lambda p, y: classwise_ece(p, y, scheme="frequency")``, to get that
    exact (slow) loop.
``"loop"`` (callables and everything else)
    A Python loop over resamples, calling the metric on the drawn rows.

Blocks of about a million (resample, row) pairs keep memory bounded. The
same seed gives the same samples; different methods use different draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from . import metrics
from .binning import (
    Binning,
    check_binning_args,
    ece_from_sums,
    mce_from_sums,
    width_thresholds,
)
from .errors import CalibrationInputError
from .measures import ece_variants
from .notions import notion_scores
from .predictions import Predictions, measure_inputs
from .validation import check_level, check_seed, check_whole_number

#: String names accepted as ``metric``.
METRICS: dict[str, Callable] = {
    name: getattr(module, name)
    for module, names in (
        (metrics, ("accuracy", "brier_score", "log_loss", "confidence_ece", "confidence_mce")),
        (metrics, ("binary_ece", "binary_mce", "classwise_ece", "classwise_mce")),
        (ece_variants, ("adaptive_ece", "adaptive_classwise_ece", "debiased_ece")),
        (ece_variants, ("plugin_calibration_error",)),
    )
    for name in names
}
BLOCK_ELEMENTS = 1 << 20
#: Interval kinds of :func:`bootstrap_ci` (module docstring); the first is the default.
INTERVALS = ("hybrid", "basic", "percentile")
DEFAULT_INTERVAL = INTERVALS[0]
#: Interval of the one-column MCE metrics by default (module docstring): per-bin Wilson bounds.
MAX_GAP_INTERVAL = "max-of-bins"
#: Metrics whose default interval is :data:`MAX_GAP_INTERVAL`.
MAX_GAP_METRICS = frozenset({"binary_mce", "confidence_mce"})
#: Range of every named metric, for clipping the bounds (all are >= 0).
METRIC_RANGE = {name: (0.0, 1.0 if name == "accuracy" else np.inf) for name in METRICS}


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Outcome of :func:`bootstrap_ci`.

    Attributes
    ----------
    metric : str
        The metric's name (a callable's ``__name__``).
    estimate : float
        The metric on the original rows.
    lower, upper : float
        Interval at ``level`` (see ``interval``), clipped to the metric's range.
    samples : numpy.ndarray, shape (n_resamples,)
        The metric on every resample (for a histogram).
    level : float
    n_resamples : int
    seed : int or None
    method : str
        How resamples were computed: "row-mean", "sorted-counts",
        "sparse-counts", "sparse-counts-fixed-edges" or "loop" (module docstring).
    interval : str
        "hybrid", "basic" or "percentile" (module docstring).
    corrected : float or None
        Bias-corrected estimate ``2 estimate - mean(samples)``, clipped to the
        metric's range.
    """

    metric: str
    estimate: float
    lower: float
    upper: float
    samples: np.ndarray
    level: float
    n_resamples: int
    seed: int | None
    method: str
    interval: str = DEFAULT_INTERVAL
    corrected: float | None = None


def _blocks(rng, n_resamples, n):
    size = max(1, min(n_resamples, BLOCK_ELEMENTS // max(n, 1)))
    for start in range(0, n_resamples, size):
        yield rng.integers(0, n, size=(min(size, n_resamples - start), n))


def _copy_counts(idx: np.ndarray) -> np.ndarray:
    r, n = idx.shape
    flat = idx + (np.arange(r, dtype=np.intp) * n)[:, None]
    return np.bincount(flat.ravel(), minlength=r * n).reshape(r, n)


def _resampled_means(values: np.ndarray, blocks) -> np.ndarray:
    """(R,) means of 1-D ``values``, or (R, C) of the columns of 2-D ones (same draws)."""
    if values.ndim == 1:
        return np.concatenate([values[idx].mean(axis=1) for idx in blocks])
    columns = np.ascontiguousarray(values.T)
    return np.concatenate(
        [np.stack([col[idx].mean(axis=1) for col in columns], axis=1) for idx in blocks]
    )


def resampled_means(values, n_resamples: int = 1000, seed=0) -> np.ndarray:
    """The mean of per-row values on each of R resamples of the rows (with replacement).

    The draws are those of :func:`bootstrap_ci` for the same seed and number
    of rows. Given per-row *differences* of two scores of the same rows, this
    is the paired bootstrap of the mean difference; given C columns of them,
    every column is resampled with the same rows (one draw for all).

    Parameters
    ----------
    values : array-like, shape (N,) or (N, C)
    n_resamples : int
        R.
    seed : None, int or numpy.random.Generator

    Returns
    -------
    numpy.ndarray, shape (R,) or (R, C)
        Column ``c`` is what ``resampled_means(values[:, c], R, seed)`` returns.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise CalibrationInputError(
            "resampled_means needs a non-empty array of per-row values, shape (N,) or (N, C), "
            f"got shape {arr.shape}."
        )
    r = check_whole_number(n_resamples, "n_resamples")
    return _resampled_means(arr, _blocks(check_seed(seed), r, arr.shape[0]))


# ------------------------------------------------------------ fast paths
def _row_values(name, p, y, kwargs) -> np.ndarray:
    true_p = p[np.arange(p.shape[0]), y]
    if name == "accuracy":
        return (p.argmax(axis=1) == y).astype(np.float64)
    if name == "brier_score":
        return np.einsum("ij,ij->i", p, p) - 2.0 * true_p + 1.0
    return metrics.log_loss_per_row(p, y, eps=kwargs.get("eps", metrics.LOG_LOSS_EPS))


def _binned_value(kind, count, sum_score, sum_target) -> np.ndarray:
    """ECE / MCE / debiased L2 of per-bin sums of shape (R, ..., M) -> (R,)."""
    if kind == "ece":
        value = ece_from_sums(count, sum_score, sum_target)
    elif kind == "mce":
        value = mce_from_sums(count, sum_score, sum_target)
    else:
        squared = ece_variants.squared_error_terms(count, sum_score, sum_target, debias=True)
        value = np.maximum(squared, 0.0)
    if value.ndim == 1:
        return np.sqrt(value) if kind == "debiased" else value
    if kind == "mce":
        return value.max(axis=1)
    value = value.mean(axis=1)
    return np.sqrt(value) if kind == "debiased" else value


def _sorted_counts(blocks, scores, targets, binning, kind) -> np.ndarray:
    order = np.argsort(scores, kind="stable")
    s, t = scores[order], targets[order].astype(np.int64)
    n, m = s.shape[0], binning.n_bins
    rank = np.empty(n, dtype=np.intp)
    rank[order] = np.arange(n)  # sorted position of each original row
    if binning.scheme == "width":
        fixed = np.concatenate(([0], np.searchsorted(s, width_thresholds(m), side="left"), [n]))
    positions = (np.arange(1, m, dtype=np.int64) * n) // m
    out = []
    for idx in blocks:
        r = idx.shape[0]
        w = _copy_counts(rank[idx])  # copies of each row, in sorted order
        # Cumulative sums with a leading 0 column, written in place (integers where exact).
        cw = np.zeros((r, n + 1), dtype=np.int64)
        cwt = np.zeros((r, n + 1), dtype=np.int64)
        cws = np.zeros((r, n + 1))
        np.cumsum(w, axis=1, out=cw[:, 1:])
        np.cumsum(w * t, axis=1, out=cwt[:, 1:])
        np.cumsum(np.multiply(w, s), axis=1, out=cws[:, 1:])
        if binning.scheme == "width":
            bounds = np.broadcast_to(fixed, (r, m + 1))
        else:
            # Order statistic at position q of resample r: the row j with cw[j] <= q < cw[j+1].
            offsets = (np.arange(r) * (n + 1))[:, None]
            flat = np.searchsorted((cw + offsets).ravel(), (positions + offsets).ravel(), "right")
            rows = flat.reshape(r, m - 1) - offsets - 1
            interior = np.searchsorted(s, s[rows], side="left")  # ties go to the upper bin
            bounds = np.concatenate((np.zeros((r, 1), int), interior, np.full((r, 1), n)), axis=1)

        def per_bin(cum, bounds=bounds):
            return np.diff(np.take_along_axis(cum, bounds, axis=1), axis=1)

        count, sum_target = per_bin(cw), per_bin(cwt).astype(np.float64)
        out.append(_binned_value(kind, count, per_bin(cws), sum_target))
    return np.concatenate(out)


def _sparse_counts(blocks, p, y, binning, kind) -> np.ndarray:
    n, k = p.shape
    m = binning.n_bins
    if binning.scheme == "width":
        bins = binning.assign(p.ravel()).reshape(n, k)
    else:  # edges of the original rows, kept fixed (module docstring)
        bins = np.column_stack([binning.assign(np.ascontiguousarray(p[:, j])) for j in range(k)])
    cells = (bins + np.arange(k) * m).ravel()
    rows = np.repeat(np.arange(n), k)
    true_cells = cells.reshape(n, k)[np.arange(n), y]
    km = k * m
    from scipy import sparse  # imported here: slow to import, and rarely needed

    indicator = sparse.csr_matrix(
        (
            np.concatenate((np.ones(n * k), p.ravel(), np.ones(n))),
            (
                np.concatenate((cells, km + cells, 2 * km + true_cells)),
                np.concatenate((rows, rows, np.arange(n))),
            ),
        ),
        shape=(3 * km, n),
    )
    out = []
    for idx in blocks:
        w = _copy_counts(idx).astype(np.float64)
        sums = (indicator @ w.T).T.reshape(-1, 3, k, m)
        out.append(_binned_value(kind, sums[:, 0], sums[:, 1], sums[:, 2]))
    return np.concatenate(out)


#: Named metrics that take ``notion=`` (the others have their notion in their name).
_NOTION_METRICS = frozenset({"adaptive_ece", "debiased_ece", "plugin_calibration_error"})
_CLASSWISE_METRICS = frozenset({"classwise_ece", "classwise_mce", "adaptive_classwise_ece"})


def _metric_notion(name: str, kwargs) -> str | None:
    """The notion a named metric uses (None: the default of its input)."""
    if name in _CLASSWISE_METRICS:
        return "classwise"
    if name in _ONE_COLUMN and _ONE_COLUMN[name][0] is not None:
        return _ONE_COLUMN[name][0]
    return kwargs.get("notion")


_ONE_COLUMN = {
    "confidence_ece": ("confidence", "ece", "width"),
    "confidence_mce": ("confidence", "mce", "width"),
    "binary_ece": ("binary", "ece", "width"),
    "binary_mce": ("binary", "mce", "width"),
    "adaptive_ece": (None, "ece", "frequency"),
    "debiased_ece": (None, "debiased", "frequency"),
}


def _fast_samples(name, p, y, kwargs, blocks):
    """(samples, method) of a fast path, or None when the metric has none."""
    if name in ("accuracy", "brier_score", "log_loss"):
        return _resampled_means(_row_values(name, p, y, kwargs), blocks), "row-mean"
    if name in ("classwise_ece", "classwise_mce"):
        n_bins, scheme = check_binning_args(kwargs.get("n_bins", 15), kwargs.get("scheme", "width"))
        method = "sparse-counts" if scheme == "width" else "sparse-counts-fixed-edges"
        return _sparse_counts(blocks, p, y, Binning(scheme, n_bins), name[-3:]), method
    if name in _ONE_COLUMN:
        notion, kind, default_scheme = _ONE_COLUMN[name]
        notion = notion or kwargs["notion"]  # bootstrap_ci resolved it
        if notion == "classwise":
            return None
        scheme = "frequency" if name == "adaptive_ece" else kwargs.get("scheme", default_scheme)
        n_bins, scheme = check_binning_args(kwargs.get("n_bins", 15), scheme)
        scores, targets = notion_scores(p, y, notion, kwargs.get("class_index"))
        samples = _sorted_counts(blocks, scores, targets, Binning(scheme, n_bins), kind)
        return samples, "sorted-counts"
    return None


# ------------------------------------------------------- max of bins (MCE)
def wilson_bounds(successes, count, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of binomial proportions ``successes / count`` at normal quantile z.

    Unlike the Wald interval it keeps its coverage in small bins and near 0 or 1
    (a bin of 3 rows, all hits, still gets a wide interval).

    Parameters
    ----------
    successes, count : numpy.ndarray
        Per-bin numbers of hits and of rows (count > 0).
    z : float

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Lower and upper bounds, in [0, 1].
    """
    rate = successes / count
    z2n = z * z / count
    centre = (rate + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * np.sqrt(rate * (1 - rate) / count + z2n / (4 * count))
    return centre - half, centre + half


def max_gap_bounds(scores, targets, binning: Binning, level: float) -> tuple[float, float]:
    """Interval for the population MCE from per-bin intervals (unclipped; module docstring).

    The MCE is ``max_m |g_m|`` with ``g_m`` the gap of bin m. Each non-empty bin
    gets a Wilson interval ``[a_m, b_m]`` for its mean target, minus its mean
    score. The upper bound is ``max_m max(b_m, -a_m)`` at the one-sided level
    ``(1 + level) / 2``: the bin holding the true maximum alone must be covered,
    so no multiplicity adjustment. The lower bound is ``max_m max(a_m, -b_m, 0)``
    at the Bonferroni level ``1 - (1 - level) / (2 B)`` over the B non-empty
    bins: every bin's lower bound must hold at once.

    Parameters
    ----------
    scores : numpy.ndarray, shape (N,)
    targets : numpy.ndarray, shape (N,)
        0/1 targets of the scores (one calibration notion).
    binning : Binning
    level : float

    Returns
    -------
    (float, float)
    """
    bins = binning.assign(scores)
    count = np.bincount(bins, minlength=binning.n_bins)
    filled = count > 0
    rows = count[filled]
    hits = np.bincount(bins, weights=targets, minlength=binning.n_bins)[filled]
    mean_score = np.bincount(bins, weights=scores, minlength=binning.n_bins)[filled] / rows
    alpha = 1.0 - level
    low_a, low_b = wilson_bounds(hits, rows, NormalDist().inv_cdf(1 - alpha / (2 * rows.size)))
    high_a, high_b = wilson_bounds(hits, rows, NormalDist().inv_cdf(1 - alpha / 2))
    lower = np.maximum(np.maximum(low_a - mean_score, mean_score - low_b), 0.0).max()
    upper = np.maximum(high_b - mean_score, mean_score - high_a).max()
    return float(lower), float(upper)


def default_interval(metric: str | Callable) -> str:
    """The interval :func:`bootstrap_ci` computes for ``metric`` unless told otherwise.

    :data:`MAX_GAP_INTERVAL` for the one-column MCE metrics (the bootstrap of a
    maximum of nearly tied gaps misses its coverage, docs/statistics.md),
    :data:`DEFAULT_INTERVAL` for every other metric.
    """
    return MAX_GAP_INTERVAL if metric in MAX_GAP_METRICS else DEFAULT_INTERVAL


def _check_interval(metric, interval: str | None) -> str:
    """The interval to compute: ``interval``, or the metric's default; checked."""
    interval = default_interval(metric) if interval is None else interval
    allowed = INTERVALS + ((MAX_GAP_INTERVAL,) if metric in MAX_GAP_METRICS else ())
    if interval not in allowed:
        raise CalibrationInputError(
            f"interval must be one of {', '.join(map(repr, allowed))} for this metric, "
            f"got {interval!r}."
        )
    return interval


def _bounds(name, p, y, estimate, samples, level, interval, kwargs) -> tuple[float, float]:
    """Unclipped bounds of ``interval``: from the resamples, or per bin for the MCE."""
    if interval != MAX_GAP_INTERVAL:
        return interval_bounds(estimate, samples, level, interval)
    notion = _ONE_COLUMN[name][0]
    if notion is None:  # the metrics of MAX_GAP_METRICS have a notion of their own
        raise ValueError(f"{name} has no {MAX_GAP_INTERVAL} interval")
    n_bins, scheme = check_binning_args(kwargs.get("n_bins", 15), kwargs.get("scheme", "width"))
    scores, targets = notion_scores(p, y, notion)
    return max_gap_bounds(scores, targets, Binning(scheme, n_bins), level)


# ------------------------------------------------------------------- API
def bootstrap_ci(
    metric: str | Callable,
    probs,
    labels=None,
    *,
    level: float = 0.95,
    n_resamples: int = 1000,
    seed: int | None = 0,
    interval: str | None = None,
    **metric_kwargs,
) -> BootstrapResult:
    """Bootstrap interval of a metric, resampling rows with replacement.

    Parameters
    ----------
    metric : str or callable
        A name of :data:`METRICS` (the core metric of that name) or any
        ``f(probs (N, K), labels (N,), **metric_kwargs) -> float``.
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
        Taken from ``probs`` when it is a Predictions.
    level : float
        Coverage of the interval, in (0, 1).
    n_resamples : int
        R.
    seed : None, int or numpy.random.Generator
        Source of randomness (:func:`~calibration_core.validation.check_seed`);
        the same int gives the same samples (0 by default, as every seeded
        function of the core; None draws fresh entropy).
    interval : {"hybrid", "basic", "percentile", "max-of-bins"}, optional
        ``[2 estimate - q_hi, q_hi]``, ``[2 estimate - q_hi, 2 estimate -
        q_lo]``, ``[q_lo, q_hi]``, or (binary and confidence MCE only) the
        per-bin interval of :func:`max_gap_bounds`. By default
        :func:`default_interval`: "max-of-bins" for those MCE metrics, "hybrid"
        otherwise. What each covers is in the module docstring and
        docs/statistics.md.
    **metric_kwargs
        Passed to the metric (e.g. ``n_bins``, ``scheme``, ``notion``).

    Returns
    -------
    BootstrapResult
        ``.estimate``, ``.lower``, ``.upper``, ``.corrected``, ``.samples`` (R,),
        ``.method``.
    """
    if isinstance(metric, str):
        if metric not in METRICS:
            raise CalibrationInputError(
                f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}, or pass a "
                "function f(probs, labels) -> float."
            )
        name, function = metric, METRICS[metric]
    elif callable(metric):
        name, function = getattr(metric, "__name__", "metric"), metric
    else:
        raise CalibrationInputError(f"metric must be a name or a function, got {metric!r}.")
    level = check_level(level)
    interval = _check_interval(name if isinstance(metric, str) else metric, interval)
    r = check_whole_number(n_resamples, "n_resamples")
    named = isinstance(metric, str)
    p, y, notion = measure_inputs(
        probs,
        labels,
        notion=_metric_notion(name, metric_kwargs) if named else None,
        measure=f"bootstrap_ci of {name}",
    )
    if named and name in _NOTION_METRICS:
        metric_kwargs = {**metric_kwargs, "notion": notion}
    # A function of the user's gets an (N,) score as it was given, to apply its own rule.
    one_column = not named and not isinstance(probs, Predictions) and np.ndim(probs) == 1
    data = np.ascontiguousarray(p[:, 1]) if one_column else p
    estimate = float(function(data, y, **metric_kwargs))
    rng = check_seed(seed)
    fast = None
    if named:
        fast = _fast_samples(name, p, y, metric_kwargs, _blocks(rng, r, p.shape[0]))
    if fast is None:
        samples = np.empty(r)
        for i in range(r):
            idx = rng.integers(0, p.shape[0], p.shape[0])
            samples[i] = function(data[idx], y[idx], **metric_kwargs)
        method = "loop"
    else:
        samples, method = fast
    bounds = _bounds(name, p, y, estimate, samples, level, interval, metric_kwargs)
    low, high = (
        METRIC_RANGE.get(name, (-np.inf, np.inf)) if isinstance(metric, str) else (-np.inf, np.inf)
    )
    lower, upper, corrected = np.clip([*bounds, 2 * estimate - samples.mean()], low, high)
    return BootstrapResult(
        metric=name,
        estimate=estimate,
        lower=float(lower),
        upper=float(upper),
        samples=samples,
        level=float(level),
        n_resamples=r,
        seed=seed,
        method=method,
        interval=interval,
        corrected=float(corrected),
    )


def interval_bounds(
    estimate: float, samples: np.ndarray, level: float, interval: str = DEFAULT_INTERVAL
) -> tuple[float, float]:
    """Bounds of one of :data:`INTERVALS` from an estimate and its bootstrap values (unclipped).

    Parameters
    ----------
    estimate : float
        The metric on the original rows.
    samples : numpy.ndarray, shape (R,)
        The metric on each resample.
    level : float
    interval : {"hybrid", "basic", "percentile"}

    Returns
    -------
    (float, float)
    """
    q_lo, q_hi = np.quantile(samples, [(1 - level) / 2, (1 + level) / 2])
    if interval == "percentile":
        return float(q_lo), float(q_hi)
    if interval == "basic":
        return float(2 * estimate - q_hi), float(2 * estimate - q_lo)
    return float(2 * estimate - q_hi), float(q_hi)
