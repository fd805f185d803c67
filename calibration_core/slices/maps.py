"""Does one global map calibrate every group? :func:`group_maps`.

For each map, two held-out versions of every row are compared per group: the
global map cross-fitted on all rows (:func:`~calibration_core.compare.compare_maps`)
and one map per group, cross-fitted on that group's rows alone. Both are
scored per group with the grouped pass, on the ECE of the notion asked for
(confidence, binary, or one class against the rest, as :func:`slice_report`).
Groups under the minimum size get no map of their own (too few rows to fit
and hold out) and are not judged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binning import Binning
from ..compare import compare_maps
from ..predictions import Predictions
from .grouped import GroupedPass, row_values
from .groups import GroupIndex

DEFAULT_GROUP_MAPS = ("temperature", "isotonic")


@dataclass(frozen=True, eq=False)
class GroupMaps:
    """Held-out ECE and log-loss per group: uncalibrated, global map, per-group map.

    Attributes
    ----------
    groups : GroupIndex
    maps : tuple of str
    table : list of dict
        One row per (group, map): ``ece_uncalibrated``, ``ece_global``,
        ``ece_group``, ``log_loss_global``, ``log_loss_group`` (None for a
        small group), ``better`` ("group", "global" by held-out log-loss, or None).
    notion : str
        The notion of the ECE columns ("confidence", "binary" or "class").
    class_index : int or None
        The class of the "class" notion.
    """

    groups: GroupIndex
    maps: tuple[str, ...]
    table: list
    notion: str = "confidence"
    class_index: int | None = None


def _calibrated(pred: Predictions, name: str, folds: int, seed, binning) -> np.ndarray | None:
    result = compare_maps(pred, maps=[name], folds=folds, seed=seed, n_bins=binning.n_bins,
                          scheme=binning.scheme)  # fmt: skip
    label = next(k for k in result.calibrated if k != "uncalibrated")
    cal = result.calibrated.get(label)
    return None if cal is None or result.errors.get(label) else cal.probs


def _scores(pred: Predictions, probs: np.ndarray, groups: GroupIndex, binning, notion) -> dict:
    cal = Predictions.from_probs(probs, pred.labels, class_names=pred.class_names,
                                 renormalize=True)  # fmt: skip
    rows = row_values(cal, *notion)
    grouped = GroupedPass.build(rows, groups.codes, groups.n_groups, binning)
    return grouped.metrics()


def group_maps(
    pred: Predictions,
    groups: GroupIndex,
    maps=DEFAULT_GROUP_MAPS,
    *,
    notion: str = "confidence",
    class_index: int | None = None,
    folds: int = 5,
    seed=0,
    binning: Binning | None = None,
) -> GroupMaps:
    """Compare, held out and per group, one global map against one map per group.

    Parameters
    ----------
    pred : Predictions
    groups : GroupIndex
    maps : sequence of str
        Registry names.
    notion : {"confidence", "binary", "class"}
        The notion of the ECE columns (``class_index`` for "class"), as
        :func:`slice_report`: the page compares the maps on its own notion.
    class_index : int, optional
    folds : int
    seed : int or None
    binning : Binning, optional

    Returns
    -------
    GroupMaps
    """
    binning = binning or Binning()
    scored = (notion, class_index)
    base = _scores(pred, pred.probs, groups, binning, scored)
    judged = np.flatnonzero(~groups.small)
    table = []
    for name in maps:
        global_probs = _calibrated(pred, name, folds, seed, binning)
        per_group = pred.probs.copy() if global_probs is None else global_probs.copy()
        fitted = np.zeros(groups.n_groups, dtype=bool)
        for g in judged:  # one fit per group: maps are fitted, not rows looped over
            rows = np.flatnonzero(groups.codes == g)
            probs = _calibrated(pred.subset(rows), name, folds, seed, binning)
            if probs is not None:
                per_group[rows], fitted[g] = probs, True
        glob = None if global_probs is None else _scores(pred, global_probs, groups, binning,
                                                         scored)  # fmt: skip
        own = _scores(pred, per_group, groups, binning, scored)
        table.extend(_rows(name, groups, base, glob, own, fitted))
    return GroupMaps(groups, tuple(maps), table, notion, class_index)


def _rows(name, groups, base, glob, own, fitted) -> list:
    out = []
    for g, label in enumerate(groups.labels):
        row = {"group": label, "map": name, "small": bool(groups.small[g]),
               "ece_uncalibrated": float(base["ece"][g])}  # fmt: skip
        row["ece_global"] = None if glob is None else float(glob["ece"][g])
        row["log_loss_global"] = None if glob is None else float(glob["log_loss"][g])
        row["ece_group"] = float(own["ece"][g]) if fitted[g] else None
        row["log_loss_group"] = float(own["log_loss"][g]) if fitted[g] else None
        row["better"] = None
        if row["log_loss_group"] is not None and row["log_loss_global"] is not None:
            better = row["log_loss_group"] < row["log_loss_global"]
            row["better"] = "group" if better else "global"
        out.append(row)
    return out
