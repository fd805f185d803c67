"""The compiled per-block summary (calibration_core.distributed.kernel) against NumPy.

Every cell equals ``np.searchsorted(CELL_THRESHOLDS, v, side="right")`` (on the
thresholds themselves, their float neighbours, 0 and 1), the divided values are
the loader's bit for bit, and a block's statistics equal those of the in-memory
core on the loader's predictions, and so do the Brier and log-loss parts
(``ModelSummary.score_parts``). The table path (``SummaryBuilder.add_table``)
reports bad rows with the loader's own messages, in the loader's order. No cluster.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("numba", reason="the 'dask' extra is not installed")

from calibration_core import (
    PART_FIELDS,
    CalibrationInputError,
    Predictions,
    RenormalisedRowsWarning,
    score_parts,
)
from calibration_core.distributed import kernel
from calibration_core.distributed.cells import CELL_THRESHOLDS, N_CELLS
from calibration_core.distributed.kernel import (
    BlockTotals,
    cell_index,
    njit_cached,
    summarize_block,
)
from calibration_core.distributed.pieces import ReadOptions, table_predictions
from calibration_core.distributed.summary import ModelSummary, SummaryBuilder
from calibration_core.io.checks import Context, exact_tolerance
from calibration_core.io.tables import index_labels, table_columns, table_labels

from .distributed_checks import TOL, assert_summary_equals_core

#: The Numba kernel: compiled on first use, in the ``dask`` tier.
pytestmark = pytest.mark.usefixtures("dask_extra")

BIN_COUNTS = (1, 2, 10, 15, 100)
CTX = Context("'block.parquet'", "table", 0)


def _edges() -> np.ndarray:
    """Every threshold, its float64 neighbours on both sides, 0, 1 and values above 1."""
    t = CELL_THRESHOLDS
    grid = np.arange(1 << 16 + 1, dtype=np.float64) / (1 << 16)
    return np.concatenate(
        [t, np.nextafter(t, 0), np.nextafter(t, 2), grid, [0.0, 5e-324, 1.0, 1.5, 1e300]]
    )


def test_cell_index_equals_searchsorted_on_every_edge():
    values = _edges()
    np.testing.assert_array_equal(
        cell_index(values), np.searchsorted(CELL_THRESHOLDS, values, side="right")
    )
    low = values[values <= 1].astype(np.float32)  # float32 values, compared as float64
    np.testing.assert_array_equal(
        cell_index(low), np.searchsorted(CELL_THRESHOLDS, low.astype(np.float64), side="right")
    )
    assert cell_index(np.array([1.0]))[0] == N_CELLS - 1


def _rows(rng, n: int, k: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Softmax rows as stored (float32 rows do not sum to 1 in float64), with ties,
    exact zeros, thresholds and rows off by more than the exact tolerance."""
    logits = rng.normal(size=(n, k)) * 3
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[0] = 1.0 / k  # a tie across every column
    p[1, :2], p[1, 2:] = 0.5, 0.0  # a tie of the first two, zeros
    p[2] = 0.0
    p[2, -1] = 1.0  # the top cell, a true-class probability of 0 (clipped log-loss)
    p[3, :2] = CELL_THRESHOLDS[[100, 2000]] / (1 if k > 2 else 2)  # values on thresholds
    p[3, 2:] = (1 - p[3, :2].sum()) / max(k - 2, 1)
    p[4:50] *= 1.00005  # off by 5e-5: divided, as rounded exports are
    y = rng.integers(0, k, n)
    y[2] = 0
    return p.astype(dtype), y


def _loader_values(stored: np.ndarray) -> np.ndarray:
    """What the loader makes of stored rows: float64, rows off by more than the exact
    tolerance divided by their float64 sums (accumulated left to right)."""
    sums = np.zeros(stored.shape[0])
    for j in range(stored.shape[1]):
        sums += stored[:, j]
    dev = np.abs(sums - 1.0)
    scale = np.where(dev > exact_tolerance(stored.shape[1]), sums, 1.0)
    return np.divide(stored, scale[:, None], dtype=np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 3, 10])
