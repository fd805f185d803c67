"""The verdict of a comparison: best map by held-out log-loss, an interval of its win that
holds the noise of fitting, and the simplest map within noise of the best."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import norm

from calibration_core import CalibrationInputError, Predictions, compare_maps
from calibration_core.bootstrap import bootstrap_ci, resampled_means
from calibration_core.compare import choose_map, format_difference, map_parameters
from calibration_core.compare.verdict import FITS_FIXED, FitDesign, effective_parameters
from calibration_core.io import load_predictions
from calibration_core.maps import make_map
from calibration_core.metrics import log_loss, log_loss_per_row


def calibrated_data(seed: int, n: int = 1500, k: int = 3) -> Predictions:
    """Labels drawn from the predicted probabilities: calibrated by construction."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 1.5
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    return Predictions.from_probs(p, y)


def overconfident_data(seed: int = 0, n: int = 1500, k: int = 3, sharpen: float = 3.0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    q = np.exp(sharpen * z)
    return Predictions.from_probs(q / q.sum(axis=1, keepdims=True), y)


def test_two_identity_estimates_give_no_clear_winner_in_most_seeds():
    """Temperature and Platt both estimate the identity on calibrated data: no real winner.

    A 95 % interval of a difference whose true value is ~0 excludes 0 in about
    5 % of seeds; the issue asks for "no clear winner" in at least 90 %.
    Binary data: there both maps have one or two parameters. (With 3 classes
    one-vs-rest Platt fits 6 parameters and really is a little worse than
    temperature on 1500 rows: measured, temperature wins clearly in 5 of 30
    seeds; in binary data 2 of 40.)
    """
    seeds = range(30)
    clear = []
    for seed in seeds:
        data = calibrated_data(seed, k=2)
        comparison = compare_maps(data, maps=["temperature", "platt"], seed=seed)
        pair = {name: comparison.calibrated[name] for name in ("temperature", "platt")}
        verdict = choose_map(pair, comparison.fitted, design=comparison.design())
        assert {verdict.winner, verdict.runner_up} == {"temperature", "platt"}
        assert verdict.lower <= verdict.difference <= verdict.upper
        clear.append(verdict.clear)
    assert sum(clear) <= 0.1 * len(seeds), f"clear winner in {sum(clear)} of {len(seeds)} seeds"


def test_overconfident_model_gets_a_clear_winner_over_uncalibrated():
    comparison = compare_maps(overconfident_data(), maps=["temperature"], seed=0)
    verdict = comparison.verdict()
    assert verdict.winner == "temperature" and verdict.runner_up == "uncalibrated"
    assert verdict.clear and verdict.lower > 0
    table = comparison.table["log_loss"]
    assert verdict.log_loss["temperature"] == pytest.approx(table["temperature"], rel=1e-12)
    assert verdict.difference == pytest.approx(
        table["uncalibrated"] - table["temperature"], rel=1e-9
    )
    assert verdict.confidence_ece["temperature"] == pytest.approx(
        comparison.table.loc["temperature", "confidence_ece"], rel=1e-12
    )
    assert verdict.summary.startswith("temperature beats uncalibrated")
    assert verdict.parameters["temperature"].startswith("T = ")


def test_uncalibrated_competes_and_can_win():
    """A map that throws information away loses to doing nothing, clearly."""
    comparison = compare_maps(calibrated_data(1, n=4000), maps=["histogram"], seed=1)
    verdict = comparison.verdict()
    assert verdict.winner == "uncalibrated" and verdict.runner_up == "histogram"
    assert verdict.clear


def _documented_interval(comparison, name, best, level):
    """The interval of the module docstring, computed here from its definition."""
    losses = comparison.row_losses()
    d = losses[name] - losses[best]
    folds = comparison.fold_ids
    k, n = int(folds.max()) + 1, d.size
    n_train = np.array([np.sum(folds != f) for f in range(k)])

    def p_eff(m):
        if m == "uncalibrated":
            return 0.0
        relative = losses[m] - losses["uncalibrated"]  # relative to doing nothing, per row
        held = np.array([relative[folds == f].mean() for f in range(k)])
        train = comparison.train_log_loss[m] - comparison.train_log_loss["uncalibrated"]
        return max(0.0, np.mean(n_train * (held - train)))

    rows = d.var(ddof=1) / n
    fold_means = np.array([d[folds == f].mean() for f in range(k)])
    nadeau_bengio = (1 / k + (n / k) / n_train.mean()) * fold_means.var(ddof=1)
    v = 1 / (2 * k) + k / (2 * (k - 1))
    var = max(rows, nadeau_bengio) + v * (p_eff(name) + p_eff(best)) / n_train.mean() ** 2
    half = norm.ppf((1 + level) / 2) * np.sqrt(var)
    return d.mean(), d.mean() - half, d.mean() + half, p_eff(name)


def test_interval_is_the_documented_rule():
    # 1,502 rows: folds of 301 and 300, so the optimism's reference to the uncalibrated
    # rows matters (with equal folds the rows' own noise cancels without it).
    comparison = compare_maps(overconfident_data(2, n=1502), maps=["temperature", "platt"], seed=3)
    losses = comparison.row_losses()
    for name, pred in comparison.calibrated.items():
        assert losses[name].mean() == pytest.approx(log_loss(pred.probs, pred.labels), rel=1e-12)
    verdict = comparison.verdict(level=0.9)
    for contender in verdict.contenders[1:]:
        mean, lower, upper, p = _documented_interval(
            comparison, contender.name, verdict.winner, 0.9
        )
        assert contender.difference == pytest.approx(mean, rel=1e-12)
        assert (contender.lower, contender.upper) == (
            pytest.approx(lower, rel=1e-9),
            pytest.approx(upper, rel=1e-9),
        )
        assert contender.effective_parameters == pytest.approx(p, rel=1e-9)
    assert verdict.interval == "5-fold cross-fitting, each map fitted on 1,202 rows"
    assert comparison.verdict(level=0.9) == verdict  # nothing random left


def test_the_interval_is_wider_than_the_rows_alone_and_fixed_fits_are_said():
    comparison = compare_maps(overconfident_data(2), maps=["temperature", "platt"], seed=3)
    with_fits = comparison.verdict()
    fixed = choose_map(comparison.calibrated, comparison.fitted)
    assert fixed.interval == FITS_FIXED and "not included" in fixed.summary
    assert "fitting noise included: 5-fold cross-fitting" in with_fits.summary
    losses = comparison.row_losses()
    d = losses[fixed.runner_up] - losses[fixed.winner]
    half = norm.ppf(0.975) * d.std(ddof=1) / np.sqrt(d.size)
    assert (fixed.lower, fixed.upper) == (
        pytest.approx(d.mean() - half),
        pytest.approx(d.mean() + half),
    )
    assert with_fits.upper - with_fits.lower > fixed.upper - fixed.lower
    assert all(c.effective_parameters is None for c in fixed.contenders)


def test_train_test_split_has_one_fit_and_its_own_factor():
    pred = overconfident_data(5, n=2000)
    comparison = compare_maps(pred, maps=["temperature"], test_fraction=0.25, seed=5)
    design = comparison.design()
    assert design.n_fits == 1 and not design.cross_fitted
    assert design.n_train.tolist() == [1500] and np.all(design.fit_of_row == 0)
    verdict = comparison.verdict()
    losses = comparison.row_losses()
    d = losses["uncalibrated"] - losses["temperature"]
    # One fit: its optimism is too noisy, the parameter count stands in.
    assert effective_parameters("temperature", losses["temperature"], design) == 0.0
    fitted = comparison.fitted["temperature"]
    assert effective_parameters("temperature", losses["temperature"], design, fitted) == 1.0
    var = d.var(ddof=1) / d.size + (0.5 + 1500 / 500) * 1 / 1500**2
    half = norm.ppf(0.975) * np.sqrt(var)
    assert (verdict.lower, verdict.upper) == (
        pytest.approx(d.mean() - half),
        pytest.approx(d.mean() + half),
    )
    assert verdict.interval == "one train/test split, each map fitted on 1,500 rows"


def test_effective_parameters_count_what_a_fit_spends():
    """About 1 for temperature (well specified), far below the count for a regularised map."""
    estimates = []
    for seed in range(12):
        comparison = compare_maps(calibrated_data(seed, n=3000), maps=["temperature"], seed=seed)
        verdict = comparison.verdict()
        estimates.append(verdict.contender("temperature").effective_parameters)
    assert 0.4 < np.mean(estimates) < 1.8  # measured: 0.96
    pred = overconfident_data(1, n=1500, k=10)
    verdict = compare_maps(pred, maps=["matrix"], seed=0).verdict()
    matrix = verdict.contender("matrix")
    assert matrix.n_parameters == 110 and 0 < matrix.effective_parameters < 110
    assert verdict.contender("uncalibrated").effective_parameters == 0.0


def test_old_resampling_arguments_are_ignored_with_a_warning():
    comparison = compare_maps(overconfident_data(2, n=600), maps=["temperature"], seed=3)
    with pytest.warns(FutureWarning, match="n_resamples and seed are ignored"):
        old = comparison.verdict(n_resamples=400, seed=11)
    assert old == comparison.verdict()


def test_a_design_of_other_rows_is_refused():
    comparison = compare_maps(overconfident_data(2, n=600), maps=["temperature"], seed=3)
    design = comparison.design()
    short = FitDesign(design.fit_of_row[:-1], design.n_train, design.train_log_loss)
    with pytest.raises(CalibrationInputError, match="fit of 599 rows but the candidates hold 600"):
        choose_map(comparison.calibrated, design=short)
    wrong = FitDesign(design.fit_of_row + 7, design.n_train, design.train_log_loss)
    with pytest.raises(CalibrationInputError, match=r"in 0\.\.4"):
        choose_map(comparison.calibrated, design=wrong)


def test_resampled_means_draws_as_bootstrap_ci():
    pred = overconfident_data(4, n=300)
    boot = bootstrap_ci("log_loss", pred, n_resamples=200, seed=5)
    values = log_loss_per_row(pred.probs, pred.labels)
    np.testing.assert_allclose(resampled_means(values, 200, 5), boot.samples, rtol=1e-12)
    columns = np.column_stack([values, 2.0 * values, -values])
    np.testing.assert_allclose(
        resampled_means(columns, 200, 5), boot.samples[:, None] * [1.0, 2.0, -1.0], rtol=1e-12
    )
    for bad in (np.zeros((2, 2, 2)), np.zeros(0), np.zeros((3, 0))):
        with pytest.raises(CalibrationInputError, match=r"shape \(N,\) or \(N, C\)"):
            resampled_means(bad)


def test_single_candidate_and_bad_candidates():
    comparison = compare_maps(calibrated_data(0, n=300), maps=[], seed=0)
    verdict = comparison.verdict()
    assert verdict.winner == "uncalibrated" and verdict.runner_up is None
    assert not verdict.clear and verdict.difference is None
    assert "only candidate" in verdict.summary
    with pytest.raises(CalibrationInputError, match="at least one"):
        choose_map({})
    a, b = calibrated_data(0, n=300), calibrated_data(1, n=200)
    with pytest.raises(CalibrationInputError, match="same rows"):
        choose_map({"a": a, "b": b})


def test_parameters_in_words():
    binary = calibrated_data(3, n=600, k=2)
    temp = make_map("temperature").fit(binary, binary.labels)
    assert map_parameters([temp]) == f"T = {temp.temperature_:#.3g}"
    platt = make_map("platt").fit(binary, binary.labels)
    w, b = platt.coef_[0]
    assert map_parameters([platt]) == f"w = {w:#.3g}, b = {b:#.3g}"
    beta = make_map("beta").fit(binary, binary.labels)
    assert map_parameters([beta]).startswith("a = ")
    folds = compare_maps(binary, maps=["temperature"], seed=0).fitted["temperature"]
    values = sorted(m.temperature_ for m in folds)
    assert map_parameters(folds) == (f"T = {values[0]:#.3g} to {values[-1]:#.3g} over 5 folds")
    three = calibrated_data(3, n=600, k=3)
    assert map_parameters([make_map("platt").fit(three, three.labels)]) == ""  # 3 sigmoids
    assert map_parameters([make_map("vector").fit(three, three.labels)]) == ""


def test_comparison_to_dict_has_the_verdict():
    comparison = compare_maps(overconfident_data(), maps=["temperature", "platt"], seed=0)
    doc = comparison.to_dict(level=0.8)
    verdict = doc["verdict"]
    assert verdict["winner"] in ("temperature", "platt") and verdict["criterion"] == "log_loss"
    assert verdict["interval"].startswith("5-fold cross-fitting") and verdict["level"] == 0.8
    assert all("effective_parameters" in c for c in verdict["contenders"])
    assert verdict["clear_winner"] == (verdict["lower"] > 0)
    assert list(verdict["log_loss"]) == sorted(verdict["log_loss"], key=verdict["log_loss"].get)
    json.dumps(doc, allow_nan=False)


@pytest.mark.realdata
def test_densenet_temperature_clearly_beats_histogram_binning(realdata):
    """Power: on 10,000 real rows the better map is found and its win is clear."""
    with np.load(realdata["densenet-bc-100-cifar-100"], allow_pickle=False) as data:
        pred = Predictions.from_probs(data["predictions"].astype(np.float64), data["ground_truth"])
    comparison = compare_maps(pred, maps=["temperature", "histogram"], seed=0)
    pair = {name: comparison.calibrated[name] for name in ("temperature", "histogram")}
    verdict = choose_map(pair, comparison.fitted, design=comparison.design())
    assert verdict.winner == "temperature" and verdict.runner_up == "histogram"
    assert verdict.clear and verdict.lower > 0.1  # measured: 0.80 (0.75 to 0.85)
    low, high = (
        float(v) for v in verdict.parameters["temperature"][4:].split(" over")[0].split(" to ")
    )
    assert 1.9 < low <= high < 2.4  # Guo et al. (2017): T near 2.1 for this network


def _copy(pred: Predictions, shift: float = 0.0) -> Predictions:
    """The same rows; ``shift`` moves probability mass from column 0 to column 1."""
    probs = pred.probs.copy()
    probs[:, 0] -= shift
    probs[:, 1] += shift
    return Predictions.from_probs(probs, pred.labels)


def test_coinciding_candidates_are_one_contender_and_the_runner_up_differs():
    comparison = compare_maps(overconfident_data(), maps=["temperature"], seed=0)
    temp = comparison.calibrated["temperature"]
    candidates = {
        "uncalibrated": comparison.calibrated["uncalibrated"],
        "temperature": temp,
        "twin": _copy(temp, 5e-10),  # within 1e-9: the same contender
        "near": _copy(temp, 1e-4),  # a different one
    }
    verdict = choose_map(candidates)
    labels = [c.label for c in verdict.contenders]
    assert "temperature = twin" in labels and "near" in labels and len(labels) == 3
    assert verdict.winner in ("temperature", "near")
    assert verdict.runner_up != verdict.winner and verdict.difference > 0
    assert {verdict.winner, verdict.runner_up} == {"temperature", "near"}
    merged = verdict.contender("twin")
    assert merged.names == ("temperature", "twin")
    assert "agree to within 1e-09" in merged.reason
    assert "temperature = twin" in verdict.summary or "temperature = twin" in verdict.recommendation


def test_matrix_and_dirichlet_on_probabilities_are_one_contender_with_the_reason():
    pred = overconfident_data(n=900)
    comparison = compare_maps(pred, maps=["temperature", "matrix", "dirichlet"], seed=0)
    verdict = comparison.verdict()
    merged = verdict.contender("dirichlet")
    assert merged.names == ("matrix", "dirichlet") and merged.label == "matrix = dirichlet"
    assert "Dirichlet calibration" in merged.reason
    assert merged.n_parameters == 3 * 4
    assert verdict.same_model_notes == [f"matrix = dirichlet: {merged.reason}."]
    assert "dirichlet" not in (verdict.winner, verdict.runner_up) or "matrix" not in (
        verdict.winner,
        verdict.runner_up,
    )
    doc = verdict.to_dict()
    entry = next(c for c in doc["contenders"] if c["maps"] == ["matrix", "dirichlet"])
    assert entry["n_parameters"] == 12 and entry["same_because"] == merged.reason


def test_parsimony_recommends_the_fewest_parameters_not_clearly_worse():
    """Calibrated data: no map is clearly better than doing nothing, which has 0 parameters."""
    comparison = compare_maps(calibrated_data(2), maps=["temperature", "vector", "matrix"], seed=2)
    verdict = comparison.verdict()
    counts = {c.name: c.n_parameters for c in verdict.contenders}
    assert counts["uncalibrated"] == 0 and counts["temperature"] == 1
    assert counts["vector"] == 6 and counts["matrix"] == 12
    eligible = [c for c in verdict.contenders if not c.clearly_worse]
    assert verdict.recommended == min(eligible, key=lambda c: c.n_parameters).name
    assert verdict.recommended == "uncalibrated"
    assert "identity" in verdict.recommendation
    assert verdict.to_dict()["recommended"] == "uncalibrated"


def test_parsimony_keeps_the_best_when_every_simpler_map_is_clearly_worse():
    comparison = compare_maps(overconfident_data(), maps=["temperature"], seed=0)
    verdict = comparison.verdict()
    assert verdict.recommended == verdict.winner == "temperature" and verdict.clear
    assert verdict.recommendation.startswith("Recommended: temperature (1 parameter), the best")


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0, "0"), (0.00033, "0.00033"), (-1.23e-5, "-1.2e-05"), (0.0161, "0.016"), (0.81, "0.81")],
)
def test_differences_keep_their_sign_and_a_nonzero_digit(value, text):
    assert format_difference(value) == text


