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

import numpy as np

from ..errors import CalibrationInputError
from ..predictions import Predictions, stable_softmax
from .checks import (
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


def _array(npz, key: str, display: str) -> np.ndarray:
    try:
        arr = npz[key]
    except ValueError as exc:  # object arrays need pickle, which is never allowed
        raise CalibrationInputError(
            f"array {key!r} of {display} holds Python objects (pickled data), which are never "
            f"loaded because unpickling can run code ({exc}); {_SAVE}."
        ) from None
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise CalibrationInputError(
            f"array {key!r} of {display} cannot be read ({exc}); the file is corrupt: {_SAVE}."
        ) from None
    if not isinstance(arr, np.ndarray):
        raise CalibrationInputError(f"member {key!r} of {display} is not a NumPy array; {_SAVE}.")
    return arr


def _pick(keys, wanted, display, what):
    hits = [keys[w] for w in wanted if w in keys]
    if len(hits) > 1:
        raise CalibrationInputError(
            f"{display} has several {what} arrays ({', '.join(map(repr, hits))}), so which one "
            f"to use is ambiguous; keep one (or name the label array with label_column=...)."
        )
    return hits[0] if hits else None


def _numeric(arr, key, display, kinds="biuf"):
    if arr.dtype.kind not in kinds:
        raise CalibrationInputError(
            f"array {key!r} of {display} has dtype {arr.dtype}, not numbers; {_SAVE}."
        )
    return arr


def read_npz(src: Source, *, label_column=None, renormalize=False, name="model") -> Predictions:
    """Load one :class:`Predictions` from an ``.npz`` archive.

    Parameters
    ----------
    src : Source
    label_column : str, optional
        The key of the label array.
    renormalize : bool
    name : str

    Returns
    -------
    Predictions
    """
    d = src.display
    try:
        npz = np.load(src.file_arg(), allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise CalibrationInputError(
            f"{d} cannot be read as an .npz archive ({exc}); it is corrupt or not written by "
            f"numpy: {_SAVE}."
        ) from None
    with npz:
        if not hasattr(npz, "files"):
            raise CalibrationInputError(f"{d} holds a single array, not an .npz archive; {_SAVE}.")
        if "[Content_Types].xml" in npz.zip.namelist():
            raise CalibrationInputError(
                f"{d} is an Office document (e.g. an Excel workbook), not an .npz archive; save "
                "the sheet as 'CSV UTF-8' instead."
            )
        keys = {k.lower(): k for k in npz.files}
        listed = ", ".join(map(repr, npz.files)) or "(none)"
        prob_key = _pick(keys, PROB_KEYS, d, "probability")
        logit_key = keys.get(LOGIT_KEY)
        if label_column is not None:
            label_key = keys.get(str(label_column).lower())
            if label_key is None:
                raise CalibrationInputError(
                    f"{d} has no array named {label_column!r} (the labels you asked for); its "
                    f"arrays are {listed}."
                )
        else:
            label_key = _pick(keys, LABEL_KEYS, d, "label")
        if prob_key is None and logit_key is None:
            raise CalibrationInputError(
                f"{d} has no predictions: expected an array named "
                f"{', '.join((*PROB_KEYS, LOGIT_KEY))}; found {listed}. Rename the array."
            )
        if label_key is None:
            raise CalibrationInputError(
                f"{d} has no labels: expected an array named {', '.join(LABEL_KEYS)}; found "
                f"{listed}. Rename the array, or name it with label_column=..."
            )
        main = logit_key or prob_key
        preds = _numeric(_array(npz, main, d), main, d)
        probs = None if logit_key is None or prob_key is None else _array(npz, prob_key, d)
        labels = _array(npz, label_key, d)
        names = _array(npz, keys[CLASS_NAMES_KEY], d) if CLASS_NAMES_KEY in keys else None
    return _build(src, preds, main, probs, labels, label_key, names, renormalize, name)


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
    return Predictions.from_probs(mat, y, **common)


def _label_values(labels, key, ctx):
    if labels.dtype.kind in "US":
        return labels.astype(str).astype(object)
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
