"""Groups and time windows of a dataset on Dask against the in-memory slices.

The point estimates of every group and window (rows, accuracy, confidence,
ECE, MCE, Brier score, log-loss) are exact: equal to ``slice_report`` and
``drift_report`` on the same rows to 1e-12. Bounds, the homogeneity test and
the drift flags are those reports' on the recorded uniform sample. The
in-memory guards hold: small groups flagged, more than 1,000 groups refused,
values that are not times named by file and rows. Windows of N rows number each
model's rows in the order of the pieces, as the in-memory engine numbers them in
the files concatenated in that order.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("dask.dataframe", reason="the 'dask' extra is not installed")
distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")
#: The Dask engine on the session's cluster: the ``dask`` tier.
pytestmark = pytest.mark.usefixtures("dask_extra")

from app.cli import main  # noqa: E402
from calibration_core import CalibrationInputError, load_predictions  # noqa: E402
from calibration_core.binning import Binning  # noqa: E402
from calibration_core.distributed import draw_sample, sample_predictions  # noqa: E402
from calibration_core.distributed.frequency import InProcessPasses  # noqa: E402
from calibration_core.distributed.group_bins import group_frequency_bins  # noqa: E402
from calibration_core.distributed.pieces import (  # noqa: E402
    ReadOptions,
    find_pieces,
    model_first_rows,
)
from calibration_core.distributed.slices import (  # noqa: E402
    GroupSpec,
    dataset_groups,
    exact_groups,
    sample_windows,
)
from calibration_core.errors import TimeZonesWarning  # noqa: E402
from calibration_core.slices import (  # noqa: E402
    GROUP_METRICS,
    drift_report,
    group_index,
    group_maps,
    parse_reference,
    slice_report,
    time_windows,
)

TOL = 1e-12
NAME = "logs"


def _table(n: int, k: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[: n // 4] = np.round(p[: n // 4], 2)  # scores on bin edges
    p[: n // 4] /= p[: n // 4].sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in p])
    region = rng.choice(["north", "south", "", "east"], n).astype(object)
    region[::97] = None
    tier = rng.integers(0, 12, n).astype(float)
    tier[::53] = np.nan
    seconds = np.sort(rng.integers(0, 90 * 86400, n)).astype("timedelta64[s]")
    cols = {f"p_{j}": p[:, j] for j in range(k)}
    cols |= {"label": y, "region": region, "tier": tier,
             "timestamp": np.datetime64("2024-01-01T00:00:00") + seconds}  # fmt: skip
    return pa.table(cols)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Two files of one model (row groups of 700 and 900 rows), and the whole in one file."""
    folder = tmp_path_factory.mktemp(NAME, numbered=False)
    table = _table(5000, 3, 7)
    pq.write_table(table.slice(0, 3000), folder / "a.parquet", row_group_size=700)
    pq.write_table(table.slice(3000), folder / "b.parquet", row_group_size=900)
    whole = folder.parent / f"{NAME}-whole.parquet"
    pq.write_table(table, whole)
    return str(folder / "*.parquet"), load_predictions(whole, name=NAME)[0]


def _whole(pattern: str) -> str:
    """The file holding the whole dataset of ``pattern`` (the ``dataset`` fixture's)."""
    return str(Path(pattern).parent.parent / f"{NAME}-whole.parquet")


def _assert_metrics(got: dict, want: dict) -> None:
    for name in GROUP_METRICS:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=TOL, err_msg=name)


@pytest.mark.parametrize(("columns", "min_rows"), [(("region",), 1250), (("region", "tier"), 100)])
def test_group_estimates_equal_slice_report(dask_client, dataset, columns, min_rows):
    pattern, memory = dataset
    spec = GroupSpec(columns=columns, n_bins=10)
    exact = exact_groups(dataset_groups(pattern, spec, client=dask_client)[NAME], spec, min_rows)
    groups = group_index(memory, columns, min_rows=min_rows)
    want = slice_report(memory, groups, binning=Binning("width", 10),
                        n_resamples=0, test_resamples=0)  # fmt: skip
    assert exact.labels == want.groups.labels
    assert "region=(missing)" in " ".join(exact.labels)  # blank text and None: one group
    np.testing.assert_array_equal(exact.sizes, want.groups.sizes)
    np.testing.assert_array_equal(exact.small, want.groups.small)
    assert exact.small.any() and not exact.small.all()
    _assert_metrics(exact.metrics, want.metrics)
    _assert_metrics({k: [v] for k, v in exact.whole.items()},
                    {k: [v] for k, v in want.whole.items()})  # fmt: skip


