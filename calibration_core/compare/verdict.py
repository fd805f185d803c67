"""Which calibration map to trust: :func:`choose_map` and :class:`Verdict`.

The candidates are the held-out (out-of-fold, or test-row) calibrated
versions of the same rows, **including the uncalibrated predictions**: a map
has to beat doing nothing, so "uncalibrated" competes like any map (with 0
parameters) and can win. They are ranked by held-out log-loss, a proper
scoring rule (a binned ECE is not one: a map can lower it while losing
information, survey arXiv 2112.10327 §3-§4); the confidence ECE is reported
alongside.

Contenders are distinct
    Candidates whose held-out predictions agree to within
    :data:`SAME_PREDICTIONS_TOLERANCE` (largest absolute difference) are one
    **contender**, shown as ``"matrix = dirichlet"`` under the name of the
    first given (matrix scaling on probabilities is Dirichlet calibration,
    :func:`calibration_core.maps.same_model_reason`; front ends fit such
    twins once, :func:`calibration_core.maps.same_model_as`). The runner-up
    is the best *different* contender, so no verdict compares a map with
    itself.
Clearly better or worse
    What is compared is the **procedure**: fitting a map on ``n_train`` rows
    and using it on new rows, fitting cost included (a temperature fitted on
    1,600 rows of calibrated predictions is truly a little worse than doing
    nothing). For every contender c, the per-row held-out log-losses minus
    the best's, ``d`` (N rows scored by F fits), give the mean difference
    ``D`` and a normal interval ``D +/- z sqrt(V)`` at ``level``
    (:func:`heldout_intervals`, the one place that makes the interval), with

    ``V = max(V_folds, V_rows) + v(F) (p_c + p_best) / n_train**2``

    * ``V_rows = var(d) / N``: the paired variance of the rows, fits fixed
      (Bayle et al. 2020, a CLT for k-fold cross-validation);
    * ``V_folds = (1/F + n_test/n_train) var(fold means of d)``: the
      corrected resampled variance of Nadeau & Bengio (2003), whose spread
      between folds holds the fitting noise but has only F - 1 degrees of
      freedom (cross-fitting only);
    * ``v(F) p / n_train**2``: the second-order variance of a fitted map's
      held-out loss, from the expansion of an M-estimator with ``p``
      effective parameters (``v(F) = 1/(2F) + F/(2(F-1))`` for F-fold
      cross-fitting, ``1/2 + n_train/n_test`` for one train/test split). It
      keeps the interval honest when the fitted maps happen to land near
      each other and both other terms collapse. ``p`` is the contender's
      **effective number of parameters** (:func:`effective_parameters`):
      ``n_train`` times its optimism, held-out minus in-sample log-loss
      averaged over the folds (Efron 2004; Takeuchi's TIC), 0 for
      "uncalibrated"; its parameter count for a single train/test split
      (one fit gives too noisy an optimism) or when the in-sample losses are
      unknown.

    The rule was chosen by simulation on the shipped path (fit the maps, then
    the verdict; ``benchmarks/stats_sim.py --only verdict``, table in
    docs/statistics.md). It needs no resampling and no refit, so it costs
    far less than the fits. Without a :class:`FitDesign` (predictions from
    elsewhere) only ``V_rows`` is used, the fits taken as fixed, and
    :attr:`Verdict.interval` says so. A contender is **clearly worse** than
    the best when the lower bound of its interval is above 0; the best is a
    clear winner when the runner-up is clearly worse.
The recommendation (parsimony)
    Among the contenders not clearly worse than the best (the best
    included), the one with the **fewest parameters** is recommended
    (:attr:`~calibration_core.maps.CalibrationMap.n_parameters_`, the largest
    over the folds; "uncalibrated" has 0; ties go to the lower log-loss; a
    candidate without a known count is left out of the rule, and the best is
    recommended when no other is eligible).
    This is the one-standard-error rule of Hastie, Tibshirani & Friedman,
    *The Elements of Statistical Learning* (2nd ed., §7.10): choose the
    simplest model whose error is within the noise of the best one's, with
    the paired interval as the measure of noise. When the recommendation is
    "uncalibrated", the deployable map is the identity.

Fitted parameters are put in words for maps with few of them (temperature:
``T``; binary Platt: ``w, b``; binary beta: ``a, b, c``). A comparison keeps
one fitted map per fold, so a parameter is given as its range over the folds
(``"T = 2.08 to 2.15 over 5 folds"``), or as one value when the folds agree
to the digits shown or there is a single fit (train/test).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import norm

from ..binning import Scheme
from ..errors import CalibrationInputError
from ..maps.base import CalibrationMap
from ..maps.registry import same_model_reason
from ..metrics import confidence_ece, log_loss_per_row
from ..predictions import Predictions
from ..validation import check_level

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "FITS_FIXED",
    "SAME_PREDICTIONS_TOLERANCE",
    "UNCALIBRATED",
    "Contender",
    "FitDesign",
    "Verdict",
    "choose_map",
    "effective_parameters",
    "format_difference",
    "heldout_intervals",
    "map_parameters",
    "parameter_count",
    "parameter_words",
]

#: Kept for old callers: the verdict no longer resamples (``n_resamples`` is ignored).
DEFAULT_RESAMPLES = 1000
#: :attr:`Verdict.interval` when no :class:`FitDesign` was given.
FITS_FIXED = "paired rows, fits taken as fixed"
#: Default coverage of the interval of the difference.
DEFAULT_LEVEL = 0.95
#: Candidates whose held-out probabilities differ by at most this are one contender.
SAME_PREDICTIONS_TOLERANCE = 1e-9
#: Name of the uncalibrated predictions among the candidates (0 parameters).
UNCALIBRATED = "uncalibrated"
#: Rows compared at a time when looking for coinciding candidates.
_ROWS_PER_CHECK = 4096


def _compared(
    difference: float | None, lower: float | None, upper: float | None
) -> tuple[float, float, float]:
    """``(difference, lower, upper)`` to the best, of a candidate that is not the best."""
    if difference is None or lower is None or upper is None:
        raise ValueError("only the best candidate has no difference to the best")
    return difference, lower, upper


def format_difference(value: float) -> str:
    """A log-loss difference or interval bound with the digits its sign needs.

    Two significant digits (scientific notation below 1e-4), so a bound that
    is not 0 never prints as 0 and its side of 0 shows: ``0.00033``,
    ``-1.2e-05``, ``0.016``. The CLI and the page both print verdicts with it.

    Parameters
    ----------
    value : float

    Returns
    -------
    str
    """
    return "0" if value == 0 else f"{value:.2g}"


def parameter_words(n_parameters: int | None) -> str:
    """``"1 parameter"``, ``"10,100 parameters"``, or ``"parameters unknown"``."""
    if n_parameters is None:
        return "parameters unknown"
    return f"{n_parameters:,} parameter" + ("" if n_parameters == 1 else "s")


@dataclass(frozen=True)
class FitDesign:
    """How the held-out rows of a comparison were made: the verdict's view of the fits.

    Attributes
    ----------
    fit_of_row : numpy.ndarray of int, shape (N,)
        Which fit (0 .. F-1) scored each held-out row, in the candidates' row
        order: the fold in cross-fitting, 0 for every test row of a
        train/test split.
    n_train : numpy.ndarray of int, shape (F,)
        Training rows of each fit.
    train_log_loss : mapping of str to numpy.ndarray, shape (F,)
        Candidate name to the mean log-loss of each of its fits on that fit's
        own training rows (the in-sample loss; "uncalibrated" has none).
    """

    fit_of_row: np.ndarray
    n_train: np.ndarray
    train_log_loss: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_fits(self) -> int:
        """F, the number of fits (folds, or 1 for a train/test split)."""
        return int(self.n_train.shape[0])

    @property
    def cross_fitted(self) -> bool:
        """Whether the rows come from F >= 2 folds (else one train/test split)."""
        return self.n_fits >= 2

    def describe(self) -> str:
        """E.g. ``"5-fold cross-fitting, each map fitted on 8,000 rows"``."""
        rows = f"{round(float(np.mean(self.n_train))):,} rows"
        if self.cross_fitted:
            return f"{self.n_fits}-fold cross-fitting, each map fitted on {rows}"
        return f"one train/test split, each map fitted on {rows}"


@dataclass(frozen=True)
class Contender:
    """One distinct candidate of a verdict: maps whose held-out predictions coincide.

    Attributes
    ----------
    names : tuple of str
        The coinciding candidates, the representative first.
    log_loss : float
        Held-out log-loss.
    n_parameters : int or None
        Fitted parameters (0 for "uncalibrated"; None when unknown).
    effective_parameters : float or None
        Its effective number of parameters (:func:`effective_parameters`), as
        the interval used it; None without a :class:`FitDesign`.
    difference, lower, upper : float or None
        Mean per-row log-loss of this contender minus the best's, and its
        interval; None for the best.
    reason : str
        Why the names coincide ("" for a single name).
    """

    names: tuple[str, ...]
    log_loss: float
    n_parameters: int | None
    difference: float | None = None
    lower: float | None = None
    upper: float | None = None
    reason: str = ""
    effective_parameters: float | None = None

    @property
    def name(self) -> str:
        """The representative name (the first given)."""
        return self.names[0]

    @property
    def label(self) -> str:
        """The names joined by " = ", e.g. ``"matrix = dirichlet"``."""
        return " = ".join(self.names)

    @property
    def clearly_worse(self) -> bool:
        """Whether the interval of the difference to the best lies above 0."""
        return self.lower is not None and self.lower > 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (see docs/evaluate-json-schema.md)."""
        return {
            "maps": list(self.names),
            "label": self.label,
            "log_loss": self.log_loss,
            "n_parameters": self.n_parameters,
            "effective_parameters": self.effective_parameters,
            "difference": self.difference,
            "lower": self.lower,
            "upper": self.upper,
            "clearly_worse": self.clearly_worse,
            "same_because": self.reason or None,
        }


