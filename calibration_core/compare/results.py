"""The table of a map comparison: how a row is scored, and :class:`Comparison`.

Metrics come from the core functions of :mod:`calibration_core.metrics` (ECE
and MCE of a notion share one binning pass, :func:`score_probs`), so the table
agrees with every other view of the same predictions. The comparison itself is
run by :func:`calibration_core.compare.run.compare_maps`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..binning import Scheme
from ..engines import metric_columns
from ..maps.base import CalibrationMap
from ..metrics import (
    accuracy,
    brier_score,
    classwise_statistics,
    confidence_statistics,
    log_loss,
    log_loss_per_row,
)
from ..predictions import Predictions
from .columns import TABLE_COLUMNS
from .verdict import DEFAULT_LEVEL, FitDesign, Verdict, choose_map, parameter_count


def score_probs(probs: np.ndarray, labels: np.ndarray, *, n_bins: int, scheme: Scheme) -> dict:
    """The metric columns of one probability matrix.

    Parameters
    ----------
    probs : numpy.ndarray, shape (N, K)
    labels : numpy.ndarray, shape (N,)
    n_bins, scheme
        Binning of the ECE/MCE columns.

    Returns
    -------
    dict
        One float per name of :data:`~.columns.METRIC_COLUMNS`
        (:func:`~calibration_core.engines.metric_columns`, the rule of every engine);
        ECE and MCE of a notion come from one call of the core ``*_statistics``
        function, exactly as ``confidence_ece`` / ``confidence_mce`` compute them.
    """
    return metric_columns(
        confidence_statistics(probs, labels, n_bins=n_bins, scheme=scheme),
        classwise_statistics(probs, labels, n_bins=n_bins, scheme=scheme),
        accuracy=accuracy(probs, labels),
        brier_score=brier_score(probs, labels),
        log_loss=log_loss(probs, labels),
    )


def _json_value(value):
    """A table cell as a JSON value (NaN and pandas NA become None)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


