"""Groups and time windows of a dataset on Dask against the in-memory slices.

The point estimates of every group and window (rows, accuracy, confidence,
ECE, MCE, Brier score, log-loss) are exact: equal to ``slice_report`` and
``drift_report`` on the same rows to 1e-12. Bounds, the homogeneity test and
the drift flags are those reports' on the recorded uniform sample. The
in-memory guards hold: small groups flagged, more than 1,000 groups refused,
values that are not times named by file and rows.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("dask.dataframe", reason="the 'dask' extra is not installed")
distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")

from app.cli import main  # noqa: E402
from calibration_core import CalibrationInputError, load_predictions  # noqa: E402
from calibration_core.binning import Binning  # noqa: E402
from calibration_core.distributed import sample_predictions  # noqa: E402
from calibration_core.distributed.engine import local_cluster  # noqa: E402
from calibration_core.distributed.group_bins import group_frequency_bins  # noqa: E402
from calibration_core.distributed.slices import (  # noqa: E402
    GroupSpec,
    dataset_groups,
    exact_groups,
    sample_windows,
)
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


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 worker processes (1 thread each) and its client."""
    cluster = local_cluster(2, dashboard_address=None, silence_logs=40)
    with cluster, distributed.Client(cluster) as c:
        yield c


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


def _assert_metrics(got: dict, want: dict) -> None:
    for name in GROUP_METRICS:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=TOL, err_msg=name)


@pytest.mark.parametrize(("columns", "min_rows"), [(("region",), 1250), (("region", "tier"), 100)])
def test_group_estimates_equal_slice_report(client, dataset, columns, min_rows):
    pattern, memory = dataset
    spec = GroupSpec(columns=columns, n_bins=10)
    exact = exact_groups(dataset_groups(pattern, spec, client=client)[NAME], spec, min_rows)
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
def test_window_estimates_equal_drift_report(client, dataset, window, reference):
    pattern, memory = dataset
    period = parse_reference(reference)
    spec = GroupSpec(window=window, reference=period)
    exact = exact_groups(dataset_groups(pattern, spec, client=client)[NAME], spec)
    _, windows = time_windows(memory, window)
    want = drift_report(memory, windows, reference=reference, n_resamples=0)
    assert exact.labels == want.windows.groups.labels
    np.testing.assert_array_equal(exact.sizes, want.windows.groups.sizes)
    np.testing.assert_array_equal(exact.in_reference, want.in_reference)
    assert exact.reference_rows == want.reference.groups.sizes[0]
    _assert_metrics(exact.metrics, want.windows.metrics)
    _assert_metrics({k: [v] for k, v in exact.reference.items()}, want.reference.metrics)


def _frequency_groups(client, pattern, spec, min_rows=100):
    found = dataset_groups(pattern, spec, client=client)
    bins = group_frequency_bins(pattern, spec, found, min_rows=min_rows, client=client)
    return exact_groups(found[NAME], spec, min_rows, bins[NAME]), bins[NAME]


@pytest.mark.parametrize(("columns", "n_bins"), [(("region",), 10), (("region", "tier"), 7)])
def test_group_frequency_estimates_equal_slice_report(client, dataset, columns, n_bins):
    pattern, memory = dataset
    spec = GroupSpec(columns=columns, n_bins=n_bins)
    exact, bins = _frequency_groups(client, pattern, spec)
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
    width = exact_groups(dataset_groups(pattern, spec, client=client)[NAME], spec)
    assert not np.allclose(width.metrics["ece"], exact.metrics["ece"])  # not the width bins


@pytest.mark.parametrize(("window", "reference"), [("1w", "2024-01-10:2024-02-03"), ("1w", "2:3")])
def test_window_frequency_estimates_equal_drift_report(client, dataset, window, reference):
    pattern, memory = dataset
    spec = GroupSpec(window=window, reference=parse_reference(reference), n_bins=8)
    exact, _ = _frequency_groups(client, pattern, spec)
    _, windows = time_windows(memory, window)
    want = drift_report(memory, windows, reference=reference, n_resamples=0,
                        binning=Binning("frequency", 8))  # fmt: skip
    assert exact.labels == want.windows.groups.labels
    np.testing.assert_array_equal(exact.in_reference, want.in_reference)
    assert exact.reference_rows == want.reference.groups.sizes[0]
    _assert_metrics(exact.metrics, want.windows.metrics)
    _assert_metrics({k: [v] for k, v in exact.reference.items()}, want.reference.metrics)


