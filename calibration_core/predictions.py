"""`Predictions`: one model's probabilities (and logits) with the true labels.

A `Predictions` is validated once, made read-only, and keeps the load-time
precomputation that makes re-binning cheap: for each notion the scores sorted
once with cumulative sums (:class:`~calibration_core.binning.SortedScores`),
built lazily on first use and then reused by every bin count and scheme.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .binning import Binning, BinStatistics, SortedScores
from .errors import CalibrationInputError, describe_rows
from .notions import notion_scores, top_label
from .validation import check_labels, check_prob_matrix, check_scores, prob_array


def _readonly(arr: np.ndarray, source=None) -> np.ndarray:
    """A read-only contiguous array; copied when it is (or views) the caller's ``source``.

    Freezing the caller's own array in place would both surprise them (their
    array turns read-only) and let them thaw it and change our data.
    """
    arr = np.ascontiguousarray(arr)
    if (
        isinstance(source, np.ndarray)
        and source.flags.writeable
        and np.may_share_memory(arr, source)
    ):
        arr = arr.copy()
    if arr.flags.writeable and arr.flags.owndata:
        arr.flags.writeable = False
    elif arr.flags.writeable:
        arr = arr.copy()
        arr.flags.writeable = False
    return arr


def _class_names(names, k: int) -> tuple[str, ...]:
    if names is None:
        return tuple(str(j) for j in range(k))
    names = tuple(str(n) for n in names)
    if len(names) != k:
        raise CalibrationInputError(
            f"{len(names)} class names were given for {k} probability columns; "
            "give one name per column."
        )
    if len(set(names)) != k:
        dup = sorted({n for n in names if names.count(n) > 1})
        raise CalibrationInputError(f"class names must be unique; repeated: {', '.join(dup)}.")
    return names


def stable_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax computed as ``exp(log_softmax(z))``.

    The same numpy operations, in the same order, as
    ``scipy.special.log_softmax(z, axis=1)`` (so the same bits; a test checks
    it), without importing ``scipy.special``, which is slow to import and
    not otherwise needed to read logits.

    Parameters
    ----------
    logits : numpy.ndarray, shape (N, K)

    Returns
    -------
    numpy.ndarray, shape (N, K)
        Rows on the simplex; no overflow for large logits.
    """
    x = np.asarray(logits)
    x_max = np.max(x, axis=1, keepdims=True)
    x_max[~np.isfinite(x_max)] = 0
    shifted = x - x_max
    with np.errstate(divide="ignore"):
        log_norm = np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return np.exp(shifted - log_norm)


