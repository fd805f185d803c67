"""Mergeable per-model statistics of a partition: :class:`ModelSummary`.

A summary holds counts and sums only (cell statistics of the top-label
confidence and of every class column, hits, Brier and log-loss sums, and the
sums of the score decompositions, :mod:`.parts`), so the summaries of two
partitions merge by addition (:func:`merge_summaries`) in any order and any
tree, and the merged summary answers every measure of the core for every
equal-width bin count in 1..100 without reading rows again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..binning import BinStatistics, Scheme
from ..engines import check_summary_notion, metric_columns, single_column_curve
from ..errors import CalibrationInputError
from ..io.checks import Context, exact_tolerance, silent_tolerance
from ..io.tables import (
    index_labels,
    model_groups,
    probability_scale,
    table_columns,
    table_labels,
)
from ..measures.decomposition import PART_FIELDS
from ..predictions import Predictions
from ..reliability import ReliabilityCurve
from .cells import CellStatistics
from .parts import PartSums, parts_from_sums
from .pieces import ReadOptions, table_predictions

if TYPE_CHECKING:
    from .kernel import BlockTotals

__all__ = ["ModelSummary", "SummaryBuilder", "merge_summaries", "summarize"]

Summaries = dict[str, "ModelSummary"]


@dataclass(frozen=True, eq=False)
class ModelSummary:
    """Mergeable statistics of one model's rows: the Dask engine's summary.

    Attributes
    ----------
    name : str
        The model.
    class_names : tuple of str
    n_samples : int
        Rows N.
    hits : int
        Rows whose top class (ties to the lowest index) is the label.
    brier_sum, log_loss_sum : float
        Sums over rows of the Brier score (summed over classes) and of the
        log-loss (clipped at 1e-15), as :func:`~calibration_core.brier_score` and
        :func:`~calibration_core.log_loss` average them.
    confidence : CellStatistics
        Top-label confidence against correctness, shape (C + 1,).
    classwise : CellStatistics
        Every class column against ``label == k``, shape (K, C + 1).
    parts : PartSums or None
        Per-cell sums of the Brier and log-loss decompositions
        (:meth:`score_parts`); None in a summary kept by an earlier version.
    frequency : dict or None
        Equal-frequency statistics by bin count M (:meth:`with_frequency`); not
        merged by addition (the edges are those of the rows summarised).

    A :class:`~calibration_core.engines.CalibrationSummary`: the Dask engine
    answers the in-memory engine's questions with its types.
    """

    name: str
    class_names: tuple[str, ...]
    n_samples: int
    hits: int
    brier_sum: float
    log_loss_sum: float
    confidence: CellStatistics
    classwise: CellStatistics
    parts: PartSums | None = None
    frequency: dict[int, dict] | None = None

    @classmethod
    def of(cls, pred: Predictions) -> ModelSummary:
        """The summary of one :class:`~calibration_core.Predictions` (one compiled pass).

        The sums are those of :func:`~calibration_core.brier_score` and
        :func:`~calibration_core.log_loss`, added in another order.
        """
        builder = SummaryBuilder()
        builder.add_predictions(pred)
        return builder.summaries()[pred.name]

    @classmethod
    def of_totals(cls, name: str, class_names, totals: BlockTotals) -> ModelSummary:
        """The summary of the rows added to a :class:`~.kernel.BlockTotals`."""
        conf = totals.confidence
        classes = totals.classes.reshape(totals.n_classes, -1, 2)
        positives = totals.positives.reshape(totals.n_classes, -1, 2)
        binary = totals.binary.T.copy() if totals.n_classes == 2 else None
        return cls(
            name,
            tuple(class_names),
            totals.rows,
            totals.hits,
            totals.brier,
            totals.log_loss,
            CellStatistics(
                conf[:, 0].astype(np.int64), conf[:, 1].copy(), conf[:, 2].astype(np.int64)
            ),
            CellStatistics(
                classes[..., 0].astype(np.int64),
                classes[..., 1].copy(),
                positives[..., 0].astype(np.int64),
            ),
            PartSums(positives[..., 1].copy(), binary),
        )

    def __add__(self, other: ModelSummary) -> ModelSummary:
        if not isinstance(other, ModelSummary):
            return NotImplemented
        if self.class_names != other.class_names:
            raise CalibrationInputError(
                f"model {self.name!r}: partitions disagree on the classes "
                f"({', '.join(self.class_names)} vs {', '.join(other.class_names)}); every file "
                "of a dataset needs the same prediction columns."
            )
        return ModelSummary(
            self.name,
            self.class_names,
            self.n_samples + other.n_samples,
            self.hits + other.hits,
            self.brier_sum + other.brier_sum,
            self.log_loss_sum + other.log_loss_sum,
            self.confidence + other.confidence,
            self.classwise + other.classwise,
            None if self.parts is None or other.parts is None else self.parts + other.parts,
        )

    # ------------------------------------------------------------ measures
    @property
    def n_classes(self) -> int:
        """K."""
        return len(self.class_names)

    def with_frequency(self, n_bins: int, statistics: dict) -> ModelSummary:
        """This summary, also answering ``scheme="frequency"`` at ``n_bins`` bins.

        Parameters
        ----------
        n_bins : int
            M of the equal-frequency bins.
        statistics : dict
            This model's entry of
            :func:`~calibration_core.distributed.frequency.frequency_statistics`
            at M bins (``"confidence"``, ``"classwise"``, ``"parts"``).
        """
        return replace(self, frequency={**(self.frequency or {}), n_bins: statistics})

    def _frequency_bins(self, n_bins: int) -> dict:
        """The equal-frequency statistics at ``n_bins`` bins (:meth:`with_frequency`)."""
        found = (self.frequency or {}).get(n_bins)
        if found is None:
            raise CalibrationInputError(
                f"model {self.name!r}: the equal-frequency bins of a dataset need more passes "
                f"over its rows; compute them with frequency_statistics(source, summaries, "
                f"{n_bins}) and attach them with summary.with_frequency({n_bins}, ...), or "
                "use scheme 'width'."
            )
        return found

    def statistics(
        self, notion: str = "confidence", n_bins: int = 15, scheme: Scheme = "width"
    ) -> BinStatistics:
        """Bin statistics of a notion, as the in-memory core computes them.

        Parameters
        ----------
        notion : {"confidence", "classwise", "binary"}
            Top label; every class against the rest (arrays of shape (K, M));
            the positive class of a binary model (K = 2).
        n_bins : int
            M: in 1..100 for equal-width bins (from the cells).
        scheme : {"width", "frequency"}
            Equal-frequency bins once attached (:meth:`with_frequency`).
        """
        notion = check_summary_notion(notion, self.n_classes, self.name)
        if scheme == "frequency":
            found = self._frequency_bins(n_bins)
            if notion == "binary":
                return found["classwise"][1]
            return found[notion]
        source = self.confidence if notion == "confidence" else self.classwise
        stats = source.bins(n_bins)
        return stats[1] if notion == "binary" else stats

    def reliability_curve(
        self, notion: str = "confidence", n_bins: int = 15, scheme: Scheme = "width"
    ) -> ReliabilityCurve:
        """The reliability curve of a single-column notion (confidence or binary)."""
        return single_column_curve(self, notion, n_bins, scheme)

    def metrics(self, n_bins: int = 15, scheme: Scheme = "width") -> dict[str, float]:
        """The metric columns of the comparison table (:func:`~..engines.metric_columns`).

        Parameters
        ----------
        n_bins : int
            M of the ECE/MCE columns (1..100 equal-width).
        scheme : {"width", "frequency"}
            Equal-frequency bins once attached (:meth:`with_frequency`).
        """
        return metric_columns(
            self.statistics("confidence", n_bins, scheme),
            self.statistics("classwise", n_bins, scheme),
            accuracy=self.hits / self.n_samples,
            brier_score=self.brier_sum / self.n_samples,
            log_loss=self.log_loss_sum / self.n_samples,
        )

    def score_parts(self, n_bins: int = 15, scheme: Scheme = "width") -> dict[str, float | None]:
        """Calibration and refinement parts of the Brier score and the log-loss.

        :func:`~calibration_core.score_parts` of the same rows and bins (to float
        rounding), from the per-cell sums (:mod:`.parts`); the log-loss parts
        only for K = 2 (None otherwise: :data:`~.parts.LOG_LOSS_PARTS_K2`), and
        all four None for a summary kept by an earlier version.

        Parameters
        ----------
        n_bins : int
            M of the bins (1..100 equal-width).
        scheme : {"width", "frequency"}
            Equal-frequency bins once attached (:meth:`with_frequency`).
        """
        classwise = self.statistics("classwise", n_bins, scheme)
        if scheme == "frequency":
            sums = self._frequency_bins(n_bins).get("parts")
        else:
            sums = None if self.parts is None else self.parts.in_bins(n_bins)
        if sums is None:
            return dict.fromkeys(PART_FIELDS)
        return parts_from_sums(classwise, sums, self.n_samples, self.brier_sum)


#: Rows of a :class:`~calibration_core.Predictions` given to the kernel at a time.
PREDICTION_BLOCK_ROWS = 1 << 16


class SummaryBuilder:
    """The per-model totals of the blocks of one task (a piece or a partition).

    Blocks are added by :meth:`add_table` (probability columns as stored, checked
    as the loader checks them, never turned into :class:`Predictions`) or
    :meth:`add_predictions`; :meth:`summaries` gives one :class:`ModelSummary`
    per model, in the order models were first seen. Needs Numba (the compiled
    loop of :mod:`.kernel`).
    """

    def __init__(self) -> None:
        self._totals: dict[tuple[str, tuple[str, ...]], BlockTotals] = {}
        self._buffer: np.ndarray | None = None  # the stacked columns of the last table

    def _model(self, name: str, class_names) -> BlockTotals:
        from .kernel import BlockTotals

        key = (name, tuple(class_names))
        if key not in self._totals:
            self._totals[key] = BlockTotals(len(key[1]))
        return self._totals[key]

    def add_predictions(self, pred: Predictions) -> None:
        """Add validated predictions (their float64 rows, never divided again)."""
        from .kernel import summarize_block

        totals = self._model(pred.name, pred.class_names)
        probs, labels = pred.probs, pred.labels
        for start in range(0, probs.shape[0], PREDICTION_BLOCK_ROWS):
            stop = start + PREDICTION_BLOCK_ROWS
            check = summarize_block(probs[start:stop].T, labels[start:stop], np.inf, totals)
            if check.bad:
                raise CalibrationInputError(
                    f"model {pred.name!r}: {check.bad:,} "
                    "rows hold NaN, negative probabilities or labels outside the classes."
                )

    def add_table(self, table: pa.Table, ctx: Context, options: ReadOptions) -> None:
        """Add a table's rows: the loader's conventions, checks and messages.

        Probability columns go to the kernel as stored (float32 stays float32),
        which divides the rows the loader divides; a block whose values the
        loader would reject or warn about is passed to the loader's own checks
        (:func:`~calibration_core.io.tables.probability_scale`, then
        :func:`~calibration_core.io.tables.table_labels`: the loader's order),
        which raise its message. Integer class indices go to the kernel unchecked
        (:func:`~calibration_core.io.tables.index_labels`): it skips and counts
        those outside the classes. Logits and binary scores go through the
        loader's :class:`Predictions`.
        """
        cols = table_columns(table, ctx, options.label_column)
        if cols.kind != "probs":
            for pred in table_predictions(table, ctx, options):
                self.add_predictions(pred)
            return
        labels = index_labels(table, cols)
        try:
            if labels is None:
                labels = table_labels(table, cols, ctx)
            groups = model_groups(table, cols.model, ctx, options.name)
        except CalibrationInputError:
            self._loader_checks(table, cols, ctx, options.renormalize)
            raise
        self._add_probabilities(table, cols, labels, groups, ctx, options.renormalize)

    @staticmethod
    def _loader_checks(table: pa.Table, cols, ctx: Context, renormalize: bool) -> None:
        """The loader's checks of values, then of labels, in its order: raise its first error."""
        probability_scale(cols, ctx, renormalize)
        table_labels(table, cols, ctx)

    def stacked(self, values: list[np.ndarray]) -> np.ndarray:
        """The columns stacked as stored into this builder's reused buffer.

        Returns
        -------
        numpy.ndarray, shape (K, n), C-contiguous, dtype ``np.result_type(*values)``
            A view of a buffer kept from batch to batch (a fresh multi-MB array
            per batch costs its page faults); valid until the next call.
        """
        shape, dtype = (len(values), len(values[0])), np.result_type(*values)
        size = shape[0] * shape[1]
        if self._buffer is None or self._buffer.dtype != dtype or self._buffer.size < size:
            self._buffer = np.empty(size, dtype)
        return np.stack(values, out=self._buffer[:size].reshape(shape))

    def _add_probabilities(
        self, table: pa.Table, cols, labels, groups, ctx: Context, renormalize: bool
    ) -> None:
        from .kernel import summarize_block

        k = len(cols.values)
        values = self.stacked(cols.values)
        exact = exact_tolerance(k)
        checks = []
        for name, rows in groups:
            block, y = (values, labels) if rows is None else (values[:, rows], labels[rows])
            checks.append(summarize_block(block, y, exact, self._model(name, cols.classes)))
        bad = sum(c.bad for c in checks)
        largest = max(c.largest for c in checks)
        if bad:
            self._loader_checks(table, cols, ctx, renormalize)  # raises, or warns
            raise CalibrationInputError(
                f"{ctx.display}: {bad:,} probability rows cannot be summarised (NaN, negative "
                "values or a zero sum); drop or fix them."
            )
        if max(c.deviation for c in checks) > silent_tolerance(k) or (
            largest > 1 and not renormalize
        ):
            probability_scale(cols, ctx, renormalize)  # raises, or warns of renormalised rows

    def summaries(self) -> Summaries:
        """One :class:`ModelSummary` per model added, by name."""
        return merge_summaries(
            [
                {name: ModelSummary.of_totals(name, classes, t)}
                for (name, classes), t in self._totals.items()
            ]
        )


def summarize(predictions: list[Predictions]) -> Summaries:
    """One :class:`ModelSummary` per model of a partition, by name."""
    builder = SummaryBuilder()
    for pred in predictions:
        builder.add_predictions(pred)
    return builder.summaries()


def merge_summaries(parts: list[Summaries]) -> Summaries:
    """Merge partitions' summaries by model (addition; models keep first-seen order)."""
    out: Summaries = {}
    for part in parts:
        for name, summary in part.items():
            out[name] = out[name] + summary if name in out else summary
    return out
