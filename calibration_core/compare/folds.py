"""Which rows fit and which rows score each map of a comparison.

Cross-fitting assigns every row to one of ``folds`` folds
(``StratifiedKFold(shuffle=True, random_state=seed)``; plain ``KFold`` with a
note when a class has fewer rows than folds). Train/test mode takes a user
``split`` (True = test row) or draws a seeded, stratified shuffle split of
``test_fraction`` (plain ``ShuffleSplit`` with a note when stratifying is not
possible). Notes are appended to the caller's ``notes`` list.
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold, StratifiedShuffleSplit

from ..errors import CalibrationInputError
from ..validation import check_fraction, check_whole_number


def check_folds(folds, n: int) -> int:
    """The number of cross-fitting folds, checked: a whole number from 2 to ``n`` rows."""
    folds = check_whole_number(folds, "folds", minimum=2)
    if folds > n:
        raise CalibrationInputError(
            f"folds={folds} is more than the {n} rows; use at most {n} folds."
        )
    return int(folds)


def crossfit_folds(labels: np.ndarray, folds: int, seed, notes: list[str]):
    """``(splitter name, fold id per row)`` for cross-fitting."""
    counts = np.bincount(labels)
    smallest = int(counts[counts > 0].min())
    if smallest >= folds:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        name = "StratifiedKFold"
    else:
        splitter = KFold(n_splits=folds, shuffle=True, random_state=seed)
        name = "KFold"
        notes.append(
            f"a class has only {smallest} row(s), fewer than the {folds} folds: used plain "
            "shuffled KFold instead of StratifiedKFold, so some folds may miss that class."
        )
    fold_ids = np.empty(labels.shape[0], dtype=np.intp)
    for i, (_, test) in enumerate(splitter.split(np.zeros(labels.shape[0]), labels)):
        fold_ids[test] = i
    return name, fold_ids


def train_test_mask(labels: np.ndarray, split, test_fraction, seed, notes: list[str]):
    """``(splitter name, boolean test mask)`` for train/test mode."""
    n = labels.shape[0]
    if split is not None:
        mask = np.asarray(split)
        if mask.ndim != 1 or mask.shape[0] != n:
            raise CalibrationInputError(
                f"split must be a boolean array with one entry per row ({n}), got shape "
                f"{mask.shape}."
            )
        if mask.dtype != bool:
            if mask.dtype.kind in "iuf" and np.isin(mask, (0, 1)).all():
                mask = mask.astype(bool)
            else:
                raise CalibrationInputError(
                    "split must be boolean (True = test row) or 0/1, got values of dtype "
                    f"{mask.dtype}."
                )
        name = "user split"
    else:
        frac = check_fraction(test_fraction, "test_fraction")
        mask = np.zeros(n, dtype=bool)
        try:
            splitter = StratifiedShuffleSplit(n_splits=1, test_size=frac, random_state=seed)
            _, test = next(splitter.split(np.zeros(n), labels))
            name = "StratifiedShuffleSplit"
        except ValueError as exc:
            notes.append(
                f"a stratified split was not possible ({exc}); used a plain shuffled split."
            )
            try:
                _, test = next(
                    ShuffleSplit(n_splits=1, test_size=frac, random_state=seed).split(np.zeros(n))
                )
            except ValueError as exc2:
                raise CalibrationInputError(
                    f"cannot split {n} rows with test_fraction={frac}: {exc2}"
                ) from None
            name = "ShuffleSplit"
        mask[test] = True
    n_test = int(mask.sum())
    if n_test == 0 or n_test == n:
        raise CalibrationInputError(
            f"the split has {n_test} test rows and {n - n_test} train rows; both parts must "
            "be non-empty."
        )
    return name, mask