def _evaluate(capsys, *args) -> dict:
    assert main(["evaluate", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_bounds_are_the_reports_on_the_sample(client, dataset, capsys):
    pattern, memory = dataset
    args = [pattern, "--engine", "dask", "--scheduler", client.scheduler.address,
            "--group-by", "region", "--window", "1w", "--reference", "1:2", "--sample-rows",
            "1500", "--seed", "3", "--slice-resamples", "50"]  # fmt: skip
    doc = _evaluate(capsys, *args)
    assert doc == _evaluate(capsys, *args)  # same seed, same document
    assert doc["settings"]["group_by"] == "region" and doc["settings"]["sample_rows"] == 1500
    model = doc["models"][0]
    sample, info = sample_predictions(pattern, size=1500, seed=3, client=client,
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


def test_cli_frequency_bins_of_groups_and_windows(client, dataset, capsys):
    pattern, memory = dataset
    doc = _evaluate(capsys, pattern, "--engine", "dask", "--scheduler", client.scheduler.address,
                    "--scheme", "frequency", "--bins", "8", "--group-by", "region", "--window",
                    "1w", "--reference", "1:2", "--sample-rows", "1500", "--seed", "3",
                    "--slice-resamples", "30")  # fmt: skip
    assert doc["settings"]["scheme"] == "frequency"
    model, binning = doc["models"][0], Binning("frequency", 8)
    sample, _ = sample_predictions(pattern, size=1500, seed=3, client=client,
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


def test_cli_group_maps_are_the_in_memory_group_maps_on_the_sample(client, dataset, capsys):
    pattern, _ = dataset
    args = [pattern, "--engine", "dask", "--scheduler", client.scheduler.address, "--group-by",
            "region", "--group-maps", "temperature,isotonic", "--min-group-rows", "480",
            "--sample-rows", "2000", "--seed", "4", "--folds", "3", "--bins", "10",
            "--slice-resamples", "0"]  # fmt: skip
    doc = _evaluate(capsys, *args)
    sample, info = sample_predictions(pattern, size=2000, seed=4, client=client,
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


def test_cli_table_output(client, dataset, capsys):
    pattern, _ = dataset
    args = ["evaluate", pattern, "--engine", "dask", "--scheduler", client.scheduler.address,
            "--group-by", "region", "--sample-rows", "500", "--slice-resamples", "0"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"{NAME}: per group of region" in out and "region=north" in out


def test_too_many_groups_are_refused_as_in_memory(client, tmp_path):
    table = _table(2400, 2, 1)
    ids = np.arange(2400) % 1200  # 1,200 values: no piece of 500 rows holds over 1,000
    pq.write_table(table.append_column("user", pa.array(ids)), tmp_path / "u.parquet",
                   row_group_size=500)  # fmt: skip
    spec = GroupSpec(columns=("user",))
    found = dataset_groups(str(tmp_path / "u.parquet"), spec, client=client)
    with pytest.raises(CalibrationInputError, match="grouping by user gives 1,200 groups, more "
                       "than the 1,000"):  # fmt: skip
        exact_groups(found["u"], spec)
    with pytest.raises(CalibrationInputError, match="gives 1,200 groups"):  # before any pass
        group_frequency_bins(str(tmp_path / "u.parquet"), spec, found, client=client)
    ids = np.arange(2400)  # a batch with 2,000 values is refused at once, with its rows
    pq.write_table(table.append_column("user", pa.array(ids)), tmp_path / "v.parquet",
                   row_group_size=2000)  # fmt: skip
    with pytest.raises(CalibrationInputError, match=r"'.*v.parquet' rows 1-2,000 \(row group 0\)"
                       ": grouping by user gives 2,000 groups"):  # fmt: skip
        dataset_groups(str(tmp_path / "v.parquet"), spec, client=client)


def test_bad_times_are_named_by_file_and_rows(client, tmp_path):
    table = _table(1200, 2, 2)
    stamps = np.array([f"2024-01-{1 + i % 28:02d}" for i in range(1200)], dtype=object)
    stamps[[850, 1101]] = "soon"
    table = table.drop_columns(["timestamp"]).append_column("timestamp", pa.array(stamps))
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=800)
    spec = GroupSpec(window="1d", reference=parse_reference(1))
    with pytest.raises(CalibrationInputError) as err:
        dataset_groups(str(tmp_path / "t.parquet"), spec, client=client)
    message = str(err.value)
    assert "rows 801-1,200 (row group 1)" in message
    assert "'soon'" in message and "rows 851, 1102" in message


def test_cli_refusals(dataset, capsys):
    pattern, _ = dataset
    code = main(["evaluate", pattern, "--engine", "dask", "--window", "100rows"])
    assert code == 1
    assert "windows of rows are not supported with --engine dask" in capsys.readouterr().err
    code = main(["evaluate", pattern, "--engine", "dask", "--window", "1d", "--time-column",
                 "when", "--workers", "1"])  # fmt: skip
    assert code == 1
    assert "there is no time column 'when'" in capsys.readouterr().err