@dataclass(frozen=True)
class Verdict:
    """The best map of a comparison, whether its advantage is real, and the recommendation.

    Attributes
    ----------
    winner : str
        The contender with the lowest held-out log-loss, by its representative
        name (may be ``"uncalibrated"``).
    runner_up : str or None
        The best *different* contender; None when there was a single one.
    recommended : str
        The contender with the fewest parameters among those not clearly
        worse than the winner (module docstring); may be ``"uncalibrated"``.
    clear : bool
        True when the interval of the runner-up's difference lies above 0.
    difference : float or None
        Mean over the held-out rows of the runner-up's per-row log-loss minus
        the winner's (>= 0); None without a runner-up.
    lower, upper : float or None
        Interval of ``difference`` at ``level`` (:func:`heldout_intervals`).
    level : float
    interval : str
        How the interval was made, in words: the fitting design it includes
        (:meth:`FitDesign.describe`), or :data:`FITS_FIXED`.
    n_rows : int
        Held-out rows the candidates were scored on.
    log_loss : dict of str to float
        Held-out log-loss of every candidate, best first.
    contenders : tuple of Contender
        The distinct contenders, best first.
    confidence_ece : dict of str to float
        Held-out confidence ECE of the winner, the runner-up and the
        recommended contender.
    parameters : dict of str to str
        Fitted parameters in words, for the candidates with few parameters.
    """

    winner: str
    runner_up: str | None
    recommended: str
    clear: bool
    difference: float | None
    lower: float | None
    upper: float | None
    level: float
    interval: str
    n_rows: int
    log_loss: dict[str, float]
    contenders: tuple[Contender, ...] = ()
    confidence_ece: dict[str, float] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)

    def contender(self, name: str) -> Contender | None:
        """The contender holding candidate ``name``, or None."""
        return next((c for c in self.contenders if name in c.names), None)

    def _label(self, name: str) -> str:
        found = self.contender(name)
        return name if found is None else found.label

    @property
    def summary(self) -> str:
        """One sentence: who wins, by how much, and whether the win is real."""
        winner = self._label(self.winner)
        if self.runner_up is None:
            return f"{winner} is the only candidate: nothing to compare it with."
        difference, lower, upper = _compared(self.difference, self.lower, self.upper)
        gap = (
            f"held-out log-loss {self.log_loss[self.winner]:.4f} vs "
            f"{self.log_loss[self.runner_up]:.4f}, difference "
            f"{format_difference(difference)} "
            f"({self.level:.0%} interval {format_difference(lower)} to "
            f"{format_difference(upper)} on {self.n_rows:,} held-out rows, "
            f"{self._noise_words})"
        )
        runner_up = self._label(self.runner_up)
        if not self.clear:
            return f"no clear winner: {winner} vs {runner_up}, {gap}."
        return f"{winner} beats {runner_up}: {gap}."

    @property
    def _noise_words(self) -> str:
        if self.interval == FITS_FIXED:
            return "the noise of fitting the maps not included"
        return f"fitting noise included: {self.interval}"

    @property
    def recommendation(self) -> str:
        """The recommended map and the rule that chose it, in a sentence or two."""
        chosen = self.contender(self.recommended)
        if chosen is None:
            return f"Recommended: {self.recommended}."
        head = f"Recommended: {chosen.label} ({parameter_words(chosen.n_parameters)})"
        if chosen.difference is None:
            simpler = [
                c
                for c in self.contenders[1:]
                if c.n_parameters is not None
                and (chosen.n_parameters is None or c.n_parameters < chosen.n_parameters)
            ]
            rule = (
                ", the best; every map with fewer parameters is clearly worse"
                if simpler
                else ", the best and the simplest"
            )
        else:
            difference, lower, upper = _compared(chosen.difference, chosen.lower, chosen.upper)
            rule = (
                f", the fewest parameters among the maps not clearly worse than the best, "
                f"{self._label(self.winner)} (difference {format_difference(difference)},"
                f" {self.level:.0%} interval {format_difference(lower)} to "
                f"{format_difference(upper)})"
            )
        text = f"{head}{rule}."
        if chosen.name == UNCALIBRATED:
            text += (
                " No map is clearly better than the uncalibrated predictions: its deployable "
                "map is the identity, which returns the predictions unchanged."
            )
        return text

    @property
    def same_model_notes(self) -> list[str]:
        """One sentence per merged contender: which names coincide and why."""
        return [f"{c.label}: {c.reason}." for c in self.contenders if len(c.names) > 1]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (fields above plus ``summary``; see docs/evaluate-json-schema.md)."""
        return {
            "winner": self.winner,
            "runner_up": self.runner_up,
            "recommended": self.recommended,
            "clear_winner": self.clear,
            "summary": self.summary,
            "recommendation": self.recommendation,
            "criterion": "log_loss",
            "rule": "fewest parameters among the maps not clearly worse than the best",
            "difference": self.difference,
            "lower": self.lower,
            "upper": self.upper,
            "level": self.level,
            "interval": self.interval,
            "n_rows": self.n_rows,
            "log_loss": dict(self.log_loss),
            "contenders": [c.to_dict() for c in self.contenders],
            "confidence_ece": dict(self.confidence_ece),
            "parameters": dict(self.parameters),
        }


def choose_map(
    calibrated: Mapping[str, Predictions],
    fitted: Mapping[str, Sequence[CalibrationMap]] | None = None,
    *,
    design: FitDesign | None = None,
    level: float = DEFAULT_LEVEL,
    n_bins: int = 15,
    scheme: Scheme = "width",
    n_resamples: int | None = None,
    seed: int | None = None,
) -> Verdict:
    """The verdict of a comparison: contenders, best, runner-up, recommendation.

    Parameters
    ----------
    calibrated : mapping of str to Predictions
        Candidate name to its held-out calibrated predictions, all of the same
        rows in the same order (``Comparison.calibrated``, whose
        ``"uncalibrated"`` entry competes too).
    fitted : mapping of str to sequence of CalibrationMap, optional
        The fitted map(s) of each candidate, for their parameter counts and
        :func:`map_parameters`.
    design : FitDesign, optional
        Which fit scored each row, the fits' training sizes and in-sample
        losses (:meth:`Comparison.design`): the interval then holds the noise
        of fitting the maps. Without it the fits are taken as fixed.
    level : float
        Coverage of the interval, in (0, 1).
    n_bins, scheme
        Binning of the confidence ECE reported alongside.
    n_resamples, seed
        Ignored, kept for old callers (a FutureWarning says so): the interval
        no longer resamples.

    Returns
    -------
    Verdict
        See the module docstring for the rules.

    Raises
    ------
    CalibrationInputError
        No candidate, candidates that do not hold the same rows, or a design
        of another number of rows.
    """
    if n_resamples is not None or seed is not None:
        warnings.warn(
            "choose_map: n_resamples and seed are ignored; the verdict's interval is no "
            "longer a bootstrap (see calibration_core.compare.verdict).",
            FutureWarning,
            stacklevel=2,
        )
    if not calibrated:
        raise CalibrationInputError("choose_map needs at least one candidate's predictions.")
    level = check_level(level)
    losses = _row_losses(calibrated)
    n_rows = int(next(iter(losses.values())).shape[0])
    _check_design(design, n_rows)
    fitted = {name: maps for name, maps in (fitted or {}).items() if name in calibrated}
    contenders = _ranked_contenders(losses, calibrated, fitted, design, level)
    runner_up = contenders[1] if len(contenders) > 1 else None
    recommended = _fewest_parameters(contenders)
    shown = dict.fromkeys(c.name for c in (contenders[0], runner_up, recommended) if c)
    return Verdict(
        winner=contenders[0].names[0],
        runner_up=None if runner_up is None else runner_up.name,
        recommended=recommended.name,
        clear=runner_up is not None and runner_up.clearly_worse,
        difference=None if runner_up is None else runner_up.difference,
        lower=None if runner_up is None else runner_up.lower,
        upper=None if runner_up is None else runner_up.upper,
        level=level,
        interval=FITS_FIXED if design is None else design.describe(),
        n_rows=n_rows,
        log_loss={n: float(losses[n].mean()) for c in contenders for n in c.names},
        contenders=contenders,
        confidence_ece={
            n: float(
                confidence_ece(
                    calibrated[n].probs, calibrated[n].labels, n_bins=n_bins, scheme=scheme
                )
            )
            for n in shown
        },
        parameters={
            name: words for name, maps in fitted.items() if (words := map_parameters(maps))
        },
    )


def _check_design(design: FitDesign | None, n_rows: int) -> None:
    """Refuse a design whose rows are not the candidates' rows."""
    if design is None:
        return
    fits = np.asarray(design.fit_of_row)
    if fits.shape != (n_rows,):
        raise CalibrationInputError(
            f"the fit design names the fit of {fits.shape[0] if fits.ndim else 0} rows but the "
            f"candidates hold {n_rows}; pass Comparison.design() of the same comparison."
        )
    if fits.size and (fits.min() < 0 or fits.max() >= design.n_fits):
        raise CalibrationInputError(
            f"the fit design's fit_of_row must be in 0..{design.n_fits - 1} (one per fit)."
        )