def test_summary_bounds_never_round_to_zero():
    pred = calibrated_data(4, n=4000)
    comparison = compare_maps(pred, maps=["temperature"], seed=4)
    verdict = comparison.verdict()
    bounds = verdict.summary.split("interval ")[1].split(" on ")[0].split(" to ")
    assert [float(b) for b in bounds] == pytest.approx([verdict.lower, verdict.upper], rel=0.06)
    assert all(float(b) != 0 for b in bounds)


@pytest.mark.realdata
@pytest.mark.slow
def test_densenet_all_maps_never_compare_coinciding_maps(realdata):
    """All 8 maps on DenseNet CIFAR-100 (5,000 rows, issue 28): distinct contenders, and the
    simplest map within noise of the best is recommended (measured: temperature, 1 parameter;
    the best by 0.0055 nats, vector, has 200 and matrix = dirichlet 10,100)."""
    pred = load_predictions(realdata["densenet-bc-100-cifar-100"])[0].subset(np.arange(5000))
    comparison = compare_maps(pred, maps="all", seed=0)
    verdict = comparison.verdict()
    assert len(verdict.contenders) == 8  # 9 candidates, matrix and dirichlet one
    assert verdict.contender("dirichlet").names == ("matrix", "dirichlet")
    for first in verdict.contenders:
        for second in verdict.contenders:
            if first is not second:
                gap = np.abs(
                    comparison.calibrated[first.name].probs
                    - comparison.calibrated[second.name].probs
                ).max()
                assert gap > 1e-9
    assert verdict.runner_up not in verdict.contender(verdict.winner).names
    eligible = [c for c in verdict.contenders if not c.clearly_worse]
    assert verdict.recommended == min(eligible, key=lambda c: c.n_parameters).name
    assert verdict.recommended == "temperature"
    assert verdict.contender("matrix").effective_parameters < 1000  # of its 10,100
