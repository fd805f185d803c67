"""Groups of rows from the file's other columns: :func:`group_index`.

A group is one combination of values of the chosen columns (``Predictions.extra``);
a missing value (empty cell, NaN) is its own group, shown as ``(missing)``. Groups are sorted by
their values. More than :data:`MAX_GROUPS` groups are refused
(:func:`too_many_groups`, which time windows share): a column with that
many values (an id, a free-text field) is not a slice to draw, and a coarser
column is needed. Groups with fewer than ``min_rows`` rows are kept and flagged
(``GroupIndex.small``): their metrics are shown, but not judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import CalibrationInputError
from ..predictions import Predictions

MAX_GROUPS = 1000
MIN_GROUP_ROWS = 100
MISSING = "(missing)"


@dataclass(frozen=True, eq=False)
class GroupIndex:
    """Which group every row belongs to.

    Attributes
    ----------
    codes : numpy.ndarray, shape (N,), intp
        Group of each row, in ``0..G-1``.
    labels : tuple of str, length G
        ``"col=value"`` (joined by ``", "`` for several columns).
    columns : tuple of str
        The columns the groups come from.
    min_rows : int
        Groups with fewer rows are flagged, not judged.
    times : numpy.ndarray of datetime64[s], shape (N,), or None
        The rows' times, for windows of a time column (a reference period in
        dates needs them); None otherwise.
    """

    codes: np.ndarray
    labels: tuple[str, ...]
    columns: tuple[str, ...]
    min_rows: int = MIN_GROUP_ROWS
    times: np.ndarray | None = None

    @property
    def n_groups(self) -> int:
        """G."""
        return len(self.labels)

    @property
    def sizes(self) -> np.ndarray:
        """Rows per group, shape (G,)."""
        return np.bincount(self.codes, minlength=self.n_groups)

    @property
    def small(self) -> np.ndarray:
        """True for a group under ``min_rows`` rows, shape (G,)."""
        return self.sizes < self.min_rows


def group_candidates(pred: Predictions, max_share: float = 0.1) -> list[str]:
    """The other columns worth offering to group by, in file order.

    Left out: the ``model`` column (models are compared, not grouped) and
    columns with more distinct values than ``max_share`` of the rows or than
    :data:`MAX_GROUPS` (ids, free text, continuous features).
    """
    limit = min(MAX_GROUPS, max(1, int(max_share * pred.n_samples)))
    out = []
    for name, values in pred.extra.items():
        if name.lower() == "model":
            continue
        if len(pd.unique(values)) <= limit:
            out.append(name)
    return out


def _column(pred: Predictions, name: str) -> np.ndarray:
    if name in pred.extra:
        return pred.extra[name]
    others = ", ".join(repr(c) for c in pred.extra) or "(none)"
    raise CalibrationInputError(
        f"there is no column {name!r} to group by in the predictions of {pred.name!r}; its "
        f"other columns are {others}. Pick one of them."
    )


def _codes(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Sorted codes and value names of one column; NaN, None and blank text are ``(missing)``.

    Only the distinct values are looked at in Python.
    """
    codes, uniques = pd.factorize(values, sort=True, use_na_sentinel=True)
    blank = np.array([isinstance(u, str) and not u.strip() for u in uniques], dtype=bool)
    names = [str(u) for u, b in zip(uniques, blank, strict=True) if not b]
    if not blank.any() and codes.min(initial=0) >= 0:
        return codes.astype(np.intp), names
    renumber = np.where(blank, len(names), np.cumsum(~blank) - 1)
    full = np.append(renumber, len(names))[codes]  # code -1 (NaN, None) -> the last entry
    return full.astype(np.intp), [*names, MISSING]


def group_index(
    pred: Predictions,
    columns: Sequence[str],
    *,
    min_rows: int = MIN_GROUP_ROWS,
    max_groups: int = MAX_GROUPS,
) -> GroupIndex:
    """The groups of rows given by one or more of the file's other columns.

    Parameters
    ----------
    pred : Predictions
        With the columns in ``pred.extra``.
    columns : sequence of str
        Column names; several columns give one group per combination present.
    min_rows : int
        Groups under this many rows are flagged (kept, not judged).
    max_groups : int
        More groups than this are refused.

    Returns
    -------
    GroupIndex
    """
    columns = tuple(str(c) for c in columns)
    if not columns:
        raise CalibrationInputError("no column to group by was given; name at least one.")
    values = {name: _column(pred, name) for name in columns}
    return value_groups(values, columns, min_rows=min_rows, max_groups=max_groups)


def value_groups(
    values: Mapping[str, np.ndarray],
    columns: Sequence[str],
    *,
    min_rows: int = MIN_GROUP_ROWS,
    max_groups: int = MAX_GROUPS,
) -> GroupIndex:
    """The groups of rows given by columns of values (:func:`group_index`'s rules).

    Parameters
    ----------
    values : mapping of str to numpy.ndarray, shape (N,) each
        The columns, by name (the Dask engine gives the distinct combinations
        of all its pieces, to number and label them as the in-memory engine).
    columns : sequence of str
        The columns of ``values`` to group by, in order.
    min_rows, max_groups
        As in :func:`group_index`.

    Returns
    -------
    GroupIndex
    """
    columns = tuple(columns)
    combined = np.zeros(len(values[columns[0]]), dtype=np.int64)
    parts = []
    for name in columns:
        codes, names = _codes(values[name])
        if len(names) > max_groups:
            raise too_many_groups(f"grouping by {name}", len(names), max_groups)
        combined = combined * len(names) + codes
        parts.append((name, names, len(names)))
    codes, uniques = pd.factorize(combined, sort=True)
    if len(uniques) > max_groups:
        raise too_many_groups(f"grouping by {', '.join(columns)}", len(uniques), max_groups)
    labels = tuple(_label(int(u), parts) for u in uniques)
    return GroupIndex(codes.astype(np.intp), labels, columns, int(min_rows))


def _label(code: int, parts) -> str:
    words = []
    for name, names, size in reversed(parts):
        code, j = divmod(code, size)
        words.append(f"{name}={names[j]}")
    return ", ".join(reversed(words))


#: How to get fewer groups of a column (:func:`too_many_groups`).
COARSER_COLUMN = (
    "pick a coarser column (e.g. a region instead of a city, a category instead of an id)"
)


def too_many_groups(
    what: str, count: int, limit: int, *, kind: str = "groups", remedy: str = COARSER_COLUMN
) -> CalibrationInputError:
    """The error of more than ``limit`` groups (``count``), for groups and time windows alike.

    Parameters
    ----------
    what : str
        What gives them: ``"grouping by site"``, ``"a window of '1rows'"``.
    count, limit : int
    kind : str
        ``"groups"`` or ``"windows"``.
    remedy : str
        How to get fewer.
    """
    return CalibrationInputError(
        f"{what} gives {count:,} {kind}, more than the {limit:,} that can be "
        f"compared and drawn; {remedy}."
    )