def _ranked_contenders(
    losses: Mapping[str, np.ndarray],
    calibrated: Mapping[str, Predictions],
    fitted: Mapping[str, Sequence[CalibrationMap]],
    design: FitDesign | None,
    level: float,
) -> tuple[Contender, ...]:
    """The contenders (coinciding candidates merged), best first, each but the best with
    the interval of its difference to the best."""
    groups = sorted(_coinciding_groups(calibrated), key=lambda g: float(losses[g[0]].mean()))
    reference = losses.get(UNCALIBRATED)
    effective = {
        g[0]: effective_parameters(g[0], losses[g[0]], design, fitted.get(g[0], ()), reference)
        for g in groups
    }
    best = groups[0][0]
    others = [g[0] for g in groups[1:]]
    intervals = {}
    if others:
        diffs = np.column_stack([losses[name] - losses[best] for name in others])
        params = np.array([(effective[n] or 0.0) + (effective[best] or 0.0) for n in others])
        mean, lower, upper = heldout_intervals(diffs, design, params, level)
        intervals = {n: (mean[i], lower[i], upper[i]) for i, n in enumerate(others)}
    return tuple(
        _contender(
            group, losses, fitted, intervals.get(group[0], (None, None, None)), effective[group[0]]
        )
        for group in groups
    )


