"""calibration_core: measure and fix the calibration of predicted probabilities.

Plain numpy/scipy (never dash, plotly or flask). Definitions follow the survey
"Classifier Calibration" (Silva Filho et al., arXiv 2112.10327).
"""

from .bands import binomial_band, consistency_band, consistency_band_from_statistics
from .binning import Binning, BinStatistics, SortedScores
from .bootstrap import BootstrapResult, bootstrap_ci
from .compare import Comparison, ComparisonCancelled, compare_maps
from .decision import (
    DecisionComparison,
    adjust_scores_for_prior,
    compare_expected_costs,
    cost_curve,
    cost_threshold,
    expected_cost,
    prior_shift_threshold,
)
from .decomposition import Decomposition, brier_decomposition, log_loss_decomposition
from .ece_variants import (
    adaptive_classwise_ece,
    adaptive_ece,
    debiased_ece,
    plugin_calibration_error,
)
from .errors import CalibrationInputError
from .hosmer_lemeshow import (
    HosmerLemeshowResult,
    HosmerLemeshowTable,
    SmallSampleWarning,
    hosmer_lemeshow,
)
from .human_uncertainty import (
    HumanUncertaintyResult,
    distribution_calibration_error,
    entropy_calibration_error,
    human_uncertainty_calibration,
    rank_calibration_score,
)
from .io import load_predictions
from .metrics import (
    accuracy,
    binary_ece,
    binary_mce,
    binary_statistics,
    brier_score,
    classwise_ece,
    classwise_mce,
    classwise_statistics,
    confidence_ece,
    confidence_mce,
    confidence_statistics,
    log_loss,
)
from .notions import notion_scores, top_label
from .predictions import Predictions, stable_softmax
from .reliability import ReliabilityCurve, reliability_curve
from .sensitivity import EceSensitivity, ece_sensitivity
from .significance import CalibrationTestResult, calibration_test

__all__ = [
    "BinStatistics",
    "Binning",
    "BootstrapResult",
    "CalibrationInputError",
    "CalibrationTestResult",
    "Comparison",
    "ComparisonCancelled",
    "DecisionComparison",
    "Decomposition",
    "EceSensitivity",
    "HosmerLemeshowResult",
    "HosmerLemeshowTable",
    "HumanUncertaintyResult",
    "Predictions",
    "ReliabilityCurve",
    "SmallSampleWarning",
    "SortedScores",
    "accuracy",
    "adaptive_classwise_ece",
    "adaptive_ece",
    "adjust_scores_for_prior",
    "binary_ece",
    "binary_mce",
    "binary_statistics",
    "binomial_band",
    "bootstrap_ci",
    "brier_decomposition",
    "brier_score",
    "calibration_test",
    "classwise_ece",
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
    "debiased_ece",
    "distribution_calibration_error",
    "ece_sensitivity",
    "entropy_calibration_error",
    "expected_cost",
    "hosmer_lemeshow",
    "human_uncertainty_calibration",
    "load_predictions",
    "log_loss",
    "log_loss_decomposition",
    "notion_scores",
    "plugin_calibration_error",
    "prior_shift_threshold",
    "rank_calibration_score",
    "reliability_curve",
    "stable_softmax",
    "top_label",
]

__version__ = "0.1.0"