def test_a_block_equals_the_core_on_the_loader_values(dtype, k):
    rng = np.random.default_rng(k)
    stored, labels = _rows(rng, 3000, k, dtype)
    totals = BlockTotals(k)
    check = summarize_block(np.stack(list(stored.T)), labels, exact_tolerance(k), totals)
    assert check.bad == 0 and totals.rows == 3000
    assert check.largest == float(stored.max())
    assert check.deviation > 4e-5  # the rows off by 5e-5
    probs = _loader_values(stored)
    summary = ModelSummary.of_totals("m", [str(j) for j in range(k)], totals)
    assert_summary_equals_core(summary, probs, labels, BIN_COUNTS)
    # Bit for bit: every divided value lands in the cell of the loader's value.
    classwise = summary.classwise.count
    want = np.stack([np.bincount(cell_index(probs[:, j]), minlength=N_CELLS) for j in range(k)])
    np.testing.assert_array_equal(classwise, want)


def test_blocks_add_up_and_predictions_are_never_divided_again():
    rng = np.random.default_rng(3)
    stored, labels = _rows(rng, 5000, 4, np.float32)
    probs = _loader_values(stored)
    totals = BlockTotals(4)
    for start in range(0, 5000, 1024):  # blocks of a (n, K) matrix, transposed
        block = probs[start : start + 1024]
        summarize_block(block.T, labels[start : start + 1024], np.inf, totals)
    by_blocks = ModelSummary.of_totals("m", list("abcd"), totals)
    assert_summary_equals_core(by_blocks, probs, labels, BIN_COUNTS)
    assert by_blocks.hits == int(np.count_nonzero(probs.argmax(axis=1) == labels))


def _tie_after_division() -> np.ndarray:
    """A float64 row (unnormalised scores) whose two largest values are one ulp apart
    as stored and equal once the row is divided by its sum (about 2.1)."""
    for a in np.linspace(0.9, 0.95, 5000):
        row = np.array([[a, np.nextafter(a, 1), 0.3]])
        p = _loader_values(row)
        if p[0, 0] == p[0, 1]:
            return row
    raise AssertionError("no such row found")


def test_argmax_ties_after_division_go_to_the_first_column():
    row = _tie_after_division()
    assert row[0, 1] > row[0, 0] and _loader_values(row).argmax() == 0
    for label, hits in ((0, 1), (1, 0)):
        totals = BlockTotals(3)
        summarize_block(row.T.copy(), np.array([label]), exact_tolerance(3), totals)
        assert totals.hits == hits


