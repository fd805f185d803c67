"""Measures beyond bins: vector, cumulative, smooth and clinical calibration checks.

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
* **Is there evidence of miscalibration at all?** (a test, not a size):
  :func:`cumulative_test`, :func:`spiegelhalter_test`, the test of :func:`skce`.
* **How is a risk model miscalibrated, in clinical terms?**
  :func:`calibration_hierarchy`: calibration in the large, the calibration
  intercept and slope, and the flexible (lowess) curve with ICI, E50, E90
  and Emax, as R's ``rms::val.prob``.
* **A summary of all of them for one model**: :func:`measures_summary`.

Modules
-------
- :mod:`.canonical`: SKCE (unbiased, linear, test) and the vector-binned ECE.
- :mod:`.cumulative`: cumulative differences, KS error, Kuiper, Spiegelhalter.
- :mod:`.smooth`: smooth ECE and the smoothed reliability curve (relplot's algorithm).
- :mod:`.lowess`: R's ``lowess(iter = 0)``.
- :mod:`.hierarchy`: the calibration hierarchy.
- :mod:`.summary`: all of the above for one model, as plain data.
"""

from .canonical import SkceResult, VectorBinnedEce, skce, vector_binned_ece
from .cumulative import (
    CumulativeDifferences,
    CumulativeTestResult,
    SpiegelhalterResult,
    classwise_ks_errors,
    cumulative_differences,
    cumulative_test,
    ks_calibration_error,
    spiegelhalter_test,
)
from .hierarchy import CalibrationHierarchy, calibration_hierarchy, integrated_calibration_index
from .smooth import SmoothEce, SmoothReliabilityCurve, smooth_ece, smooth_reliability_curve
from .summary import measures_summary

__all__ = [
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
]
