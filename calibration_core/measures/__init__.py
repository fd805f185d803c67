"""Every calibration measure beyond the binned ECE of :mod:`calibration_core.metrics`.

All of them take ``f(probs, labels=None, *, notion=None, ..., seed=0)``
(:func:`calibration_core.predictions.measure_inputs`; the human-uncertainty
measures take ``(probs, human)``) and are exported at the top level too.

Which measure answers which question
------------------------------------
* **Is the whole probability vector right?** (canonical calibration)
  :func:`skce` (squared kernel calibration error with a test; no bins) and,
  for a few classes, :func:`vector_binned_ece` with its occupied cells.
* **Is one score column right, without choosing bins?** The cumulative
  differences (:func:`cumulative_differences`, the data of the cumulative
  plot) with the KS calibration error and Kuiper's statistic and their
  p-values (:func:`cumulative_test`, :func:`ks_calibration_error`), and
  :func:`smooth_ece` with the smoothed reliability curve
  (:func:`smooth_reliability_curve`).
* **How much does the binned ECE owe to its bins?** :func:`adaptive_ece`,
  :func:`debiased_ece`, :func:`plugin_calibration_error`, ACE and TACE
  (:mod:`.ece_variants`), and the ECE for every bin count
  (:func:`ece_sensitivity`).
* **Is there evidence of miscalibration at all?** (a test, not a size):
  :func:`cumulative_test`, :func:`spiegelhalter_test`, the test of :func:`skce`,
  the resampling test :func:`calibration_test` and :func:`hosmer_lemeshow`.
* **How is a risk model miscalibrated, in clinical terms?**
  :func:`calibration_hierarchy`: calibration in the large, the calibration
  intercept and slope, and the flexible (lowess) curve with ICI, E50, E90
  and Emax, as R's ``rms::val.prob``.
* **How much of a score is miscalibration?** :func:`brier_decomposition`,
  :func:`log_loss_decomposition`.
* **Do the probabilities follow human disagreement?** The measures of
  :mod:`.human_uncertainty`.
* **A summary of the binning-free ones for one model**: :func:`measures_summary`.

Modules
-------
- :mod:`.canonical`: SKCE (unbiased, linear, test) and the vector-binned ECE.
- :mod:`.cumulative`: cumulative differences, KS error, Kuiper, Spiegelhalter.
- :mod:`.smooth`: smooth ECE and the smoothed reliability curve (relplot's algorithm).
- :mod:`.lowess`: R's ``lowess(iter = 0)``.
- :mod:`.hierarchy`: the calibration hierarchy.
- :mod:`.ece_variants`: adaptive, debiased and Lp binned errors, ACE and TACE.
- :mod:`.sensitivity`: the ECE against the bin count.
- :mod:`.significance`: the resampling test of any binned measure or scoring rule.
- :mod:`.goodness_of_fit`: Hosmer-Lemeshow and its multinomial extension.
- :mod:`.decomposition`: calibration and refinement parts of the Brier score and log-loss.
- :mod:`.human_uncertainty`: calibration against human label distributions.
- :mod:`.summary`: the binning-free measures for one model, as plain data.

The modules load on first use (several import scipy.stats), so importing one
of them does not import the others.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

#: Public name -> the module of this package defining it.
_MODULES: dict[str, str] = {
    **dict.fromkeys(("SkceResult", "VectorBinnedEce", "skce", "vector_binned_ece"), "canonical"),
    **dict.fromkeys(
        (
            "CumulativeDifferences",
            "CumulativeTestResult",
            "SpiegelhalterResult",
            "classwise_ks_errors",
            "cumulative_differences",
            "cumulative_test",
            "ks_calibration_error",
            "spiegelhalter_test",
        ),
        "cumulative",
    ),
    **dict.fromkeys(
        ("CalibrationHierarchy", "calibration_hierarchy", "integrated_calibration_index"),
        "hierarchy",
    ),
    **dict.fromkeys(
        ("SmoothEce", "SmoothReliabilityCurve", "smooth_ece", "smooth_reliability_curve"),
        "smooth",
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
    **dict.fromkeys(("EceSensitivity", "ece_sensitivity"), "sensitivity"),
    **dict.fromkeys(("CalibrationTestResult", "calibration_test"), "significance"),
    **dict.fromkeys(
        ("HosmerLemeshowResult", "HosmerLemeshowTable", "hosmer_lemeshow"), "goodness_of_fit"
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
            "HumanUncertaintyResult",
            "distribution_calibration_error",
            "entropy_calibration_error",
            "human_uncertainty_calibration",
            "rank_calibration_score",
        ),
        "human_uncertainty",
    ),
    "measures_summary": "summary",
}


__getattr__, __dir__ = lazy_attributes(__name__, _MODULES, globals())


__all__ = [
    "PART_FIELDS",
    "CalibrationHierarchy",
    "CalibrationTestResult",
    "CumulativeDifferences",
    "CumulativeTestResult",
    "Decomposition",
    "EceSensitivity",
    "HosmerLemeshowResult",
    "HosmerLemeshowTable",
    "HumanUncertaintyResult",
    "SkceResult",
    "SmoothEce",
    "SmoothReliabilityCurve",
    "SpiegelhalterResult",
    "VectorBinnedEce",
    "adaptive_classwise_ece",
    "adaptive_ece",
    "brier_decomposition",
    "calibration_hierarchy",
    "calibration_test",
    "classwise_ks_errors",
    "cumulative_differences",
    "cumulative_test",
    "debiased_ece",
    "distribution_calibration_error",
    "ece_sensitivity",
    "entropy_calibration_error",
    "hosmer_lemeshow",
    "human_uncertainty_calibration",
    "integrated_calibration_index",
    "ks_calibration_error",
    "log_loss_decomposition",
    "measures_summary",
    "plugin_calibration_error",
    "rank_calibration_score",
    "score_parts",
    "skce",
    "smooth_ece",
    "smooth_reliability_curve",
    "spiegelhalter_test",
    "thresholded_adaptive_ece",
    "vector_binned_ece",
]