def _damaged(rng, n: int, k: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Rows as stored with bad rows on both sides of sub-block edges (rows 255, 256,
    511, 700) and a float64 row whose sum overflows without a non-finite value."""
    stored, labels = _rows(rng, n, k, dtype)
    stored[255, 1] = np.nan
    stored[256] = 0.0
    stored[511, 0] = -0.25
    labels[700] = k
    stored[900, 0] = np.inf
    if dtype == np.float64:
        stored[901] = 1e308  # sum inf, every value finite: used, as the row loop does
    return stored, labels


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 3, 10])
@pytest.mark.parametrize("exact", ["tolerance", "inf"])
def test_the_sub_block_size_never_changes_a_sum(dtype, k, exact, monkeypatch):
    """Clean sub-blocks run in vectorised passes, others row by row (one row per
    sub-block: every clean row through the passes); the sums are the same floats,
    also when the block is summarised a few rows at a time (``SCRATCH_ROWS``), but
    for the log-loss, then summed in parts."""
    stored, labels = _damaged(np.random.default_rng(k), 1500, k, dtype)
    tolerance = exact_tolerance(k) if exact == "tolerance" else np.inf
    results = []
    for sub_rows, scratch_rows in ((1, 1 << 18), (3, 1 << 18), (256, 1 << 18), (4096, 1 << 18),
                                   (256, 512), (3, 700)):  # fmt: skip
        monkeypatch.setattr(kernel, "SCRATCH_ROWS", scratch_rows)
        totals = BlockTotals(k)
        with np.errstate(all="ignore"):
            check = summarize_block(stored.T.copy(), labels, tolerance, totals, sub_rows)
        results.append((totals, check))
    (first, first_check), *others = results
    bad = 5 if exact == "tolerance" else 4  # a zero row is only bad when divided
    assert first_check.bad == bad and first.rows == 1500 - bad
    for totals, check in others:
        assert check == first_check
        for name in ("confidence", "class_cells", "binary"):
            np.testing.assert_array_equal(getattr(totals, name), getattr(first, name))
        assert (totals.rows, totals.hits) == (first.rows, first.hits)
        np.testing.assert_equal(totals.brier, first.brier)
        np.testing.assert_allclose(totals.log_loss, first.log_loss, rtol=1e-15)


@pytest.mark.parametrize("damage", ["nan", "inf", "negative", "zero row", "label -1", "label K"])
def test_bad_rows_are_skipped_and_counted(damage):
    rng = np.random.default_rng(8)
    stored, labels = _rows(rng, 200, 3, np.float64)
    if damage == "nan":
        stored[7, 1] = np.nan
    elif damage == "inf":
        stored[7, 1] = np.inf
    elif damage == "negative":
        stored[7] = [-0.25, 0.75, 0.5]
    elif damage == "zero row":
        stored[7] = 0.0
    else:
        labels[7] = -1 if damage == "label -1" else 3
    totals = BlockTotals(3)
    check = summarize_block(stored.T.copy(), labels, exact_tolerance(3), totals)
    assert check.bad == 1 and totals.rows == 199
    keep = np.arange(200) != 7
    summary = ModelSummary.of_totals("m", list("abc"), totals)
    assert_summary_equals_core(summary, _loader_values(stored[keep]), labels[keep], BIN_COUNTS)


def test_without_a_writable_cache_the_functions_compile_uncached():
    namespace: dict = {}
    exec(compile("def f(x):\n    return x + 1\n", "<generated>", "exec"), namespace)
    compiled = njit_cached(namespace["f"])  # no file: Numba has no place for a cache
    assert compiled(41) == 42


_TASK_AFTER_WARM = """
import sys
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numba.core.event import install_recorder
from calibration_core.distributed.engine import summarize_piece
from calibration_core.distributed.kernel import warm
from calibration_core.distributed.pieces import ReadOptions, find_pieces

path = sys.argv[1]
for dtype in (np.float32, np.float64):
    p = np.full((100, 2), 0.5, dtype=dtype)
    pq.write_table(pa.table({"p_0": p[:, 0], "p_1": p[:, 1], "label": np.arange(100) % 2}), path)
    warm()
    with install_recorder("numba:compile") as compiled:
        summarize_piece(find_pieces(path)[0], ReadOptions())
    print(len(compiled.buffer))
"""


def test_warm_compiles_every_variant_a_parquet_task_calls(tmp_path):
    # A fresh cache, another process: nothing compiled before warm() (labels read from
    # Parquet are read-only, a variant of their own).
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    done = subprocess.run(
        [sys.executable, "-c", _TASK_AFTER_WARM, str(tmp_path / "t.parquet")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["0", "0"]


# --------------------------------------------------------- the table path
def _table(probs, labels, prefix="p_", **extra) -> pa.Table:
    cols = {f"{prefix}{j}": probs[:, j] for j in range(probs.shape[1])}
    return pa.table({**cols, "label": labels, **extra})


def _via_loader(table, options: ReadOptions | None = None) -> dict:
    options = options or ReadOptions()
    builder = SummaryBuilder()
    for pred in table_predictions(table, CTX, options):
        builder.add_predictions(pred)
    return builder.summaries()


def _same(a: ModelSummary, b: ModelSummary) -> None:
    assert (a.n_samples, a.hits, a.class_names) == (b.n_samples, b.hits, b.class_names)
    assert abs(a.brier_sum - b.brier_sum) <= TOL * a.n_samples
    assert abs(a.log_loss_sum - b.log_loss_sum) <= TOL * a.n_samples
    for x, y in ((a.confidence, b.confidence), (a.classwise, b.classwise)):
        np.testing.assert_array_equal(x.count, y.count)
        np.testing.assert_array_equal(x.positives, y.positives)
        np.testing.assert_allclose(x.sum_score, y.sum_score, rtol=0, atol=TOL * a.n_samples)


@pytest.mark.parametrize("kind", ["float32", "model column", "logits", "renormalize"])
def test_a_table_summarised_as_stored_equals_the_loader_predictions(kind):
    rng = np.random.default_rng(11)
    stored, labels = _rows(rng, 4000, 4, np.float32)
    extra, options, prefix = {}, ReadOptions(), "p_"
    if kind == "model column":
        extra = {"model": np.where(np.arange(4000) % 3 == 0, "a", "b")}
    elif kind == "logits":
        stored, prefix = np.log(stored.astype(np.float64) + 1e-3), "logit_"
    elif kind == "renormalize":
        stored = stored * 3.0  # unnormalised scores above 1
        options = ReadOptions(renormalize=True)
    table = _table(stored, labels, prefix, **extra)
    builder = SummaryBuilder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RenormalisedRowsWarning)
        builder.add_table(table, CTX, options)
        want = _via_loader(table, options)
    got = builder.summaries()
    assert list(got) == list(want)
    for name in want:
        _same(got[name], want[name])


def assert_the_loaders_error(table: pa.Table, message: str) -> None:
    """The summary refuses ``table`` with the loader's own error, which says ``message``."""
    with pytest.raises(CalibrationInputError) as fast:
        SummaryBuilder().add_table(table, CTX, ReadOptions())
    with pytest.raises(CalibrationInputError) as loader:
        table_predictions(table, CTX, ReadOptions())
    assert str(fast.value) == str(loader.value)
    assert message in str(fast.value)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("nan", "NaN or infinite probabilities at row 8 (1-based)"),
        ("negative", "must hold probabilities in [0, 1]"),
        ("sum", "must sum to 1"),
        ("above one", "must hold probabilities in [0, 1]"),
        ("label", "not among the classes"),
        ("label and sum", "must sum to 1"),  # the loader checks probabilities first
    ],
)
@pytest.mark.filterwarnings("ignore::calibration_core.RenormalisedRowsWarning")
def test_a_bad_table_gets_the_loader_message(damage, message):
    rng = np.random.default_rng(9)
    stored, labels = _rows(rng, 100, 3, np.float64)
    if damage == "nan":
        stored[7, 1] = np.nan
    elif damage == "negative":
        stored[7] = [-0.25, 0.75, 0.5]
    elif damage in ("sum", "label and sum"):
        stored[7] = [0.5, 0.5, 0.5]
    elif damage == "above one":
        stored[7] = [1.5, 0.0, 0.0]
    if damage.startswith("label"):
        labels[7] = 5
    table = _table(stored, labels)
    assert_the_loaders_error(table, message)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("negative", "not among the classes"),
        ("one past the classes", "not among the classes"),
        ("int32", "not among the classes"),
        ("uint64 above int64", "not among the classes"),
        ("label and blank model", "not among the classes"),  # labels before the model column
        ("blank model", "model column 'model'"),
    ],
)
@pytest.mark.filterwarnings("ignore::calibration_core.RenormalisedRowsWarning")
def test_labels_the_kernel_skips_get_the_loader_message(damage, message):
    rng = np.random.default_rng(12)
    stored, labels = _rows(rng, 100, 3, np.float32)
    labels = labels.astype(np.int64)
    model = np.full(100, "a", dtype=object)
    if damage == "negative":
        labels[7] = -1
    elif damage in ("one past the classes", "label and blank model"):
        labels[7] = 3
    elif damage == "int32":
        labels = labels.astype(np.int32)
        labels[7] = 5
    elif damage == "uint64 above int64":
        labels = labels.astype(np.uint64)
        labels[7] = 2**63 + 3
    if damage.endswith("blank model"):
        model[3] = " "
    table = _table(stored, labels, **({"model": model} if "model" in damage else {}))
    assert_the_loaders_error(table, message)


