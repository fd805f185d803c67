"""Diagnostics of one model and its fitted calibrators: how far to trust each number.

Core calls only (no Dash, no Plotly), like :mod:`app.analysis`. For the model
picked in the Diagnostics section, every *calibrator* of the view (the
uncalibrated predictions first, then each selected map already in the fit
store; all scored on held-out rows, see :class:`app.settings.HeldOut`) gets
the diagnostics of these modules, re-exported here:

* :mod:`app.diagnostics_target`: the section's settings (choices, defaults,
  parsers, per-session memory), the target (model, view settings,
  calibrators) and the view's notion;
* :mod:`app.diagnostics_overview`: **ECE sensitivity** to the number of bins
  and scheme, and the **ECE estimators** (plug-in, adaptive, L2, debiased L2, ACE);
* :mod:`app.diagnostics_cards`: the **Hosmer-Lemeshow** test (held-out
  degrees of freedom), the **decision view** (binary problems) and
  **human-uncertainty calibration** (soft labels);
* :mod:`app.diagnostics_resampling`: the **resampling test** and the
  **bootstrap intervals**, run on demand in a background job and kept in the
  disk store, where the page and the HTML report read them.
"""

from __future__ import annotations

from .analysis import UNCALIBRATED
from .diagnostics_cards import (
    HL_SMALL_SAMPLE,
    DecisionView,
    HosmerLemeshowRow,
    HumanRow,
    decision_view,
    hosmer_lemeshow_rows,
    human_rows,
    shifted_threshold,
)
from .diagnostics_overview import EstimatorRow, estimator_rows, estimators, sensitivity_curves
from .diagnostics_resampling import (
    BINNED_MEASURES,
    BOOT_FIELDS,
    BOOT_INTERVAL,
    NOT_COMPUTED,
    SEED,
    BootPlan,
    BootRow,
    ResamplingRow,
    boot_key,
    boot_plans,
    bootstrap_one,
    bootstrap_rows,
    calibration_tests,
    check_measure,
    resampling_key,
)
from .diagnostics_target import (
    BOOT_LEVELS,
    DEFAULT_BOOT_LEVEL,
    DEFAULT_RESAMPLES,
    HL_DEFAULT_GROUPS,
    HL_MAX_GROUPS,
    HL_MIN_GROUPS,
    MAX_COST,
    MEASURE_LABELS,
    RESAMPLE_CHOICES,
    DiagTarget,
    NotionSpec,
    diag_target,
    notion_spec,
    parse_costs,
    parse_groups,
    parse_level,
    parse_measure,
    parse_prior,
    parse_resamples,
    remember,
    remembered,
)

__all__ = [
    "BINNED_MEASURES",
    "BOOT_FIELDS",
    "BOOT_INTERVAL",
    "BOOT_LEVELS",
    "DEFAULT_BOOT_LEVEL",
    "DEFAULT_RESAMPLES",
    "HL_DEFAULT_GROUPS",
    "HL_MAX_GROUPS",
    "HL_MIN_GROUPS",
    "HL_SMALL_SAMPLE",
    "MAX_COST",
    "MEASURE_LABELS",
    "NOT_COMPUTED",
    "RESAMPLE_CHOICES",
    "SEED",
    "UNCALIBRATED",
    "BootPlan",
    "BootRow",
    "DecisionView",
    "DiagTarget",
    "EstimatorRow",
    "HosmerLemeshowRow",
    "HumanRow",
    "NotionSpec",
    "ResamplingRow",
    "boot_key",
    "boot_plans",
    "bootstrap_one",
    "bootstrap_rows",
    "calibration_tests",
    "check_measure",
    "decision_view",
    "diag_target",
    "estimator_rows",
    "estimators",
    "hosmer_lemeshow_rows",
    "human_rows",
    "notion_spec",
    "parse_costs",
    "parse_groups",
    "parse_level",
    "parse_measure",
    "parse_prior",
    "parse_resamples",
    "remember",
    "remembered",
    "resampling_key",
    "sensitivity_curves",
    "shifted_threshold",
]
