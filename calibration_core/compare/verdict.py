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
    The per-row log-losses of every contender minus those of the best are
    resampled by rows with replacement (**paired bootstrap**, the same R
    seeded draws for all, :func:`calibration_core.bootstrap.resampled_means`),
    and the percentile interval of the mean difference at ``level`` is
    reported (:func:`paired_bootstrap_intervals`, the one place that makes
    the interval: another procedure can replace it there). Pairing removes
    the row-to-row variation the maps share. A contender is **clearly
    worse** than the best when the lower bound of its interval is above 0;
    the best is a clear winner when the runner-up is clearly worse. The maps
    are fitted once, so the interval does not hold the variance of fitting
    (issue 28; docs/statistics.md).
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..bootstrap import resampled_means
from ..errors import CalibrationInputError
from ..maps.base import CalibrationMap
from ..maps.registry import same_model_reason
from ..metrics import confidence_ece, log_loss_per_row
from ..predictions import Predictions
from ..validation import check_level, check_whole_number

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "SAME_PREDICTIONS_TOLERANCE",
    "UNCALIBRATED",
    "Contender",
    "Verdict",
    "choose_map",
    "format_difference",
    "map_parameters",
    "paired_bootstrap_intervals",
    "parameter_count",
    "parameter_words",
]

#: Default number of paired bootstrap resamples.
DEFAULT_RESAMPLES = 1000
#: Default coverage of the interval of the difference.
DEFAULT_LEVEL = 0.95
#: Candidates whose held-out probabilities differ by at most this are one contender.
SAME_PREDICTIONS_TOLERANCE = 1e-9
#: Name of the uncalibrated predictions among the candidates (0 parameters).
UNCALIBRATED = "uncalibrated"
#: Rows compared at a time when looking for coinciding candidates.
_ROWS_PER_CHECK = 4096


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
        Paired-bootstrap percentile interval of ``difference`` at ``level``.
    level : float
    n_resamples : int
    seed : int or None
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
    n_resamples: int
    seed: int | None
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
        gap = (
            f"held-out log-loss {self.log_loss[self.winner]:.4f} vs "
            f"{self.log_loss[self.runner_up]:.4f}, difference "
            f"{format_difference(self.difference)} "
            f"({self.level:.0%} interval {format_difference(self.lower)} to "
            f"{format_difference(self.upper)}, paired bootstrap, {self.n_resamples} "
            f"resamples of {self.n_rows} rows)"
        )
        runner_up = self._label(self.runner_up)
        if not self.clear:
            return f"no clear winner: {winner} vs {runner_up}, {gap}."
        return f"{winner} beats {runner_up}: {gap}."

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
            rule = (
                f", the fewest parameters among the maps not clearly worse than the best, "
                f"{self._label(self.winner)} (difference {format_difference(chosen.difference)},"
                f" {self.level:.0%} interval {format_difference(chosen.lower)} to "
                f"{format_difference(chosen.upper)})"
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
            "n_resamples": self.n_resamples,
            "seed": self.seed,
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
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int | None = 0,
    n_bins: int = 15,
    scheme: str = "width",
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
    n_resamples : int
        Paired bootstrap resamples R.
    level : float
        Coverage of the percentile interval, in (0, 1).
    seed : int or None
        Seed of the resampling (the same seed gives the same intervals).
    n_bins, scheme
        Binning of the confidence ECE reported alongside.

    Returns
    -------
    Verdict
        See the module docstring for the rules.

    Raises
    ------
    CalibrationInputError
        No candidate, or candidates that do not hold the same rows.
    """
    if not calibrated:
        raise CalibrationInputError("choose_map needs at least one candidate's predictions.")
    n_resamples = check_whole_number(n_resamples, "n_resamples")
    level = check_level(level)
    losses = _row_losses(calibrated)
    fitted = {name: maps for name, maps in (fitted or {}).items() if name in calibrated}
    contenders = _ranked_contenders(losses, calibrated, fitted, n_resamples, level, seed)
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
        n_resamples=n_resamples,
        seed=seed,
        n_rows=int(next(iter(losses.values())).shape[0]),
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


def _ranked_contenders(
    losses: Mapping[str, np.ndarray],
    calibrated: Mapping[str, Predictions],
    fitted: Mapping[str, Sequence[CalibrationMap]],
    n_resamples: int,
    level: float,
    seed,
) -> tuple[Contender, ...]:
    """The contenders (coinciding candidates merged), best first, each but the best with
    the interval of its difference to the best (one paired draw of rows for all)."""
    groups = sorted(_coinciding_groups(calibrated), key=lambda g: float(losses[g[0]].mean()))
    best = groups[0][0]
    others = [g[0] for g in groups[1:]]
    intervals = {}
    if others:
        diffs = np.column_stack([losses[name] - losses[best] for name in others])
        mean, lower, upper = paired_bootstrap_intervals(diffs, n_resamples, level, seed)
        intervals = {n: (mean[i], lower[i], upper[i]) for i, n in enumerate(others)}
    return tuple(
        _contender(group, losses, fitted, intervals.get(group[0], (None, None, None)))
        for group in groups
    )


def paired_bootstrap_intervals(
    differences: np.ndarray, n_resamples: int, level: float, seed
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and percentile interval of each column of per-row differences (paired bootstrap).

    The one place the verdict makes its intervals: a procedure that also
    holds the variance of fitting can replace it here.

    Parameters
    ----------
    differences : numpy.ndarray, shape (N, C)
        Per-row log-loss of contender c minus the best's.
    n_resamples : int
    level : float
    seed : int, None or numpy.random.Generator
        The same rows are drawn for every column.

    Returns
    -------
    mean, lower, upper : numpy.ndarray, shape (C,)
    """
    samples = resampled_means(differences, n_resamples, seed)
    lower, upper = np.quantile(samples, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return differences.mean(axis=0), lower, upper


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


def _contender(group, losses, fitted, interval) -> Contender:
    """The :class:`Contender` of one group of coinciding candidates."""
    counts = [parameter_count(name, fitted.get(name, ())) for name in group]
    known = [c for c in counts if c is not None]
    difference, lower, upper = (None if v is None else float(v) for v in interval)
    reasons = {same_model_reason(group[0], other) for other in group[1:]}
    reason = ""
    if len(group) > 1:
        reason = (
            reasons.pop()
            if reasons and None not in reasons and len(reasons) == 1
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
    values = [_few_parameters(m) for m in maps]
    if not values or any(v is None for v in values):
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
