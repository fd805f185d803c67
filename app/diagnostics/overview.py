"""The ECE overview of the Diagnostics section: sensitivity to the binning, and estimators.

For every calibrator of a :class:`~app.diagnostics.target.DiagTarget`:

* **ECE sensitivity**: :func:`calibration_core.ece_sensitivity` for 2..100
  bins and both schemes, from the load-time sorted scores (cheap);
* **ECE estimators**: the plug-in ECE of the view's binning, the adaptive
  (equal-mass) ECE, the plug-in and the debiased (Kumar et al. 2019) L2
  errors and ACE, read off per-bin statistics of the sorted scores (equal to
  :func:`~calibration_core.adaptive_ece`, :func:`~calibration_core.debiased_ece`,
  :func:`~calibration_core.plugin_calibration_error` and
  :func:`~calibration_core.adaptive_classwise_ece`, without a pass over the rows).

Both are memoised per calibrator (:func:`~app.diagnostics.target.memo`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Diagnostics come from their modules: ``calibration_core`` loads them lazily.
from calibration_core import Binning, BinStatistics, Predictions
from calibration_core.measures.ece_variants import squared_error_terms
from calibration_core.measures.sensitivity import EceSensitivity, ece_sensitivity

from ..settings import ViewSettings
from ..store.data_store import DataStore
from .target import DiagTarget, NotionSpec, memo, notion_spec, notion_statistics


# --------------------------------------------------------------- sensitivity
def sensitivity_curves(store: DataStore, target: DiagTarget) -> list[tuple[str, EceSensitivity]]:
    """ECE against 2..100 bins, both schemes, for every calibrator (from sorted scores).

    Returns
    -------
    list of (str, EceSensitivity)
        ``(calibrator, curves)`` of every calibrator with predictions, in the
        target's order; ``n_bins``, ``width`` and ``frequency`` have shape ``(99,)``
        (2..100 bins).
    """
    spec = notion_spec(target.info, target.view)
    out = []
    for v in target.ready:

        def compute(pred=v.pred):
            return ece_sensitivity(pred, notion=spec.kind, class_index=spec.class_index)

        out.append((v.calibrator, memo(store, v, ("sens", spec), compute)))
    return out


# ---------------------------------------------------------------- estimators
@dataclass
class EstimatorRow:
    """ECE estimators of one calibrator (see :func:`estimator_rows`)."""

    calibrator: str
    plugin_ece: float | None = None
    adaptive_ece: float | None = None
    plugin_l2: float | None = None
    debiased_l2: float | None = None
    ace: float | None = None
    message: str | None = None


def _l2_terms(stats: list[BinStatistics], debias: bool) -> list[float]:
    """The squared-error estimate of each column (plug-in, or debiased with ``debias``)."""
    return [
        float(squared_error_terms(s.count, s.sum_score, s.sum_target, debias=debias)) for s in stats
    ]


def estimators(pred: Predictions, spec: NotionSpec, view: ViewSettings) -> EstimatorRow:
    """Plug-in, adaptive, plug-in L2, debiased L2 and ACE of one set of predictions.

    Every estimator uses ``view.n_bins`` bins; all but the plug-in ECE (the
    view's scheme) use equal-mass bins, as their authors do. The values equal
    the core functions' (``adaptive_ece``, ``plugin_calibration_error(p=2)``,
    ``debiased_ece``, ``adaptive_classwise_ece``) with those settings.

    Parameters
    ----------
    pred : Predictions
        Scores of shape ``(N, K)`` and labels of shape ``(N,)``.
    spec : NotionSpec
        The view's notion (which score columns the ECE averages over).
    view : ViewSettings
        Its ``scheme`` and ``n_bins``.

    Returns
    -------
    EstimatorRow
        With an empty ``calibrator`` (the caller names it).
    """
    n = view.n_bins
    plugin = notion_statistics(pred, Binning(view.scheme, n), spec)
    mass = notion_statistics(pred, Binning("frequency", n), spec)
    per_class = (
        mass if spec.kind == "classwise" else pred.classwise_statistics(Binning("frequency", n))
    )
    return estimators_from_statistics(plugin, mass, per_class)


def estimators_from_statistics(
    plugin: list[BinStatistics], mass: list[BinStatistics], per_class
) -> EstimatorRow:
    """The estimators of :func:`estimators` from per-bin statistics alone.

    ``plugin``: the view's bins of each column of the notion; ``mass``: their
    equal-mass bins; ``per_class``: every class's equal-mass bins (ACE). A
    server-side dataset passes its exact equal-frequency statistics
    (:func:`app.dataset_diagnostics.whole_estimators`).
    """
    gaps = np.concatenate([s.gap[s.count > 0] for s in per_class])
    return EstimatorRow(
        calibrator="",
        plugin_ece=float(np.mean([s.ece() for s in plugin])),
        adaptive_ece=float(np.mean([s.ece() for s in mass])),
        plugin_l2=float(np.sqrt(np.mean(_l2_terms(mass, debias=False)))),
        debiased_l2=float(np.sqrt(np.mean([max(t, 0.0) for t in _l2_terms(mass, True)]))),
        ace=float(gaps.mean()),
    )


def estimator_rows(store: DataStore, target: DiagTarget) -> list[EstimatorRow]:
    """:func:`estimators` of every calibrator (pending ones carry their message)."""
    spec = notion_spec(target.info, target.view)
    view = target.view
    rows = []
    for v in target.variants:
        if v.pred is None:
            rows.append(EstimatorRow(v.calibrator, message=v.message))
            continue
        key = ("est", spec, view.scheme, view.n_bins)
        row = memo(store, v, key, lambda pred=v.pred: estimators(pred, spec, view))
        rows.append(EstimatorRow(**{**row.__dict__, "calibrator": v.calibrator}))
    return rows