@dataclass
class Comparison:
    """The result of :func:`compare_maps`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per map, index named ``map`` with ``"uncalibrated"`` first;
        columns :data:`~.columns.TABLE_COLUMNS`: the metrics (NaN for a failed map),
        ``fit_seconds`` (sum over folds), ``converged`` (nullable boolean: NA
        for the uncalibrated row and for failed maps) and ``error`` (None, or
        the message of the failure).
    calibrated : dict of str to Predictions
        Map name to the out-of-fold calibrated predictions (same labels and
        class names, name ``f"{model} + {map}"``); ``"uncalibrated"`` holds
        the scored rows of the input. Failed maps are absent.
    fitted : dict of str to list of CalibrationMap
        Map name to the fitted map of each fold (one map in train/test mode),
        for parameter export. Failed maps are absent.
    settings : dict
        ``n_bins``, ``scheme``, ``mode`` ("crossfit" or "train_test"),
        ``folds``, ``seed``, ``test_fraction``, ``splitter``, ``model``,
        ``n_samples``, ``n_scored``, ``n_classes``.
    warnings : list of str
        Fallbacks (e.g. KFold instead of StratifiedKFold), convergence
        failures and warnings raised by the maps, each naming its map.
    scored_rows : numpy.ndarray, shape (n_scored,)
        Indices into the input predictions of the rows of every
        ``calibrated`` entry, in order (all rows in cross-fitting mode).
    fold_ids : numpy.ndarray, shape (N,)
        Cross-fitting: the fold of each input row. Train/test: 0 for test
        rows, -1 for train rows.
    train_log_loss : dict of str to numpy.ndarray, shape (F,)
        Map name to the mean log-loss of each of its fits on that fit's own
        training rows (in-sample), for :meth:`design`; ``"uncalibrated"``:
        the input's log-loss on those rows. Failed maps are absent.
    """

    table: pd.DataFrame
    calibrated: dict[str, Predictions]
    fitted: dict[str, list[CalibrationMap]]
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    scored_rows: np.ndarray | None = None
    fold_ids: np.ndarray | None = None
    train_log_loss: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def errors(self) -> dict[str, str]:
        """Map name to error message, for the maps that failed."""
        err = self.table["error"]
        return {str(k): str(v) for k, v in err.items() if v is not None}

    def rows(self) -> list[dict[str, Any]]:
        """The table as a list of JSON-able dicts, ``map`` first, NaN as None."""
        out = []
        for name, row in self.table.iterrows():
            item = {"map": str(name)}
            item.update({col: _json_value(row[col]) for col in TABLE_COLUMNS})
            out.append(item)
        return out

    def n_parameters(self) -> dict[str, int | None]:
        """Map name to its fitted parameter count, for every row of the table.

        ``"uncalibrated"`` has 0; a map's count is the largest over its folds
        (:func:`~calibration_core.compare.verdict.parameter_count`); None for
        a failed map or one that does not count its parameters.
        """
        return {
            str(name): parameter_count(str(name), self.fitted.get(str(name), ()))
            for name in self.table.index
        }

    def row_losses(self) -> dict[str, np.ndarray]:
        """Map name to the per-row held-out log-loss of its calibrated rows.

        The rows are those of :attr:`calibrated` (in :attr:`scored_rows`
        order); the mean of each array is the table's ``log_loss``.
        """
        return {name: log_loss_per_row(p.probs, p.labels) for name, p in self.calibrated.items()}

    def design(self) -> FitDesign | None:
        """Which fit scored each row, the fits' training sizes and in-sample losses.

        Returns
        -------
        FitDesign or None
            None for a comparison built without fold ids.
        """
        if self.fold_ids is None or self.scored_rows is None:
            return None
        fold_ids = np.asarray(self.fold_ids)
        if self.settings.get("mode") == "train_test":
            n_train = np.array([int(np.sum(fold_ids < 0))])
        else:
            n_fits = int(self.settings.get("folds") or fold_ids.max() + 1)
            n_train = np.array([int(np.sum(fold_ids != f)) for f in range(n_fits)])
        return FitDesign(
            fit_of_row=fold_ids[self.scored_rows],
            n_train=n_train,
            train_log_loss=dict(self.train_log_loss),
        )

    def verdict(
        self, *, level: float = DEFAULT_LEVEL, n_resamples: int | None = None, seed=None
    ) -> Verdict:
        """The best map by held-out log-loss and whether its win is real.

        See :func:`calibration_core.compare.verdict.choose_map`: every row of
        the table competes, ``"uncalibrated"`` included (a map must beat doing
        nothing); failed maps do not. The interval holds the noise of fitting
        the maps (:meth:`design`).

        Parameters
        ----------
        level : float
            Coverage of the interval of the difference.
        n_resamples, seed
            Ignored, kept for old callers (a FutureWarning says so).
        """
        return choose_map(
            self.calibrated,
            self.fitted,
            design=self.design(),
            level=level,
            n_bins=self.settings.get("n_bins", 15),
            scheme=self.settings.get("scheme", "width"),
            n_resamples=n_resamples,
            seed=seed,
        )

    def to_dict(
        self,
        *,
        include_maps: bool = False,
        level: float = DEFAULT_LEVEL,
    ) -> dict[str, Any]:
        """A JSON-able summary.

        Parameters
        ----------
        include_maps : bool
            Also export every fitted map (``CalibrationMap.to_dict``) under
            ``"maps"``: name to a list with one entry per fold.
        level : float
            Of the verdict's interval (:meth:`verdict`).

        Returns
        -------
        dict
            ``model``, ``settings``, ``warnings``, ``rows`` (see :meth:`rows`)
            and ``verdict`` (:meth:`Verdict.to_dict`).
        """
        out: dict[str, Any] = {
            "model": self.settings.get("model"),
            "settings": {k: _json_value(v) for k, v in self.settings.items()},
            "warnings": list(self.warnings),
            "rows": self.rows(),
            "verdict": self.verdict(level=level).to_dict(),
        }
        if include_maps:
            out["maps"] = {name: [m.to_dict() for m in maps] for name, maps in self.fitted.items()}
        return out
