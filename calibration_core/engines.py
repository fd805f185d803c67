"""One interface for the engines that summarise a model's predictions.

An *engine* answers, for one model's rows, the questions every view and every
document of this project asks: the per-bin statistics of a notion, the
reliability curve read off them, the metric columns of the comparison table
(accuracy, confidence and classwise ECE/MCE, Brier score, log-loss) and the
calibration and refinement parts of the two scores. :class:`CalibrationSummary`
is that interface, and every engine returns the same types for it:
:class:`~calibration_core.binning.BinStatistics`,
:class:`~calibration_core.reliability.ReliabilityCurve` and dicts keyed by
:data:`~calibration_core.compare.METRIC_COLUMNS` and
:data:`~calibration_core.measures.decomposition.PART_FIELDS`, computed by
:func:`metric_columns` from the statistics, so the numbers of two engines on the
same rows agree to float rounding.

The engines:

- in memory, :class:`PredictionsSummary` of a loaded
  :class:`~calibration_core.Predictions` (every question answered from the rows);
- on Dask, :class:`calibration_core.distributed.ModelSummary` (mergeable per-cell
  sums of a dataset larger than memory, one pass; equal-frequency bins after
  :meth:`~calibration_core.distributed.ModelSummary.with_frequency`).

A streaming engine (rows arriving in chunks, never all kept) implements the same
protocol: it keeps mergeable sums per model, updated chunk by chunk, and must
provide the attributes ``name``, ``class_names``, ``n_samples`` and
``n_classes``, and the four methods below with these signatures and return
types; a question it cannot answer from its sums (e.g. equal-frequency bins
without a second pass) raises :class:`~calibration_core.CalibrationInputError`
saying what to do instead. The Dask engine's
:class:`~calibration_core.distributed.SummaryBuilder` already summarises
blocks of rows one at a time and is the natural start for one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .binning import Binning, BinStatistics, Scheme, check_binning_args
from .errors import CalibrationInputError
from .measures.decomposition import score_parts
from .metrics import (
    accuracy,
    binary_statistics,
    brier_score,
    classwise_statistics,
    confidence_statistics,
    log_loss,
)
from .predictions import Predictions
from .reliability import ReliabilityCurve

__all__ = [
    "SUMMARY_NOTIONS",
    "CalibrationSummary",
    "PredictionsSummary",
    "check_summary_notion",
    "metric_columns",
]

#: The notions an engine's :meth:`CalibrationSummary.statistics` takes: top label; every
#: class against the rest (arrays of shape (K, M)); the positive class of a binary model.
SUMMARY_NOTIONS: tuple[str, ...] = ("confidence", "classwise", "binary")


@runtime_checkable
class CalibrationSummary(Protocol):
    """What every engine answers about one model's rows (module docstring).

    Attributes
    ----------
    name : str
        The model.
    class_names : tuple of str
        The K classes.
    n_samples : int
        Rows N.
    n_classes : int
        K.
    """

    @property
    def name(self) -> str: ...

    @property
    def class_names(self) -> tuple[str, ...]: ...

    @property
    def n_samples(self) -> int: ...

    @property
    def n_classes(self) -> int: ...

    def statistics(
        self, notion: str = "confidence", n_bins: int = 15, scheme: Scheme = "width"
    ) -> BinStatistics:
        """Bin statistics of a notion of :data:`SUMMARY_NOTIONS`: shape (M,) or (K, M)."""
        ...

    def reliability_curve(
        self, notion: str = "confidence", n_bins: int = 15, scheme: Scheme = "width"
    ) -> ReliabilityCurve:
        """The reliability curve of a single-column notion (confidence or binary)."""
        ...

    def metrics(self, n_bins: int = 15, scheme: Scheme = "width") -> dict[str, float]:
        """The metric columns of the comparison table (:func:`metric_columns`)."""
        ...

    def score_parts(self, n_bins: int = 15, scheme: Scheme = "width") -> dict[str, float | None]:
        """The parts of :data:`~calibration_core.measures.decomposition.PART_FIELDS`.

        None where the engine does not know a part.
        """
        ...


def check_summary_notion(notion, n_classes: int, model: str) -> str:
    """``notion`` if an engine summary of ``n_classes`` classes answers it, else an error."""
    if notion not in SUMMARY_NOTIONS:
        raise CalibrationInputError(
            f"unknown notion {notion!r} for a model summary; choose one of "
            f"{', '.join(SUMMARY_NOTIONS)} (one class: statistics('classwise', M)[k])."
        )
    if notion == "binary" and n_classes != 2:
        raise CalibrationInputError(
            f"model {model!r} has {n_classes} classes; the binary notion needs 2."
        )
    return notion


def single_column_curve(summary: CalibrationSummary, notion: str, n_bins: int, scheme: Scheme):
    """:meth:`CalibrationSummary.reliability_curve` from the summary's statistics."""
    if notion == "classwise":
        raise CalibrationInputError(
            "a reliability curve has one column: use notion 'confidence' or 'binary', or "
            "statistics('classwise', M)[k] for class k."
        )
    stats = summary.statistics(notion, n_bins, scheme)
    return ReliabilityCurve.from_statistics(stats, Binning(scheme, n_bins))


