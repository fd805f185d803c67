"""``evaluate --engine stream`` (app.cli.stream): the Dask engine's document, without Dask.

The JSON of the streaming engine equals the Dask engine's on the same Parquet
files, field by field (numbers within 1e-12 relative), except ``settings.engine``;
it is the default for a folder or a glob, refuses what needs rows in memory, and
its process never imports Dask.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from app.cli import main

#: The kernel is compiled by Numba, the Dask document by a cluster: the ``dask`` tier.
pytestmark = pytest.mark.usefixtures("dask_extra")

RTOL = 1e-12


@pytest.fixture
def logs(tmp_path):
    """Three files of two models (a ``model`` column), 10 classes, row groups of 400."""
    rng = np.random.default_rng(30)
    folder = tmp_path / "logs"
    folder.mkdir()
    for f in range(3):
        n, k = 1200, 10
        logits = rng.normal(size=(n, k)) * 2
        p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        y = rng.integers(0, k, n)
        cols = {f"p_{j}": p[:, j] for j in range(k)}
        models = np.where(np.arange(n) < n // 2, "a", "b")
        table = pa.table({**cols, "label": y, "model": models})
        pq.write_table(table, folder / f"part-{f}.parquet", row_group_size=400)
    return folder


def _evaluate(capsys, *args) -> dict:
    assert main(["evaluate", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _assert_equal_documents(a, b) -> None:
    """Equal JSON values, floats within :data:`RTOL` relative."""
    if isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _assert_equal_documents(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_equal_documents(x, y)
    elif isinstance(a, float):
        assert abs(a - b) <= RTOL * max(abs(a), abs(b), 1e-300), (a, b)
    else:
        assert a == b


@pytest.mark.parametrize("scheme", ["width", "frequency"])
def test_stream_document_equals_the_dask_one(dask_client, logs, capsys, scheme):
    options = [str(logs / "*.parquet"), "--bins", "12", "--scheme", scheme]
    streamed = _evaluate(capsys, *options, "--engine", "stream")
    address = dask_client.scheduler.address
    on_dask = _evaluate(capsys, *options, "--engine", "dask", "--scheduler", address)
    assert streamed["settings"].pop("engine") == "stream"
    assert on_dask["settings"].pop("engine") == "dask"
    _assert_equal_documents(streamed, on_dask)
    assert [m["model"] for m in streamed["models"]] == ["a", "b"]
    assert streamed["models"][0]["n_samples"] == 1800


def test_stream_is_the_default_for_a_folder_or_a_glob_only(logs, capsys):
    folder = _evaluate(capsys, str(logs))
    assert folder["settings"]["engine"] == "stream"
    pattern = _evaluate(capsys, str(logs / "part-*.parquet"))
    assert (pattern.pop("file"), folder.pop("file")) == (str(logs / "part-*.parquet"), str(logs))
    assert pattern == folder
    one_file = _evaluate(capsys, str(logs / "part-0.parquet"), "--maps", "temperature")
    assert "engine" not in one_file["settings"]  # in memory: maps cross-fitted on all rows
    assert main(["evaluate", str(logs)]) == 0
    assert "metrics streamed in this process" in capsys.readouterr().out


def test_stream_refuses_what_needs_rows_in_memory(logs, capsys):
    for option in (["--maps", "temperature"], ["--measures"]):
        assert main(["evaluate", str(logs), *option]) == 1
        err = capsys.readouterr().err
        assert f"{option[0]}: the streaming engine computes" in err and "--engine dask" in err
    assert main(["evaluate", str(logs), "--bins", "101"]) == 1
    assert "the streaming engine answers equal-width bin counts up to 100" in (
        capsys.readouterr().err
    )
    assert main(["evaluate", str(logs), "--workers", "2"]) == 1
    assert "need --engine dask" in capsys.readouterr().err
    assert main(["evaluate", str(logs), "--sample-rows", "100"]) == 1
    assert "--sample-rows needs --engine dask (or --engine stream with" in (capsys.readouterr().err)


def test_evaluate_on_the_stream_engine_does_not_import_dask(logs):
    code = (
        "import sys\n"
        "from app.cli import main\n"
        f"args = [{str(logs)!r}, '--scheme', 'frequency', '--format', 'json']\n"
        "assert main(['evaluate', *args]) == 0\n"
        "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules), file=sys.stderr)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True)  # fmt: skip
    assert found.stderr.strip().splitlines()[-1] == "[]"
    assert json.loads(found.stdout)["settings"]["engine"] == "stream"


@pytest.fixture
def timed_logs(logs):
    """The files of :func:`logs` with a ``region`` and a ``time`` column, row groups of 300."""
    rng = np.random.default_rng(31)
    for path in sorted(logs.glob("*.parquet")):
        table = pq.read_table(path)
        n = table.num_rows
        region = rng.choice(["north", "south", "east"], n)
        days = rng.integers(0, 4, n).astype("timedelta64[D]") + np.datetime64("2024-03-01")
        table = table.append_column("region", pa.array(region))
        table = table.append_column("time", pa.array(days.astype("datetime64[s]")))
        pq.write_table(table, path, row_group_size=300)  # one model per row group
    return logs


@pytest.mark.parametrize(
    "option",
    [
        ["--group-by", "region", "--group-maps", "temperature"],
        ["--group-by", "region", "--scheme", "frequency"],
        ["--window", "1d"],
        ["--window", "500rows", "--scheme", "frequency"],
    ],
)
def test_stream_groups_and_windows_equal_the_dask_ones(dask_client, timed_logs, capsys, option):
    options = [str(timed_logs), "--bins", "8", "--sample-rows", "900", *option]
    streamed = _evaluate(capsys, *options, "--engine", "stream")
    address = dask_client.scheduler.address
    on_dask = _evaluate(capsys, *options, "--engine", "dask", "--scheduler", address)
    assert streamed["settings"].pop("engine") == "stream"
    assert on_dask["settings"].pop("engine") == "dask"
    _assert_equal_documents(streamed, on_dask)
    key = "slices" if option[0] == "--group-by" else "time"
    assert all(key in m for m in streamed["models"])
    assert streamed["settings"]["sample_rows"] == 900


def test_stream_groups_do_not_import_dask(timed_logs):
    code = (
        "import sys\n"
        "from app.cli import main\n"
        f"args = [{str(timed_logs)!r}, '--group-by', 'region', '--scheme', 'frequency', "
        "'--format', 'json']\n"
        "assert main(['evaluate', *args]) == 0\n"
        "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules), file=sys.stderr)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True)  # fmt: skip
    assert found.stderr.strip().splitlines()[-1] == "[]"
    doc = json.loads(found.stdout)
    assert doc["settings"]["engine"] == "stream"
    groups = [g["group"] for g in doc["models"][0]["slices"]["groups"]]
    assert groups == ["region=east", "region=north", "region=south"]