@dataclass(frozen=True, eq=False)
class Predictions:
    """One model's predicted probabilities and the true labels.

    Build it with :meth:`from_probs`, :meth:`from_logits` or
    :meth:`from_scores` (which validate), or with
    :func:`~calibration_core.load_predictions`.

    Attributes
    ----------
    probs : numpy.ndarray, shape (N, K), float64, read-only
        Rows on the probability simplex.
    labels : numpy.ndarray, shape (N,), intp, read-only
        True class indices in 0..K-1.
    class_names : tuple of str, length K
    logits : numpy.ndarray, shape (N, K), or None
        Kept when the predictions were given as logits: maps such as
        temperature scaling use them.
    name : str
        The model's name.
    score_column : bool
        True when read from one positive-class ``score`` column
        (:meth:`from_scores`): writers of calibrated predictions give them back
        in that layout.
    extra : Mapping of str to numpy.ndarray
        The file's other columns (ids, groups, timestamps, features), each of
        shape (N,), read-only, by column name: what the loader does not use for
        the predictions travels with them (as the command line's ``apply``
        keeps them), for slices and time windows (:mod:`calibration_core.slices`).
        Use :func:`with_extra` to attach them (a plain dict, so that predictions
        pickle; its arrays are read-only).
    """

    probs: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]
    logits: np.ndarray | None = None
    name: str = "model"
    score_column: bool = False
    extra: Mapping[str, np.ndarray] = field(default_factory=dict, repr=False)
    _sorted: dict = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------- constructors
    @classmethod
    def from_probs(
        cls,
        probs,
        labels,
        *,
        class_names: Sequence[str] | None = None,
        name: str = "model",
        renormalize: bool = False,
        where: str = "",
    ) -> Predictions:
        """Predictions from probability rows (or an (N,) binary score).

        Parameters
        ----------
        probs : array-like, shape (N, K) or (N,)
        labels : array-like, shape (N,)
            Class indices in 0..K-1.
        class_names : sequence of str, optional
            Defaults to ``"0".."K-1"``.
        name : str
        renormalize : bool
            Divide rows by their sum instead of rejecting rows that do not sum to 1.
        where : str
            Where the data came from, for error messages.
        """
        p = check_prob_matrix(probs, where=where, renormalize=renormalize)
        return cls._build(_readonly(p, probs), labels, class_names, None, name, where)

    @classmethod
    def from_logits(
        cls,
        logits,
        labels,
        *,
        class_names: Sequence[str] | None = None,
        name: str = "model",
        where: str = "",
    ) -> Predictions:
        """Predictions from logits, with a numerically stable softmax.

        Parameters
        ----------
        logits : array-like, shape (N, K)
            Unnormalised log-probabilities (any real values).
        labels : array-like, shape (N,)
        """
        loc = f" in {where}" if where else ""
        z = np.asarray(logits)
        if z.dtype == object or z.dtype.kind not in "biuf":
            raise CalibrationInputError(f"logits{loc} must be numbers, got dtype {z.dtype}.")
        if z.ndim != 2 or z.shape[1] < 2 or z.shape[0] == 0:
            raise CalibrationInputError(
                f"logits{loc} must be a non-empty (N, K) array with K >= 2, got shape {z.shape}."
            )
        z = np.ascontiguousarray(z, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(z).all(axis=1))
        if bad.size:
            raise CalibrationInputError(
                f"logits{loc} contain NaN or infinite values at {describe_rows(bad)}; "
                "drop or fix those rows."
            )
        z = _readonly(z, logits)
        return cls._build(stable_softmax(z), labels, class_names, z, name, where)

    @classmethod
    def from_scores(
        cls,
        scores,
        labels,
        *,
        class_names: Sequence[str] | None = None,
        name: str = "model",
        where: str = "",
    ) -> Predictions:
        """Binary predictions (K = 2) from one positive-class score column.

        Parameters
        ----------
        scores : array-like, shape (N,)
            Probability of class 1, in [0, 1].
        labels : array-like, shape (N,)
            0/1 labels.
        """
        s = check_scores(scores, where=where, name="scores")
        probs = np.column_stack([1.0 - s, s])
        return cls._build(probs, labels, class_names, None, name, where, score_column=True)

    @classmethod
    def _build(
        cls, probs, labels, class_names, logits, name, where, score_column=False
    ) -> Predictions:
        n, k = probs.shape
        y = check_labels(labels, n, k, where=where)
        return cls(
            probs=_readonly(probs),
            labels=_readonly(y, labels),
            class_names=_class_names(class_names, k),
            logits=None if logits is None else _readonly(logits),
            name=str(name),
            score_column=score_column,
        )

    # ------------------------------------------------------------- basics
    @property
    def n_samples(self) -> int:
        """N."""
        return int(self.probs.shape[0])

    @property
    def n_classes(self) -> int:
        """K."""
        return int(self.probs.shape[1])

    def __len__(self) -> int:
        return self.n_samples

    def __repr__(self) -> str:
        kind = "logits" if self.logits is not None else "probabilities"
        return (
            f"Predictions(name={self.name!r}, n_samples={self.n_samples}, "
            f"n_classes={self.n_classes}, from {kind})"
        )

    def subset(self, rows, *, name: str | None = None) -> Predictions:
        """The predictions of some rows (an index array or boolean mask)."""
        rows = np.asarray(rows)
        return Predictions(
            probs=_readonly(self.probs[rows]),
            labels=_readonly(self.labels[rows]),
            class_names=self.class_names,
            logits=None if self.logits is None else _readonly(self.logits[rows]),
            name=self.name if name is None else name,
            score_column=self.score_column,
            extra={key: _readonly(col[rows]) for key, col in self.extra.items()},
        )

    @cached_property
    def log_probs(self) -> np.ndarray:
        """Log-probabilities, shape (N, K): from the logits when kept, else ``ln p``."""
        if self.logits is not None:
            from scipy.special import log_softmax

            return log_softmax(self.logits, axis=1)
        with np.errstate(divide="ignore"):
            return np.log(self.probs)

    @cached_property
    def confidence(self) -> np.ndarray:
        """Top-label confidence, shape (N,)."""
        return top_label(self.probs, self.labels)[0]

    @cached_property
    def correct(self) -> np.ndarray:
        """1 where the top class is the label, shape (N,)."""
        return top_label(self.probs, self.labels)[1]

    # ------------------------------------------------- precomputed binning
    def sorted_scores(self, notion: str = "confidence", class_index: int | None = None):
        """The load-time sorted scores of one notion (built once, then cached).

        Parameters
        ----------
        notion : {"confidence", "class", "binary"}
        class_index : int, optional
            The class for ``notion="class"``.

        Returns
        -------
        SortedScores
        """
        key = (notion, int(class_index) if notion == "class" and class_index is not None else None)
        cached = self._sorted.get(key)
        if cached is None:
            scores, targets = notion_scores(self.probs, self.labels, notion, class_index)
            cached = SortedScores(scores, targets)
            self._sorted[key] = cached
        return cached

    def statistics(
        self, binning: Binning, notion: str = "confidence", class_index: int | None = None
    ) -> BinStatistics:
        """Per-bin statistics of one notion, from the cached sorted scores."""
        return binning.statistics_sorted(self.sorted_scores(notion, class_index))

    def classwise_statistics(self, binning: Binning) -> list[BinStatistics]:
        """One-vs-rest statistics of every class, from cached sorted scores."""
        return [self.statistics(binning, "class", j) for j in range(self.n_classes)]


