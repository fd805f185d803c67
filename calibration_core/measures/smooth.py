"""Smooth ECE and the smoothed reliability diagram (Błasiok & Nakkiran 2023).

Błasiok & Nakkiran ("Smooth ECE: principled reliability diagrams via kernel
smoothing", 2023) replace bins by a Gaussian kernel of bandwidth ``sigma``,
reflected at 0 and 1 so that no mass leaks out of [0, 1]:

* the smoothed residual ``r(t) = sum_i K(t, s_i)(s_i - y_i) / sum_i K(t, s_i)``
  and the smoothed density ``delta(t) = sum_i K(t, s_i)``;
* ``smECE_sigma = integral |r(t)| delta(t) dt / integral delta(t) dt``;
* the bandwidth is the fixed point ``sigma* = smECE_sigma*`` (it exists and is
  unique since smECE decreases in sigma), and smECE is ``smECE_sigma*``. It is
  a consistent calibration measure: within constant factors of the distance
  to the nearest calibrated predictor, with no bin count to choose.

The computation follows their reference implementation, ``relplot`` (Apple,
``relplot.metrics.smECE`` / ``smECE_sigma``), step by step, so the values agree
to rounding (the tests check 1e-6 against relplot itself):

1. the rows are spread linearly onto a grid of ``G = max(2000, round(20 /
   sigma)) // 2 + 1`` points of [0, 1] (each row's weight split between its two
   grid neighbours);
2. the grid is convolved with the Gaussian sampled on the grid, after
   mirroring it at both ends (the reflection);
3. the result is interpolated linearly to a mesh of ``max(round(10 / sigma),
   200)`` points, where the residual is ``num / (den + 1e-4)`` (the 1e-4 keeps
   empty stretches at 0), and the integrals are mesh sums;
4. the fixed point is found by bisection on [0, 1], 10 halvings (a
   resolution of 1/1024), returning the upper end, with bandwidths below 1e-3
   treated as "smECE is larger".

The convolution is done by FFT (relplot's ``numpy.convolve`` is quadratic in
G); the grid makes the cost O(N + G log G) per bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..notions import notion_columns
from ..predictions import measure_inputs
from ..validation import check_level, check_seed, check_whole_number

#: Bisection steps of the bandwidth (resolution 2**-10), as relplot.
BANDWIDTH_STEPS = 10
#: Bandwidths below this count as "smECE is larger" in the bisection (relplot's eps).
MIN_BANDWIDTH = 1e-3
#: Added to the smoothed density before dividing (relplot's ``smooth(eps=0.0001)``).
DENSITY_FLOOR = 1e-4
#: Points of the mesh of a smoothed reliability curve (relplot's plot mesh).
CURVE_MESH_POINTS = 200


def grid_points(sigma: float) -> int:
    """Points of the grid the rows are spread onto, for a bandwidth ``sigma``."""
    return max(2000, round(20 / sigma)) // 2 + 1


def mesh_points(sigma: float) -> int:
    """Points of the mesh the smooth ECE integrals are summed on."""
    return max(round(10 / sigma), 200)


def spread_to_grid(scores: np.ndarray, weights: np.ndarray, g: int) -> np.ndarray:
    """Linear binning: each row's weight split between its two neighbours on a grid.

    Parameters
    ----------
    scores : numpy.ndarray, shape (N,)
        In [0, 1].
    weights : numpy.ndarray, shape (N,)
    g : int
        Grid points ``0, 1/(g-1), ..., 1``.

    Returns
    -------
    numpy.ndarray, shape (g,)
    """
    pos = scores * (g - 1)
    left = pos.astype(np.intp).clip(0, g - 2)
    frac = pos - left
    upper = frac * weights
    return np.bincount(left, weights - upper, minlength=g) + np.bincount(
        left + 1, upper, minlength=g
    )


def reflected_smooth(grid_values: np.ndarray, sigma: float) -> np.ndarray:
    """Convolve grid values with a Gaussian mirrored at 0 and 1.

    Parameters
    ----------
    grid_values : numpy.ndarray, shape (..., g)
    sigma : float

    Returns
    -------
    numpy.ndarray, shape (..., g)
        The Gaussian is sampled on the grid and not normalised (relplot's
        ``ReflectedGaussianKernel``); only ratios and weighted means of the
        result are used.
    """
    g = grid_values.shape[-1]
    t = np.linspace(0, 1, g)
    kernel = np.exp(-((t - 0.5) ** 2) / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)
    flipped = grid_values[..., ::-1]
    extended = np.concatenate([flipped[..., :-1], grid_values, flipped[..., 1:]], axis=-1)
    size = extended.shape[-1] + g - 1
    full = np.fft.irfft(np.fft.rfft(extended, size) * np.fft.rfft(kernel, size), size)
    start = (g - 1) + g // 2  # "valid" part starts at g - 1; relplot keeps [g//2, g//2 + g)
    return full[..., start : start + g]


def interpolate_grid(values: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Linear interpolation of grid values (shape (..., g)) at points ``t`` in [0, 1]."""
    g = values.shape[-1]
    pos = t * (g - 1)
    left = pos.astype(np.intp).clip(0, g - 2)
    frac = (t - left / (g - 1)) * (g - 1)
    return values[..., left] * (1 - frac) + values[..., left + 1] * frac


