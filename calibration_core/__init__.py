"""calibration_core: measure and fix the calibration of predicted probabilities.

Plain numpy/scipy (never dash, plotly or flask). Definitions follow the survey
"Classifier Calibration" (Silva Filho et al., arXiv 2112.10327).

One signature for every measure
-------------------------------
``f(probs, labels=None, *, notion=None, ..., seed=0)``, as ``sklearn.metrics``
(in this project's ``(probs, labels)`` order; the human-uncertainty measures
take ``(probs, human)``):

* ``probs``: (N, K) probability rows, an (N,) vector that always means
  **P(class 1) of a binary problem**, or a :class:`Predictions` (its labels
  are used when ``labels`` is None);
* ``notion`` (the measures that depend on one): ``"confidence"`` (top label),
  ``"binary"``, ``"class"`` with ``class_index``, ``"classwise"``; None means
  ``"binary"`` for one score column and ``"confidence"`` for probability rows.
  ``binary_ece``, ``classwise_ece``, ``confidence_ece`` (and their MCE and
  statistics) are the binned ECE with the notion in the name; :func:`ece`
  takes ``notion=``. The top-label notion of an (N,) vector is refused: for
  top-class confidences with a 0/1 correctness column use
  ``binary_ece(conf, correct)``;
* ``seed``: the one name of the random seed, 0 by default everywhere.

The rule in one function: :func:`calibration_core.predictions.measure_inputs`.

What the top level exports
--------------------------
Everything a user calls: every measure (each public function of
:mod:`.metrics` and of the modules of the :mod:`.measures` package whose
arguments start ``(probs, labels=None`` or ``(probs, human``) and the result
class it returns, :func:`bootstrap_ci`, every calibration map class of
the registry with :func:`make_map` and :func:`available_maps`,
:class:`Predictions` and the loaders, :func:`compare_maps`, the engine
interface (:class:`CalibrationSummary`) and the in-memory engine
(:class:`PredictionsSummary`), the deployable
map, the decision functions, the bands and the reliability curve, and the
errors and warnings. Helpers (functions of validated scores, per-bin sums,
``*_from_scores``) stay in their modules. ``tests/core/test_measure_api.py``
checks the rule.
"""

from .binning import Binning, BinStatistics, SortedScores
from .errors import CalibrationInputError, RenormalisedRowsWarning, SmallSampleWarning
from .lazy import lazy_attributes
from .metrics import (
    accuracy,
    binary_ece,
    binary_mce,
    binary_statistics,
    brier_score,
    calibration_statistics,
    classwise_ece,
    classwise_mce,
    classwise_statistics,
    confidence_ece,
    confidence_mce,
    confidence_statistics,
    ece,
    log_loss,
    log_loss_per_row,
    mce,
)
from .notions import notion_scores, top_label
from .predictions import Predictions, stable_softmax
from .reliability import ReliabilityCurve, reliability_curve

