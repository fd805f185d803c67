"""Slices and time windows (issue 19): loader columns, grouped pass, test, drift, maps."""

from __future__ import annotations

import io
import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibration_core import CalibrationInputError, Predictions, load_predictions
from calibration_core.binning import Binning
from calibration_core.errors import TimeZonesWarning
from calibration_core.metrics import brier_score, confidence_ece, confidence_mce, log_loss
from calibration_core.predictions import with_extra
from calibration_core.slices import (
    GroupedPass,
    drift_report,
    group_candidates,
    group_index,
    group_maps,
    parse_reference,
    row_values,
    slice_report,
    time_values,
    time_windows,
    window_index,
)

START = 1_700_006_400  # 2023-11-15 00:00:00 UTC


def planted(n, rng, *, bad_group=None, drift_day=None, groups=5, days=10):
    """Binary scores, calibrated except in ``bad_group`` and from ``drift_day`` on."""
    conf = rng.uniform(0.5, 1.0, n)
    g = rng.integers(0, groups, n)
    t = START + np.sort(rng.integers(0, days * 86400, n))
    truth = conf.copy()
    if bad_group is not None:
        truth[g == bad_group] -= 0.15
    if drift_day is not None:
        truth[(t - START) // 86400 >= drift_day] -= 0.15
    correct = rng.random(n) < truth
    pred = Predictions.from_probs(np.column_stack([conf, 1 - conf]), np.where(correct, 0, 1))
    site = np.array([f"s{i}" for i in g], dtype=object)
    return with_extra(pred, {"site": site, "timestamp": t})


# ----------------------------------------------------------------- input
def test_other_columns_survive_loading_csv_and_parquet(tmp_path):
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "site": ["x", None, "y", "x"],
            "age": [31, 40, 52, 18],
            "p_0": [0.9, 0.2, 0.6, 0.3],
            "p_1": [0.1, 0.8, 0.4, 0.7],
            "label": [0, 1, 1, 0],
            "model": ["m", "m", "n", "n"],
        }
    )
    frame.to_parquet(tmp_path / "f.parquet")
    csv = frame.to_csv(index=False).encode()
    for source in (tmp_path / "f.parquet", io.BytesIO(csv)):
        m, n = load_predictions(
            source, file_name="f.csv" if isinstance(source, io.BytesIO) else None
        )
        assert set(m.extra) == {"id", "site", "age"}
        assert list(m.extra["id"]) == ["a", "b"] and list(n.extra["age"]) == [52, 18]
        assert m.extra["site"][1] in ("", None)  # an empty cell, as written
        assert group_index(m, ["site"]).labels == ("site=x", "site=(missing)")
        assert not m.extra["id"].flags.writeable
        assert list(m.subset([1]).extra["id"]) == ["b"]


def test_parquet_lists_and_binary_columns_are_not_read(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"p_0": [0.2, 0.6], "p_1": [0.8, 0.4], "label": [1, 0],
                      "embedding": [[1.0, 2.0], [3.0, 4.0]], "image": pa.array([b"x", b"y"]),
                      "site": ["a", "b"]})  # fmt: skip
    pq.write_table(table, tmp_path / "f.parquet")
    (pred,) = load_predictions(tmp_path / "f.parquet")
    assert list(pred.extra) == ["site"]


def test_other_npz_arrays_survive_and_predictions_pickle():
    buf = io.BytesIO()
    np.savez(buf, probs=np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]),
             labels=np.array([1, 0, 1]), site=np.array(["a", "b", "a"]),
             matrix=np.zeros((3, 2)), ts=np.array([1, 2, 3]))  # fmt: skip
    (pred,) = load_predictions(buf.getvalue(), file_name="x.npz")
    assert sorted(pred.extra) == ["site", "ts"]  # the (3, 2) array is not a column
    again = pickle.loads(pickle.dumps(pred))
    assert list(again.extra["site"]) == ["a", "b", "a"]


