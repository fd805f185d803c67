"""How much does the ECE depend on the binning? :func:`ece_sensitivity`.

The ECE of the same predictions changes with the number of bins and the
binning scheme (survey arXiv 2112.10327, Pitfalls; Pavlovic 2025, §3.2).
This sweep computes it for every bin count and both schemes, from the
load-time precomputation of :class:`~calibration_core.Predictions`: the
scores of a notion are sorted once (cached on the Predictions), and each
setting then costs ``M`` binary searches, O(M log N), with no pass over the
rows. The values are those of :func:`calibration_core.confidence_ece` (and
friends) for the same settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..binning import MAX_BINS, SCHEMES, Scheme, SortedScores, width_thresholds
from ..errors import CalibrationInputError
from ..notions import check_ece_notion
from ..predictions import Predictions, measure_inputs


@dataclass(frozen=True, eq=False)
class EceSensitivity:
    """ECE for a range of bin counts and both schemes.

    Attributes
    ----------
    n_bins : numpy.ndarray, shape (B,), int
        The bin counts, in the order given.
    width : numpy.ndarray, shape (B,)
        ECE with equal-width bins for each count.
    frequency : numpy.ndarray, shape (B,)
        ECE with equal-frequency bins for each count.
    notion : str
        "confidence", "binary", "class" (one class vs rest) or "classwise"
        (the mean over classes of the one-vs-rest ECE).
    class_index : int or None
    """

    n_bins: np.ndarray
    width: np.ndarray
    frequency: np.ndarray
    notion: str
    class_index: int | None = None

    def by_scheme(self, scheme: Scheme) -> np.ndarray:
        """The ECE curve of one scheme ("width" or "frequency"), shape (B,)."""
        if scheme not in SCHEMES:
            raise CalibrationInputError(f"scheme must be 'width' or 'frequency', got {scheme!r}.")
        return self.width if scheme == "width" else self.frequency

    @property
    def spread(self) -> float:
        """Largest minus smallest ECE over every bin count and both schemes."""
        both = np.concatenate((self.width, self.frequency))
        return float(both.max() - both.min())

    def to_frame(self):
        """A pandas DataFrame with columns ``n_bins``, ``width``, ``frequency``."""
        import pandas as pd

        return pd.DataFrame(
            {"n_bins": self.n_bins, "width": self.width, "frequency": self.frequency}
        )


def _bin_counts(bins) -> np.ndarray:
    values = np.asarray(list(bins) if isinstance(bins, Iterable) else [bins])
    if values.size == 0 or values.ndim != 1 or values.dtype.kind not in "iu":
        raise CalibrationInputError(
            f"bins must be a non-empty sequence of whole bin counts, e.g. range(2, 101); "
            f"got {bins!r}."
        )
    if values.min() < 1 or values.max() > MAX_BINS:
        raise CalibrationInputError(f"bin counts must lie between 1 and {MAX_BINS}; got {bins!r}.")
    return values.astype(np.int64)


@lru_cache(maxsize=8)
def _all_width_thresholds(counts: tuple[int, ...]) -> np.ndarray:
    thresholds = np.concatenate([width_thresholds(m) for m in counts])
    thresholds.flags.writeable = False  # shared by every caller of the cache
    return thresholds


def _ece_curve(sorted_scores: SortedScores, counts: np.ndarray, scheme: Scheme) -> np.ndarray:
    """ECE of one sorted score column for every bin count, shape (B,).

    All settings are laid end to end: setting ``b`` with ``M_b`` bins owns
    ``M_b + 1`` bounds (sorted-row positions ``0, cuts..., N``), found with
    one ``searchsorted`` for all settings; per-bin sums are differences of
    the cumulative sums at consecutive bounds, exactly as
    :meth:`SortedScores.statistics` computes them for one setting.
    """
    scores = sorted_scores.scores
    n = scores.shape[0]
    if scheme == "width":
        thresholds = _all_width_thresholds(tuple(int(m) for m in counts))
    else:
        positions = np.concatenate([(np.arange(1, m, dtype=np.int64) * n) // m for m in counts])
        thresholds = scores[positions]
    starts = np.concatenate(([0], np.cumsum(counts + 1)[:-1]))
    ends = starts + counts  # index of each setting's last bound (N)
    interior = np.ones(int(np.sum(counts + 1)), dtype=bool)
    interior[starts] = False
    interior[ends] = False
    bounds = np.zeros(interior.shape[0], dtype=np.int64)
    bounds[ends] = n
    bounds[interior] = np.searchsorted(scores, thresholds, side="left")
    count = np.diff(bounds)
    sum_score = np.diff(sorted_scores.cum_score[bounds])
    sum_target = np.diff(sorted_scores.cum_target[bounds])
    gap = np.abs(sum_target - np.where(count == 0, 0.0, sum_score))
    gap[ends[:-1]] = 0.0  # the step from one setting's last bound to the next one's first
    return np.add.reduceat(gap, starts) / n


def ece_sensitivity(
    probs,
    labels=None,
    *,
    notion: str | None = None,
    bins=range(2, 101),
    class_index: int | None = None,
) -> EceSensitivity:
    """ECE for every bin count in ``bins`` and both schemes, from sorted scores.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
        Probability rows; a Predictions reuses (and fills) its cache of
        sorted scores, so later sweeps and re-binnings are cheaper.
    labels : array-like, shape (N,), optional
        Taken from ``probs`` when it is a Predictions.
    notion : {"confidence", "binary", "class", "classwise"}, optional
        None: ``"binary"`` for an (N,) vector, ``"confidence"`` for probability rows.
    bins : iterable of int
        Bin counts to evaluate (default 2..100).
    class_index : int, optional
        The class for ``notion="class"``.

    Returns
    -------
    EceSensitivity
        Arrays ready to plot: ``n_bins``, ``width``, ``frequency``.
    """
    p, y, notion = measure_inputs(probs, labels, notion=notion, measure="ece_sensitivity")
    # A Predictions with its own labels keeps its cache of sorted scores.
    own = isinstance(probs, Predictions) and labels is None
    pred = probs if own else Predictions.from_probs(p, y)
    check_ece_notion(notion)
    counts = _bin_counts(bins)
    index = None
    if notion == "class":
        if (
            isinstance(class_index, bool)
            or not isinstance(class_index, (int, np.integer))
            or not 0 <= class_index < pred.n_classes
        ):
            raise CalibrationInputError(
                f"one-class-vs-rest needs a class index in 0..{pred.n_classes - 1}, "
                f"got {class_index!r}."
            )
        index = int(class_index)
    columns: list[tuple[str, int | None]]
    if notion == "classwise":
        columns = [("class", j) for j in range(pred.n_classes)]
    else:
        columns = [(notion, index)]
    sorted_columns = [pred.sorted_scores(n, k) for n, k in columns]
    curves = {
        scheme: np.mean([_ece_curve(s, counts, scheme) for s in sorted_columns], axis=0)
        for scheme in SCHEMES
    }
    return EceSensitivity(
        n_bins=counts,
        width=curves["width"],
        frequency=curves["frequency"],
        notion=notion,
        class_index=index,
    )
