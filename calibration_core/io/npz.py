"""NumPy ``.npz`` archives -> :class:`Predictions` (``allow_pickle=False``, always).

Keys (case-insensitive):

* predictions: one of ``predictions``, ``probs``, ``probabilities``,
  ``scores`` (probability rows (N, K), or an (N,) positive-class score with
  0/1 labels), and/or ``logits`` (N, K). When logits and probabilities are both
  present, the logits are used (and kept) after checking that their softmax
  matches the probabilities;
* labels: one of ``labels``, ``ground_truth``, ``y``, ``target`` (or the key
  named by ``label_column``): integer class indices 0..K-1, booleans, or
  strings naming classes of ``class_names``;
* ``class_names`` (optional): K strings, in column order.

Rows are reported as 0-based array indices. netcal's record files (keys
``predictions`` float32, ``ground_truth`` int64) load as they are.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import replace

import numpy as np

from ..errors import CalibrationInputError
from ..predictions import Predictions, stable_softmax, with_extra
from .budget import MAX_NAME_LENGTH, DecodedBudget
from .checks import (
    Coded,
    Context,
    binary_labels,
    check_finite,
    check_probabilities,
    check_two_classes,
    labels_to_indices,
)
from .source import Source

PROB_KEYS = ("predictions", "probs", "probabilities", "scores")
LOGIT_KEY = "logits"
LABEL_KEYS = ("labels", "ground_truth", "y", "target")
CLASS_NAMES_KEY = "class_names"
_SAVE = "save numeric arrays, e.g. numpy.savez(path, probs=probs, labels=labels)"


def _header(npz, key: str, display: str) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of array ``key`` from its ``.npy`` header, before reading its data.

    Refuses object arrays (which need pickle) and arrays whose data is shorter
    than the header declares (a truncated file), so that loading never
    allocates more than the member holds.
    """
    info = next(i for i in npz.zip.infolist() if i.filename in (key, f"{key}.npy"))
    try:
        with npz.zip.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            read = {(1, 0): np.lib.format.read_array_header_1_0}.get(
                version, np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read(fh)
            header = fh.tell()
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error):
        raise CalibrationInputError(
            f"member {key!r} of {display} is not a readable NumPy array (its .npy header is "
            f"missing or damaged); {_SAVE}."
        ) from None
    if dtype.hasobject:
        raise CalibrationInputError(
            f"array {key!r} of {display} holds Python objects (dtype {dtype}), which are never "
            f"loaded because unpickling can run code; {_SAVE}."
        )
    declared = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if declared > info.file_size - header:
        raise CalibrationInputError(
            f"array {key!r} of {display} is truncated: its header declares shape {shape} of "
            f"{dtype} ({declared:,} bytes) but only {max(info.file_size - header, 0):,} bytes "
            "follow. The file was cut off or damaged: save or upload it again."
        )
    return shape, dtype


def read_array(npz, key: str, display: str, budget: DecodedBudget | None = None) -> np.ndarray:
    """Array ``key`` of an open npz, after :func:`_header`'s checks (and counted by ``budget``)."""
    shape, dtype = _header(npz, key, display)
    if budget is not None:
        budget.add(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, f"array {key!r}")
    try:
        arr = npz[key]
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, zlib.error):
        raise CalibrationInputError(
            f"array {key!r} of {display} cannot be read: its compressed data is damaged (e.g. "
            f"a failed checksum). Save or upload the file again; {_SAVE}."
        ) from None
    if not isinstance(arr, np.ndarray):
        raise CalibrationInputError(f"member {key!r} of {display} is not a NumPy array; {_SAVE}.")
    return arr


def _check_lengths(arr: np.ndarray, what: str, ctx: Context) -> None:
    """Refuse strings longer than :data:`MAX_NAME_LENGTH` (class names, string labels)."""
    if arr.dtype.kind not in "US" or arr.size == 0:
        return
    lengths = np.char.str_len(arr).reshape(-1)
    bad = np.flatnonzero(lengths > MAX_NAME_LENGTH)
    if bad.size:
        raise CalibrationInputError(
            f"{what} of {ctx.display} holds a string of {int(lengths[bad[0]]):,} characters at "
            f"{ctx.rows(bad)}; class names and labels are at most {MAX_NAME_LENGTH} "
            "characters. Shorten them."
        )


def _pick(keys, wanted, display, what):
    hits = [keys[w] for w in wanted if w in keys]
    if len(hits) > 1:
        raise CalibrationInputError(
            f"{display} has several {what} arrays ({', '.join(map(repr, hits))}), so which one "
            "to use is ambiguous; keep one.",
            remedy="label_column" if what == "label" else None,
            columns=sorted(keys.values()),
        )
    return hits[0] if hits else None


def _numeric(arr, key, display, kinds="biuf"):
    if arr.dtype.kind not in kinds:
        raise CalibrationInputError(
            f"array {key!r} of {display} has dtype {arr.dtype}, not numbers; {_SAVE}."
        )
    return arr