def test_predictions_with_rows_the_kernel_skips_are_refused_by_model_name():
    # Predictions built without the loader's checks (the dataclass itself).
    probs = np.array([[0.5, 0.5], [np.nan, 1.0], [0.2, 0.8]])
    pred = Predictions(probs=probs, labels=np.array([0, 1, 1]), class_names=("0", "1"), name="m")
    with pytest.raises(CalibrationInputError, match=r"^model 'm': 1 rows hold NaN"):
        SummaryBuilder().add_predictions(pred)


def test_integer_class_indices_reach_the_kernel_without_a_copy():
    rng = np.random.default_rng(13)
    stored, labels = _rows(rng, 50, 3, np.float32)
    table = _table(stored, labels.astype(np.int64))
    cols = table_columns(table, CTX)
    fast = index_labels(table, cols)
    assert np.shares_memory(fast, table.column("label").chunk(0).to_numpy())
    np.testing.assert_array_equal(fast, table_labels(table, cols, CTX))
    named = _table(stored, np.array(["0", "1", "2"])[labels])  # names: the loader maps them
    assert index_labels(named, table_columns(named, CTX)) is None
    other = pa.table({"p_1": stored[:, 0], "p_2": stored[:, 1], "p_3": stored[:, 2], "y": labels})
    assert index_labels(other, table_columns(other, CTX)) is None  # classes 1..3, not indices