def effective_parameters(
    name: str,
    row_losses: np.ndarray,
    design: FitDesign | None,
    maps: Sequence[CalibrationMap] = (),
    reference: np.ndarray | None = None,
) -> float | None:
    """A candidate's effective number of parameters: ``n_train`` times its optimism.

    The optimism of a fit is its held-out log-loss (on the rows it scored)
    minus its in-sample log-loss (on its own training rows); for a map with
    ``p`` parameters fitted by maximum likelihood it is about ``p / n_train``
    (Takeuchi's TIC; Efron 2004, "The estimation of prediction error"), and
    it counts what regularised and nonparametric maps really spend, which
    their raw parameter count does not (matrix scaling on DenseNet CIFAR-100:
    about 730 of its 10,100). Both losses are taken relative to the
    uncalibrated predictions on the same rows when ``reference`` is given,
    which removes most of the row-to-row noise; the estimate is averaged
    over the folds (where each row is once held out and F - 1 times in
    training, so the rows' own noise cancels) and floored at 0.

    One train/test split has a single fit, whose optimism is about as noisy
    as the difference it should qualify, and correlated with it; there the
    **parameter count** (:func:`parameter_count`, an upper bound for
    regularised maps) is used instead, as it is when the in-sample losses
    are unknown.

    Parameters
    ----------
    name : str
        The candidate: "uncalibrated" has 0.
    row_losses : numpy.ndarray, shape (N,)
        Its per-row held-out log-loss.
    design : FitDesign or None
    maps : sequence of CalibrationMap
        Its fitted maps, for the parameter count.
    reference : numpy.ndarray, shape (N,), optional
        Per-row held-out log-loss of the uncalibrated predictions, used with
        ``design.train_log_loss["uncalibrated"]``.

    Returns
    -------
    float or None
        None without a design.
    """
    if design is None:
        return None
    if name == UNCALIBRATED:
        return 0.0
    train = design.train_log_loss.get(name)
    if not design.cross_fitted or train is None or np.shape(train) != (design.n_fits,):
        return float(parameter_count(name, maps) or 0)
    train = np.asarray(train, dtype=float)
    base = design.train_log_loss.get(UNCALIBRATED)
    if reference is not None and base is not None and np.shape(base) == train.shape:
        row_losses = row_losses - reference
        train = train - np.asarray(base, dtype=float)
    fits = np.asarray(design.fit_of_row)
    rows = np.bincount(fits, minlength=design.n_fits)
    held_out = np.bincount(fits, weights=row_losses, minlength=design.n_fits)
    scored = rows > 0
    optimism = held_out[scored] / rows[scored] - train[scored]
    return max(0.0, float(np.mean(design.n_train[scored] * optimism)))