def read_npz(
    src: Source, *, label_column=None, renormalize=False, name="model", budget=None
) -> Predictions:
    """Load one :class:`Predictions` from an ``.npz`` archive.

    Parameters
    ----------
    src : Source
    label_column : str, optional
        The key of the label array.
    renormalize : bool
    name : str
    budget : DecodedBudget, optional
        Counts each array (from its header, before reading it) and the float64
        matrix.

    Returns
    -------
    Predictions
    """
    d = src.display
    try:
        npz = np.load(src.file_arg(), allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile):
        raise CalibrationInputError(
            f"{d} is not a readable .npz archive: its zip table of contents is missing or "
            f"damaged (the file is truncated or corrupt, or not written by numpy); {_SAVE}."
        ) from None
    with npz:
        _check_archive(npz, d)
        keys = {k.lower(): k for k in npz.files}
        main, prob_key, logit_key, label_key = _array_keys(npz, keys, d, label_column)
        preds = _numeric(read_array(npz, main, d, budget), main, d)
        probs = None
        if logit_key is not None and prob_key is not None:
            probs = read_array(npz, prob_key, d, budget)
        labels = read_array(npz, label_key, d, budget)
        names = None
        if CLASS_NAMES_KEY in keys:
            names = read_array(npz, keys[CLASS_NAMES_KEY], d, budget)
        used = {main, prob_key, label_key, keys.get(CLASS_NAMES_KEY)}
        others = other_arrays(npz, [k for k in npz.files if k not in used], len(labels), d, budget)
    if budget is not None:
        budget.add(2 * preds.size * 8, f"{preds.size:,} predictions as float64")
    pred = _build(src, preds, main, probs, labels, label_key, names, renormalize, name)
    return with_extra(pred, others) if others else pred


def _check_archive(npz, d: str) -> None:
    """Refuse what ``np.load`` opened that is not an ``.npz`` archive (``d`` names it)."""
    if not hasattr(npz, "files"):
        raise CalibrationInputError(f"{d} holds a single array, not an .npz archive; {_SAVE}.")
    if "[Content_Types].xml" in npz.zip.namelist():
        raise CalibrationInputError(
            f"{d} is an Office document (e.g. an Excel workbook), not an .npz archive; save "
            "the sheet as 'CSV UTF-8' instead."
        )


def _array_keys(
    npz, keys: dict[str, str], d: str, label_column
) -> tuple[str, str | None, str | None, str]:
    """``(main_key, prob_key, logit_key, label_key)``: the archive's arrays of each role.

    ``main_key`` is the predictions' array: the logits when there, else the
    probabilities. ``keys`` maps lower-case names to the archive's;
    ``label_column`` names the label array (else one of :data:`LABEL_KEYS`). At
    least one of probabilities and logits is found, or an error says what is missing.
    """
    listed = ", ".join(map(repr, npz.files)) or "(none)"
    prob_key = _pick(keys, PROB_KEYS, d, "probability")
    logit_key = keys.get(LOGIT_KEY)
    if label_column is not None:
        label_key = keys.get(str(label_column).lower())
        if label_key is None:
            raise CalibrationInputError(
                f"{d} has no array named {label_column!r} (the labels you asked for); its "
                f"arrays are {listed}.",
                remedy="label_column",
                columns=npz.files,
            )
    else:
        label_key = _pick(keys, LABEL_KEYS, d, "label")
    main_key = logit_key if logit_key is not None else prob_key
    if main_key is None:
        raise CalibrationInputError(
            f"{d} has no predictions: expected an array named "
            f"{', '.join((*PROB_KEYS, LOGIT_KEY))}; found {listed}. Rename the array."
        )
    if label_key is None:
        raise CalibrationInputError(
            f"{d} has no labels: expected an array named {', '.join(LABEL_KEYS)}; found "
            f"{listed}. Rename the array.",
            remedy="label_column",
            columns=npz.files,
        )
    return main_key, prob_key, logit_key, label_key


def other_arrays(npz, keys, n: int, display: str, budget) -> dict:
    """The archive's other 1-D arrays of N values (ids, groups, times), as ``apply`` keeps them.

    Arrays of another shape, or that numpy cannot read without pickle, are left out.
    """
    out = {}
    for key in keys:
        try:
            shape, _ = _header(npz, key, display)
        except CalibrationInputError:
            continue
        if shape == (n,):
            out[key] = read_array(npz, key, display, budget)
    return out