def metric_columns(
    confidence: BinStatistics,
    classwise: BinStatistics,
    *,
    accuracy: float,
    brier_score: float,
    log_loss: float,
) -> dict[str, float]:
    """The metric columns of the comparison table, the one rule of every engine.

    Parameters
    ----------
    confidence : BinStatistics, shape (M,)
        Top-label bins.
    classwise : BinStatistics, shape (K, M)
        One-vs-rest bins of every class.
    accuracy, brier_score, log_loss : float
        The scores of the rows (Brier summed over classes).

    Returns
    -------
    dict
        One float per name of :data:`~calibration_core.compare.METRIC_COLUMNS`:
        classwise ECE is the mean over classes, classwise MCE the largest.
    """
    return {
        "accuracy": float(accuracy),
        "confidence_ece": float(confidence.ece()),
        "confidence_mce": float(confidence.mce()),
        "classwise_ece": float(np.mean(classwise.ece())),
        "classwise_mce": float(np.max(classwise.mce())),
        "brier_score": float(brier_score),
        "log_loss": float(log_loss),
    }


@dataclass(frozen=True, eq=False)
class PredictionsSummary:
    """The in-memory engine: a :class:`CalibrationSummary` of rows held in memory.

    Every answer is computed from the rows (any bin count and scheme), with the
    core functions of :mod:`calibration_core.metrics` and
    :func:`~calibration_core.measures.decomposition.score_parts`.

    Parameters
    ----------
    predictions : Predictions
        One model's validated rows.
    """

    predictions: Predictions

    @property
    def name(self) -> str:
        """The model."""
        return self.predictions.name

    @property
    def class_names(self) -> tuple[str, ...]:
        """The K classes."""
        return tuple(self.predictions.class_names)

    @property
    def n_samples(self) -> int:
        """Rows N."""
        return self.predictions.n_samples

    @property
    def n_classes(self) -> int:
        """K."""
        return self.predictions.n_classes

    def statistics(
        self, notion: str = "confidence", n_bins: int = 15, scheme: Scheme = "width"
    ) -> BinStatistics:
        """Bin statistics of a notion of :data:`SUMMARY_NOTIONS`, shape (M,) or (K, M)."""
        notion = check_summary_notion(notion, self.n_classes, self.name)
        n_bins, scheme = check_binning_args(n_bins, scheme)
        probs, labels = self.predictions.probs, self.predictions.labels
        compute = {
            "confidence": confidence_statistics,
            "classwise": classwise_statistics,
            "binary": binary_statistics,
        }[notion]
        return compute(probs, labels, n_bins=n_bins, scheme=scheme)

    def reliability_curve(
        self, notion: str = "confidence", n_bins: int = 15, scheme: Scheme = "width"
    ) -> ReliabilityCurve:
        """The reliability curve of a single-column notion (confidence or binary)."""
        return single_column_curve(self, notion, n_bins, scheme)

    def metrics(self, n_bins: int = 15, scheme: Scheme = "width") -> dict[str, float]:
        """The metric columns of the comparison table (:func:`metric_columns`)."""
        probs, labels = self.predictions.probs, self.predictions.labels
        return metric_columns(
            self.statistics("confidence", n_bins, scheme),
            self.statistics("classwise", n_bins, scheme),
            accuracy=accuracy(probs, labels),
            brier_score=brier_score(probs, labels),
            log_loss=log_loss(probs, labels),
        )

    def score_parts(self, n_bins: int = 15, scheme: Scheme = "width") -> dict[str, float | None]:
        """:func:`~calibration_core.measures.decomposition.score_parts` of the rows (any K)."""
        pred = self.predictions
        return dict(score_parts(pred.probs, pred.labels, n_bins=n_bins, scheme=scheme))
