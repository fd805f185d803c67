"""Tables and notes of the Diagnostics section, as plain text (shared by page and report).

Each builder turns rows of :mod:`app.diagnostics` modules into a :class:`TextTable`
(header, formatted cells, notes); :mod:`app.layout.diagnostics` renders it as
an HTML table component and :mod:`app.report.diagnostics` as escaped HTML, so
the page and the report always show the same numbers. Cells are text only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from calibration_core.measures.significance import DETECTS, TWO_SIDED

from ..metrics_table import METRICS
from .cards import HL_SMALL_SAMPLE, DecisionView, HosmerLemeshowRow, HumanRow, shifted_threshold
from .overview import EstimatorRow
from .resampling import BOOT_FIELDS, SEED, BootRow, ResamplingRow
from .target import MEASURE_LABELS


@dataclass
class TextTable:
    """A small table of text cells with notes under it.

    Attributes
    ----------
    header : list of str
    rows : list of list of str
    notes : list of str
        Sentences shown under the table.
    warnings : list of str
        Shown more prominently (e.g. the small-sample warning).
    highlight : list of int
        Indices of rows to highlight (e.g. windows above the reference period).
    """

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    highlight: list[int] = field(default_factory=list)


def number(value, digits: int = 4) -> str:
    """A number with ``digits`` decimals; very large or small values in scientific notation."""
    if value is None:
        return ""
    value = float(value)
    if not math.isfinite(value):
        return "∞" if value > 0 else ("−∞" if value < 0 else "n/a")
    if value != 0 and (abs(value) >= 1e6 or abs(value) < 10 ** (-digits)):
        return f"{value:.3g}"
    return f"{value:.{digits}f}"


# ------------------------------------------------------------------ estimators
ESTIMATOR_NOTES = [
    "Which is which. Plug-in ECE: the usual binned ECE, Σ n_b/N |ȳ_b − s̄_b|, with the view's "
    "bins (the metrics table's number); it is biased upwards, so even calibrated predictions "
    "score above 0.",
    "Adaptive ECE (Nixon et al. 2019): the same plug-in estimator with equal-mass bins, so no "
    "bin is nearly empty.",
    "Plug-in L2 and debiased L2 (Kumar, Liang & Ma 2019): the L2 calibration error "
    "√(Σ n_b/N (ȳ_b − s̄_b)²) with equal-mass bins; the debiased one subtracts each bin's "
    "sampling variance ȳ_b(1 − ȳ_b)/(n_b − 1) first, so calibrated predictions score near 0. "
    "Compare it with the plug-in L2, not with the (L1) ECE.",
    "ACE (Nixon et al. 2019): every class in equal-mass ranges, the unweighted mean gap over "
    "classes and ranges (independent of the notion). All estimators use the view's number of bins.",
]


def estimator_table(rows: list[EstimatorRow], scheme_label: str) -> TextTable:
    """Plug-in, adaptive, L2 and debiased estimates per calibrator."""
    table = TextTable(
        [
            "calibrator",
            f"plug-in ECE ({scheme_label})",
            "adaptive ECE (equal-mass)",
            "plug-in L2 (equal-mass)",
            "debiased L2 (Kumar et al.)",
            "ACE (classwise)",
        ],
        notes=list(ESTIMATOR_NOTES),
    )
    for r in rows:
        if r.message:
            table.rows.append([r.calibrator, r.message, "", "", "", ""])
            continue
        table.rows.append(
            [
                r.calibrator,
                number(r.plugin_ece),
                number(r.adaptive_ece),
                number(r.plugin_l2),
                number(r.debiased_l2),
                number(r.ace),
            ]
        )
    return table


# ------------------------------------------------------------ Hosmer-Lemeshow
HL_NOTES = [
    "p-value: parametric bootstrap under calibration (labels redrawn 1,000 times from each "
    "row's predicted probabilities, fewer above 100,000 rows; groups kept, seed 0). Every "
    "row here is scored by predictions that were not fitted on it, and for such rows the "
    "chi-squared approximation is off in both directions: with (G − 2)(K − 1) degrees of "
    "freedom it rejects calibrated predictions too often, with G(K − 1) (shown as dof) too "
    "rarely for K ≥ 3. Size and power: see “What these numbers promise”.",
    "Groups: equal-frequency groups of 1 − P(first class) (for K = 2, of P(positive)); tied "
    "scores are never split, so fewer groups can form. K > 2: the multinomial test of "
    "Fagerland, Hosmer & Bofin (2008), a Pearson sum over all groups and classes.",
]


def hosmer_lemeshow_table(
    rows: list[HosmerLemeshowRow], n_classes: int, groups: int | None = None
) -> TextTable:
    """Statistic, dof, p-value and groups per calibrator, with the small-sample warning.

    ``groups`` (the number asked for) adds a warning for calibrators whose tied
    scores left fewer groups.
    """
    table = TextTable(
        ["calibrator", "statistic", "dof", "p-value", "groups", "rows"], notes=list(HL_NOTES)
    )
    small = False
    for r in rows:
        if r.message:
            table.rows.append([r.calibrator, r.message, "", "", "", number_int(r.n)])
            continue
        small = small or r.small_sample
        table.rows.append(
            [
                r.calibrator,
                number(r.statistic, 3),
                str(r.dof),
                format_p(r.p_value),
                str(r.n_groups),
                number_int(r.n),
            ]
        )
    if small:
        table.warnings.append(
            f"Fewer than {HL_SMALL_SAMPLE} rows: the Hosmer-Lemeshow test has little power here "
            "(survey §6); a large p-value says little about calibration."
        )
    fewer = [r.calibrator for r in rows if groups and r.n_groups and r.n_groups < groups]
    if fewer:
        table.warnings.append(
            f"Tied scores left fewer than {groups} groups for {', '.join(fewer)}: the "
            "statistic rests on few, uneven groups (see the groups column)."
        )
    if n_classes > 10:
        table.warnings.append(
            f"With {n_classes} classes most cells have small expected counts: the bootstrap "
            "p-value stays valid, but the statistic is dominated by a few sparse cells."
        )
    return table


def format_p(p: float) -> str:
    """A p-value for display: 4 decimals, scientific below 0.001."""
    if p is None or not math.isfinite(p):
        return "n/a"
    if p == 0:
        return "< 1e-300"
    return f"{p:.4f}" if p >= 1e-3 else f"{p:.2g}"


def number_int(value) -> str:
    """A count with thousands separators ('' for None)."""
    return "" if value is None else f"{int(value):,}"


# --------------------------------------------------------------- resampling
#: How null values equal to the observed one count (calibration_core.measures.significance).
TIES_NOTE = (
    "Null values equal to the observed one (frequent for the MCE) are counted in a random, "
    "seeded order, so the p-value is uniform under calibration. A small p rejects calibration."
)


def resampling_notes(n_resamples: int, measure: str | None = None) -> list[str]:
    """How the test works and what ``measure`` can detect (page and report)."""
    notes = [
        "Labels are redrawn from each row's own predicted probabilities with the scores kept "
        "fixed (survey §6, alg. 1): the null distribution is what the measure looks like when "
        f"the predictions are calibrated. {n_resamples:,} label sets, seed {SEED}; ECE/MCE use "
        "the view's binning.",
    ]
    if measure in TWO_SIDED:
        notes.append(
            "p = (1 + #{|null − null mean| > |observed − null mean|} + ties) / (1 + R), "
            "two-sided: a proper score can be too good (under-confidence) as well as too bad. "
            f"Never 0, at least 1/(R + 1) = {1 / (n_resamples + 1):.2g}. {TIES_NOTE}"
        )
    else:
        notes.append(
            "p = (1 + #{null > observed} + ties) / (1 + R): never 0, at least 1/(R + 1) "
            f"= {1 / (n_resamples + 1):.2g}. {TIES_NOTE}"
        )
    if measure in DETECTS:
        notes.append(f"What {MEASURE_LABELS.get(measure, measure)} can detect: {DETECTS[measure]}.")
    return notes


def resampling_table(rows: list[ResamplingRow], measure: str, n_resamples: int) -> TextTable:
    """Observed value, null quantiles and p-value per calibrator."""
    label = MEASURE_LABELS.get(measure, measure)
    table = TextTable(
        ["calibrator", f"observed {label}", "null median", "null 95th percentile", "p-value"],
        notes=resampling_notes(n_resamples, measure),
    )
    for r in rows:
        if r.result is None:
            table.rows.append([r.calibrator, r.message or "", "", "", ""])
            continue
        res = r.result
        q50, q95 = _quantiles(res.null)
        table.rows.append(
            [r.calibrator, number(res.observed), number(q50), number(q95), format_p(res.p_value)]
        )
    return table


def _quantiles(null) -> tuple[float, float]:
    q = np.quantile(np.asarray(null, dtype=np.float64), [0.5, 0.95])
    return float(q[0]), float(q[1])


# ----------------------------------------------------------------- bootstrap
def bootstrap_notes(level: float, n_resamples: int) -> list[str]:
    """How to read a cell, and how its interval is made."""
    return [
        f"How to read a cell: the metrics table's estimate, then a {level:.0%} interval for the "
        "value on the whole population the rows come from (same bins). Binned errors (ECE, MCE) "
        "are biased upwards, so the population value tends to lie in the lower part of the "
        "interval.",
        f"{n_resamples:,} bootstrap resamples of the rows (drawn with replacement, seed {SEED}); "
        "interval [2·est − q_hi, q_hi] from the resamples' quantiles q: the lower end corrects "
        "for the bias (basic bootstrap), the upper end is the percentile one; bounds are kept "
        "in the metric's range (never below 0). Coverage: see “What these numbers promise”.",
        "MCE: not from the resamples (a maximum of nearly tied bin gaps defeats the "
        "bootstrap): per-bin Wilson intervals of each gap; the upper end is the largest upper "
        "bound, the lower end the largest lower bound at a Bonferroni level over the bins.",
    ]


def bootstrap_table(
    rows: list[BootRow], headers: dict[str, str], level: float, n_resamples: int
) -> TextTable:
    """Every metrics-table number with its interval, per calibrator."""
    table = TextTable(
        ["calibrator", *[headers.get(f, METRICS[f][0]) for f in BOOT_FIELDS]],
        notes=bootstrap_notes(level, n_resamples),
    )
    for r in rows:
        cells = [r.calibrator]
        for f in BOOT_FIELDS:
            item = r.intervals.get(f)
            if item is None:
                cells.append("")
                continue
            # Two lines (the estimate, then the interval) keep the table narrow.
            estimate, lower, upper = (number(item[k]) for k in ("estimate", "lower", "upper"))
            cells.append(f"{estimate}\n[{lower},\u00a0{upper}]")
        if not r.complete and r.message:
            cells[1] = r.message if not any(cells[1:]) else cells[1]
        table.rows.append(cells)
    return table


# ------------------------------------------------------------------ decision
def decision_notes() -> list[str]:
    """How thresholds and costs are computed."""
    return [
        "A row is predicted positive when P(positive) ≥ threshold. For calibrated scores the "
        "cheapest threshold is c = C(+|−) / (C(+|−) + C(−|+)).",
        "With a deployment positive rate π′, scores calibrated at rate π (the scored rows' rate "
        "unless given) are thresholded at t = c·r / (c·r + (1 − c)·r′), r = π/(1 − π), "
        "r′ = π′/(1 − π′), and costs are those expected at π′ (from the rows' error rates).",
        "“Best on these rows”: the threshold a tuner would pick on these same rows (optimistic); "
        "the difference to it is the price of thresholding the scores at face value.",
    ]


def decision_table(view: DecisionView) -> TextTable:
    """Expected cost before (uncalibrated) and after each map."""
    cmp = view.comparison
    shifted = shifted_threshold(view)
    table = TextTable(
        [
            "calibrator",
            "threshold",
            "expected cost",
            "false positives",
            "false negatives",
            "best threshold on these rows",
            "best cost",
            "cost − best",
        ],
        notes=decision_notes(),
    )
    for i, name in enumerate(cmp.names):
        table.rows.append(
            [
                name,
                number(cmp.threshold),
                number(cmp.expected_cost[i]),
                number_int(cmp.false_positives[i]),
                number_int(cmp.false_negatives[i]),
                number(min(cmp.best_threshold[i], 1.0)),
                number(cmp.best_cost[i]),
                number(cmp.expected_cost[i] - cmp.best_cost[i]),
            ]
        )
    for name in view.pending:
        table.rows.append([name, "not fitted yet", "", "", "", "", "", ""])
    summary = (
        f"Cost threshold c = {number(view.cost_threshold)}; scored rows' positive rate "
        f"{number(view.positive_rate)}."
    )
    if shifted is not None:
        summary += (
            f" Positive rate {view.train_prior:.4g} → {view.deploy_prior:.4g}: threshold "
            f"t = {number(shifted)}; costs expected at the new rate."
        )
    table.notes.insert(0, summary)
    return table


# ------------------------------------------------------------ human uncertainty
HUMAN_NOTES = [
    "Against the annotators' label distribution h (each row's h_<class> votes divided by their "
    "sum), per instance, averaged (Baan et al. 2022, “Stop Measuring Calibration When Humans "
    "Disagree”; Pavlovic 2025, §3.3):",
    "EntCE: mean |H(p) − H(h)|, entropies in nats (signed: > 0 when the model is less certain "
    "than the annotators). Lower is better; equal entropies give 0 even if the classes differ.",
    "RankCS: share of instances whose ranking of the classes matches the annotators' (ties "
    "broken by class index). Higher is better.",
    "DistCE: mean total variation distance ½ Σ_k |p_k − h_k|, in [0, 1]. Lower is better.",
]
HUMAN_MISSING = (
    "No soft labels for this model. To compare its probabilities with human label "
    "distributions, upload a file with one column h_<class> per class next to the predictions "
    "(annotator votes or shares, e.g. h_cat and h_dog beside p_cat and p_dog), or an npz "
    "array soft_labels of shape (N, K); EntCE, RankCS and DistCE then appear here."
)


def human_table(rows: list[HumanRow]) -> TextTable:
    """EntCE (absolute and signed), RankCS and DistCE per calibrator."""
    table = TextTable(
        ["calibrator", "EntCE (nats)", "EntCE signed", "RankCS ↑", "DistCE"],
        notes=list(HUMAN_NOTES),
    )
    for r in rows:
        if r.result is None:
            table.rows.append([r.calibrator, r.message or "", "", "", ""])
            continue
        res = r.result
        table.rows.append(
            [
                r.calibrator,
                number(res.entce),
                number(res.entce_signed),
                number(res.rankcs),
                number(res.distce),
            ]
        )
    return table