def test_small_groups_flagged_and_too_many_refused():
    rng = np.random.default_rng(0)
    pred = planted(1001, rng)
    codes = np.where(np.arange(1001) < 50, "tiny", "big").astype(object)
    ids = np.array([f"id{i}" for i in range(1001)], dtype=object)
    pred = with_extra(pred, {"g": codes, "id": ids})
    index = group_index(pred, ["g"])
    assert index.labels == ("g=big", "g=tiny") and list(index.small) == [False, True]
    report = slice_report(pred, index, n_resamples=0)
    assert report.worst == 0  # the tiny group is never the worst
    assert group_index(pred, ["g"], min_rows=10).small.sum() == 0
    assert group_candidates(pred) == ["g"]  # ids have a value per row: not offered
    with pytest.raises(CalibrationInputError, match=r"1,001 groups.*1,000.*coarser column"):
        group_index(pred, ["id"])
    with pytest.raises(CalibrationInputError, match=r"no column 'nope'.*'g', 'id'"):
        group_index(pred, ["nope"])


def test_times_iso_epoch_and_bad_rows_reported():
    pred = planted(4, np.random.default_rng(0))
    text = np.array(["2024-03-01", "2024-03-01T12:00:00Z", "yesterday", None], dtype=object)
    bad = with_extra(pred, {"time": text})
    with pytest.raises(CalibrationInputError, match=r"'yesterday'.*rows 3, 4 of that model"):
        time_values(bad, "time")
    good = with_extra(pred, {"time": text[:2].tolist() * 2})
    assert str(time_values(good, "time")[1]) == "2024-03-01T12:00:00"
    epoch = time_values(with_extra(pred, {"t": np.array([0, 86400, 7 * 86400, 40 * 86400])}), "t")
    weeks = window_index(epoch, "1w", 4)
    assert weeks.labels == ("1969-12-29", "1970-01-05", "1970-02-09")  # ISO weeks from Monday
    assert window_index(epoch, "1m", 4).labels == ("1970-01-01", "1970-02-01")
    assert window_index(None, "3rows", 4).labels == ("rows 1-3", "rows 4-4")
    with pytest.raises(CalibrationInputError, match="needs a time column"):
        window_index(None, "1w", 4)


# ------------------------------------------------------------------ core
@pytest.mark.parametrize("scheme", ["width", "frequency"])
@pytest.mark.parametrize("ties", [False, True])
def test_grouped_pass_equals_each_group_alone(scheme, ties):
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.full(6, 0.4), 3000)
    if ties:  # many scores equal to equal-frequency edges: they go to the bin above
        probs = np.round(probs, 1)
        probs[:, 0] += 1 - probs.sum(axis=1)
        probs = np.clip(probs, 0, 1) / np.clip(probs, 0, 1).sum(axis=1, keepdims=True)
    labels = rng.integers(0, 6, 3000)
    pred = Predictions.from_probs(probs, labels)
    codes = rng.integers(0, 4, 3000)
    grouped = GroupedPass.build(row_values(pred), codes, 4, Binning(scheme, 10))
    metrics = grouped.metrics()
    for g in range(4):
        p, y = probs[codes == g], labels[codes == g]
        assert metrics["ece"][g] == pytest.approx(confidence_ece(p, y, n_bins=10, scheme=scheme))
        assert metrics["mce"][g] == pytest.approx(confidence_mce(p, y, n_bins=10, scheme=scheme))
        assert metrics["brier_score"][g] == pytest.approx(brier_score(p, y))
        assert metrics["log_loss"][g] == pytest.approx(log_loss(p, y))


def test_planted_group_found_with_intervals():
    pred = planted(5000, np.random.default_rng(1), bad_group=3)
    report = slice_report(pred, group_index(pred, ["site"]), n_resamples=100)
    assert report.groups.labels[report.worst] == "site=s3"
    assert report.worst_gap > 0.05
    assert report.homogeneity.rejects(0.05)
    lower, upper = report.intervals["ece"].lower, report.intervals["ece"].upper
    assert np.all(lower <= report.metrics["ece"]) and np.all(report.metrics["ece"] <= upper)
    doc = json.dumps(report.to_dict(), allow_nan=False)
    assert '"worst": "site=s3"' in doc


