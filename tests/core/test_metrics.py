"""Metrics: worked examples, scikit-learn agreement, a naive oracle, bad-input messages."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss
from sklearn.metrics import log_loss as sk_log_loss

from calibration_core import (
    CalibrationInputError,
    accuracy,
    binary_ece,
    binary_mce,
    brier_score,
    classwise_ece,
    classwise_mce,
    confidence_ece,
    confidence_mce,
    log_loss,
    reliability_curve,
)

ECE_FUNCTIONS = [binary_ece, binary_mce, classwise_ece, classwise_mce, confidence_ece]
ECE_FUNCTIONS += [confidence_mce]
ALL_FUNCTIONS = [*ECE_FUNCTIONS, brier_score, log_loss, accuracy]


# ------------------------------------------------------ naive oracle
def naive_bins(scores, n_bins, scheme):
    """Bin of each score with plain Python loops (independent of the engine)."""
    scores = [float(s) for s in scores]
    if scheme == "width":
        return [min(math.floor(s * n_bins), n_bins - 1) for s in scores]
    ordered = sorted(scores)
    n = len(ordered)
    interior = [ordered[(m * n) // n_bins] for m in range(1, n_bins)]
    return [sum(1 for e in interior if s >= e) for s in scores]


def naive_gaps(scores, targets, n_bins, scheme):
    """(weight, gap) of each non-empty bin, with a Python loop over bins."""
    bins = naive_bins(scores, n_bins, scheme)
    n = len(bins)
    out = []
    for m in range(n_bins):
        members = [i for i in range(n) if bins[i] == m]
        if not members:
            continue
        mean_score = sum(float(scores[i]) for i in members) / len(members)
        freq = sum(int(targets[i]) for i in members) / len(members)
        out.append((len(members) / n, abs(freq - mean_score)))
    return out


def naive_ece(scores, targets, n_bins, scheme):
    return sum(w * g for w, g in naive_gaps(scores, targets, n_bins, scheme))


def naive_mce(scores, targets, n_bins, scheme):
    return max(g for _, g in naive_gaps(scores, targets, n_bins, scheme))


def naive_top_label(probs, labels):
    conf, correct = [], []
    for row, y in zip(probs.tolist(), labels.tolist(), strict=True):
        top = max(row)
        pred = row.index(top)  # first maximum: ties to the lowest index
        conf.append(top)
        correct.append(int(pred == y))
    return conf, correct


def random_probs(n, k, seed, alpha=0.7):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, alpha), size=n)
    # Labels drawn from a sharpened version: miscalibrated on purpose.
    q = p**2 / (p**2).sum(axis=1, keepdims=True)
    u = rng.random((n, 1))
    y = np.minimum((np.cumsum(q, axis=1) < u).sum(axis=1), k - 1)  # inverse CDF draw
    return p, y


# ------------------------------------------------- worked examples
def four_predictions():
    """Confidences .55 .65 .85 .95 with correctness 1 0 1 1, as K = 2 rows."""
    conf = np.array([0.55, 0.65, 0.85, 0.95])
    probs = np.column_stack([1.0 - conf, conf])  # the top class is always class 1
    labels = np.array([1, 0, 1, 1])
    return probs, labels


def test_worked_example_confidence_ece_one_bin_is_zero():
    probs, labels = four_predictions()
    # one bin: mean confidence 0.75, accuracy 0.75
    assert confidence_ece(probs, labels, n_bins=1) == pytest.approx(0.0, abs=1e-15)
    assert confidence_mce(probs, labels, n_bins=1) == pytest.approx(0.0, abs=1e-15)


def test_worked_example_confidence_ece_four_width_bins_is_point_one():
    probs, labels = four_predictions()
    # bins [.5,.75): conf .6 acc .5; [.75,1]: conf .9 acc 1 -> gaps .1 and .1
    assert confidence_ece(probs, labels, n_bins=4) == pytest.approx(0.10, abs=1e-12)
    assert confidence_mce(probs, labels, n_bins=4) == pytest.approx(0.10, abs=1e-12)
    # The binary notion sees the same numbers here (top class = class 1).
    assert binary_ece(probs[:, 1], labels, n_bins=4) == pytest.approx(0.10, abs=1e-12)
    # Classwise: class 0 sees scores .45 .35 | .15 .05 -> gaps .1 and .1 as well.
    assert classwise_ece(probs, labels, n_bins=4) == pytest.approx(0.10, abs=1e-12)


def test_worked_example_four_frequency_bins():
    probs, labels = four_predictions()
    # One prediction per bin: gaps .45 .65 .15 .05
    assert confidence_ece(probs, labels, n_bins=4, scheme="frequency") == pytest.approx(1.3 / 4)
    assert confidence_mce(probs, labels, n_bins=4, scheme="frequency") == pytest.approx(0.65)
    # Two bins split at the order statistic s_(2) = .85
    assert confidence_ece(probs, labels, n_bins=2, scheme="frequency") == pytest.approx(0.1)


def test_worked_example_three_classes_by_hand():
    probs = np.array(
        [
            [0.6, 0.3, 0.1],
            [0.2, 0.7, 0.1],
            [0.1, 0.2, 0.7],
            [0.4, 0.4, 0.2],  # a tie for the top class: class 0 wins
        ]
    )
    labels = np.array([0, 1, 1, 0])
    # Two width bins [0, .5), [.5, 1].
    # class 0: {.2 .1 .4 | targets 0 0 1} gap |1/3 - .7/3| = .1 ; {.6 | 1} gap .4
    # class 1: {.3 .2 .4 | 0 1 0} gap |1/3 - .3| = 1/30 ; {.7 | 1} gap .3
    # class 2: {.1 .1 .2 | 0 0 0} gap .4/3 ; {.7 | 0} gap .7
    ece0 = 0.75 * 0.1 + 0.25 * 0.4
    ece1 = 0.75 / 30 + 0.25 * 0.3
    ece2 = 0.75 * 0.4 / 3 + 0.25 * 0.7
    assert classwise_ece(probs, labels, n_bins=2) == pytest.approx((ece0 + ece1 + ece2) / 3)
    assert classwise_ece(probs, labels, n_bins=2) == pytest.approx(0.55 / 3)
    assert classwise_mce(probs, labels, n_bins=2) == pytest.approx(0.7)
    # confidence: {.4 correct} gap .6 ; {.6 .7 .7 | 1 1 0} gap |2/3 - 2/3| = 0
    assert confidence_ece(probs, labels, n_bins=2) == pytest.approx(0.25 * 0.6)
    assert confidence_mce(probs, labels, n_bins=2) == pytest.approx(0.6)
    assert accuracy(probs, labels) == pytest.approx(0.75)
    # Brier per row: .16+.09+.01, .04+.09+.01, .01+.64+.49, .36+.16+.04
    assert brier_score(probs, labels) == pytest.approx((0.26 + 0.14 + 1.14 + 0.56) / 4)
    assert log_loss(probs, labels) == pytest.approx(
        -(math.log(0.6) + math.log(0.7) + math.log(0.2) + math.log(0.4)) / 4
    )


def test_binary_metrics_accept_scores_or_two_columns():
    s = np.array([0.1, 0.4, 0.35, 0.8])
    y = np.array([0, 0, 1, 1])
    two = np.column_stack([1 - s, s])
    for fn in (binary_ece, binary_mce):
        assert fn(s, y, n_bins=3) == fn(two, y, n_bins=3)
    for fn in (classwise_ece, brier_score, log_loss, accuracy):
        assert fn(s, y) == pytest.approx(fn(two, y), abs=1e-15)
    # The top-label notion of an (N,) vector is refused (test_measure_api.py).
    assert confidence_ece(two, y) >= 0


def test_binary_ece_score_on_an_edge_goes_up():
    # 0.5 with 2 bins sits in the upper bin: gap |1 - .5| there and |0 - .2| below.
    assert binary_ece([0.2, 0.5], [0, 1], n_bins=2) == pytest.approx((0.2 + 0.5) / 2)


def test_predicting_the_base_rate_gives_zero_ece():
    # Survey pitfall: constant predictions at the class frequency have ECE 0.
    y = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0])
    s = np.full(10, 0.3)
    for scheme in ("width", "frequency"):
        assert binary_ece(s, y, scheme=scheme) == pytest.approx(0.0, abs=1e-15)
    assert brier_score(s, y) > 0


def test_brier_is_summed_over_classes():
    probs = np.array([[0.7, 0.2, 0.1]])
    assert brier_score(probs, [0]) == pytest.approx(0.09 + 0.04 + 0.01)
    assert brier_score(probs, [2]) == pytest.approx(0.49 + 0.04 + 0.81)
    assert brier_score(np.eye(3), [0, 1, 2]) == 0.0
    assert brier_score(np.eye(3), [1, 2, 0]) == pytest.approx(2.0)


def test_log_loss_clips_at_eps():
    probs = np.array([[1.0, 0.0], [0.5, 0.5]])
    labels = np.array([1, 0])
    expected = (-math.log(1e-15) - math.log(0.5)) / 2
    assert log_loss(probs, labels) == pytest.approx(expected)
    assert math.isfinite(log_loss(probs, labels))
    assert log_loss(probs, labels, eps=1e-3) == pytest.approx((-math.log(1e-3) - math.log(0.5)) / 2)
    # A probability above eps is not touched.
    assert log_loss([[0.9, 0.1]], [1], eps=0.05) == pytest.approx(-math.log(0.1))


# ------------------------------------------------ scikit-learn agreement
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_brier_is_twice_sklearn_for_binary(seed):
    rng = np.random.default_rng(seed)
    s = rng.random(500)
    y = rng.integers(0, 2, 500)
    assert brier_score(s, y) == pytest.approx(2 * brier_score_loss(y, s), rel=1e-12)


def test_brier_matches_sklearn_multiclass_sum():
    p, y = random_probs(400, 5, seed=3)
    onehot = np.eye(5)[y]
    sk = brier_score_loss(onehot.ravel(), p.ravel()) * 5  # mean over N*K cells, times K
    assert brier_score(p, y) == pytest.approx(sk, rel=1e-12)


@pytest.mark.parametrize("k", [2, 3, 10])
def test_log_loss_matches_sklearn(k):
    p, y = random_probs(600, k, seed=k)
    p = np.clip(p, 1e-6, None)
    p /= p.sum(axis=1, keepdims=True)
    assert log_loss(p, y) == pytest.approx(sk_log_loss(y, p, labels=np.arange(k)), rel=1e-12)


@pytest.mark.parametrize("n_bins", [3, 5, 10, 15])
def test_reliability_curve_matches_sklearn_uniform_curve_off_edges(n_bins):
    rng = np.random.default_rng(n_bins)
    s = rng.random(3000) ** 2  # no score is exactly on an edge
    y = (rng.random(3000) < s).astype(int)
    s[:3] = [0.0, 1.0, 0.999]  # the outer ends agree too
    curve = reliability_curve(s, y, n_bins=n_bins)
    prob_true, prob_pred = calibration_curve(y, s, n_bins=n_bins, strategy="uniform")
    filled = curve.count > 0
    np.testing.assert_allclose(curve.y[filled], prob_true, rtol=1e-12)
    np.testing.assert_allclose(curve.x[filled], prob_pred, rtol=1e-12)


def test_sklearn_closes_bins_on_the_right_we_close_them_on_the_left():
    # The one convention that differs: a score exactly on an interior edge.
    s = np.array([0.5, 0.9])
    y = np.array([1, 0])
    prob_true, prob_pred = calibration_curve(y, s, n_bins=2, strategy="uniform")
    np.testing.assert_allclose(prob_pred, [0.5, 0.9])  # scikit-learn: 0.5 in [0, 0.5]
    np.testing.assert_allclose(prob_true, [1.0, 0.0])
    curve = reliability_curve(s, y, n_bins=2)
    np.testing.assert_array_equal(curve.count, [0, 2])  # ours: 0.5 in [0.5, 1]
    np.testing.assert_allclose(curve.x, [np.nan, 0.7])
    np.testing.assert_allclose(curve.y, [np.nan, 0.5])


# ----------------------------------------------------- naive oracle
@pytest.mark.parametrize("scheme", ["width", "frequency"])
@pytest.mark.parametrize(("n", "n_bins"), [(50, 5), (700, 15), (1000, 10), (333, 1)])
def test_binary_metrics_match_naive_loops(scheme, n, n_bins):
    rng = np.random.default_rng(n + n_bins)
    s = rng.beta(0.5, 0.7, n)
    s[: n // 10] = np.round(s[: n // 10], 1)  # ties, some on edges
    y = (rng.random(n) < s**1.5).astype(int)
    assert binary_ece(s, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
        naive_ece(s, y, n_bins, scheme), abs=1e-12
    )
    assert binary_mce(s, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
        naive_mce(s, y, n_bins, scheme), abs=1e-12
    )


@pytest.mark.parametrize("scheme", ["width", "frequency"])
@pytest.mark.parametrize(("k", "n_bins"), [(3, 5), (4, 15), (7, 10)])
def test_classwise_and_confidence_metrics_match_naive_loops(scheme, k, n_bins):
    p, y = random_probs(600, k, seed=10 * k + n_bins)
    p[:30] = np.round(p[:30], 1)
    p[:30] /= p[:30].sum(axis=1, keepdims=True)
    ece_k = [naive_ece(p[:, j], y == j, n_bins, scheme) for j in range(k)]
    mce_k = [naive_mce(p[:, j], y == j, n_bins, scheme) for j in range(k)]
    assert classwise_ece(p, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
        sum(ece_k) / k, abs=1e-12
    )
    assert classwise_mce(p, y, n_bins=n_bins, scheme=scheme) == pytest.approx(max(mce_k), abs=1e-12)
    conf, correct = naive_top_label(p, y)
    assert confidence_ece(p, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
        naive_ece(conf, correct, n_bins, scheme), abs=1e-12
    )
    assert confidence_mce(p, y, n_bins=n_bins, scheme=scheme) == pytest.approx(
        naive_mce(conf, correct, n_bins, scheme), abs=1e-12
    )
    assert accuracy(p, y) == pytest.approx(sum(correct) / len(correct))
    naive_brier = sum(
        sum((p[i, j] - (y[i] == j)) ** 2 for j in range(k)) for i in range(len(y))
    ) / len(y)
    assert brier_score(p, y) == pytest.approx(naive_brier, rel=1e-12)


def test_confidence_ties_go_to_the_lowest_class():
    probs = np.array([[0.4, 0.4, 0.2], [0.3, 0.35, 0.35]])
    assert accuracy(probs, [0, 1]) == 1.0
    assert accuracy(probs, [1, 2]) == 0.0
    assert confidence_ece(probs, [0, 1], n_bins=1) == pytest.approx(1 - 0.375)


# ------------------------------------------------------ real data
def test_real_predictions_match_the_readme_and_the_naive_loop(realdata):
    # ../shared/realdata/README.md lists the confidence ECE (15 width bins) of each file.
    readme = {
        "densenet-bc-100-cifar-100": 0.142,
        "wideresnet-16-4-cifar-100": 0.058,
        "lenet-5-cifar-100": 0.015,
        "wideresnet-16-4-cifar-10": 0.054,
        "lenet-5-cifar-10": 0.108,
    }
    for name, path in realdata.items():
        with np.load(path, allow_pickle=False) as data:
            p = data["predictions"]  # float32, used as it is
            y = data["ground_truth"]
        ece = confidence_ece(p, y)
        assert ece == pytest.approx(readme[name], abs=0.0005), name
        if name == "lenet-5-cifar-10":
            conf, correct = naive_top_label(p.astype(np.float64), y)
            assert ece == pytest.approx(naive_ece(conf, correct, 15, "width"), abs=1e-12)


# ------------------------------------------------------ bad inputs
GOOD_PROBS = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25]])
GOOD_LABELS = np.array([0, 1, 2, 0])
BINARY_SCORES = np.array([0.1, 0.6, 0.8, 0.4])
BINARY_LABELS = np.array([0, 1, 1, 0])


def inputs_for(fn, probs=None, labels=None, binary=False):
    if fn in (binary_ece, binary_mce) or binary:
        return (BINARY_SCORES if probs is None else probs), (
            BINARY_LABELS if labels is None else labels
        )
    return (GOOD_PROBS if probs is None else probs), (GOOD_LABELS if labels is None else labels)


def with_value(arr, row, col, value):
    arr = np.array(arr, dtype=np.float64)
    if arr.ndim == 1:
        arr[row] = value
    else:
        arr[row, col] = value
    return arr


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_are_named_with_their_row(fn, value):
    probs, labels = inputs_for(fn)
    bad = with_value(probs, 2, 1, value)
    with pytest.raises(CalibrationInputError, match=r"NaN or infinite values at row 2; drop"):
        fn(bad, labels)


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_values_outside_unit_interval_get_the_logits_hint(fn):
    probs, labels = inputs_for(fn)
    bad = with_value(probs, 1, 0, 3.5)
    with pytest.raises(CalibrationInputError, match=r"must lie in \[0, 1\].*row 1.*logits"):
        fn(bad, labels)
    bad = with_value(probs, 3, 0, -0.2)
    with pytest.raises(CalibrationInputError, match=r"from -0\.2 .*row 3.*logits"):
        fn(bad, labels)


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_rows_not_summing_to_one_are_rejected_with_their_sums(fn):
    if fn in (binary_ece, binary_mce):
        probs = np.array([[0.5, 0.5], [0.2, 0.7], [0.4, 0.6], [0.5, 0.5]])
        labels = BINARY_LABELS
    else:
        probs, labels = GOOD_PROBS.copy(), GOOD_LABELS
        probs[1] = [0.1, 0.8, 0.3]
    with pytest.raises(CalibrationInputError, match=r"must sum to 1 .*row 1 sum to (0\.9|1\.2)"):
        fn(probs, labels)


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_labels_out_of_range_are_named(fn):
    probs, labels = inputs_for(fn)
    labels = np.array(labels)
    labels[2] = 3
    hi = 1 if fn in (binary_ece, binary_mce) else 2
    with pytest.raises(CalibrationInputError, match=rf"must lie in 0\.\.{hi} .*row 2 hold 3"):
        fn(probs, labels)
    labels[2] = -1
    with pytest.raises(CalibrationInputError, match=r"row 2 hold -1"):
        fn(probs, labels)


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_fractional_float_labels_are_rejected(fn):
    probs, labels = inputs_for(fn)
    labels = np.array(labels, dtype=float)
    labels[1] = 0.5
    with pytest.raises(CalibrationInputError, match=r"whole class indices; row 1 hold 0\.5"):
        fn(probs, labels)
    labels[1] = np.nan
    with pytest.raises(CalibrationInputError, match=r"whole class indices; row 1 hold nan"):
        fn(probs, labels)


def test_whole_float_labels_are_accepted():
    assert binary_ece(BINARY_SCORES, BINARY_LABELS.astype(float)) == binary_ece(
        BINARY_SCORES, BINARY_LABELS
    )


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_string_labels_are_rejected(fn):
    probs, _ = inputs_for(fn)
    with pytest.raises(CalibrationInputError, match=r"integer class indices.*Map string labels"):
        fn(probs, np.array(["a", "b", "a", "b"]))


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_length_mismatch_is_rejected(fn):
    probs, labels = inputs_for(fn)
    with pytest.raises(CalibrationInputError, match=r"have 3 entries but there are 4 prediction"):
        fn(probs, labels[:3])


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_empty_input_is_rejected(fn):
    with pytest.raises(CalibrationInputError, match=r"empty"):
        fn(np.empty(0), np.empty(0, dtype=int))
    if fn not in (binary_ece, binary_mce):
        with pytest.raises(CalibrationInputError, match=r"empty"):
            fn(np.empty((0, 3)), np.empty(0, dtype=int))


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_object_and_text_arrays_are_rejected(fn):
    with pytest.raises(CalibrationInputError, match="object array"):
        fn(np.array([0.1, "x", None, 0.3], dtype=object), BINARY_LABELS)
    with pytest.raises(CalibrationInputError, match="not numbers"):
        fn(np.array(["0.1", "0.2", "0.3", "0.4"]), BINARY_LABELS)


@pytest.mark.parametrize("fn", [classwise_ece, confidence_ece, brier_score, log_loss])
def test_wrong_shapes_are_explained(fn):
    with pytest.raises(CalibrationInputError, match=r"1 column; give one column per class"):
        fn(np.ones((4, 1)), [0, 0, 0, 0])
    with pytest.raises(CalibrationInputError, match=r"got shape \(2, 2, 2\)"):
        fn(np.full((2, 2, 2), 0.5), [0, 1])
    with pytest.raises(CalibrationInputError, match=r"labels must be one-dimensional"):
        fn(GOOD_PROBS, GOOD_LABELS[:, None])


@pytest.mark.parametrize("fn", ECE_FUNCTIONS)
@pytest.mark.parametrize(
    ("n_bins", "message"),
    [
        (0, r"n_bins must be between 1 and 10000, got 0"),
        (-1, r"got -1"),
        (10**9, r"got 1000000000"),
        (2.5, r"n_bins must be a whole number .*got 2\.5"),
        (True, r"n_bins must be a whole number .*got True"),
    ],
)
def test_bad_bin_counts_are_rejected_by_every_metric(fn, n_bins, message):
    probs, labels = inputs_for(fn)
    with pytest.raises(CalibrationInputError, match=message):
        fn(probs, labels, n_bins=n_bins)


@pytest.mark.parametrize("fn", ECE_FUNCTIONS)
def test_unknown_scheme_is_rejected_by_every_metric(fn):
    probs, labels = inputs_for(fn)
    with pytest.raises(CalibrationInputError, match=r"scheme must be 'width' .*got 'uniform'"):
        fn(probs, labels, scheme="uniform")


def test_errors_are_value_errors():
    with pytest.raises(ValueError, match="NaN"):
        binary_ece([np.nan], [1])


# ------------------------------------------- block-wise validation paths
def big_probs(n=40_000, k=3, seed=11):
    """More rows than one validation block, so later blocks are exercised too."""
    return random_probs(n, k, seed=seed, alpha=1.0)


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_bad_value_in_a_late_block_is_named_with_its_global_row(fn):
    p, y = big_probs()
    if fn in (binary_ece, binary_mce):
        p, y = p[:, :2] / p[:, :2].sum(axis=1, keepdims=True), (y == 1).astype(int)
    for value, message in ((np.nan, "NaN or infinite"), (1.5, r"must lie in \[0, 1\]")):
        bad = p.copy()
        bad[35_123, 1] = value
        with pytest.raises(CalibrationInputError, match=rf"{message}.*row 35123"):
            fn(bad, y)
    bad = p.copy()
    bad[39_999] *= 1.01
    with pytest.raises(CalibrationInputError, match=r"must sum to 1 .*row 39999 sum to 1\.01"):
        fn(bad, y)


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_a_value_just_above_one_is_rejected(fn):
    # Rows sum to 1 within tolerance, but one probability exceeds 1.
    probs = np.array([[1.0 + 5e-7, 0.0], [0.3, 0.7], [0.5, 0.5]])
    with pytest.raises(CalibrationInputError, match=r"must lie in \[0, 1\].*row 0"):
        fn(probs, [0, 1, 1])


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_negative_zero_is_a_valid_probability(fn):
    probs = np.array([[1.0, -0.0], [0.3, 0.7], [-0.0, 1.0]])
    labels = [0, 1, 1]
    assert fn(probs, labels) == pytest.approx(fn(np.abs(probs), labels))


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_float32_and_strided_inputs_give_the_float64_results(fn):
    p, y = big_probs(n=20_000, k=4, seed=12)
    p32 = p.astype(np.float32).astype(np.float64)
    p32 /= p32.sum(axis=1, keepdims=True)
    if fn in (binary_ece, binary_mce):
        two = np.column_stack([1 - p32[:, 0], p32[:, 0]])
        expected = fn(two, (y == 0).astype(int))
        assert fn(np.asfortranarray(two), (y == 0).astype(int)) == pytest.approx(
            expected, abs=1e-14
        )
        return
    expected = fn(p32, y)
    assert fn(p32.astype(np.float32), y) == pytest.approx(expected, abs=1e-6)
    assert fn(np.asfortranarray(p32), y) == pytest.approx(expected, abs=1e-14)
    wide = np.zeros((p32.shape[0], 8))
    wide[:, ::2] = p32
    assert fn(wide[:, ::2], y) == pytest.approx(expected, abs=1e-14)


@pytest.mark.parametrize(
    "fn", [classwise_ece, classwise_mce, binary_ece, binary_mce, brier_score, log_loss]
)
@pytest.mark.parametrize("scheme", ["width", "frequency"])
def test_binary_scores_over_many_blocks_equal_two_columns(fn, scheme):
    rng = np.random.default_rng(13)
    s = rng.random(70_000)
    s[:100] = 0.5  # ties between the two classes
    y = (rng.random(70_000) < s).astype(int)
    two = np.column_stack([1 - s, s])
    kwargs = {} if fn in (brier_score, log_loss) else {"scheme": scheme}
    assert fn(s, y, **kwargs) == pytest.approx(fn(two, y, **kwargs), abs=1e-13)


def test_multi_block_results_match_the_naive_loop():
    p, y = big_probs(n=30_000, k=5, seed=14)
    conf, correct = naive_top_label(p, y)
    assert confidence_ece(p, y) == pytest.approx(naive_ece(conf, correct, 15, "width"), abs=1e-12)
    assert classwise_ece(p, y, n_bins=10) == pytest.approx(
        np.mean([naive_ece(p[:, j], y == j, 10, "width") for j in range(5)]), abs=1e-12
    )
    assert accuracy(p, y) == pytest.approx(np.mean(correct))
    onehot = np.eye(5)[y]
    assert brier_score(p, y) == pytest.approx(((p - onehot) ** 2).sum(axis=1).mean(), rel=1e-12)