@pytest.mark.parametrize(
    ("window", "reference"), [("1d", "1"), ("1w", "2024-01-10:2024-02-03"), ("1w", "2:3")]
)
def test_window_estimates_equal_drift_report(dask_client, dataset, window, reference):
    pattern, memory = dataset
    period = parse_reference(reference)
    spec = GroupSpec(window=window, reference=period)
    exact = exact_groups(dataset_groups(pattern, spec, client=dask_client)[NAME], spec)
    _, windows = time_windows(memory, window)
    _assert_windows(exact, drift_report(memory, windows, reference=reference, n_resamples=0))


def _assert_windows(exact, want) -> None:
    """Exact windows of a dataset equal a ``DriftReport`` of the same rows (point estimates)."""
    assert exact.labels == want.windows.groups.labels
    np.testing.assert_array_equal(exact.sizes, want.windows.groups.sizes)
    np.testing.assert_array_equal(exact.in_reference, want.in_reference)
    assert exact.reference_rows == want.reference.groups.sizes[0]
    _assert_metrics(exact.metrics, want.windows.metrics)
    _assert_metrics({k: [v] for k, v in exact.reference.items()}, want.reference.metrics)


def _frequency_groups(dask_client, pattern, spec, min_rows=100):
    found = dataset_groups(pattern, spec, client=dask_client)
    bins = group_frequency_bins(pattern, spec, found, min_rows=min_rows, client=dask_client)
    return exact_groups(found[NAME], spec, min_rows, bins[NAME]), bins[NAME]


@pytest.mark.parametrize(("columns", "n_bins"), [(("region",), 10), (("region", "tier"), 7)])
def test_group_frequency_estimates_equal_slice_report(dask_client, dataset, columns, n_bins):
    pattern, memory = dataset
    spec = GroupSpec(columns=columns, n_bins=n_bins)
    exact, bins = _frequency_groups(dask_client, pattern, spec)
    groups = group_index(memory, columns)
    want = slice_report(memory, groups, binning=Binning("frequency", n_bins),
                        n_resamples=0, test_resamples=0)  # fmt: skip
    assert exact.labels == want.groups.labels
    counts = np.stack([b[0] for b in bins[: len(exact.labels)]])
    np.testing.assert_array_equal(counts, want.statistics.count)  # the same edges, ties up
    np.testing.assert_array_equal(np.stack([b[2] for b in bins[: len(exact.labels)]]),
                                  want.statistics.sum_target)  # fmt: skip
    assert (np.ptp(counts, axis=1) > 1).any()  # ties on edges: bins of unequal counts
    _assert_metrics(exact.metrics, want.metrics)
    _assert_metrics({k: [v] for k, v in exact.whole.items()},
                    {k: [v] for k, v in want.whole.items()})  # fmt: skip
    width = exact_groups(dataset_groups(pattern, spec, client=dask_client)[NAME], spec)
    assert not np.allclose(width.metrics["ece"], exact.metrics["ece"])  # not the width bins


@pytest.mark.parametrize(
    ("window", "reference"),
    [("1w", "2024-01-10:2024-02-03"), ("1w", "2:3"), ("650rows", "2:3")],
)
def test_window_frequency_estimates_equal_drift_report(dask_client, dataset, window, reference):
    # windows of rows: every piece's rows numbered from the footers in the four passes too
    pattern, memory = dataset
    spec = GroupSpec(window=window, reference=parse_reference(reference), n_bins=8)
    exact, _ = _frequency_groups(dask_client, pattern, spec)
    _, windows = time_windows(memory, window)
    want = drift_report(memory, windows, reference=reference, n_resamples=0,
                        binning=Binning("frequency", 8))  # fmt: skip
    _assert_windows(exact, want)


