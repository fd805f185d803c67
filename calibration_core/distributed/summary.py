"""Mergeable per-model statistics of a partition: :class:`ModelSummary`.

A summary holds counts and sums only (cell statistics of the top-label
confidence and of every class column, hits, Brier and log-loss sums), so the
summaries of two partitions merge by addition (:func:`merge_summaries`) in
any order and any tree, and the merged summary answers every measure of the
core for every equal-width bin count in 1..100 without reading rows again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import Binning, BinStatistics, block_rows
from ..errors import CalibrationInputError
from ..metrics import LOG_LOSS_EPS
from ..notions import check_ece_notion, top_label_block
from ..predictions import Predictions
from ..reliability import ReliabilityCurve
from .cells import CellStatistics

__all__ = ["ModelSummary", "merge_summaries", "summarize"]

Summaries = dict[str, "ModelSummary"]


@dataclass(frozen=True, eq=False)
class ModelSummary:
    """Mergeable statistics of one model's rows.

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
    """

    name: str
    class_names: tuple[str, ...]
    n_samples: int
    hits: int
    brier_sum: float
    log_loss_sum: float
    confidence: CellStatistics
    classwise: CellStatistics

    @classmethod
    def of(cls, pred: Predictions) -> ModelSummary:
        """The summary of one :class:`~calibration_core.Predictions`: one pass, in blocks.

        Every statistic of a block (top label, cells of every column, Brier and
        log-loss terms) is taken while the block is in cache; the sums are those
        of :func:`~calibration_core.brier_score` and
        :func:`~calibration_core.log_loss`, added in another order.
        """
        probs, labels = pred.probs, pred.labels
        n, k = probs.shape
        conf, classes = CellStatistics.empty(), CellStatistics.empty(k)
        hits, brier, loss = 0, 0.0, 0.0
        step = max(block_rows(k), 1 << 14)
        for start in range(0, n, step):
            block = np.ascontiguousarray(probs[start : start + step], dtype=np.float64)
            y = np.asarray(labels[start : start + step], dtype=np.intp)
            rows = block.shape[0]
            true = block.reshape(-1).take(y + np.arange(0, rows * k, k))
            top, ok = top_label_block(block, y)
            hits += int(np.count_nonzero(ok))
            # Brier: sum_j (p_j - y_j)^2 = sum_j p_j^2 - 2 p_true + 1 per row.
            brier += float(np.einsum("ij,ij->", block, block)) - 2.0 * float(true.sum()) + rows
            loss -= float(np.log(np.clip(true, LOG_LOSS_EPS, 1.0, out=true), out=true).sum())
            conf = conf + CellStatistics.of_scores(top, ok)
            classes = classes + CellStatistics.of_classes(block, y)
        return cls(pred.name, tuple(pred.class_names), n, hits, brier, loss, conf, classes)

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
        )

    # ------------------------------------------------------------ measures
    @property
    def n_classes(self) -> int:
        """K."""
        return len(self.class_names)

    def statistics(self, notion: str = "confidence", n_bins: int = 15) -> BinStatistics:
        """Equal-width bin statistics of a notion, as the in-memory core computes them.

        Parameters
        ----------
        notion : {"confidence", "classwise", "binary"}
            Top label; every class against the rest (arrays of shape (K, M));
            the positive class of a binary model (K = 2).
        n_bins : int
            M, in 1..100.
        """
        if notion == "binary":
            if self.n_classes != 2:
                raise CalibrationInputError(
                    f"model {self.name!r} has {self.n_classes} classes; the binary notion needs 2."
                )
            return self.classwise.bins(n_bins)[1]
        if check_ece_notion(notion) == "classwise":
            return self.classwise.bins(n_bins)
        return self.confidence.bins(n_bins)

    def reliability_curve(self, notion: str = "confidence", n_bins: int = 15) -> ReliabilityCurve:
        """The reliability curve of a single-column notion (confidence or binary)."""
        if notion == "classwise":
            raise CalibrationInputError(
                "a reliability curve has one column: use notion 'confidence' or 'binary', or "
                "statistics('classwise', M)[k] for class k."
            )
        return ReliabilityCurve.from_statistics(
            self.statistics(notion, n_bins), Binning("width", n_bins)
        )

    def metrics(
        self, n_bins: int = 15, frequency: dict[str, BinStatistics] | None = None
    ) -> dict[str, float]:
        """The metric columns of the comparison table (``score_probs``'s names and rules).

        Parameters
        ----------
        n_bins : int
            M of the equal-width ECE/MCE columns (1..100).
        frequency : dict, optional
            This model's entry of
            :func:`~calibration_core.distributed.frequency.frequency_statistics`:
            the ECE/MCE columns then use its equal-frequency bins.
        """
        if frequency is None:
            conf = self.statistics("confidence", n_bins)
            cw = self.statistics("classwise", n_bins)
        else:
            conf, cw = frequency["confidence"], frequency["classwise"]
        return {
            "accuracy": self.hits / self.n_samples,
            "confidence_ece": float(conf.ece()),
            "confidence_mce": float(conf.mce()),
            "classwise_ece": float(np.mean(cw.ece())),
            "classwise_mce": float(np.max(cw.mce())),
            "brier_score": self.brier_sum / self.n_samples,
            "log_loss": self.log_loss_sum / self.n_samples,
        }


def summarize(predictions: list[Predictions]) -> Summaries:
    """One :class:`ModelSummary` per model of a partition, by name."""
    return merge_summaries([{p.name: ModelSummary.of(p)} for p in predictions])


def merge_summaries(parts: list[Summaries]) -> Summaries:
    """Merge partitions' summaries by model (addition; models keep first-seen order)."""
    out: Summaries = {}
    for part in parts:
        for name, summary in part.items():
            out[name] = out[name] + summary if name in out else summary
    return out
