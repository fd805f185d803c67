"""calibration_core: measure and fix the calibration of predicted probabilities.

Plain numpy/scipy (never dash, plotly or flask). Definitions follow the survey
"Classifier Calibration" (Silva Filho et al., arXiv 2112.10327).
"""

from .bands import binomial_band, consistency_band, consistency_band_from_statistics
from .binning import Binning, BinStatistics, SortedScores
from .compare import Comparison, ComparisonCancelled, compare_maps
from .decomposition import Decomposition, brier_decomposition, log_loss_decomposition
from .errors import CalibrationInputError
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

__all__ = [
    "BinStatistics",
    "Binning",
    "CalibrationInputError",
    "Comparison",
    "ComparisonCancelled",
    "Decomposition",
    "Predictions",
    "ReliabilityCurve",
    "SortedScores",
    "accuracy",
    "binary_ece",
    "binary_mce",
    "binary_statistics",
    "binomial_band",
    "brier_decomposition",
    "brier_score",
    "classwise_ece",
    "classwise_mce",
    "classwise_statistics",
    "compare_maps",
    "confidence_ece",
    "confidence_mce",
    "confidence_statistics",
    "consistency_band",
    "consistency_band_from_statistics",
    "load_predictions",
    "log_loss",
    "log_loss_decomposition",
    "notion_scores",
    "reliability_curve",
    "stable_softmax",
    "top_label",
]

__version__ = "0.1.0"
