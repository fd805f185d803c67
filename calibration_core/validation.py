"""The checks of every input of the core: arrays and arguments.

Every public function of the core funnels its inputs through these checks,
so that bad input raises :class:`CalibrationInputError` with a message that
says what is wrong, where, and how to fix it, and the same argument is
accepted or refused alike everywhere.

Arrays (probability matrices, score vectors, labels)
    The checks touch each value as few times as possible (a min, a max and a
    row sum per cache-sized block, see :func:`prob_blocks`), because the
    metrics are benchmarked against a plain ``np.bincount`` pass. Only when a
    cheap check fails is the input scanned again, to name the offending rows.
Arguments
    Whole numbers (:func:`check_whole_number`, e.g. resample counts),
    numbers in (0, 1) (:func:`check_fraction`; levels: :func:`check_level`),
    non-negative numbers (:func:`check_non_negative`, e.g. costs) and seeds
    (:func:`check_seed`). Bin
    counts and schemes are checked by
    :func:`calibration_core.binning.check_binning_args`, beside the bin limit.
"""

from __future__ import annotations

import numpy as np

from .binning import BLOCK_ELEMENTS, block_rows
from .errors import CalibrationInputError, describe_rows

#: Largest tolerated ``|row sum - 1|`` for a probability row.
ROW_SUM_TOLERANCE = 1e-6
#: Bit pattern of 1.0: non-negative float64 values order like their bits, and
#: negative values (sign bit) and NaN sort above it as unsigned integers.
_ONE_BITS = np.float64(1.0).view(np.uint64)


