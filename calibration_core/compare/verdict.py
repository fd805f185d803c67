"""Which calibration map to trust: :func:`choose_map` and :class:`Verdict`.

The candidates are the held-out (out-of-fold, or test-row) calibrated
versions of the same rows, **including the uncalibrated predictions**: a map
has to beat doing nothing, so "uncalibrated" competes like any map and can
win. They are ranked by held-out log-loss, a proper scoring rule (a binned
ECE is not one: a map can lower it while losing information, survey
arXiv 2112.10327 §3-§4); the confidence ECE is reported alongside.

Whether the winner's advantage is real is judged by a **paired bootstrap**
over the same held-out rows: the per-row log-losses of the runner-up minus
those of the winner are resampled by rows with replacement (R resamples,
seeded, :func:`calibration_core.bootstrap.resampled_means`), and the
percentile interval of the mean difference at ``level`` is reported. Pairing
removes the row-to-row variation both maps share, which an interval per map
would not. When the interval covers 0 (or there is no runner-up to beat)
there is "no clear winner". The mean difference is unbiased, so the
percentile interval is the fitting kind; its coverage of the population
difference is in docs/statistics.md (``benchmarks/stats_sim.py``).

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
from ..metrics import confidence_ece, log_loss_per_row
from ..predictions import Predictions
from ..validation import check_level, check_whole_number

__all__ = ["DEFAULT_LEVEL", "DEFAULT_RESAMPLES", "Verdict", "choose_map", "map_parameters"]

#: Default number of paired bootstrap resamples.
DEFAULT_RESAMPLES = 1000
#: Default coverage of the interval of the difference.
DEFAULT_LEVEL = 0.95


@dataclass(frozen=True)
class Verdict:
    """The best map of a comparison and whether its advantage is real.

    Attributes
    ----------
    winner : str
        The candidate with the lowest held-out log-loss (may be ``"uncalibrated"``).
    runner_up : str or None
        The second lowest; None when there was a single candidate.
    clear : bool
        True when the interval of the difference lies above 0.
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
    confidence_ece : dict of str to float
        Held-out confidence ECE of the winner and the runner-up.
    parameters : dict of str to str
        Fitted parameters in words, for the candidates with few parameters.
    """

    winner: str
    runner_up: str | None
    clear: bool
    difference: float | None
    lower: float | None
    upper: float | None
    level: float
    n_resamples: int
    seed: int | None
    n_rows: int
    log_loss: dict[str, float]
    confidence_ece: dict[str, float] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        """One sentence: who wins, by how much, and whether the win is real."""
        if self.runner_up is None:
            return f"{self.winner} is the only candidate: nothing to compare it with."
        gap = (
            f"held-out log-loss {self.log_loss[self.winner]:.4f} vs "
            f"{self.log_loss[self.runner_up]:.4f}, difference {self.difference:.4f} "
            f"({self.level:.0%} interval {self.lower:.4f} to {self.upper:.4f}, "
            f"paired bootstrap, {self.n_resamples} resamples of {self.n_rows} rows)"
        )
        if not self.clear:
            return f"no clear winner: {self.winner} vs {self.runner_up}, {gap}."
        return f"{self.winner} beats {self.runner_up}: {gap}."

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (fields above plus ``summary``; see docs/evaluate-json-schema.md)."""
        return {
            "winner": self.winner,
            "runner_up": self.runner_up,
            "clear_winner": self.clear,
            "summary": self.summary,
            "criterion": "log_loss",
            "difference": self.difference,
            "lower": self.lower,
            "upper": self.upper,
            "level": self.level,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "n_rows": self.n_rows,
            "log_loss": dict(self.log_loss),
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
    """The verdict of a comparison: best candidate, runner-up, paired-bootstrap interval.

    Parameters
    ----------
    calibrated : mapping of str to Predictions
        Candidate name to its held-out calibrated predictions, all of the same
        rows in the same order (``Comparison.calibrated``, whose
        ``"uncalibrated"`` entry competes too).
    fitted : mapping of str to sequence of CalibrationMap, optional
        The fitted map(s) of each candidate, for :func:`map_parameters`.
    n_resamples : int
        Paired bootstrap resamples R.
    level : float
        Coverage of the percentile interval, in (0, 1).
    seed : int or None
        Seed of the resampling (the same seed gives the same interval).
    n_bins, scheme
        Binning of the confidence ECE reported alongside.

    Returns
    -------
    Verdict

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
    ranked = sorted(losses, key=lambda name: float(losses[name].mean()))
    mean_loss = {name: float(losses[name].mean()) for name in ranked}
    winner = ranked[0]
    runner_up = ranked[1] if len(ranked) > 1 else None
    params = {
        name: words
        for name, maps in (fitted or {}).items()
        if name in calibrated and (words := map_parameters(maps))
    }
    shown = [n for n in (winner, runner_up) if n is not None]
    ece = {
        n: confidence_ece(calibrated[n].probs, calibrated[n].labels, n_bins=n_bins, scheme=scheme)
        for n in shown
    }
    interval = (None, None, None)
    if runner_up is not None:
        interval = _paired_interval(losses[runner_up] - losses[winner], n_resamples, level, seed)
    difference, lower, upper = interval
    return Verdict(
        winner=winner,
        runner_up=runner_up,
        clear=lower is not None and lower > 0.0,
        difference=difference,
        lower=lower,
        upper=upper,
        level=level,
        n_resamples=n_resamples,
        seed=seed,
        n_rows=int(losses[winner].shape[0]),
        log_loss=mean_loss,
        confidence_ece={n: float(v) for n, v in ece.items()},
        parameters=params,
    )


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


def _paired_interval(diff: np.ndarray, n_resamples: int, level: float, seed):
    """``(mean, lower, upper)`` of the per-row differences (percentile interval)."""
    samples = resampled_means(diff, n_resamples, seed)
    lower, upper = np.quantile(samples, [(1 - level) / 2, (1 + level) / 2])
    return float(diff.mean()), float(lower), float(upper)


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