@pytest.mark.parametrize(
    ("window", "reference"),
    [("300rows", "1"), ("650rows", "3:4"), ("1100rows", "2:3"), ("2000rows", "1")],
)
def test_row_window_estimates_equal_drift_report(dask_client, dataset, window, reference):
    # row groups of 700 and 900 rows (and the files' last ones of 200): windows smaller and
    # larger than a row group, none dividing them, the last window partial but for 2000rows
    pattern, memory = dataset
    spec = GroupSpec(window=window, reference=parse_reference(reference))
    found = dataset_groups(pattern, spec, client=dask_client)[NAME]
    assert found.time_column == "timestamp"  # found and checked, as in memory, not used
    _, windows = time_windows(memory, window)
    want = drift_report(memory, windows, reference=reference, n_resamples=0)
    _assert_windows(exact_groups(found, spec), want)
    assert want.windows.groups.labels[-1] in ("rows 4801-5000", "rows 4551-5000",
                                              "rows 4401-5000", "rows 4001-5000")  # fmt: skip


def test_row_windows_span_batches_of_a_piece(dataset, monkeypatch):
    # one row group of 5,000 rows read in batches of 384 rows: numbers run on across batches
    from calibration_core.distributed import slices

    whole = _whole(dataset[0])
    monkeypatch.setattr(slices, "summary_batch_rows", lambda piece: 384)
    spec = GroupSpec(window="500rows", reference=parse_reference("2:3"))
    exact = exact_groups(dataset_groups(whole, spec, name=NAME)[NAME], spec)
    _, windows = time_windows(dataset[1], "500rows")
    _assert_windows(exact, drift_report(dataset[1], windows, reference="2:3", n_resamples=0))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two models, one per row group, over two files; the whole as one file (same order)."""
    folder = tmp_path_factory.mktemp("models")
    table = _table(3100, 2, 5).drop_columns(["timestamp"])
    owners = ["b", "a", "b", "a", "a"]  # row groups of 700, 700, 700, 500; then 500
    model = np.repeat(owners, [700, 700, 700, 500, 500]).astype(object)
    table = table.append_column("model", pa.array(model))
    pq.write_table(table.slice(0, 2600), folder / "1.parquet", row_group_size=700)
    pq.write_table(table.slice(2600), folder / "2.parquet")
    pq.write_table(table, folder.parent / "models-whole.parquet")
    return str(folder / "*.parquet"), load_predictions(folder.parent / "models-whole.parquet")


def test_row_windows_count_each_models_rows(dask_client, models):
    pattern, memory = models
    assert [p.name for p in memory] == ["b", "a"] and [p.n_samples for p in memory] == [1400, 1700]
    pieces = find_pieces(pattern)
    firsts = model_first_rows(pieces, ReadOptions(name="x"))
    assert firsts == [{"b": 0}, {"a": 0}, {"b": 700}, {"a": 700}, {"a": 1200}]
    spec = GroupSpec(window="450rows", reference=parse_reference("2:3"))
    found = dataset_groups(pattern, spec, client=dask_client)
    assert list(found) == ["b", "a"]
    for pred in memory:
        _, windows = time_windows(pred, "450rows")
        want = drift_report(pred, windows, reference="2:3", n_resamples=0)
        _assert_windows(exact_groups(found[pred.name], spec), want)
    sample, _, numbers = draw_sample(pattern, size=600, seed=4, model="a", client=dask_client,
                                     row_numbers=True)  # fmt: skip
    again, _ = sample_predictions(pattern, size=600, seed=4, model="a", client=dask_client)
    np.testing.assert_array_equal(sample.probs, again.probs)  # the same rows either way
    rows = memory[1].probs  # each sampled row is the model's row of its number
    np.testing.assert_array_equal(sample.probs, rows[numbers])
    assert np.all(np.diff(numbers) > 0) and numbers.shape == (sample.n_samples,)


def test_cli_row_windows_of_models_without_time_column(dask_client, models, capsys):
    pattern, memory = models
    address = dask_client.scheduler.address
    doc = _evaluate(capsys, pattern, "--engine", "dask", "--scheduler", address,
                    "--window", "450rows", "--reference", "2:3", "--sample-rows", "900",
                    "--slice-resamples", "20")  # fmt: skip
    assert [m["model"] for m in doc["models"]] == ["b", "a"]
    for model, pred in zip(doc["models"], memory, strict=True):
        t = model["time"]
        _, windows = time_windows(pred, "450rows")
        want = drift_report(pred, windows, reference="2:3", n_resamples=0).to_dict()
        assert t["time_column"] is None and t["reference_windows"] == 2
        assert [w["window"] for w in t["windows"]] == [w["window"] for w in want["windows"]]
        for got, row in zip(t["windows"], want["windows"], strict=True):
            assert got["rows"] == row["rows"] and got["ece"] == pytest.approx(row["ece"], abs=TOL)
        assert sum(w["sample_rows"] for w in t["windows"]) == t["intervals_evaluated_on"]["rows"]


def test_row_windows_refuse_row_groups_of_several_models(dask_client, tmp_path):
    table = _table(1200, 2, 6).append_column("model", pa.array(["a", "b"] * 600))
    pq.write_table(table, tmp_path / "mixed.parquet", row_group_size=800)
    spec = GroupSpec(window="100rows")
    with pytest.raises(CalibrationInputError, match=r"rows 1-800 \(row group 0\) holds rows of "
                       r"several models \(its column 'model' runs from 'a' to 'b'\), so each "
                       "model's rows cannot be numbered"):  # fmt: skip
        dataset_groups(str(tmp_path / "mixed.parquet"), spec, client=dask_client)
    pq.write_table(table, tmp_path / "plain.parquet", write_statistics=False)
    with pytest.raises(CalibrationInputError, match="its model column 'model' has no statistics"):
        dataset_groups(str(tmp_path / "plain.parquet"), spec, client=dask_client)
    found = dataset_groups(
        str(tmp_path / "mixed.parquet"), GroupSpec(window="1d"), client=dask_client
    )
    assert list(found) == ["a", "b"]  # calendar windows need no numbers


def test_row_windows_take_window_numbers_only(dataset):
    _, memory = dataset
    _, windows = time_windows(memory, "500rows")
    with pytest.raises(CalibrationInputError) as want:
        drift_report(memory, windows, reference="2024-01-01:2024-01-10", n_resamples=0)
    with pytest.raises(CalibrationInputError) as got:
        GroupSpec(window="500rows", reference=parse_reference("2024-01-01:2024-01-10"))
    assert str(got.value) == str(want.value)
    assert "the windows are rows" in str(got.value)


def _evaluate(capsys, *args) -> dict:
    assert main(["evaluate", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_bounds_are_the_reports_on_the_sample(dask_client, dataset, capsys):
    pattern, memory = dataset
    args = [pattern, "--engine", "dask", "--scheduler", dask_client.scheduler.address,
            "--group-by", "region", "--window", "1w", "--reference", "1:2", "--sample-rows",
            "1500", "--seed", "3", "--slice-resamples", "50"]  # fmt: skip
    doc = _evaluate(capsys, *args)
    assert doc == _evaluate(capsys, *args)  # same seed, same document
    assert doc["settings"]["group_by"] == "region" and doc["settings"]["sample_rows"] == 1500
    model = doc["models"][0]
    sample, info = sample_predictions(pattern, size=1500, seed=3, client=dask_client,
                                      columns=("region", "timestamp"))  # fmt: skip
    on = {"rows": info.rows, "seed": 3, "of": 5000}
    # slices: exact estimates (as the in-memory document), the sample's bounds and test
    s = model["slices"]
    assert s["evaluated_on"] == "all rows" and s["intervals_evaluated_on"] == on
    drawn = slice_report(sample, group_index(sample, ["region"]), n_resamples=50,
                         seed=3).to_dict()  # fmt: skip
    memory_doc = slice_report(memory, group_index(memory, ["region"]), n_resamples=0).to_dict()
    assert [g["group"] for g in s["groups"]] == [g["group"] for g in memory_doc["groups"]]
    for got, want, bounds in zip(s["groups"], memory_doc["groups"], drawn["groups"], strict=True):
        assert got["rows"] == want["rows"] and got["sample_rows"] == bounds["rows"]
        for name in GROUP_METRICS:
            assert got[name] == pytest.approx(want[name], abs=TOL)
            assert got[f"{name}_lower"] == bounds[f"{name}_lower"]
            assert got[f"{name}_upper"] == bounds[f"{name}_upper"]
    assert s["homogeneity"] == {**drawn["homogeneity"], "evaluated_on": on}
    assert s["worst"] == memory_doc["worst"]
    # time: exact windows, the sample's bounds and flags
    t = model["time"]
    assert t["time_column"] == "timestamp" and t["reference_windows"] == 2
    windows = sample_windows(sample, "timestamp", "1w")
    drift = drift_report(sample, windows, reference="1:2", n_resamples=50, seed=3).to_dict()
    by_window = {w["window"]: w for w in drift["windows"]}
    for row in t["windows"]:
        bounds = by_window[row["window"]]
        assert row["ece_lower"] == bounds["ece_lower"] and row["ece_upper"] == bounds["ece_upper"]
        assert row["flagged"] == (bounds["flagged"] and not row["reference"])
    assert t["reference"]["ece_upper"] == drift["reference"]["ece_upper"]


def test_cli_row_windows_match_the_memory_engine(dask_client, dataset, capsys):
    pattern, _ = dataset
    whole = _whole(pattern)
    common = ["--window", "1100rows", "--reference", "1:2", "--seed", "3",
              "--slice-resamples", "40"]  # fmt: skip
    doc = _evaluate(capsys, pattern, "--engine", "dask", "--scheduler",
                    dask_client.scheduler.address, "--sample-rows", "1500", *common)  # fmt: skip
    t = _evaluate(capsys, whole, "--maps", "temperature", *common)["models"][0]["time"]
    got = doc["models"][0]["time"]
    assert got["time_column"] == t["time_column"] == "timestamp"
    assert got["reference_windows"] == t["reference_windows"] == 2
    assert [w["window"] for w in got["windows"]] == [w["window"] for w in t["windows"]]
    assert t["windows"][-1]["window"] == "rows 4401-5000"
    for a, b in zip([got["reference"], *got["windows"]], [t["reference"], *t["windows"]],
                    strict=True):  # fmt: skip
        assert a["rows"] == b["rows"]
        for name in GROUP_METRICS:
            assert a[name] == pytest.approx(b[name], abs=TOL)
    sample, info, numbers = draw_sample(pattern, size=1500, seed=3, client=dask_client,
                                        row_numbers=True)  # fmt: skip
    assert got["intervals_evaluated_on"] == {"rows": info.rows, "seed": 3, "of": 5000}
    windows = sample_windows(sample, None, "1100rows", numbers, 5000)
    drift = drift_report(sample, windows, reference="1:2", n_resamples=40, seed=3).to_dict()
    assert [w["window"] for w in drift["windows"]] == [w["window"] for w in got["windows"]]
    for row, bounds in zip(got["windows"], drift["windows"], strict=True):
        assert row["sample_rows"] == bounds["rows"] > 0
        assert row["ece_lower"] == bounds["ece_lower"] and row["ece_upper"] == bounds["ece_upper"]
        assert row["flagged"] == (bounds["flagged"] and not row["reference"])
    assert got["reference"]["ece_upper"] == drift["reference"]["ece_upper"]


def test_cli_frequency_bins_of_groups_and_windows(dask_client, dataset, capsys):
    pattern, memory = dataset
    address = dask_client.scheduler.address
    doc = _evaluate(capsys, pattern, "--engine", "dask", "--scheduler", address,
                    "--scheme", "frequency", "--bins", "8", "--group-by", "region", "--window",
                    "1w", "--reference", "1:2", "--sample-rows", "1500", "--seed", "3",
                    "--slice-resamples", "30")  # fmt: skip
    assert doc["settings"]["scheme"] == "frequency"
    model, binning = doc["models"][0], Binning("frequency", 8)
    sample, _ = sample_predictions(pattern, size=1500, seed=3, client=dask_client,
                                   columns=("region", "timestamp"))  # fmt: skip
    # slices: exact estimates of every group's own edges; bounds of the sample's report
    want = slice_report(memory, group_index(memory, ["region"]), binning=binning,
                        n_resamples=0).to_dict()  # fmt: skip
    drawn = slice_report(sample, group_index(sample, ["region"]), binning=binning,
                         n_resamples=30, seed=3).to_dict()  # fmt: skip
    s = model["slices"]
    for got, exact, bounds in zip(s["groups"], want["groups"], drawn["groups"], strict=True):
        assert got["group"] == exact["group"] and got["rows"] == exact["rows"]
        for name in GROUP_METRICS:
            assert got[name] == pytest.approx(exact[name], abs=TOL)
            assert got[f"{name}_lower"] == bounds[f"{name}_lower"]
    assert s["whole"]["ece"] == pytest.approx(want["whole"]["ece"], abs=TOL)
    assert s["homogeneity"]["p_value"] == drawn["homogeneity"]["p_value"]
    # time: every window and the reference period binned by their own edges
    _, windows = time_windows(memory, "1w")
    exact = drift_report(memory, windows, reference="1:2", binning=binning,
                         n_resamples=0).to_dict()  # fmt: skip
    t = model["time"]
    for got, want_row in zip(t["windows"], exact["windows"], strict=True):
        assert got["window"] == want_row["window"]
        assert got["ece"] == pytest.approx(want_row["ece"], abs=TOL)
    assert t["reference"]["ece"] == pytest.approx(exact["reference"]["ece"], abs=TOL)
    windows = sample_windows(sample, "timestamp", "1w")
    drift = drift_report(sample, windows, reference="1:2", binning=binning, n_resamples=30,
                         seed=3).to_dict()  # fmt: skip
    assert t["reference"]["ece_upper"] == drift["reference"]["ece_upper"]


def test_cli_group_maps_are_the_in_memory_group_maps_on_the_sample(dask_client, dataset, capsys):
    pattern, _ = dataset
    args = [pattern, "--engine", "dask", "--scheduler", dask_client.scheduler.address, "--group-by",
            "region", "--group-maps", "temperature,isotonic", "--min-group-rows", "480",
            "--sample-rows", "2000", "--seed", "4", "--folds", "3", "--bins", "10",
            "--slice-resamples", "0"]  # fmt: skip
    doc = _evaluate(capsys, *args)
    sample, info = sample_predictions(pattern, size=2000, seed=4, client=dask_client,
                                      columns=("region",))  # fmt: skip
    index = group_index(sample, ["region"], min_rows=480)  # east: 473 rows, small
    want = group_maps(sample, index, ("temperature", "isotonic"), folds=3, seed=4,
                      binning=Binning("width", 10))  # fmt: skip
    on = {"rows": info.rows, "seed": 4, "of": 5000}
    got = doc["models"][0]["group_maps"]
    assert got == [{**row, "evaluated_on": on} for row in want.table]
    assert {row["map"] for row in got} == {"temperature", "isotonic"}
    assert any(row["small"] for row in got) and any(row["better"] for row in got)
    assert main(["evaluate", *args]) == 0  # the table says where the maps were compared
    out = capsys.readouterr().out
    assert "temperature on region=north: held-out ECE global" in out
    assert f"group maps fitted, held out and scored on a uniform sample of {info.rows:,}" in out
    code = main(["evaluate", *args[:7], "--group-maps", "nosuch"])
    assert code == 1
    assert "unknown calibration map 'nosuch'" in capsys.readouterr().err


def test_cli_table_output(dask_client, dataset, capsys):
    pattern, _ = dataset
    args = ["evaluate", pattern, "--engine", "dask", "--scheduler", dask_client.scheduler.address,
            "--group-by", "region", "--sample-rows", "500", "--slice-resamples", "0"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"{NAME}: per group of region" in out and "region=north" in out


def test_too_many_groups_are_refused_as_in_memory(dask_client, tmp_path):
    table = _table(2400, 2, 1)
    ids = np.arange(2400) % 1200  # 1,200 values: no piece of 500 rows holds over 1,000
    pq.write_table(table.append_column("user", pa.array(ids)), tmp_path / "u.parquet",
                   row_group_size=500)  # fmt: skip
    spec = GroupSpec(columns=("user",))
    found = dataset_groups(str(tmp_path / "u.parquet"), spec, client=dask_client)
    with pytest.raises(CalibrationInputError, match="grouping by user gives 1,200 groups, more "
                       "than the 1,000"):  # fmt: skip
        exact_groups(found["u"], spec)
    with pytest.raises(CalibrationInputError, match="gives 1,200 groups"):  # before any pass
        group_frequency_bins(str(tmp_path / "u.parquet"), spec, found, client=dask_client)
    ids = np.arange(2400)  # a batch with 2,000 values is refused at once, with its rows
    pq.write_table(table.append_column("user", pa.array(ids)), tmp_path / "v.parquet",
                   row_group_size=2000)  # fmt: skip
    with pytest.raises(CalibrationInputError, match=r"'.*v.parquet' rows 1-2,000 \(row group 0\)"
                       ": grouping by user gives 2,000 groups"):  # fmt: skip
        dataset_groups(str(tmp_path / "v.parquet"), spec, client=dask_client)


@pytest.mark.parametrize("window", ["1d", "500rows"])  # rows: checked as in memory, not used
def test_bad_times_are_named_by_file_and_rows(dask_client, tmp_path, window):
    table = _table(1200, 2, 2)
    stamps = np.array([f"2024-01-{1 + i % 28:02d}" for i in range(1200)], dtype=object)
    stamps[[850, 1101]] = "soon"
    table = table.drop_columns(["timestamp"]).append_column("timestamp", pa.array(stamps))
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=800)
    spec = GroupSpec(window=window, reference=parse_reference(1))
    with pytest.raises(CalibrationInputError) as err:
        dataset_groups(str(tmp_path / "t.parquet"), spec, client=dask_client)
    memory = load_predictions(tmp_path / "t.parquet")[0]
    with pytest.raises(CalibrationInputError, match="has values that are not times"):
        time_windows(memory, window)
    message = str(err.value)
    assert "rows 801-1,200 (row group 1)" in message
    assert "'soon'" in message and "rows 851, 1102" in message


def test_cli_refusals(dataset, tmp_path, capsys):
    pattern, _ = dataset
    mixed = _table(300, 2, 6).append_column("model", pa.array(["a", "b"] * 150))
    pq.write_table(mixed, tmp_path / "mixed.parquet")
    code = main(["evaluate", str(tmp_path / "mixed.parquet"), "--engine", "dask",
                 "--scheduler", "tcp://127.0.0.1:9", "--window", "100rows"])  # fmt: skip
    assert code == 1  # refused from the footers, before the (unreachable) scheduler is asked
    assert "holds rows of several models" in capsys.readouterr().err
    code = main(["evaluate", pattern, "--engine", "dask", "--window", "100rows", "--reference",
                 "2024-01-01:2024-01-31"])  # fmt: skip
    assert code == 1
    assert "is in dates, but the windows are rows" in capsys.readouterr().err
    code = main(["evaluate", pattern, "--engine", "dask", "--window", "1d", "--time-column",
                 "when", "--workers", "1"])  # fmt: skip
    assert code == 1
    assert "there is no time column 'when'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("window", "row_group", "message"),
    [
        # either row group may be read first on the cluster: both span 1,200 windows
        (
            "1rows",
            1200,
            r"rows [0-9,]+-[0-9,]+ \(row group [01]\): a window of '1rows' gives 1,200 windows",
        ),
        ("2rows", 600, r"a window of '2rows' gives 1,200 windows.*at least 3rows"),
        ("1d", 600, r"a window of '1d' gives 1,200 windows.*1w or 1m"),
    ],
)
def test_too_many_windows_are_refused_as_in_memory(dask_client, tmp_path, window, row_group,
                                                    message):  # fmt: skip
    table = _table(2400, 2, 1).drop_columns(["timestamp"])
    days = np.datetime64("2024-01-01T00:00:00") + (np.arange(2400) // 2).astype("timedelta64[D]")
    table = table.append_column("timestamp", pa.array(days))  # 1,200 days, 600 per row group
    pq.write_table(table, tmp_path / "w.parquet", row_group_size=row_group)
    spec = GroupSpec(window=window)
    with pytest.raises(CalibrationInputError, match=message):
        found = dataset_groups(str(tmp_path / "w.parquet"), spec, client=dask_client)
        exact_groups(found["w"], spec)
    memory = load_predictions(tmp_path / "w.parquet")[0]
    rows = "2,400" if window == "1rows" else "1,200"
    with pytest.raises(CalibrationInputError, match=f"a window of '{window}' gives {rows} windows"):
        time_windows(memory, window)


def _timed_file(path: Path, stamps, seed: int) -> None:
    table = _table(len(stamps), 2, seed).drop_columns(["timestamp"])
    pq.write_table(table.append_column("timestamp", stamps), path)


def _clock(n: int) -> np.ndarray:
    return np.datetime64("2024-01-01T00:00:00") + (np.arange(n) * 3600).astype("timedelta64[s]")


@pytest.mark.parametrize("kind", ["text", "parquet"])
@pytest.mark.parametrize("engine", ["stream", "dask"])
def test_zoned_and_naive_time_files_of_one_dataset_are_refused(tmp_path, request, kind, engine):
    """Each file alone is fine; together they mix known and unknown zones: refused, both named.

    In this process (the stream engine) and on the cluster."""
    where = (
        {"passes": InProcessPasses()}
        if engine == "stream"
        else {"client": request.getfixturevalue("dask_client")}
    )
    naive, zoned = _clock(300), _clock(300) + np.timedelta64(300, "h")
    if kind == "text":
        naive_col = pa.array(np.datetime_as_string(naive))
        zoned_col = pa.array([f"{t}+02:00" for t in np.datetime_as_string(zoned)])
    else:
        naive_col = pa.array(naive, type=pa.timestamp("s"))
        zoned_col = pa.array(zoned, type=pa.timestamp("s", tz="UTC"))
    _timed_file(tmp_path / "a.parquet", naive_col, 1)
    _timed_file(tmp_path / "b.parquet", zoned_col, 2)
    spec = GroupSpec(window="1d")
    for alone in ("a", "b"):  # one file alone is accepted
        dataset_groups(str(tmp_path / f"{alone}.parquet"), spec, **where)
    refusal = r"'timestamp' has times with a zone in .*b\.parquet.* and times without one in .*a\."
    with pytest.raises(CalibrationInputError, match=refusal):
        dataset_groups(str(tmp_path / "*.parquet"), spec, **where)


def test_times_of_several_zones_in_a_dataset_give_a_notice(tmp_path):
    stamps = np.datetime_as_string(_clock(300))
    _timed_file(tmp_path / "a.parquet", pa.array([f"{t}Z" for t in stamps]), 1)
    _timed_file(tmp_path / "b.parquet", pa.array([f"{t}-05:00" for t in stamps]), 2)
    with pytest.warns(TimeZonesWarning, match=r"time column 'timestamp': times in 2 time zones "
                      r"\(-05:00, Z\) were converted to UTC"):  # fmt: skip
        dataset_groups(
            str(tmp_path / "*.parquet"), GroupSpec(window="1d"), passes=InProcessPasses()
        )