# Heavier modules (scipy.stats, scikit-learn, pandas) load on first use, so that
# ``import calibration_core`` stays fast for the CLI and the dashboard's start.
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ("binomial_band", "consistency_band", "consistency_band_from_statistics"), "bands"
    ),
    **dict.fromkeys(("BootstrapResult", "bootstrap_ci"), "bootstrap"),
    **dict.fromkeys(("Comparison", "ComparisonCancelled", "compare_maps"), "compare"),
    **dict.fromkeys(("CalibrationSummary", "PredictionsSummary"), "engines"),
    **dict.fromkeys(
        (
            "DecisionComparison",
            "adjust_scores_for_prior",
            "compare_expected_costs",
            "cost_curve",
            "cost_threshold",
            "expected_cost",
            "prior_shift_threshold",
        ),
        "decision",
    ),
    **dict.fromkeys(
        (
            "Decomposition",
            "PART_FIELDS",
            "brier_decomposition",
            "log_loss_decomposition",
            "score_parts",
        ),
        "measures",
    ),
    **dict.fromkeys(
        (
            "adaptive_classwise_ece",
            "adaptive_ece",
            "debiased_ece",
            "plugin_calibration_error",
            "thresholded_adaptive_ece",
        ),
        "measures",
    ),
    **dict.fromkeys(
        ("HosmerLemeshowResult", "HosmerLemeshowTable", "hosmer_lemeshow"),
        "measures",
    ),
    **dict.fromkeys(
        (
            "HumanUncertaintyResult",
            "distribution_calibration_error",
            "entropy_calibration_error",
            "human_uncertainty_calibration",
            "rank_calibration_score",
        ),
        "measures",
    ),
    **dict.fromkeys(("load_predictions", "load_with_notices"), "io"),
    **dict.fromkeys(("DeployableMap", "deployable_map", "load_map"), "deploy"),
    **dict.fromkeys(("EceSensitivity", "ece_sensitivity"), "measures"),
    **dict.fromkeys(
        (
            "BetaCalibration",
            "CalibrationMap",
            "DirichletCalibration",
            "HistogramBinning",
            "IsotonicCalibration",
            "MatrixScaling",
            "PlattScaling",
            "TemperatureScaling",
            "VectorScaling",
            "available_maps",
            "make_map",
        ),
        "maps",
    ),
    **dict.fromkeys(
        (
            "CalibrationHierarchy",
            "CumulativeDifferences",
            "CumulativeTestResult",
            "SkceResult",
            "SmoothEce",
            "SmoothReliabilityCurve",
            "SpiegelhalterResult",
            "VectorBinnedEce",
            "calibration_hierarchy",
            "classwise_ks_errors",
            "cumulative_differences",
            "cumulative_test",
            "integrated_calibration_index",
            "ks_calibration_error",
            "measures_summary",
            "skce",
            "smooth_ece",
            "smooth_reliability_curve",
            "spiegelhalter_test",
            "vector_binned_ece",
        ),
        "measures",
    ),
    **dict.fromkeys(("CalibrationTestResult", "calibration_test"), "measures"),
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = [
    "PART_FIELDS",
    "BetaCalibration",
    "BinStatistics",
    "Binning",
    "BootstrapResult",
    "CalibrationHierarchy",
    "CalibrationInputError",
    "CalibrationMap",
    "CalibrationSummary",
    "CalibrationTestResult",
    "Comparison",
    "ComparisonCancelled",
    "CumulativeDifferences",
    "CumulativeTestResult",
    "DecisionComparison",
    "Decomposition",
    "DeployableMap",
    "DirichletCalibration",
    "EceSensitivity",
    "HistogramBinning",
    "HosmerLemeshowResult",
    "HosmerLemeshowTable",
    "HumanUncertaintyResult",
    "IsotonicCalibration",
    "MatrixScaling",
    "PlattScaling",
    "Predictions",
    "PredictionsSummary",
    "ReliabilityCurve",
    "RenormalisedRowsWarning",
    "SkceResult",
    "SmallSampleWarning",
    "SmoothEce",
    "SmoothReliabilityCurve",
    "SortedScores",
    "SpiegelhalterResult",
    "TemperatureScaling",
    "VectorBinnedEce",
    "VectorScaling",
    "accuracy",
    "adaptive_classwise_ece",
    "adaptive_ece",
    "adjust_scores_for_prior",
    "available_maps",
    "binary_ece",
    "binary_mce",
    "binary_statistics",
    "binomial_band",
    "bootstrap_ci",
    "brier_decomposition",
    "brier_score",
    "calibration_hierarchy",
    "calibration_statistics",
    "calibration_test",
    "classwise_ece",
    "classwise_ks_errors",
    "classwise_mce",
    "classwise_statistics",
    "compare_expected_costs",
    "compare_maps",
    "confidence_ece",
    "confidence_mce",
    "confidence_statistics",
    "consistency_band",
    "consistency_band_from_statistics",
    "cost_curve",
    "cost_threshold",
    "cumulative_differences",
    "cumulative_test",
    "debiased_ece",
    "deployable_map",
    "distribution_calibration_error",
    "ece",
    "ece_sensitivity",
    "entropy_calibration_error",
    "expected_cost",
    "hosmer_lemeshow",
    "human_uncertainty_calibration",
    "integrated_calibration_index",
    "ks_calibration_error",
    "load_map",
    "load_predictions",
    "load_with_notices",
    "log_loss",
    "log_loss_decomposition",
    "log_loss_per_row",
    "make_map",
    "mce",
    "measures_summary",
    "notion_scores",
    "plugin_calibration_error",
    "prior_shift_threshold",
    "rank_calibration_score",
    "reliability_curve",
    "score_parts",
    "skce",
    "smooth_ece",
    "smooth_reliability_curve",
    "spiegelhalter_test",
    "stable_softmax",
    "thresholded_adaptive_ece",
    "top_label",
    "vector_binned_ece",
]


def _distribution_version() -> str:
    """The installed distribution's version (pyproject.toml is its only source).

    A source tree used without installing it (``PYTHONPATH=.``) has no metadata
    and reports ``0+unknown``.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("calibration-dashboard")
    except PackageNotFoundError:
        return "0+unknown"


__version__ = _distribution_version()