def test_rows_rounded_when_saved_are_renormalised_with_the_loader_warning():
    rng = np.random.default_rng(10)
    stored, labels = _rows(rng, 500, 3, np.float64)
    table = _table(np.round(stored, 4), labels)
    with pytest.warns(RenormalisedRowsWarning, match="did not sum to 1") as fast:
        builder = SummaryBuilder()
        builder.add_table(table, CTX, ReadOptions())
    with pytest.warns(RenormalisedRowsWarning) as loader:
        want = _via_loader(table)
    assert [str(w.message) for w in fast] == [str(w.message) for w in loader]
    _same(builder.summaries()["model"], want["model"])


def test_the_core_does_not_import_numba():
    code = (
        "import sys, calibration_core, calibration_core.distributed, app.cli;"
        "app.cli.build_parser();"
        "assert 'numba' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------ Brier and log-loss parts
PART_BINS = (1, 2, 7, 15, 64, 100)


def assert_parts(got: dict, probs, labels, n_bins: int, scheme: str = "width") -> None:
    """``got`` equals the core's parts; the log-loss ones are None exactly when K > 2."""
    want = score_parts(probs, labels, n_bins=n_bins, scheme=scheme)
    assert list(got) == list(PART_FIELDS)
    for key in PART_FIELDS:
        if key.startswith("log_loss") and probs.shape[1] > 2:
            assert got[key] is None, key
            continue
        assert abs(got[key] - want[key]) <= TOL, (scheme, n_bins, key, got[key], want[key])


def _summary(stored: np.ndarray, labels: np.ndarray) -> ModelSummary:
    k = stored.shape[1]
    totals = BlockTotals(k)
    for start in range(0, stored.shape[0], 1000):  # several blocks add up
        block = np.stack(list(stored[start : start + 1000].T))
        check = summarize_block(block, labels[start : start + 1000], exact_tolerance(k), totals)
        assert check.bad == 0
    return ModelSummary.of_totals("m", [str(j) for j in range(k)], totals)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 3, 4, 10])
def test_parts_of_blocks_equal_the_core(dtype, k):
    rng = np.random.default_rng(20 + k)
    stored, labels = _rows(rng, 4000, k, dtype)
    summary = _summary(stored, labels)
    probs = _loader_values(stored)
    for m in PART_BINS:
        assert_parts(summary.score_parts(m), probs, labels, m)


def test_binary_rows_off_one_within_the_exact_tolerance_keep_exact_brier_parts():
    """Rows off 1 by +-9e-13 (by label) are used as stored, so column 0 is not 1 - p1:
    its sums in the positive column's bins are kept, not derived from column 1's,
    which would be off by 2 mean cov_b(p0 + p1 - 1, y0) = 9e-13 here (asserted: 1e-13)."""
    rng = np.random.default_rng(5)
    p1 = 0.001 + 0.998 * rng.random(6000)
    p1[:500] = np.round(p1[:500], 1).clip(0.001, 0.999)  # scores on bin edges
    labels = (rng.random(6000) < 0.5).astype(np.intp)
    p0 = 1.0 - p1 + np.where(labels == 0, 9e-13, -9e-13)
    stored = np.column_stack([p0, p1])
    assert np.all(np.abs(stored.sum(axis=1) - 1.0) <= exact_tolerance(2))  # not divided
    summary = _summary(stored, labels)
    for m in PART_BINS:
        got, want = summary.score_parts(m), score_parts(stored, labels, n_bins=m)
        for key in PART_FIELDS:
            assert abs(got[key] - want[key]) <= 1e-13, (m, key, got[key], want[key])


def test_an_earlier_summary_without_part_sums_gives_none():
    rng = np.random.default_rng(1)
    stored, labels = _rows(rng, 500, 3, np.float64)
    summary = _summary(stored, labels)
    kept = ("name", "class_names", "n_samples", "hits", "brier_sum", "log_loss_sum")
    old = ModelSummary(*(getattr(summary, f) for f in kept), summary.confidence, summary.classwise)
    assert old.score_parts(15) == dict.fromkeys(PART_FIELDS)
    assert (old + summary).parts is None