# ------------------------------------------------------------------ arguments
def check_whole_number(value, name: str, minimum: int = 1) -> int:
    """A whole number (Python or numpy int, not bool) ``>= minimum``, as an int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise CalibrationInputError(f"{name} must be a whole number >= {minimum}, got {value!r}.")
    if value < minimum:
        raise CalibrationInputError(
            f"{name} must be a whole number >= {minimum} (at least {minimum}), got {value!r}."
        )
    return int(value)


def _is_real(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def check_fraction(value, name: str, hint: str = "") -> float:
    """A number strictly between 0 and 1 (any real Python or numpy number), as a float.

    ``hint`` (e.g. ``" (e.g. 0.95 for 95%)"``) is added to the message after "1".
    """
    if not _is_real(value):
        raise CalibrationInputError(
            f"{name} must be a number strictly between 0 and 1{hint}, got {value!r}."
        )
    number = float(value)
    if not 0.0 < number < 1.0:
        raise CalibrationInputError(
            f"{name} must lie strictly between 0 and 1{hint}, got {value!r}."
        )
    return number


def check_level(level, name: str = "level") -> float:
    """A confidence or band level strictly between 0 and 1, as a float."""
    return check_fraction(level, name, " (e.g. 0.95 for 95%)")


def check_non_negative(value, name: str) -> float:
    """A finite number ``>= 0`` (any real Python or numpy number), as a float."""
    if not _is_real(value):
        raise CalibrationInputError(f"{name} must be a number, got {value!r}.")
    if not np.isfinite(value) or value < 0:
        raise CalibrationInputError(f"{name} must be a finite number >= 0, got {value!r}.")
    return float(value)


def check_seed(seed) -> np.random.Generator:
    """The random generator of a seed: None, a non-negative int, a SeedSequence or a Generator.

    The same int or SeedSequence gives the same stream; a Generator is used as it is.
    """
    if seed is None or isinstance(seed, (np.random.Generator, np.random.SeedSequence)):
        return np.random.default_rng(seed)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return np.random.default_rng(int(seed))
    raise CalibrationInputError(
        f"seed must be None, a non-negative int or a numpy Generator, got {seed!r}."
    )


# --------------------------------------------------------------------- arrays
def in_unit_interval(values: np.ndarray) -> bool:
    """True when every value is in [0, 1] (no NaN), in one pass for float64.

    As unsigned integers, the bits of float64 values in [+0, 1] are exactly
    those ``<= bits(1.0)``, so one integer ``max`` replaces a ``min`` and a
    ``max``; ``-0.0`` and non-float64 input take the two-pass check.
    """
    if values.dtype == np.float64 and values.view(np.uint64).max() <= _ONE_BITS:
        return True
    return bool(values.min() >= 0.0 and values.max() <= 1.0)


def _numeric_array(values, what: str, where: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == object:
        raise CalibrationInputError(
            f"{what}{where} is an object array; pass numbers (a float array), not Python "
            "objects or mixed types."
        )
    if arr.dtype.kind not in "biuf":
        raise CalibrationInputError(
            f"{what}{where} has dtype {arr.dtype}, not numbers; pass a float array."
        )
    return arr


def _loc(where: str) -> str:
    return f" in {where}" if where else ""


def _nonfinite_rows(arr: np.ndarray) -> np.ndarray:
    bad = ~np.isfinite(arr)
    if bad.ndim == 2:
        bad = bad.any(axis=1)
    return np.flatnonzero(bad)


def check_scores(scores, *, where: str = "", name: str = "scores") -> np.ndarray:
    """Validate a vector of scores in [0, 1].

    Parameters
    ----------
    scores : array-like, shape (N,)
        Probabilities of the positive class (or confidences).
    where : str
        Where the values came from, for messages (a file, a column).
    name : str
        What the values are called in messages.

    Returns
    -------
    numpy.ndarray, shape (N,), float64
        The scores (no copy when already float64).
    """
    loc = _loc(where)
    arr = _numeric_array(scores, name, loc)
    if arr.ndim != 1:
        raise CalibrationInputError(
            f"{name}{loc} must be one-dimensional (N,), got shape {arr.shape}."
        )
    if arr.size == 0:
        raise CalibrationInputError(f"{name}{loc} is empty: there are no predictions to score.")
    arr = arr.astype(np.float64, copy=False)
    if in_unit_interval(arr):
        return arr
    lo, hi = arr.min(), arr.max()
    if not (lo >= 0.0 and hi <= 1.0):  # also catches NaN, which fails every comparison
        bad = _nonfinite_rows(arr)
        if bad.size:
            raise CalibrationInputError(
                f"{name}{loc} contain NaN or infinite values at {describe_rows(bad)}; "
                "drop or fix those rows."
            )
        bad = np.flatnonzero((arr < 0) | (arr > 1))
        hint = (
            " They look like logits or decision scores: pass probabilities, or convert "
            "them (e.g. Predictions.from_logits, or a sigmoid)."
            if lo < 0 or hi > 1
            else ""
        )
        raise CalibrationInputError(
            f"{name}{loc} must lie in [0, 1]; found values from {lo:.6g} to {hi:.6g}, "
            f"outside at {describe_rows(bad)}.{hint}"
        )
    return arr


def prob_array(probs, *, where: str = "") -> np.ndarray:
    """Shape and dtype checks of probability input, without looking at the values.

    Returns
    -------
    numpy.ndarray, shape (N, K) with K >= 2 and N >= 1, or (N,) binary scores
        The input as an array (not converted, not copied).
    """
    loc = _loc(where)
    arr = _numeric_array(probs, "probabilities", loc)
    if arr.ndim == 1:
        if arr.size == 0:
            raise CalibrationInputError(
                f"probabilities{loc} are empty: there are no predictions to score."
            )
        return arr
    if arr.ndim != 2:
        raise CalibrationInputError(
            f"probabilities{loc} must be (N, K) rows or an (N,) binary score, "
            f"got shape {arr.shape}."
        )
    n, k = arr.shape
    if n == 0:
        raise CalibrationInputError(f"probabilities{loc} are empty: there are no rows to score.")
    if k < 2:
        raise CalibrationInputError(
            f"probabilities{loc} have {k} column; give one column per class (K >= 2), "
            "or pass an (N,) vector of positive-class scores for a binary problem."
        )
    return arr


def row_sums(block: np.ndarray) -> np.ndarray:
    """Row sums of an (n, K) float64 block, shape (n,) (the cheapest way for each K)."""
    if block.shape[1] == 2:
        return block[:, 0] + block[:, 1]
    return np.einsum("ij->i", block)


def _block_values_ok(block: np.ndarray, tol: float, check_max: bool) -> bool:
    """Cheap checks of one block: min (and max) of the values, min and max of the row sums.

    NaN fails every comparison, so it is caught without a separate pass.
    """
    if check_max:
        if not in_unit_interval(block):
            return False
    elif not block.min() >= 0.0:
        return False
    sums = row_sums(block)
    return bool(sums.min() >= 1.0 - tol and sums.max() <= 1.0 + tol)


def raise_prob_error(probs, *, where: str = "", tol: float = ROW_SUM_TOLERANCE) -> None:
    """Raise the specific error of probability input that failed a cheap check."""
    loc = _loc(where)
    arr = np.asarray(prob_array(probs, where=where), dtype=np.float64)
    if arr.ndim == 1:
        check_scores(arr, where=where, name="probabilities")
        arr = np.column_stack([1.0 - arr, arr])
    _diagnose_values(arr, loc, tol)
    raise CalibrationInputError(  # pragma: no cover - the diagnosis always finds it
        f"probabilities{loc} must be rows in [0, 1] that sum to 1 (tolerance {tol:g})."
    )


def _diagnose_values(arr: np.ndarray, loc: str, tol: float) -> np.ndarray:
    """Raise the detailed message for bad values; return the row sums when fine."""
    lo, hi = arr.min(), arr.max()
    if not (lo >= 0.0 and hi <= 1.0):
        bad = _nonfinite_rows(arr)
        if bad.size:
            raise CalibrationInputError(
                f"probabilities{loc} contain NaN or infinite values at {describe_rows(bad)}; "
                "drop or fix those rows."
            )
        bad = np.flatnonzero(((arr < 0) | (arr > 1)).any(axis=1))
        raise CalibrationInputError(
            f"probabilities{loc} must lie in [0, 1]; found values from {lo:.6g} to {hi:.6g} "
            f"at {describe_rows(bad)}. They look like logits: load them as logits "
            "(logit_<class> columns, or Predictions.from_logits), which applies a softmax."
        )
    sums = row_sums(arr)
    off = ~((sums >= 1.0 - tol) & (sums <= 1.0 + tol))  # the comparisons of the fast check
    if off.any():
        bad = np.flatnonzero(off)
        raise CalibrationInputError(
            f"probability rows{loc} must sum to 1 (tolerance {tol:g}); "
            f"{describe_rows(bad)} sum to {', '.join(f'{s:.6g}' for s in sums[bad[:3]])}. "
            "Fix the export, or ask for renormalisation (renormalize=True / "
            "--renormalize) if the rows are unnormalised scores."
        )
    return sums


def prob_blocks(
    probs,
    *,
    where: str = "",
    tol: float = ROW_SUM_TOLERANCE,
    check_max: bool = True,
    rows: int | None = None,
):
    """Validate probability rows block by block, yielding ``(start, block)``.

    Each block is checked while it is in cache (min, max and row sums), and
    handed on as float64 C-contiguous rows of shape (n, K) for the caller's
    own pass, so validation and computation read the input from memory once.
    An (N,) binary score becomes ``[1 - s, s]`` rows one block at a time.
    On the first bad block the whole input is diagnosed and the specific
    :class:`CalibrationInputError` of :func:`check_prob_matrix` is raised
    (results of earlier blocks are discarded by the caller).

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
    where : str
        Where the values came from, for messages.
    tol : float
        Tolerated ``|row sum - 1|``.
    check_max : bool
        Check ``max <= 1`` here; a caller that computes each row's maximum
        anyway (the top-label confidence) may check it itself and call
        :func:`raise_prob_error` when it exceeds 1.
    rows : int, optional
        Rows per block; by default :func:`~calibration_core.binning.block_rows`.

    Yields
    ------
    start : int
        Index of the block's first row.
    block : numpy.ndarray, shape (n, K), float64
    """
    arr = prob_array(probs, where=where)
    if arr.ndim == 1:
        step = rows or BLOCK_ELEMENTS // 2
        for start in range(0, arr.shape[0], step):
            s = arr[start : start + step]
            if not in_unit_interval(s):
                raise_prob_error(arr, where=where, tol=tol)
            block = np.empty((s.shape[0], 2))
            block[:, 1] = s
            np.subtract(1.0, block[:, 1], out=block[:, 0])
            yield start, block
        return
    k = arr.shape[1]
    step = rows or block_rows(k)
    for start in range(0, arr.shape[0], step):
        block = np.ascontiguousarray(arr[start : start + step], dtype=np.float64)
        if not _block_values_ok(block, tol, check_max):
            raise_prob_error(arr, where=where, tol=tol)
        yield start, block


def check_prob_matrix(
    probs, *, where: str = "", renormalize: bool = False, tol: float = ROW_SUM_TOLERANCE
) -> np.ndarray:
    """Validate an (N, K) matrix of probability rows, or promote (N,) binary scores.

    Parameters
    ----------
    probs : array-like, shape (N, K) or (N,)
        Rows on the probability simplex; an (N,) vector is read as the
        positive-class score of a binary problem and becomes ``[1 - s, s]``.
    where : str
        Where the values came from, for messages.
    renormalize : bool
        Divide each row by its sum instead of rejecting rows whose sum is off
        by more than ``tol`` (all-zero rows are still rejected).
    tol : float
        Tolerated ``|row sum - 1|``.

    Returns
    -------
    numpy.ndarray, shape (N, K), float64, C-contiguous
    """
    loc = _loc(where)
    arr = prob_array(probs, where=where)
    if arr.ndim == 1:
        scores = check_scores(arr, where=where, name="probabilities")
        return np.column_stack([1.0 - scores, scores])
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    # Fast path: cache-sized blocks, each read once for its min, max and row sums.
    step = block_rows(arr.shape[1])
    if all(
        _block_values_ok(arr[start : start + step], tol, True)
        for start in range(0, arr.shape[0], step)
    ):
        return arr
    if renormalize and arr.min() >= 0.0 and arr.max() <= 1.0:
        sums = row_sums(arr)
        zero = np.flatnonzero(sums <= 0)
        if zero.size:
            raise CalibrationInputError(
                f"probability rows{loc} at {describe_rows(zero)} are all zero and cannot be "
                "renormalised; drop or fix them."
            )
        return arr / sums[:, None]
    _diagnose_values(arr, loc, tol)  # raises with the offending rows
    raise CalibrationInputError(  # pragma: no cover - a row sum right at the tolerance
        f"probability rows{loc} must sum to 1 (tolerance {tol:g}); fix the export or ask "
        "for renormalisation."
    )


def check_labels(labels, n: int, n_classes: int, *, where: str = "") -> np.ndarray:
    """Validate integer class labels in ``0..n_classes-1``.

    Parameters
    ----------
    labels : array-like, shape (N,)
        Integer (or boolean) class indices.
    n : int
        Expected length (number of prediction rows).
    n_classes : int
        K, the number of classes.
    where : str
        Where the labels came from, for messages.

    Returns
    -------
    numpy.ndarray, shape (N,), intp
    """
    loc = _loc(where)
    arr = np.asarray(labels)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise CalibrationInputError(
            f"labels{loc} must be integer class indices 0..{n_classes - 1}, got dtype "
            f"{arr.dtype}. Map string labels to indices first (load_predictions does this)."
        )
    if arr.ndim != 1:
        raise CalibrationInputError(f"labels{loc} must be one-dimensional (N,), got {arr.shape}.")
    if arr.shape[0] != n:
        raise CalibrationInputError(
            f"labels{loc} have {arr.shape[0]} entries but there are {n} prediction rows; "
            "give exactly one label per row."
        )
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        if bad.size:
            raise CalibrationInputError(
                f"labels{loc} must be whole class indices; {describe_rows(bad)} hold "
                f"{', '.join(repr(float(v)) for v in arr[bad[:3]])}."
            )
    if arr.dtype.kind in "iu" and arr.size:
        # Negative labels wrap to huge unsigned values: one max checks both ends.
        unsigned = arr.view(arr.dtype.str.replace("i", "u"))
        if unsigned.max() < n_classes:
            return arr.astype(np.intp, copy=False)
    if arr.dtype != np.intp:
        arr = arr.astype(np.intp)
    if arr.size:
        lo, hi = arr.min(), arr.max()
        if lo < 0 or hi >= n_classes:
            bad = np.flatnonzero((arr < 0) | (arr >= n_classes))
            raise CalibrationInputError(
                f"labels{loc} must lie in 0..{n_classes - 1} (one per class); "
                f"{describe_rows(bad)} hold {', '.join(str(int(v)) for v in arr[bad[:3]])}. "
                "Check that the label column matches the probability columns."
            )
    return arr


def check_binary_targets(targets, n: int, *, where: str = "") -> np.ndarray:
    """Validate 0/1 targets of a one-vs-rest or binary problem.

    Returns
    -------
    numpy.ndarray, shape (N,), intp with values in {0, 1}
    """
    return check_labels(targets, n, 2, where=where)
