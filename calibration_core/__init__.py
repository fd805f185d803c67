"""calibration_core: measure and fix the calibration of predicted probabilities.

Plain numpy/scipy (never dash, plotly or flask). Definitions follow the survey
"Classifier Calibration" (Silva Filho et al., arXiv 2112.10327).
"""

from .binning import Binning, BinStatistics, SortedScores
from .errors import CalibrationInputError, RenormalisedRowsWarning, SmallSampleWarning
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

# Heavier modules (scipy.stats, scikit-learn, pandas) load on first use, so that
# ``import calibration_core`` stays fast for the CLI and the dashboard's start.
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ("binomial_band", "consistency_band", "consistency_band_from_statistics"), "bands"
    ),
    **dict.fromkeys(("BootstrapResult", "bootstrap_ci"), "bootstrap"),
    **dict.fromkeys(("Comparison", "ComparisonCancelled", "compare_maps"), "compare"),
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
        "decomposition",
    ),
    **dict.fromkeys(
        (
            "adaptive_classwise_ece",
            "adaptive_ece",
            "debiased_ece",
            "plugin_calibration_error",
            "thresholded_adaptive_ece",
        ),
        "ece_variants",
    ),
    **dict.fromkeys(
        ("HosmerLemeshowResult", "HosmerLemeshowTable", "hosmer_lemeshow"),
        "goodness_of_fit",
    ),
    **dict.fromkeys(
        (
            "HumanUncertaintyResult",
            "distribution_calibration_error",
            "entropy_calibration_error",
            "human_uncertainty_calibration",
            "rank_calibration_score",
        ),
        "human_uncertainty",
    ),
    **dict.fromkeys(("load_predictions", "load_with_notices"), "io"),
    **dict.fromkeys(("DeployableMap", "deployable_map", "load_map"), "deploy"),
    **dict.fromkeys(("EceSensitivity", "ece_sensitivity"), "sensitivity"),
    **dict.fromkeys(("CalibrationTestResult", "calibration_test"), "significance"),
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "PART_FIELDS",
    "BinStatistics",
    "Binning",
    "BootstrapResult",
    "CalibrationInputError",
    "CalibrationTestResult",
    "Comparison",
    "ComparisonCancelled",
    "DecisionComparison",
    "Decomposition",
    "DeployableMap",
    "EceSensitivity",
    "HosmerLemeshowResult",
    "HosmerLemeshowTable",
    "HumanUncertaintyResult",
    "Predictions",
    "ReliabilityCurve",
    "RenormalisedRowsWarning",
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
    "deployable_map",
    "distribution_calibration_error",
    "ece_sensitivity",
    "entropy_calibration_error",
    "expected_cost",
    "hosmer_lemeshow",
    "human_uncertainty_calibration",
    "load_map",
    "load_predictions",
    "load_with_notices",
    "log_loss",
    "log_loss_decomposition",
    "notion_scores",
    "plugin_calibration_error",
    "prior_shift_threshold",
    "rank_calibration_score",
    "reliability_curve",
    "score_parts",
    "stable_softmax",
    "thresholded_adaptive_ece",
    "top_label",
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
