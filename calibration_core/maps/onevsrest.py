"""One-vs-rest machinery shared by the four binary maps (not a map itself).

A binary map ``g: [0, 1] -> [0, 1]`` calibrates one score column against 0/1
targets. :class:`OneVsRestMap`, the base of the binary maps, turns (N, K)
probability rows into such columns, fits all columns at once, and assembles
calibrated rows again. The pieces live in modules next to this one:

:mod:`~calibration_core.maps.binary_columns`
    The columns (:func:`column_scores`, :class:`BinaryColumns`) and the
    renormalised rows built from calibrated columns (:func:`assemble_rows`).

Vectorised fits (all columns together, never K separate Python fits):

Logistic maps (Platt, beta)
    :func:`fit_logistic_columns` (:mod:`~calibration_core.maps.logistic_columns`):
    one batched Newton iteration with an Armijo line search for all columns at
    once, started on many rows from the fit on a random subsample of
    :data:`WARM_START_ROWS` rows.
Isotonic regression
    :func:`fit_isotonic_columns` (:mod:`~calibration_core.maps.isotonic_columns`):
    one sort of all columns, tie and run merging, then one compiled PAVA over
    all columns concatenated.
Histogram binning
    The core :class:`~calibration_core.binning.Binning` engine's classwise
    statistics (one ``bincount`` over (class, bin) for equal-width bins).

Columns are processed in cache-sized blocks of :data:`BLOCK_ELEMENTS` values;
the logistic fits run their blocks on parallel threads
(:mod:`calibration_core.parallel`; ``CALIBRATION_CORE_THREADS=1`` turns it off).
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..errors import CalibrationFitWarning, CalibrationInputError
from .base import EPS, CalibrationMap, given_probs
from .binary_columns import BinaryColumns, assemble_rows, column_scores
from .logistic_columns import SEPARABLE_LOSS, LogisticColumnsFit

__all__ = ["OneVsRestMap", "check_eps"]


def check_eps(eps, who: str) -> None:
    """Check the output clip ``eps`` of a binary map: a number in [0, 0.5)."""
    if isinstance(eps, bool) or not isinstance(eps, Real) or not (0.0 <= float(eps) < 0.5):
        raise CalibrationInputError(
            f"{who} eps (output clip) must be a number in [0, 0.5), got {eps!r}."
        )


class OneVsRestMap(CalibrationMap):
    """Base of the binary maps: one-vs-rest columns in, renormalised rows out.

    Subclasses implement ``_fit_columns(columns: BinaryColumns)`` and
    ``_predict_columns(scores (C, N)) -> (C, N)`` and set ``converged_`` when
    they iterate. Inputs are probabilities (logits are turned into
    probabilities by a softmax; a Predictions gives its probabilities).
    """

    family = "binary"

    def _fit(
        self,
        probs: np.ndarray | None,
        logits: np.ndarray | None,
        labels: np.ndarray,
        sample_weight: np.ndarray | None = None,
    ) -> None:
        self._fit_columns(BinaryColumns(given_probs(probs), labels, sample_weight))

    def _predict_proba(self, probs: np.ndarray | None, logits: np.ndarray | None) -> np.ndarray:
        g = self._predict_columns(column_scores(given_probs(probs)))
        return assemble_rows(g, self.n_classes_, self._output_eps())

    def _output_eps(self) -> float:
        """Clip of the calibrated columns (see :func:`assemble_rows`)."""
        return EPS

    def _fit_columns(self, columns: BinaryColumns) -> None:
        raise NotImplementedError

    def _predict_columns(self, scores: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # ---------------------------------------------------------- helpers
    def _report_logistic(
        self,
        fit: LogisticColumnsFit,
        columns: BinaryColumns,
        one_sided: np.ndarray,
        hard_targets: bool = True,
    ) -> None:
        """Set ``converged_``/``n_iter_`` and warn about non-convergence or separation."""
        name = type(self).__name__
        self.converged_ = bool(fit.converged.all())
        self.n_iter_ = int(fit.n_iter.max())
        if not self.converged_:
            bad = columns.classes[~fit.converged]
            warnings.warn(
                f"{name}: Newton's method did not converge for class(es) "
                f"{', '.join(str(int(c)) for c in bad[:10])} in {self.n_iter_} iterations; "
                "the map may be unreliable.",
                ConvergenceWarning,
                stacklevel=5,
            )
        if not hard_targets:  # smoothed targets: the maximum-likelihood fit always exists
            return
        separable = (fit.loss < SEPARABLE_LOSS) & ~one_sided
        if separable.any():
            bad = columns.classes[separable]
            warnings.warn(
                f"{name}: the scores separate the classes perfectly for class(es) "
                f"{', '.join(str(int(c)) for c in bad[:10])}; the maximum-likelihood "
                "weights do not exist, so they are held finite by a tiny ridge penalty and "
                "the calibrated probabilities are (nearly) 0 or 1.",
                CalibrationFitWarning,
                stacklevel=5,
            )
