"""Predictions: constructors, immutability, cached re-binning equal to the one-off metrics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from calibration_core import (
    Binning,
    CalibrationInputError,
    Predictions,
    SortedScores,
    binary_statistics,
    classwise_statistics,
    confidence_ece,
    confidence_statistics,
    notion_scores,
    reliability_curve,
    stable_softmax,
    top_label,
)


def random_predictions(n=3000, k=4, seed=0, name="model"):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(n, k))
    p = softmax(logits, axis=1)
    q = softmax(1.5 * logits, axis=1)
    y = np.minimum((np.cumsum(q, axis=1) < rng.random((n, 1))).sum(axis=1), k - 1)
    return logits, p, y


def assert_same_stats(a, b):
    np.testing.assert_array_equal(a.count, b.count)
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_allclose(a.sum_score, b.sum_score, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(a.sum_target, b.sum_target)
    assert a.ece() == pytest.approx(b.ece(), abs=1e-12)
    assert a.mce() == pytest.approx(b.mce(), abs=1e-12)


# ------------------------------------------------------ temperature
def test_temperature_scaling_keeps_argmax_and_lowers_confidence():
    z = np.array([[2.0, 0.0]])
    base = stable_softmax(z)[0]
    assert base[0] == pytest.approx(np.exp(2) / (np.exp(2) + 1))
    previous = base[0]
    for t in (1.5, 2.0, 5.0, 100.0):
        p = stable_softmax(z / t)[0]
        assert p.argmax() == 0
        assert 0.5 < p[0] < previous
        assert p[0] == pytest.approx(1 / (1 + np.exp(-2 / t)))
        previous = p[0]
    sharper = stable_softmax(z / 0.5)[0]
    assert sharper.argmax() == 0 and sharper[0] > base[0]


def test_temperature_scaling_keeps_accuracy_and_changes_confidence_ece():
    logits, _, y = random_predictions(2000, 5, seed=7)
    hot = Predictions.from_logits(logits, y)
    cool = Predictions.from_logits(logits / 2.0, y)
    np.testing.assert_array_equal(hot.probs.argmax(1), cool.probs.argmax(1))
    np.testing.assert_array_equal(hot.correct, cool.correct)
    assert (cool.confidence <= hot.confidence + 1e-15).all()
    assert confidence_ece(cool.probs, y) != confidence_ece(hot.probs, y)


def test_stable_softmax_is_scipys_log_softmax_bit_for_bit():
    from scipy.special import log_softmax

    rng = np.random.default_rng(5)
    cases = [
        rng.normal(size=(500, 10)),
        rng.normal(scale=300.0, size=(200, 3)),
        rng.normal(size=(50, 2)).astype(np.float32),
        np.array([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, 1.0], [np.inf, 0.0, 1.0]]),
        np.array([[-np.inf, -np.inf], [np.nan, 0.0], [0.0, 0.0]]),
    ]
    for z in cases:
        with np.errstate(invalid="ignore"):
            ours, scipys = stable_softmax(z), np.exp(log_softmax(z, axis=1))
        assert ours.dtype == scipys.dtype
        np.testing.assert_array_equal(ours, scipys)
    assert not np.shares_memory(stable_softmax(cases[0]), cases[0])


def test_stable_softmax_does_not_overflow():
    p = stable_softmax(np.array([[1000.0, 0.0, -1000.0], [-800.0, -800.0, -801.0]]))
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(p[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(p[1], softmax(np.array([0.0, 0.0, -1.0])))


# ----------------------------------------------------- constructors
def test_from_probs_keeps_rows_and_labels_read_only():
    _, p, y = random_predictions(100, 3, seed=1)
    pred = Predictions.from_probs(p, y, class_names=["cat", "dog", "eel"], name="net")
    np.testing.assert_array_equal(pred.probs, p)
    np.testing.assert_array_equal(pred.labels, y)
    assert pred.class_names == ("cat", "dog", "eel")
    assert pred.name == "net"
    assert pred.logits is None
    assert (pred.n_samples, pred.n_classes, len(pred)) == (100, 3, 100)
    assert not pred.probs.flags.writeable
    assert not pred.labels.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        pred.probs[0, 0] = 1.0
    assert "n_samples=100" in repr(pred) and "from probabilities" in repr(pred)


def test_from_probs_leaves_the_callers_arrays_alone():
    _, p, y = random_predictions(50, 3, seed=2)
    pred = Predictions.from_probs(p, y)
    assert p.flags.writeable and y.flags.writeable
    before = pred.probs.copy()
    p[0] = [1.0, 0.0, 0.0]
    y[0] = (y[0] + 1) % 3
    np.testing.assert_array_equal(pred.probs, before)
    assert pred.labels[0] != y[0]


def test_from_logits_keeps_logits_and_applies_softmax():
    logits, p, y = random_predictions(200, 4, seed=3)
    pred = Predictions.from_logits(logits, y)
    np.testing.assert_allclose(pred.probs, p, rtol=1e-12)
    np.testing.assert_array_equal(pred.logits, logits)
    assert not pred.logits.flags.writeable
    assert logits.flags.writeable
    np.testing.assert_allclose(pred.log_probs, np.log(p), atol=1e-12)
    assert "from logits" in repr(pred)


def test_from_scores_builds_two_columns():
    s = np.array([0.2, 0.9, 0.5])
    pred = Predictions.from_scores(s, [0, 1, 1])
    np.testing.assert_allclose(pred.probs, [[0.8, 0.2], [0.1, 0.9], [0.5, 0.5]])
    assert pred.class_names == ("0", "1")


def test_log_probs_without_logits_are_log_of_probs():
    pred = Predictions.from_probs(np.array([[1.0, 0.0], [0.25, 0.75]]), [0, 1])
    np.testing.assert_array_equal(pred.log_probs[1], np.log([0.25, 0.75]))
    assert pred.log_probs[0, 1] == -np.inf


def test_renormalize_on_request_only():
    rows = np.array([[2.0, 2.0], [1.0, 3.0]]) / 4.0 * 1.1
    with pytest.raises(CalibrationInputError, match="must sum to 1"):
        Predictions.from_probs(rows, [0, 1])
    pred = Predictions.from_probs(rows, [0, 1], renormalize=True)
    np.testing.assert_allclose(pred.probs, [[0.5, 0.5], [0.25, 0.75]])
    with pytest.raises(CalibrationInputError, match="all zero and cannot be renormalised"):
        Predictions.from_probs(np.array([[0.0, 0.0], [0.5, 0.5]]), [0, 1], renormalize=True)


def test_subset_keeps_names_and_logits():
    logits, _, y = random_predictions(100, 3, seed=4)
    pred = Predictions.from_logits(logits, y, class_names=["a", "b", "c"], name="m")
    part = pred.subset(np.arange(100) % 2 == 0)
    assert part.n_samples == 50 and part.class_names == ("a", "b", "c") and part.name == "m"
    np.testing.assert_array_equal(part.logits, logits[::2])
    np.testing.assert_array_equal(part.labels, y[::2])
    assert pred.subset([3, 1], name="two").name == "two"


# ----------------------------------------------------- bad input
def test_class_names_must_match_and_be_unique():
    p = np.array([[0.5, 0.5]])
    with pytest.raises(CalibrationInputError, match="3 class names were given for 2 probability"):
        Predictions.from_probs(p, [0], class_names=["a", "b", "c"])
    with pytest.raises(CalibrationInputError, match="class names must be unique; repeated: a"):
        Predictions.from_probs(p, [0], class_names=["a", "a"])


def test_bad_logits_are_explained():
    with pytest.raises(CalibrationInputError, match=r"logits in run\.csv contain NaN .* row 1"):
        Predictions.from_logits([[0.0, 1.0], [np.nan, 0.0]], [0, 1], where="run.csv")
    with pytest.raises(CalibrationInputError, match=r"non-empty \(N, K\) array with K >= 2"):
        Predictions.from_logits([[0.0], [1.0]], [0, 0])
    with pytest.raises(CalibrationInputError, match="must be numbers"):
        Predictions.from_logits(np.array([["a", "b"]]), [0])


def test_where_is_named_in_messages():
    with pytest.raises(CalibrationInputError, match=r"probabilities in preds\.csv .* row 0"):
        Predictions.from_probs([[0.5, np.nan]], [0], where="preds.csv")
    with pytest.raises(CalibrationInputError, match=r"labels in preds\.csv must lie in 0\.\.1"):
        Predictions.from_probs([[0.5, 0.5]], [2], where="preds.csv")


def test_notion_arguments_are_checked():
    _, p, y = random_predictions(20, 3, seed=5)
    pred = Predictions.from_probs(p, y)
    with pytest.raises(CalibrationInputError, match="binary notion needs exactly 2 classes"):
        pred.statistics(Binning(), "binary")
    with pytest.raises(CalibrationInputError, match=r"class index in 0\.\.2, got 3"):
        pred.statistics(Binning(), "class", 3)
    with pytest.raises(CalibrationInputError, match=r"class index in 0\.\.2, got None"):
        notion_scores(pred.probs, pred.labels, "class")
    with pytest.raises(CalibrationInputError, match="unknown calibration notion 'top'"):
        notion_scores(pred.probs, pred.labels, "top")


# ------------------------------------------- cached re-binning paths
@pytest.mark.parametrize("scheme", ["width", "frequency"])
def test_cached_statistics_equal_the_one_off_metrics(scheme):
    _, p, y = random_predictions(3000, 4, seed=6)
    p[:200] = np.round(p[:200], 2)  # ties, some on edges
    p[:200] /= p[:200].sum(axis=1, keepdims=True)
    pred = Predictions.from_probs(p, y)
    for n_bins in (1, 2, 5, 10, 15, 20, 49, 100):
        b = Binning(scheme, n_bins)
        assert_same_stats(
            pred.statistics(b, "confidence"),
            confidence_statistics(p, y, n_bins=n_bins, scheme=scheme),
        )
        stacked = classwise_statistics(p, y, n_bins=n_bins, scheme=scheme)
        for j, stats in enumerate(pred.classwise_statistics(b)):
            assert_same_stats(stats, stacked[j])
            assert_same_stats(pred.statistics(b, "class", j), stacked[j])


@pytest.mark.parametrize("scheme", ["width", "frequency"])
def test_cached_binary_statistics_equal_the_one_off_metric(scheme):
    rng = np.random.default_rng(8)
    s = np.concatenate([rng.random(2000), np.arange(21) / 20])  # includes every edge of 20 bins
    y = (rng.random(s.shape[0]) < s).astype(int)
    pred = Predictions.from_scores(s, y)
    for n_bins in (3, 10, 20, 40):
        b = Binning(scheme, n_bins)
        assert_same_stats(
            pred.statistics(b, "binary"), binary_statistics(s, y, n_bins=n_bins, scheme=scheme)
        )
        curve = reliability_curve(s, y, n_bins=n_bins, scheme=scheme)
        assert_same_stats(curve.stats, pred.statistics(b, "binary"))


def test_sorted_scores_are_built_once_and_reused():
    _, p, y = random_predictions(500, 3, seed=9)
    pred = Predictions.from_probs(p, y)
    first = pred.sorted_scores("confidence")
    pred.statistics(Binning("width", 10))
    pred.statistics(Binning("frequency", 7))
    assert pred.sorted_scores("confidence") is first
    assert pred.sorted_scores("class", 1) is pred.sorted_scores("class", 1)
    assert pred.sorted_scores("class", 1) is not pred.sorted_scores("class", 2)
    assert isinstance(first, SortedScores) and len(first) == 500
    assert (np.diff(first.scores) >= 0).all()
    np.testing.assert_array_equal(first.cum_target[-1], pred.correct.sum())


def test_confidence_and_correct_are_the_top_label():
    _, p, y = random_predictions(300, 5, seed=10)
    pred = Predictions.from_probs(p, y)
    conf, correct = top_label(pred.probs, pred.labels)
    np.testing.assert_array_equal(pred.confidence, p.max(axis=1))
    np.testing.assert_array_equal(pred.correct, (p.argmax(axis=1) == y).astype(int))
    np.testing.assert_array_equal(conf, pred.confidence)
    np.testing.assert_array_equal(correct, pred.correct)