SITES = np.array([f"s{i}" for i in range(5)], dtype=object)


def null_replications(reps: int, n: int, days: int, seed: int):
    """``reps`` calibrated data sets (no planted group, no drift), drawn in one go."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, (reps, n))
    wrong = (rng.random((reps, n)) >= conf).astype(np.intp)  # label 0 with probability conf
    site = SITES[rng.integers(0, SITES.size, (reps, n))]
    t = START + np.sort(rng.integers(0, days * 86400, (reps, n)), axis=1)
    for i in range(reps):
        pred = Predictions.from_probs(np.column_stack([conf[i], 1 - conf[i]]), wrong[i])
        yield with_extra(pred, {"site": site[i], "timestamp": t[i]})


def test_homogeneity_size_and_drift_false_flags_within_binomial_range():
    """200 replications without a planted group or drift (the issue's size check).

    The homogeneity test has the nominal size: its rejections must lie in the
    two-sided 99 % binomial range of 200 draws at 5 % (3 to 19), so a test that
    never rejects fails as well as one that rejects too often. The drift flags
    (a window's ECE interval entirely above the reference's) are conservative by
    construction, two 95 % intervals not overlapping: their claim is "at most
    the nominal 5 %", the range's upper end; flagging against the reference's
    lower bound instead would flag about half of these replications, and the
    planted-drift test below fails if nothing is ever flagged. 600 rows over 3
    days and 30 resamples per replication keep the 400 reports to a few seconds.
    """
    low, high = stats.binom.ppf([0.005, 0.995], 200, 0.05)  # 3 and 19
    rejected = flagged = 0
    for i, pred in enumerate(null_replications(200, 600, days=3, seed=1000)):
        test = slice_report(
            pred, group_index(pred, ["site"]), n_resamples=0, test_resamples=300, seed=i
        ).homogeneity
        rejected += test.rejects(0.05)
        windows = window_index(time_values(pred, "timestamp"), "1d", pred.n_samples)
        flagged += drift_report(pred, windows, n_resamples=30, seed=i).flagged.any()
    assert low <= rejected <= high, rejected
    assert flagged <= high, flagged


def test_planted_drift_found_in_the_right_windows():
    pred = planted(6000, np.random.default_rng(2), drift_day=7)
    windows = window_index(time_values(pred, "timestamp"), "1d", pred.n_samples)
    report = drift_report(pred, windows, reference=3, n_resamples=100)
    flagged = [w for w, f in zip(windows.labels, report.flagged, strict=True) if f]
    assert flagged and set(flagged) <= {"2023-11-22", "2023-11-23", "2023-11-24"}
    assert len(flagged) >= 2
    assert report.to_dict()["windows"][-1]["window"] == "2023-11-24"


def test_drift_point_estimates_without_resamples_and_the_notion_followed():
    """n_resamples=0: the same estimates, no bounds, nothing flagged (the page's first draw)."""
    pred = planted(3000, np.random.default_rng(3), drift_day=7)
    column, windows = time_windows(pred, "1d")
    assert column == "timestamp" and windows.n_groups == 10
    full = drift_report(pred, windows, reference=2, n_resamples=20).to_dict()
    points = drift_report(pred, windows, reference=2, n_resamples=0)
    doc = points.to_dict()
    assert not points.flagged.any() and np.isnan(points.reference_upper)
    for a, b in zip(doc["windows"], full["windows"], strict=True):
        assert "ece_upper" not in a and a["flagged"] is False
        assert {k: a[k] for k in ("window", "rows", "ece", "accuracy", "confidence")} == {
            k: b[k] for k in ("window", "rows", "ece", "accuracy", "confidence")
        }
    # The ECE follows the notion asked for (binary: the positive-class column).
    binary = drift_report(pred, windows, reference=2, notion="binary", n_resamples=0)
    g = windows.codes == 0
    expected = Binning().statistics(pred.probs[g, 1], (pred.labels[g] == 1).astype(float)).ece()
    assert binary.windows.metrics["ece"][0] == pytest.approx(expected, rel=1e-12)


def test_group_maps_per_group_temperature_beats_global_on_planted_group():
    rng = np.random.default_rng(4)
    n = 4000
    g = rng.integers(0, 2, n)
    z = rng.normal(0, 2, (n, 3))
    true_t = np.where(g == 1, 3.0, 1.0)[:, None]
    p_true = np.exp(z / true_t) / np.exp(z / true_t).sum(1, keepdims=True)
    labels = (p_true.cumsum(1) < rng.random(n)[:, None]).sum(1)
    pred = with_extra(Predictions.from_logits(z, labels), {"g": g})
    table = group_maps(pred, group_index(pred, ["g"]), ["temperature"]).table
    row = next(r for r in table if r["group"] == "g=1")
    assert row["better"] == "group" and row["ece_group"] < row["ece_global"]


def test_group_maps_score_the_notion_asked_for():
    """The ECE columns are the notion's (one class vs rest here), the same as slice_report's;
    the held-out maps are the same whatever the notion (log-loss decides "better")."""
    rng = np.random.default_rng(5)
    n = 3000
    z = rng.normal(0, 2, (n, 3))
    labels = np.exp(z).cumsum(1) / np.exp(z).sum(1, keepdims=True) < rng.random(n)[:, None]
    pred = with_extra(Predictions.from_logits(z * 1.6, labels.sum(1)), {"g": rng.integers(0, 2, n)})
    groups = group_index(pred, ["g"])
    conf = group_maps(pred, groups, ["temperature"], folds=2)
    cls = group_maps(pred, groups, ["temperature"], notion="class", class_index=2, folds=2)
    assert (cls.notion, cls.class_index, conf.notion) == ("class", 2, "confidence")
    report = slice_report(pred, groups, notion="class", class_index=2, n_resamples=0,
                          test_resamples=0)  # fmt: skip
    for g, row in enumerate(r for r in cls.table):
        assert row["ece_uncalibrated"] == pytest.approx(report.metrics["ece"][g], rel=1e-12)
    for a, b in zip(conf.table, cls.table, strict=True):
        assert a["ece_global"] != pytest.approx(b["ece_global"], rel=1e-3)
        assert (a["log_loss_global"], a["better"]) == (b["log_loss_global"], b["better"])


# ------------------------------------------------------------- real data
@pytest.mark.realdata
def test_densenet_cifar100_superclasses(realdata, shared_dir):
    """Worst superclasses of the DenseNet's predicted class, before and after temperature."""
    names = json.loads((shared_dir / "realdata" / "cifar-class-names.json").read_text())
    coarse = np.asarray(names["cifar100_fine_to_coarse"])
    supers = np.asarray(names["cifar100_superclasses"], dtype=object)
    with np.load(realdata["densenet-bc-100-cifar-100"], allow_pickle=False) as data:
        probs, labels = data["predictions"], data["ground_truth"]
    pred = Predictions.from_probs(probs, labels, renormalize=True)
    pred = with_extra(pred, {"superclass": supers[coarse[probs.argmax(1)]]})
    groups = group_index(pred, ["superclass"])
    before = slice_report(pred, groups, n_resamples=0)
    table = group_maps(pred, groups, ["temperature"]).table
    after = {r["group"]: r["ece_global"] for r in table}
    worst_after = max(after, key=after.get)
    print("worst before:", groups.labels[before.worst], before.metrics["ece"].max())
    print("worst after temperature:", worst_after, after[worst_after])
    assert groups.n_groups == 20 and before.homogeneity.rejects(0.05)
    assert groups.labels[before.worst] == "superclass=people" == worst_after
    assert before.metrics["ece"].min() > 0.05  # over-confident everywhere
    assert max(after.values()) < before.metrics["ece"].max()


def test_shared_miscalibration_with_different_score_ranges_is_not_flagged():
    """Groups equally over-confident (by 0.1) on different score ranges: the same curve."""
    rejected = 0
    for i in range(200):
        rng = np.random.default_rng(5000 + i)
        g = rng.integers(0, 3, 1500)
        low = np.array([0.5, 0.6, 0.75])[g]
        conf = low + rng.random(1500) * (1 - low)
        correct = rng.random(1500) < conf - 0.1
        pred = Predictions.from_probs(np.column_stack([conf, 1 - conf]), np.where(correct, 0, 1))
        pred = with_extra(pred, {"g": g})
        report = slice_report(pred, group_index(pred, ["g"]), n_resamples=0, test_resamples=300,
                              seed=i)  # fmt: skip
        rejected += report.homogeneity.rejects(0.05)
    assert rejected <= stats.binom.ppf(0.995, 200, 0.05), rejected


# ------------------------------------------------------ reference period


def test_reference_period_in_dates_windows_and_the_first_k_agree():
    """The same period written three ways gives the same report; the drift is still found."""
    pred = planted(6000, np.random.default_rng(2), drift_day=7)
    _, windows = time_windows(pred, "1d")
    docs = [
        drift_report(pred, windows, reference=ref, n_resamples=50).to_dict()
        for ref in (3, "1:3", "2023-11-15:2023-11-17")
    ]
    assert docs[0]["windows"] == docs[1]["windows"] == docs[2]["windows"]
    assert docs[0]["reference"] == docs[2]["reference"]
    assert [w["reference"] for w in docs[2]["windows"]] == [True] * 3 + [False] * 7
    assert docs[2]["reference_period"] == "2023-11-15:2023-11-17"
    assert docs[2]["reference_description"] == "2023-11-15 to 2023-11-17"
    assert docs[0]["reference_description"] == "the first 3 windows"
    flagged = {w["window"] for w in docs[2]["windows"] if w["flagged"]}
    assert flagged and flagged <= {"2023-11-22", "2023-11-23", "2023-11-24"}


def test_reference_period_in_the_middle_open_ended_and_by_month():
    """A later period: the windows before it are judged too; an open end runs to the data's."""
    pred = planted(6000, np.random.default_rng(4), drift_day=7)
    _, windows = time_windows(pred, "1d")
    later = drift_report(pred, windows, reference="2023-11-22:", n_resamples=0)
    assert later.in_reference.tolist() == [False] * 7 + [True] * 3
    assert later.to_dict()["reference"]["rows"] == windows.sizes[7:].sum()
    middle = drift_report(pred, windows, reference="4:5", n_resamples=0)
    assert middle.in_reference.tolist() == [False] * 3 + [True] * 2 + [False] * 5
    assert middle.period.describe() == "windows 4 to 5"
    # A month as the end covers the whole month: here, every row but the first day's.
    month = drift_report(pred, windows, reference="2023-11-16:2023-11", n_resamples=0)
    assert month.in_reference.tolist() == [False] + [True] * 9
    # One date alone is that day.
    day = drift_report(pred, windows, reference="2023-11-18", n_resamples=0)
    assert day.in_reference.tolist() == [False] * 3 + [True] + [False] * 6
    assert day.period.describe() == "2023-11-18"


@pytest.mark.parametrize(
    ("reference", "description"),
    [
        (1, "the first window"),
        ("1:1", "the first window"),
        ("3:3", "window 3"),
        (2, "the first 2 windows"),
    ],
)
def test_a_reference_of_one_window_is_named_in_the_singular(reference, description):
    assert parse_reference(reference).describe() == description


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("2023-11-20:2023-11-16", "ends before it starts"),
        ("5:2", "ends before it starts"),
        ("0:2", "numbered from 1"),
        ("2024-02-01:2024-03-01", "lies outside the data: the data's times run from 2023-11-15"),
        (":2023-11-01", "lies outside the data"),
        ("3:12", "needs window 12, but there are 10 windows"),
        ("2023-11-15:", "covers all 10 windows"),
        ("10", "covers all"),
        ("", "is empty"),
        ("last week", "is not understood"),
        ("2023-11-15:soon", "'soon' of the reference period"),
        ("2023-11-15Z:2023-11-16", "without a zone"),
    ],
)
def test_reference_period_errors_say_what_and_how(reference, message):
    pred = planted(2000, np.random.default_rng(5))
    _, windows = time_windows(pred, "1d")
    with pytest.raises(CalibrationInputError, match=message.replace("(", r"\(")):
        drift_report(pred, windows, reference=reference, n_resamples=0)