@dataclass
class _Grids:
    """Rows spread to grids, cached per grid size (the bisection reuses them)."""

    scores: np.ndarray
    residuals: np.ndarray
    cache: dict

    def spread(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        if g not in self.cache:
            self.cache[g] = (
                spread_to_grid(self.scores, self.residuals, g),
                spread_to_grid(self.scores, np.ones_like(self.scores), g),
            )
        return self.cache[g]


def _smooth_ece_at(grids: _Grids, sigma: float) -> float:
    g = grid_points(sigma)
    residual_grid, mass_grid = grids.spread(g)
    smoothed = reflected_smooth(np.stack([residual_grid, mass_grid]), sigma)
    t = np.linspace(0, 1, mesh_points(sigma))
    num, den = interpolate_grid(smoothed, t)
    den = den + DENSITY_FLOOR
    return float(np.sum(np.abs(num / den) * den) / np.sum(den))


def _grids(scores: np.ndarray, targets: np.ndarray) -> _Grids:
    return _Grids(scores, scores - targets, {})


def _fixed_point(grids: _Grids) -> float:
    """relplot's bisection for ``sigma = smECE_sigma`` on [0, 1] (upper end returned)."""

    def smaller_than_its_ece(sigma: float) -> bool:
        return sigma < MIN_BANDWIDTH or sigma < _smooth_ece_at(grids, sigma)

    if smaller_than_its_ece(1.0):
        return 1.0
    upper, lower = 1.0, 0.0
    for _ in range(BANDWIDTH_STEPS):
        middle = (upper + lower) / 2
        if smaller_than_its_ece(middle):
            lower = middle
        else:
            upper = middle
    return upper


@dataclass(frozen=True)
class SmoothEce:
    """Smooth ECE of one score column and the bandwidth it was computed at.

    Attributes
    ----------
    value : float
        ``smECE_sigma``.
    bandwidth : float
        ``sigma``: the fixed point (automatic) or the one given.
    automatic : bool
        Whether the bandwidth was chosen as the fixed point.
    n_samples : int
    """

    value: float
    bandwidth: float
    automatic: bool
    n_samples: int

    def to_dict(self) -> dict:
        """Plain floats, ints and bools, for JSON."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _check_bandwidth(bandwidth) -> float | None:
    from ..errors import CalibrationInputError

    if bandwidth is None:
        return None
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float, np.number)):
        raise CalibrationInputError(
            f"bandwidth must be a number in (0, 1] or None, got {bandwidth!r}."
        )
    if not 0 < bandwidth <= 1:
        raise CalibrationInputError(
            f"bandwidth must lie in (0, 1] (a kernel width in probability units, e.g. 0.05), "
            f"got {bandwidth!r}; leave it None for the automatic choice."
        )
    return float(bandwidth)


def smooth_ece_from_scores(scores: np.ndarray, targets: np.ndarray, bandwidth=None) -> SmoothEce:
    """Smooth ECE of validated scores (N,) and 0/1 targets (N,).

    ``bandwidth=None`` chooses it as the fixed point (module docstring).
    """
    sigma = _check_bandwidth(bandwidth)
    grids = _grids(np.asarray(scores, dtype=np.float64), np.asarray(targets, dtype=np.float64))
    automatic = sigma is None
    if sigma is None:
        sigma = _fixed_point(grids)
    return SmoothEce(_smooth_ece_at(grids, sigma), sigma, automatic, int(scores.shape[0]))


def smooth_ece(
    probs,
    labels=None,
    *,
    notion: str | None = None,
    class_index: int | None = None,
    bandwidth: float | None = None,
) -> SmoothEce:
    """Smooth ECE (Błasiok & Nakkiran 2023) with the automatic or a fixed bandwidth.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    notion : {"confidence", "binary", "class", "classwise"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
        ``"classwise"``: the mean over classes of each class's smooth ECE
        (each at its own bandwidth; the reported bandwidth is their mean).
    class_index : int, optional
    bandwidth : float in (0, 1], optional
        The kernel's standard deviation; None picks the fixed point
        ``sigma = smECE_sigma`` (to 1/1024, as relplot).

    Returns
    -------
    SmoothEce
    """
    p, y, notion = measure_inputs(probs, labels, notion=notion, measure="smooth_ece")
    results = [
        smooth_ece_from_scores(s, t, bandwidth)
        for s, t in notion_columns(p, y, notion, class_index)
    ]
    if len(results) == 1:
        return results[0]
    return SmoothEce(
        float(np.mean([r.value for r in results])),
        float(np.mean([r.bandwidth for r in results])),
        bandwidth is None,
        results[0].n_samples,
    )


# ------------------------------------------------------------ the diagram
@dataclass(frozen=True, eq=False)
class SmoothReliabilityCurve:
    """The kernel-smoothed reliability diagram of one score column, with a bootstrap band.

    Attributes
    ----------
    mesh : numpy.ndarray, shape (M,)
        Scores in [0, 1] where the curve is evaluated.
    observed : numpy.ndarray, shape (M,)
        Smoothed observed frequency ``E[y | s = mesh]`` (Nadaraya-Watson with
        the reflected kernel, as relplot's ``KernelSmoother``).
    lower, upper : numpy.ndarray, shape (M,)
        Pointwise percentile band of ``observed`` over bootstrap resamples of
        the rows (same bandwidth); NaN when ``n_resamples`` is 0.
    density : numpy.ndarray, shape (M,)
        Smoothed density of the scores, corrected at the boundary (divided by
        the smoothed density of a uniform sample), integrating to about 1.
    smooth_ece : SmoothEce
        The smooth ECE; its bandwidth is the curve's.
    level : float
    n_resamples : int
    """

    mesh: np.ndarray
    observed: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    density: np.ndarray
    smooth_ece: SmoothEce
    level: float
    n_resamples: int


def _observed_on_mesh(scores, targets, sigma, mesh) -> np.ndarray:
    g = grid_points(sigma)
    grids = np.stack(
        [spread_to_grid(scores, targets, g), spread_to_grid(scores, np.ones_like(scores), g)]
    )
    num, den = interpolate_grid(reflected_smooth(grids, sigma), mesh)
    return num / (den + DENSITY_FLOOR)


def _density_on_mesh(scores, sigma, mesh) -> np.ndarray:
    g = grid_points(sigma)
    uniform = np.linspace(0, 1, 1000)
    grids = np.stack(
        [
            spread_to_grid(scores, np.full(scores.shape, 1.0 / scores.shape[0]), g),
            spread_to_grid(uniform, np.full(uniform.shape, 1.0 / uniform.shape[0]), g),
        ]
    )
    dens, bias = interpolate_grid(reflected_smooth(grids, sigma), mesh)
    corrected = dens / bias
    return corrected / (corrected.mean())


def smooth_reliability_curve(
    probs,
    labels=None,
    *,
    notion: str | None = None,
    class_index: int | None = None,
    bandwidth: float | None = None,
    n_resamples: int = 100,
    level: float = 0.95,
    seed=0,
    mesh_size: int = CURVE_MESH_POINTS,
) -> SmoothReliabilityCurve:
    """The smoothed reliability curve with a pointwise bootstrap band.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), optional
    notion : {"confidence", "binary", "class"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
    class_index : int, optional
    bandwidth : float in (0, 1], optional
        None: the smooth ECE's fixed point.
    n_resamples : int
        Bootstrap resamples of the rows for the band (0: no band). Each costs
        O(N), about 25 ms per million rows.
    level : float
        Coverage of the pointwise percentile band.
    seed : int, Generator or None
    mesh_size : int
        Points of the mesh (200, as relplot's plots).

    Returns
    -------
    SmoothReliabilityCurve
    """
    from ..errors import CalibrationInputError

    if notion == "classwise":
        raise CalibrationInputError(
            "a reliability curve is drawn for one score column; choose 'confidence', "
            "'binary' or 'class' with a class_index."
        )
    level = check_level(level)
    n_resamples = check_whole_number(n_resamples, "n_resamples", minimum=0)
    mesh_size = check_whole_number(mesh_size, "mesh_size", minimum=2)
    rng = check_seed(seed)
    p, y, notion = measure_inputs(probs, labels, notion=notion, measure="smooth_reliability_curve")
    ((scores, targets),) = notion_columns(p, y, notion, class_index)
    targets = targets.astype(np.float64)
    sece = smooth_ece_from_scores(scores, targets, bandwidth)
    mesh = np.linspace(0, 1, mesh_size)
    observed = _observed_on_mesh(scores, targets, sece.bandwidth, mesh)
    lower = upper = np.full(mesh_size, np.nan)
    if n_resamples:
        n = scores.shape[0]
        curves = np.empty((n_resamples, mesh_size))
        for b in range(n_resamples):
            rows = rng.integers(0, n, n)
            curves[b] = _observed_on_mesh(scores[rows], targets[rows], sece.bandwidth, mesh)
        tail = (1 - level) / 2 * 100
        lower, upper = np.percentile(curves, [tail, 100 - tail], axis=0)
    density = _density_on_mesh(scores, sece.bandwidth, mesh)
    return SmoothReliabilityCurve(mesh, observed, lower, upper, density, sece, level, n_resamples)
