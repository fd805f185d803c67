"""Size, power and coverage of every test and interval the page offers (issue 16).

    python benchmarks/stats_sim.py [--quick] [--only size,power,coverage,verdict]
        [--k 2,3,10] [--n 200,1000,5000] [--reps-size 1000] [--reps-power 300]
        [--verdict-t0 1,0.9] [--verdict-n 2000,10000] [--reps-verdict 1000]
        [--truth-fits 2000] [--verdict-modes folds,split]
        [--tests resampling,hl,beyond] [--measures confidence_mce,...]
        [--columns MCE,...] [--first-seed 0] [--out results.md]

Not a unit test: a Monte Carlo study whose tables go to docs/statistics.md.

Scenarios (logits ``z ~ N(0, 1.5^2)`` per class, ``softmax`` rows):

* **calibrated**: predictions ``p = softmax(z)``, labels drawn from ``p``;
* **over-confident**: labels from ``softmax(z)``, predictions ``softmax(z / 0.8)``;
* **under-confident**: labels from ``softmax(z / 0.8)``, predictions ``softmax(z)``
  (the example of issue 16);
* **strongly over-/under-confident**: the same with 0.6 instead of 0.8 (coverage
  only: true ECE >= 0.05 at every K).

Size is the rejection rate at alpha = 0.05 under "calibrated" (``--reps-size``
data sets per cell), power the rate under the two others (``--reps-power``),
for every measure of the resampling test (binary ones at K = 2) and for
Hosmer-Lemeshow with its default (parametric bootstrap) and the chi-squared
option (G(K-1) and (G-2)(K-1) degrees of freedom), G = 10, and for the tests
of the "Beyond bins" card (issue 17: KS and Kuiper of the cumulative
differences, Spiegelhalter's z, of the top label, or of the positive class at
K = 2; SKCE's linear-time test; ``--tests`` picks families). The 95 % binomial
range of a size of 0.05 is printed next to each table. The MCE measures also
get a column "ties extreme (old)": the same null, every tie counted as extreme
(the p-value before ties were broken at random).

Coverage is that of the default bootstrap interval of every column of the
page's "Compute intervals for every metric" (ECE, MCE, classwise ECE, Brier
score, log-loss, accuracy), each against its population value computed on 2
million rows with the known true probabilities (binned metrics with the same
15 equal-width bins), and of the two other interval kinds for the ECE (from
the same resamples).

The map verdict is checked on the path users run (issue 28): binary scores,
true ``s ~ Beta(2, 3)``, ``y ~ Bernoulli(s)``, predictions
``sigmoid(logit(s) / T0)``; ``compare_maps(p, ("temperature",), folds=5)``
(or a train/test split with half the rows held out), then ``.verdict()``.
The estimand is the difference of the two *procedures*: the expected
held-out log-loss of a temperature fitted on the same number of training
rows (``--truth-fits`` independent fits, each scored by its expected loss on
the same 1e6 fresh rows) minus the uncalibrated predictions'. Reported per
cell: coverage of that truth by the 95 % interval, how often the truly worse
procedure is named the clear winner (with its Monte Carlo standard error),
the power (the truly better one named clearly) and the median width.

Seeds are fixed: data set ``i`` of a cell uses seed ``i`` (from
``--first-seed``), and the tests and intervals run on it get a stream of their
own (:func:`procedure_seed`). Cells run on
:func:`calibration_core.parallel.map_blocks` threads.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from calibration_core import Predictions, calibration_test, hosmer_lemeshow  # noqa: E402
from calibration_core.bootstrap import (  # noqa: E402
    DEFAULT_INTERVAL,
    INTERVALS,
    MAX_GAP_INTERVAL,
    bootstrap_ci,
    interval_bounds,
)
from calibration_core.compare import UNCALIBRATED, compare_maps  # noqa: E402
from calibration_core.maps import make_map  # noqa: E402
from calibration_core.measures.significance import MEASURES, monte_carlo_p_value  # noqa: E402
from calibration_core.metrics import LOG_LOSS_EPS  # noqa: E402
from calibration_core.parallel import map_blocks  # noqa: E402

ALPHA = 0.05
SCALE = 1.5
#: Scenario -> (temperature of the predictions, temperature of the truth) on the same logits.
SCENARIOS = {
    "calibrated": (1.0, 1.0),
    "over-confident": (0.8, 1.0),
    "under-confident": (1.0, 0.8),
    "strongly over-confident": (0.6, 1.0),
    "strongly under-confident": (1.0, 0.6),
}
N_BINS = 15
#: Families of tests: the resampling test's measures, Hosmer-Lemeshow, the "Beyond bins" card.
TESTS = frozenset({"resampling", "hl", "beyond"})
HL_VARIANTS = {
    "HL bootstrap (default)": {"p_value": "bootstrap"},
    "HL chi2 G(K-1)": {"p_value": "chi2", "holdout": True},
    "HL chi2 (G-2)(K-1)": {"p_value": "chi2", "holdout": False},
}


# ------------------------------------------------------------------ data
def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax."""
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def scenario(name: str, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(predictions, true probabilities, labels) of one simulated data set."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, SCALE, (n, k))
    t_pred, t_truth = SCENARIOS[name]
    pred = softmax(z / t_pred)
    truth = pred if t_truth == t_pred else softmax(z / t_truth)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(max=k - 1)
    return pred, truth, labels


def procedure_seed(seed: int) -> np.random.SeedSequence:
    """Seed of the test or interval run on data set ``seed``: a stream of its own.

    The data set is drawn from ``default_rng(seed)``; a procedure seeded with the
    same int would replay that stream (e.g. null draw K of the resampling test
    would reuse the uniforms of the observed labels, correlating it with them).
    """
    return np.random.SeedSequence([seed, 1])


def measures_for(k: int, chosen: frozenset | None = None) -> list[str]:
    """Resampling-test measures the page offers for K classes (those ``chosen``, if given)."""
    return [
        m
        for m in MEASURES
        if (k == 2 or not m.startswith("binary_")) and (chosen is None or m in chosen)
    ]


def binomial_range(p: float, reps: int) -> tuple[float, float]:
    """Central 95 % range of a rejection rate p over reps replications (normal approximation)."""
    half = 1.96 * math.sqrt(p * (1 - p) / reps)
    return max(0.0, p - half), p + half


# ---------------------------------------------------------- size / power
def beyond_rejections(p: np.ndarray, y: np.ndarray, seed: int) -> dict[str, bool]:
    """Which tests of the "Beyond bins" card reject calibration at ALPHA on one data set."""
    from calibration_core.measures.canonical import skce
    from calibration_core.measures.cumulative import cumulative_test, spiegelhalter_test

    pred = Predictions.from_probs(p, y)
    notion = "binary" if p.shape[1] == 2 else "confidence"
    cumulative = cumulative_test(pred, notion=notion)
    return {
        "KS": cumulative.ks_p_value <= ALPHA,
        "Kuiper": cumulative.kuiper_p_value <= ALPHA,
        "Spiegelhalter": spiegelhalter_test(pred, notion=notion).p_value <= ALPHA,
        "SKCE linear": skce(p, y, seed=seed, max_rows=4, n_resamples=0).linear_p_value <= ALPHA,
    }


def rejections(
    name: str, n: int, k: int, seed: int, n_resamples: int, tests: frozenset = TESTS
) -> dict[str, bool]:
    """Which tests (of the families ``tests``) reject calibration at ALPHA on one data set.

    ``tests`` may also hold ``"measure:<name>"`` entries: then only those measures of
    the resampling test run.
    """
    p, _, y = scenario(name, n, k, seed)
    out = {}
    if "beyond" in tests:
        out |= beyond_rejections(p, y, procedure_seed(seed))
    chosen = frozenset(t.split(":", 1)[1] for t in tests if t.startswith("measure:")) or None
    for m in measures_for(k, chosen) if "resampling" in tests else ():
        result = calibration_test(
            p, y, measure=m, n_resamples=n_resamples, seed=procedure_seed(seed)
        )
        out[m] = result.p_value <= ALPHA
        if m.endswith("_mce"):  # before the random tie-breaking: every tie counted as extreme
            out[f"{m} ties extreme (old)"] = (
                monte_carlo_p_value(result.observed, result.null) <= ALPHA
            )
        if result.sides == "two-sided":  # the one-sided test of before issue 16, same null
            one_sided = monte_carlo_p_value(result.observed, result.null)
            out[f"{m} one-sided (old)"] = one_sided <= ALPHA
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the small-sample warning at N = 200
        for label, kwargs in HL_VARIANTS.items() if "hl" in tests else ():
            result = hosmer_lemeshow(
                p, y, n_resamples=n_resamples, seed=procedure_seed(seed), **kwargs
            )
            out[label] = result.p_value <= ALPHA
    return out


def progress(what: str, started: float) -> None:
    """One line per finished cell on stderr (the tables go to stdout)."""
    print(f"  {what}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)


def rejection_rates(
    name: str,
    n: int,
    k: int,
    reps: int,
    n_resamples: int,
    tests: frozenset = TESTS,
    first_seed: int = 0,
) -> dict[str, float]:
    """Share of ``reps`` data sets (seeds ``first_seed, ...``) on which each test rejects."""
    started = time.perf_counter()
    seeds = range(first_seed, first_seed + reps)
    rows = map_blocks(lambda s: rejections(name, n, k, s, n_resamples, tests), seeds)
    progress(f"{name} K={k} N={n}", started)
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


# -------------------------------------------------------------- coverage
#: Columns of the page's "Compute intervals for every metric" -> core metric at K = 2 / K > 2.
INTERVAL_METRICS = {
    "ECE": ("binary_ece", "confidence_ece"),
    "MCE": ("binary_mce", "confidence_mce"),
    "classwise ECE": ("classwise_ece", "classwise_ece"),
    "Brier": ("brier_score", "brier_score"),
    "log-loss": ("log_loss", "log_loss"),
    "accuracy": ("accuracy", "accuracy"),
}


def _binned_population(score: np.ndarray, gap: np.ndarray) -> tuple[float, float]:
    """(ECE, MCE) of one score column with N_BINS equal-width bins, exact per-row gaps."""
    bins = np.minimum((score * N_BINS).astype(np.intp), N_BINS - 1)
    count = np.bincount(bins, minlength=N_BINS)
    total = np.bincount(bins, weights=gap, minlength=N_BINS)
    filled = count > 0
    return float(np.abs(total).sum() / score.shape[0]), float(
        np.max(np.abs(total[filled]) / count[filled])
    )


@functools.cache
def population_values(name: str, k: int, seed: int = 10**6) -> dict[str, float]:
    """Every interval metric of the population (2 million rows, exact targets).

    Binned metrics use N_BINS equal-width bins and the true probabilities as
    targets (ECE: ``sum_m P(B_m) |E[Y - S | B_m]|``; MCE: the largest
    ``|E[Y - S | B_m]|`` over bins of positive mass); the scores are means of
    their exact per-row expectations given the true probabilities.
    """
    p, truth, _ = scenario(name, 2_000_000, k, seed)
    rows = np.arange(p.shape[0])
    top = p.argmax(axis=1)
    if k == 2:
        score, target = p[:, 1], truth[:, 1]
    else:
        score, target = p[rows, top], truth[rows, top]
    ece, mce = _binned_population(score, target - score)
    classwise = np.mean([_binned_population(p[:, j], truth[:, j] - p[:, j])[0] for j in range(k)])
    clipped = np.clip(p, LOG_LOSS_EPS, 1.0)
    return {
        "ECE": ece,
        "MCE": mce,
        "classwise ECE": float(classwise),
        "Brier": float(np.mean(np.einsum("ij,ij->i", p, p - 2.0 * truth) + 1.0)),
        "log-loss": float(-np.mean(np.einsum("ij,ij->i", truth, np.log(clipped)))),
        "accuracy": float(np.mean(truth[rows, top])),
    }


def covered(name, n, k, seed, truth, n_resamples, level, columns=None) -> dict[str, bool]:
    """Which intervals cover the population value on one data set.

    ECE: every interval kind (from the same resamples, unclipped bounds then
    clipped at 0) and whether its lower bound was clipped; every other metric:
    the default interval of :func:`bootstrap_ci`, as the page computes it.
    ``columns`` restricts the metrics (default: every column).
    """
    p, _, y = scenario(name, n, k, seed)
    rng = np.random.default_rng(procedure_seed(seed))
    out = {}
    for column, metrics in INTERVAL_METRICS.items():
        if columns is not None and column not in columns:
            continue
        result = bootstrap_ci(metrics[k > 2], p, y, n_resamples=n_resamples, seed=rng, level=level)
        out[column] = result.lower <= truth[column] <= result.upper
        if column != "ECE":
            continue
        for kind in INTERVALS:
            lo, hi = interval_bounds(result.estimate, result.samples, level, kind)
            out[kind] = max(lo, 0.0) <= truth["ECE"] <= max(hi, 0.0)
            out[kind + " lower clipped"] = lo < 0
        out["bias"] = result.estimate - truth["ECE"]
    return out


def coverage(name, n, k, reps, n_resamples, level=0.95, columns=None) -> dict[str, float]:
    """Coverage of every interval of its population value, and the plug-in ECE's mean bias."""
    started = time.perf_counter()
    truth = population_values(name, k)
    rows = map_blocks(
        lambda s: covered(name, n, k, s, truth, n_resamples, level, columns), range(reps)
    )
    progress(f"coverage {name} K={k} N={n}", started)
    out = {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}
    out |= {"true ECE": truth["ECE"]} | {f"true {c}": v for c, v in truth.items()}
    # The cell's figures on stderr too, so that a long run stopped early keeps them.
    print("  " + json.dumps({"scenario": name, "K": k, "N": n} | out), file=sys.stderr, flush=True)
    return out


def verdict_data(n: int, t0: float, rng: np.random.Generator):
    """``(s, y, p)``: true probabilities, labels and the model's scores (module docstring)."""
    s = rng.beta(2.0, 3.0, n)
    y = (rng.random(n) < s).astype(np.int64)
    p = special.expit(special.logit(s) / t0)
    return s, y, p


def expected_log_loss(q: np.ndarray, s: np.ndarray) -> float:
    """Mean over rows of the log-loss of score ``q`` expected under ``y ~ Bernoulli(s)``."""
    q = np.clip(q, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS)
    return float(np.mean(-s * np.log(q) - (1.0 - s) * np.log1p(-q)))


def true_procedure_difference(t0: float, n_train: int, fits: int, seed: int = 10**6):
    """``(difference, Monte Carlo SE)``: E[loss of a temperature fitted on n_train rows] - uncal.

    Each of ``fits`` temperatures is fitted on fresh rows, as the shipped
    path fits it, and scored by its expected loss on the same 1e6 fresh rows.
    """
    rng = np.random.default_rng([seed, int(1000 * t0), n_train])
    s_new, _, p_new = verdict_data(1_000_000, t0, rng)
    new = Predictions.from_scores(p_new, np.zeros(p_new.shape[0], dtype=np.int64))
    base = expected_log_loss(p_new, s_new)
    seeds = rng.integers(0, 2**63, fits)

    def one(fit_seed) -> float:
        _, y, p = verdict_data(n_train, t0, np.random.default_rng(fit_seed))
        fitted = make_map("temperature").fit(Predictions.from_scores(p, y), y)
        return expected_log_loss(fitted.predict_proba(new)[:, 1], s_new) - base

    values = np.array(map_blocks(one, list(seeds)))
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(fits))


def verdict_outcome(n: int, t0: float, mode: str, seed: int, truth: float) -> dict[str, bool]:
    """One replicate on the shipped path: fit, verdict, and how it did against ``truth``."""
    _, y, p = verdict_data(n, t0, np.random.default_rng([seed, int(1000 * t0), n]))
    held_out = {"folds": 5} if mode == "folds" else {"test_fraction": 0.5}
    comparison = compare_maps(
        Predictions.from_scores(p, y), maps=("temperature",), seed=seed, **held_out
    )
    v = comparison.verdict()
    sign = 1.0 if v.winner == "temperature" else -1.0  # runner-up minus winner
    worse = "temperature" if truth > 0 else UNCALIBRATED
    return {
        "covered": v.lower <= -sign * truth <= v.upper,
        "worse named": v.clear and v.winner == worse,
        "better named": v.clear and v.winner != worse,
        "width": v.upper - v.lower,
    }


def verdict_cell(n: int, t0: float, mode: str, reps: int, fits: int, first: int) -> dict:
    """The verdict's coverage, wrong-clear rate and power in one cell."""
    started = time.perf_counter()
    n_train = int(n * 0.8) if mode == "folds" else n - n // 2
    truth, truth_se = true_procedure_difference(t0, n_train, fits)
    rows = map_blocks(lambda i: verdict_outcome(n, t0, mode, i, truth), range(first, first + reps))
    progress(f"verdict {mode} T0={t0} N={n}", started)
    wrong = float(np.mean([r["worse named"] for r in rows]))
    return {
        "held out": "5-fold" if mode == "folds" else "split 50 %",
        "T0": t0,
        "N": n,
        "true difference": truth,
        "truth MC SE": truth_se,
        "coverage": float(np.mean([r["covered"] for r in rows])),
        "worse named clear": wrong,
        "its MC SE": float(np.sqrt(wrong * (1 - wrong) / reps)),
        "power": float(np.mean([r["better named"] for r in rows])),
        "median width": float(np.median([r["width"] for r in rows])),
    }


# ---------------------------------------------------------------- output
def table(title: str, rows: list[dict], columns: list[str]) -> str:
    """A markdown table; floats as percentages except the named raw columns."""
    raw = {"K", "N", "T0", "true ECE", "bias", "true difference", "truth MC SE"} | {
        f"true {c}" for c in INTERVAL_METRICS
    }
    lines = [f"\n{title}\n", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for c in columns:
            v = row.get(c, "")
            if isinstance(v, float) and c == "median width":
                cells.append(f"{v:.2g}")
            elif isinstance(v, float) and c not in raw:
                cells.append(f"{100 * v:.1f}")
            elif isinstance(v, float) and c in ("true difference", "truth MC SE"):
                cells.append(f"{v:.2g}")
            elif isinstance(v, float):
                cells.append(f"{v:.4g}")
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    """Command line; --quick shrinks every count."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few replications, N <= 1000")
    ap.add_argument("--only", default="size,power,coverage,verdict")
    ap.add_argument("--k", default="2,3,10")
    ap.add_argument("--n", default="200,1000,5000")
    ap.add_argument("--reps-size", type=int, default=1000)
    ap.add_argument("--reps-power", type=int, default=300)
    ap.add_argument("--resamples", type=int, default=199, help="R of each test and interval")
    ap.add_argument("--scenarios", default="over-confident,under-confident", help="of power")
    ap.add_argument(
        "--coverage-scenarios",
        default="calibrated,over-confident,under-confident,"
        "strongly over-confident,strongly under-confident",
    )
    ap.add_argument("--tests", default=",".join(sorted(TESTS)), help="families of size/power")
    ap.add_argument("--measures", help="resampling-test measures (default: all)")
    ap.add_argument("--columns", help="interval columns of coverage (default: all), e.g. MCE")
    ap.add_argument("--first-seed", type=int, default=0, help="seed of the first data set")
    ap.add_argument("--verdict-t0", default="1,0.9", help="temperatures T0 of the verdict study")
    ap.add_argument("--verdict-n", default="2000,10000", help="rows N of the verdict study")
    ap.add_argument("--verdict-modes", default="folds,split", help="held-out schemes")
    ap.add_argument("--reps-verdict", type=int, default=1000)
    ap.add_argument("--truth-fits", type=int, default=2000, help="fits behind each true value")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.quick:
        args.reps_size, args.reps_power, args.resamples = 100, 50, 99
        args.reps_verdict, args.truth_fits = 100, 100
        args.n = ",".join(v for v in args.n.split(",") if int(v) <= 1000)
    return args


def main(argv=None) -> None:
    """Run the chosen parts and print (and optionally write) the tables."""
    args = parse_args(argv)
    ks = [int(v) for v in args.k.split(",")]
    ns = [int(v) for v in args.n.split(",")]
    parts = set(args.only.split(","))
    tests = frozenset(args.tests.split(","))
    if args.measures:  # "measure:<name>" entries restrict the resampling test's measures
        tests |= {f"measure:{m}" for m in args.measures.split(",")}
    started = time.perf_counter()
    out = [
        f"Run: `python benchmarks/stats_sim.py {' '.join(sys.argv[1:])}` "
        f"(size reps {args.reps_size}, power/coverage reps {args.reps_power}, "
        f"R = {args.resamples}); alpha = {ALPHA}."
    ]

    def emit(text: str) -> None:
        print(text, flush=True)
        out.append(text)

    print(out[0], flush=True)
    cells = [(k, n) for k in ks for n in ns]
    if "size" in parts:
        lo, hi = binomial_range(ALPHA, args.reps_size)
        rows = []
        for k, n in cells:
            rows.append(
                {"K": k, "N": n}
                | rejection_rates(
                    "calibrated", n, k, args.reps_size, args.resamples, tests, args.first_seed
                )
            )
        columns = ["K", "N", *dict.fromkeys(c for r in rows for c in r if c not in ("K", "N"))]
        emit(
            table(
                f"Size (% rejected at alpha = 0.05, calibrated; "
                f"95 % range {100 * lo:.1f}-{100 * hi:.1f})",
                rows,
                columns,
            )
        )
    if "power" in parts:
        for name in args.scenarios.split(","):
            rows = [
                {"K": k, "N": n}
                | rejection_rates(
                    name, n, k, args.reps_power, args.resamples, tests, args.first_seed
                )
                for k, n in cells
            ]
            columns = ["K", "N", *dict.fromkeys(c for r in rows for c in r if c not in ("K", "N"))]
            emit(table(f"Power (% rejected at alpha = 0.05, {name})", rows, columns))
    if "coverage" in parts:
        columns = frozenset(args.columns.split(",")) if args.columns else None
        rows = []
        for name in args.coverage_scenarios.split(","):
            for k, n in cells:
                rows.append(
                    {"scenario": name, "K": k, "N": n}
                    | coverage(name, n, k, args.reps_power, args.resamples, columns=columns)
                )
        columns = [
            "scenario",
            "K",
            "N",
            "true ECE",
            "bias",
            *INTERVALS,
            *(f"{i} lower clipped" for i in INTERVALS),
        ]
        emit(
            table(
                "Coverage (%) of the population ECE (95 % intervals; "
                "K = 2 binary ECE, else confidence ECE)",
                rows,
                columns,
            )
        )
        columns = ["scenario", "K", "N"]
        for c in INTERVAL_METRICS:
            columns += [f"true {c}", c]
        emit(
            table(
                f"Coverage (%) of the default 95 % interval of every metrics-table column "
                f"(MCE: {MAX_GAP_INTERVAL}, else {DEFAULT_INTERVAL}; K = 2: binary ECE/MCE, "
                "else confidence)",
                rows,
                columns,
            )
        )
    if "verdict" in parts:
        rows = [
            verdict_cell(n, float(t0), mode, args.reps_verdict, args.truth_fits, args.first_seed)
            for mode in args.verdict_modes.split(",")
            for t0 in args.verdict_t0.split(",")
            for n in (int(v) for v in args.verdict_n.split(","))
        ]
        emit(
            table(
                f"The map verdict on the shipped path ({args.reps_verdict} replicates a cell; "
                f"truth from {args.truth_fits} fits on 1e6 fresh rows): % of replicates",
                rows,
                list(rows[0]),
            )
        )
    emit(f"\nWall time: {time.perf_counter() - started:.0f} s")
    if args.out:
        args.out.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