def test_reference_period_empty_in_a_gap_and_dates_on_row_windows():
    pred = planted(2000, np.random.default_rng(6), days=10)
    keep = np.flatnonzero((pred.extra["timestamp"] - START) // 86400 != 4)  # no 2023-11-19
    gap = pred.subset(keep)
    _, windows = time_windows(gap, "1d")
    with pytest.raises(CalibrationInputError, match="holds no row"):
        drift_report(gap, windows, reference="2023-11-19:2023-11-19", n_resamples=0)
    rows = window_index(None, "500rows", pred.n_samples)
    with pytest.raises(CalibrationInputError, match=r"give window numbers instead, e\.g\. 1:3"):
        drift_report(pred, rows, reference="2023-11-15:2023-11-16", n_resamples=0)
    report = drift_report(pred, rows, reference="2:3", n_resamples=0)
    assert report.in_reference.tolist() == [False, True, True, False]


def test_too_many_windows_are_refused_as_groups_are():
    rng = np.random.default_rng(0)
    pred = planted(1_000_000, rng, days=1500)  # a million rows over four years
    with pytest.raises(CalibrationInputError, match=r"a window of '1rows' gives 1,000,000 "
                       r"windows, more than the 1,000.*at least 1000rows"):  # fmt: skip
        time_windows(pred, "1rows", "timestamp")
    with pytest.raises(CalibrationInputError, match=r"'1d' gives 1,500 windows.*1w or 1m"):
        time_windows(pred, "1d")
    assert time_windows(pred, "1000rows")[1].n_groups == 1000  # at the cap
    assert time_windows(pred, "1w")[1].n_groups == 215


def test_times_of_different_zones_convert_and_naive_with_zoned_are_refused():
    pred = planted(3, np.random.default_rng(0))
    zones = ["2024-03-01T12:00:00Z", "2024-03-01T14:00:00+02:00", "2024-03-01T07:00:00-0500"]
    with pytest.warns(TimeZonesWarning, match=r"time column 'time' of '.*': times in 3 time "
                      r"zones \(\+02:00, -05:00, Z\) were converted to UTC"):  # fmt: skip
        times = time_values(with_extra(pred, {"time": np.array(zones, dtype=object)}), "time")
    assert list(times) == [np.datetime64("2024-03-01T12:00:00")] * 3
    one_zone = np.array(["2024-03-01T12:00:00+02:00", "2024-03-02T12:00:00+0200", ""], dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one zone: no notice
        time_values(with_extra(pred, {"time": one_zone[:2].repeat(2)[:3]}), "time")
    mixed = ["2024-03-01T12:00:00Z", "2024-03-01 14:00:00", "2024-03-01T12:00:00Z"]
    with pytest.raises(CalibrationInputError, match=r"mixes times with a zone \('2024-03-01T12"
                       r":00:00Z'\) and times without one \('2024-03-01 14:00:00'\)"):  # fmt: skip
        time_values(with_extra(pred, {"time": np.array(mixed, dtype=object)}), "time")
    dates = ["2024-03-01", "2024-03-02T00:00:00Z", "2024-03-03"]  # a date has no time to zone
    assert time_values(with_extra(pred, {"time": np.array(dates, dtype=object)}), "time")[1] == (
        np.datetime64("2024-03-02T00:00:00")
    )