def _build(src, preds, key, probs, labels, label_key, names, renormalize, name):
    ctx, d = Context(src.display, "array"), src.display
    if preds.ndim == 1 and key != LOGIT_KEY:
        preds = preds[:, None]
        binary = True
    elif preds.ndim == 2 and preds.shape[1] >= 2:
        binary = False
    else:
        raise CalibrationInputError(
            f"array {key!r} of {d} has shape {preds.shape}; expected (N, K) rows with K >= 2 "
            "classes (or, except for logits, an (N,) score of class 1)."
        )
    n, k = preds.shape
    if n == 0:
        raise CalibrationInputError(f"array {key!r} of {d} is empty: there are no predictions.")
    if labels.ndim != 1:
        hint = " They look one-hot: save labels.argmax(axis=1)." if labels.ndim == 2 else ""
        raise CalibrationInputError(
            f"labels {label_key!r} of {d} must be one-dimensional (N,), got shape "
            f"{labels.shape}.{hint}"
        )
    if labels.shape[0] != n:
        raise CalibrationInputError(
            f"{d} has {n} prediction rows ({key!r}) but {labels.shape[0]} labels "
            f"({label_key!r}); the arrays must have the same length, one label per row."
        )
    mat = np.asarray(preds, dtype=np.float64)

    def column(j):
        return f"array {key!r}, class column {j}," if not binary else f"array {key!r}"

    check_finite(mat, column, "logits" if key == LOGIT_KEY else "probabilities", ctx)
    if binary:
        y = binary_labels(_label_values(labels, label_key, ctx), ctx, f"labels {label_key!r}")
        class_names = ("0", "1")
    else:
        class_names = _class_names(names, k, d)
        y = _labels(labels, label_key, class_names, names is not None, ctx)
    check_two_classes(y, class_names, ctx, None)
    common = {"class_names": class_names, "name": name, "where": d}
    if key == LOGIT_KEY:
        if probs is not None:
            _check_agree(mat, probs, key, d)
        return Predictions.from_logits(mat, y, **common)
    hint = "save them under the key 'logits' (a softmax is applied), or rescale them."
    if binary:
        mat = np.column_stack([1.0 - mat[:, 0], mat[:, 0]])
        column = lambda j: f"array {key!r}"  # noqa: E731
    mat = check_probabilities(mat, column, ctx, renormalize=renormalize, logit_hint=hint)
    pred = Predictions.from_probs(mat, y, **common)
    return replace(pred, score_column=True) if binary else pred


def _label_values(labels, key, ctx):
    if labels.dtype.kind in "US":
        _check_lengths(labels, f"labels {key!r}", ctx)
        return Coded.of(labels)
    _numeric(labels, key, ctx.display)
    if labels.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(labels) | (labels != np.round(labels)))
        if bad.size:
            raise CalibrationInputError(
                f"labels {key!r} of {ctx.display} must be whole class indices, but "
                f"found {', '.join(repr(float(v)) for v in labels[bad[:3]])} at {ctx.rows(bad)}."
            )
        return labels.astype(np.int64)
    return labels


def _labels(labels, key, class_names, named, ctx):
    values = _label_values(labels, key, ctx)
    if values.dtype == object:
        if not named:
            raise CalibrationInputError(
                f"labels {key!r} of {ctx.display} are strings but there is no 'class_names' "
                "array to match them to columns; save class_names=[...] in column order, or "
                "integer labels."
            )
        return labels_to_indices(values, class_names, ctx, f"labels {key!r}")
    k = len(class_names)
    ints = values.astype(np.int64)
    bad = np.flatnonzero((ints < 0) | (ints >= k))
    if bad.size:
        raise CalibrationInputError(
            f"labels {key!r} of {ctx.display} must be class indices 0..{k - 1} (one per column "
            f"of the predictions); found {', '.join(str(int(v)) for v in ints[bad[:3]])} at "
            f"{ctx.rows(bad)}. Check that labels and "
            "predictions come from the same model and class order."
        )
    return ints.astype(np.intp)


def _class_names(names, k, d):
    if names is None:
        return tuple(str(j) for j in range(k))
    if names.ndim != 1 or names.shape[0] != k or names.dtype.kind not in "USiu":
        raise CalibrationInputError(
            f"'class_names' of {d} must be {k} strings (one per column), got shape "
            f"{names.shape} and dtype {names.dtype}."
        )
    _check_lengths(names, "'class_names'", Context(d, "array"))
    return tuple(str(c) for c in names.tolist())


def _check_agree(logits, probs, key, d):
    probs = _numeric(probs, "probs", d)
    if probs.shape != logits.shape:
        raise CalibrationInputError(
            f"{d} holds logits of shape {logits.shape} and probabilities of shape "
            f"{probs.shape}; keep only one of them."
        )
    diff = np.abs(stable_softmax(logits) - probs).max(axis=1)
    if not (diff.max() <= 1e-4):
        row = int(np.nanargmax(diff)) if np.isfinite(diff).any() else 0
        raise CalibrationInputError(
            f"{d} holds both logits and probabilities, and they disagree (softmax(logits) "
            f"differs by {diff[row]:.3g} at row {row}, 0-based); keep only the right one."
        )