def fitting_variance_factor(n_fits: int, n_train: float, n_test: float) -> float:
    """``v`` of the fitting term ``v p / n_train**2`` (module docstring).

    The variance of the held-out loss of a map with ``p`` effective
    parameters, to second order in the fitting error (gradients of the loss
    independent across rows, Hessian equal to their covariance): for F-fold
    cross-fitting ``1/(2F) + F/(2(F-1))`` (0.725 at F = 5: the quadratic
    fitting cost and the product of each fold's test gradient with the
    other folds' fitting error); for one split ``1/2 + n_train/n_test``.
    """
    if n_fits >= 2:
        return 1.0 / (2 * n_fits) + n_fits / (2.0 * (n_fits - 1))
    return 0.5 + n_train / n_test


def heldout_intervals(
    differences: np.ndarray,
    design: FitDesign | None,
    fitting_parameters: np.ndarray,
    level: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and interval of each column of per-row held-out loss differences.

    The one place the verdict makes its intervals (the rule and its sources
    are in the module docstring).

    Parameters
    ----------
    differences : numpy.ndarray, shape (N, C)
        Per-row log-loss of contender c minus the best's.
    design : FitDesign or None
        Which fit scored each row; None takes the fits as fixed (rows only).
    fitting_parameters : numpy.ndarray, shape (C,)
        ``p_c + p_best``, the effective parameters of the two fitted maps of
        each column (ignored without a design).
    level : float

    Returns
    -------
    mean, lower, upper : numpy.ndarray, shape (C,)
    """
    n = differences.shape[0]
    mean = differences.mean(axis=0)
    variance = differences.var(axis=0, ddof=1) / n if n > 1 else np.zeros_like(mean)
    if design is not None:
        variance = variance + _fitting_noise(differences, design, fitting_parameters, variance)
    half = norm.ppf((1 + level) / 2) * np.sqrt(variance)
    return mean, mean - half, mean + half


def _fitting_noise(differences, design: FitDesign, fitting_parameters, row_variance):
    """What the fits add to the paired row variance: ``V - V_rows`` of the module docstring."""
    n = differences.shape[0]
    fits = np.asarray(design.fit_of_row)
    counts = np.bincount(fits, minlength=design.n_fits)
    scored = counts > 0
    n_scoring = int(scored.sum())
    n_train = float(np.mean(design.n_train[scored]))
    factor = fitting_variance_factor(n_scoring, n_train, n / n_scoring)
    extra = factor * np.asarray(fitting_parameters, dtype=float) / n_train**2
    if n_scoring >= 2:
        sums = np.stack(
            [np.bincount(fits, weights=col, minlength=design.n_fits) for col in differences.T],
            axis=1,
        )
        fold_means = sums[scored] / counts[scored, None]
        folds = (1 / n_scoring + (n / n_scoring) / n_train) * fold_means.var(axis=0, ddof=1)
        extra = extra + np.maximum(folds - row_variance, 0.0)
    return extra


def _coinciding_groups(calibrated: Mapping[str, Predictions]) -> list[tuple[str, ...]]:
    """The candidates grouped by coinciding held-out probabilities, in the given order."""
    groups: list[list[str]] = []
    for name in calibrated:
        for group in groups:
            if _same_predictions(calibrated[group[0]].probs, calibrated[name].probs):
                group.append(str(name))
                break
        else:
            groups.append([str(name)])
    return [tuple(g) for g in groups]


def _same_predictions(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether two (N, K) probability matrices agree to :data:`SAME_PREDICTIONS_TOLERANCE`."""
    for start in range(0, first.shape[0], _ROWS_PER_CHECK):
        rows = slice(start, start + _ROWS_PER_CHECK)
        if np.max(np.abs(first[rows] - second[rows])) > SAME_PREDICTIONS_TOLERANCE:
            return False  # distinct maps differ in the first block: a cheap exit
    return True


def _contender(group, losses, fitted, interval, effective) -> Contender:
    """The :class:`Contender` of one group of coinciding candidates."""
    counts = [parameter_count(name, fitted.get(name, ())) for name in group]
    known = [c for c in counts if c is not None]
    difference, lower, upper = (None if v is None else float(v) for v in interval)
    reasons = {same_model_reason(group[0], other) for other in group[1:]}
    shared = next(iter(reasons)) if len(reasons) == 1 else None  # None: not one for all
    reason = ""
    if len(group) > 1:
        reason = (
            shared
            if shared is not None
            else f"their held-out predictions agree to within {SAME_PREDICTIONS_TOLERANCE:g}"
        )
    return Contender(
        names=tuple(group),
        log_loss=float(losses[group[0]].mean()),
        n_parameters=min(known) if known else None,
        difference=difference,
        lower=lower,
        upper=upper,
        reason=reason,
        effective_parameters=effective,
    )


def parameter_count(name: str, maps: Sequence[CalibrationMap]) -> int | None:
    """Fitted parameters of a candidate: its maps' largest ``n_parameters_`` over the folds.

    Parameters
    ----------
    name : str
        The candidate's name: ``"uncalibrated"`` has 0 parameters.
    maps : sequence of CalibrationMap
        Its fitted map of each fold (or its one fit).

    Returns
    -------
    int or None
        None when there are no maps or they do not count their parameters
        (a user's map class without ``n_parameters_``).
    """
    if name == UNCALIBRATED:
        return 0
    try:
        return max(int(m.n_parameters_) for m in maps) if maps else None
    except (AttributeError, NotImplementedError):
        return None


def _fewest_parameters(contenders: Sequence[Contender]) -> Contender:
    """The parsimony rule: fewest parameters among those not clearly worse than the best."""
    eligible = [c for c in contenders if not c.clearly_worse and c.n_parameters is not None]
    if not eligible:
        return contenders[0]
    return min(eligible, key=lambda c: (c.n_parameters, c.log_loss))


def _row_losses(calibrated: Mapping[str, Predictions]) -> dict[str, np.ndarray]:
    """Per-row log-loss of every candidate; refuses candidates of different rows."""
    first_name, first = next(iter(calibrated.items()))
    losses = {}
    for name, pred in calibrated.items():
        if pred.n_samples != first.n_samples or not np.array_equal(pred.labels, first.labels):
            raise CalibrationInputError(
                f"candidates {first_name!r} and {name!r} do not hold the same rows "
                f"({first.n_samples} and {pred.n_samples} rows); a paired comparison needs "
                "every candidate scored on the same held-out rows."
            )
        losses[str(name)] = log_loss_per_row(pred.probs, pred.labels)
    return losses


def map_parameters(maps: Sequence[CalibrationMap]) -> str:
    """A map's fitted parameters in words ("T = 2.12"), or "" when it has many.

    Parameters
    ----------
    maps : sequence of CalibrationMap
        The fits of one map (one per fold, or one): each parameter is given
        as its range over them (module docstring).

    Returns
    -------
    str
    """
    found = [_few_parameters(m) for m in maps]
    values = [v for v in found if v is not None]
    if not values or len(values) < len(found):
        return ""
    names = list(values[0])
    parts = [_value_range(name, [v[name] for v in values]) for name in names]
    text = ", ".join(parts)
    if len(values) > 1 and any(" to " in p for p in parts):
        text += f" over {len(values)} folds"
    return text


def _few_parameters(cmap: CalibrationMap) -> dict[str, float] | None:
    """Named parameters of maps that have few of them, else None."""
    if getattr(cmap, "name", "") == "temperature" and hasattr(cmap, "temperature_"):
        return {"T": float(cmap.temperature_)}
    coef = getattr(cmap, "coef_", None)
    if coef is None or np.ndim(coef) != 2 or np.shape(coef)[0] != 1:
        return None  # one-vs-rest maps of K > 2 classes: K sets of parameters
    names = {"platt": ("w", "b"), "beta": ("a", "b", "c")}.get(getattr(cmap, "name", ""))
    if names is None or len(names) != np.shape(coef)[1]:
        return None
    return {n: float(v) for n, v in zip(names, coef[0], strict=True)}


def _value_range(name: str, values: list[float]) -> str:
    lo, hi = f"{min(values):#.3g}", f"{max(values):#.3g}"
    return f"{name} = {lo}" if lo == hi else f"{name} = {lo} to {hi}"