def with_extra(pred: Predictions, columns: Mapping[str, np.ndarray]) -> Predictions:
    """The same predictions carrying other columns of the file (see ``Predictions.extra``).

    Parameters
    ----------
    pred : Predictions
    columns : mapping of str to array-like
        Each of shape (N,); frozen read-only (copied when they are the caller's).

    Returns
    -------
    Predictions
    """
    frozen = {}
    for key, col in columns.items():
        arr = np.asarray(col)
        if arr.ndim != 1 or arr.shape[0] != pred.n_samples:
            raise CalibrationInputError(
                f"column {key!r} has shape {arr.shape}; extra columns need one value per row "
                f"({pred.n_samples} rows)."
            )
        frozen[str(key)] = _readonly(arr, col)
    return Predictions(
        probs=pred.probs,
        labels=pred.labels,
        class_names=pred.class_names,
        logits=pred.logits,
        name=pred.name,
        score_column=pred.score_column,
        extra=frozen,
    )


#: The notion a measure uses when ``notion=None`` (every measure's default):
#: ``"binary"`` for one score column (an (N,) vector, or a Predictions read
#: from one, :meth:`Predictions.from_scores`), ``"confidence"`` for probability rows.
ONE_COLUMN_NOTION = "binary"
ROWS_NOTION = "confidence"


def one_column_refusal(measure: str) -> str:
    """The message refusing the top-label notion on a 1-D score vector, naming the right calls."""
    return (
        f"{measure} cannot use the top-label (confidence) notion on a 1-D score vector: "
        "a 1-D vector means P(class 1) of a binary problem, and folding it into top-label "
        "confidences answers another question (about half the right ECE for top-class "
        "confidences, with no error). For top-class confidences with a 0/1 correctness "
        "column, use binary_ece(conf, correct) (or notion='binary' in any measure); for a "
        "binary P(class 1), pass both columns: "
        "confidence_ece(np.column_stack([1 - p, p]), y)."
    )


def measure_inputs(
    probs,
    labels=None,
    *,
    notion: str | None = None,
    measure: str = "this measure",
    validate: bool = True,
) -> tuple[np.ndarray, np.ndarray, str]:
    """The inputs of every measure: ``(probs, labels)`` or a :class:`Predictions`, checked.

    One rule for every measure of the core:

    * ``probs`` is an (N, K) matrix of probability rows, an (N,) vector read as
      **P(class 1) of a binary problem** (never as top-class confidences), or a
      ``Predictions`` (whose labels are used when ``labels`` is None);
    * ``notion=None`` means ``"binary"`` for one score column (an (N,) vector,
      or a ``Predictions`` built by :meth:`Predictions.from_scores`) and
      ``"confidence"`` for probability rows;
    * the top-label notion on an (N,) vector is refused, with a message naming
      ``binary_ece(conf, correct)`` and ``confidence_ece(np.column_stack([1 - p, p]), y)``.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,), or Predictions
    labels : array-like, shape (N,), or None
        Class indices in 0..K-1 (0/1 for an (N,) vector); None only with a
        ``Predictions``.
    notion : {"confidence", "class", "binary", "classwise"} or None
        The measure's notion, None for its default (see above). Measures that
        do not depend on a notion leave it None and ignore the result.
    measure : str
        The measure's name, for messages.
    validate : bool
        Check the probability values and return (N, K) float64 rows; False
        returns the shape-checked input as it is ((N,) vectors stay (N,)), for
        the metrics that validate block by block while they compute
        (:func:`~calibration_core.validation.prob_blocks`).

    Returns
    -------
    probs : numpy.ndarray, shape (N, K), float64 (or the input, see ``validate``)
    labels : numpy.ndarray, shape (N,), intp
    notion : str
        ``notion``, or the default it stands for.

    Raises
    ------
    CalibrationInputError
        Missing labels, bad shapes or values, or the top-label notion on an (N,) vector.
    """
    if isinstance(probs, Predictions):
        y = (
            probs.labels
            if labels is None
            else check_labels(labels, probs.n_samples, probs.n_classes)
        )
        if notion is None:  # read from one score column: P(class 1), as an (N,) vector
            notion = ONE_COLUMN_NOTION if probs.score_column else ROWS_NOTION
        return probs.probs, y, notion
    if labels is None:
        raise CalibrationInputError(
            f"labels are missing in {measure}: pass the true class of every row, or a "
            "Predictions (which carries its labels) instead of a bare probability array."
        )
    arr = prob_array(probs)
    one_column = arr.ndim == 1
    if notion is None:
        notion = ONE_COLUMN_NOTION if one_column else ROWS_NOTION
    if one_column and notion == "confidence":
        raise CalibrationInputError(one_column_refusal(measure))
    y = check_labels(labels, arr.shape[0], 2 if one_column else arr.shape[1])
    return (check_prob_matrix(arr) if validate else arr), y, notion
