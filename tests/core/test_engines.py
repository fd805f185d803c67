"""One engine interface (calibration_core.engines): both engines give the same answers.

The in-memory engine (:class:`PredictionsSummary`) and the Dask engine's summary
(:class:`~calibration_core.distributed.ModelSummary`, here of rows summarised by
its compiled kernel in this process, and its equal-frequency bins computed on
Dask's local scheduler) are asked every question of
:class:`CalibrationSummary` on the same rows: the answers have the same types,
counts and edges equal exactly and every number within 1e-12.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calibration_core import BinStatistics, CalibrationInputError, Predictions, ReliabilityCurve
from calibration_core.engines import CalibrationSummary, PredictionsSummary
from calibration_core.measures.decomposition import PART_FIELDS

#: The Dask engine's kernel (Numba) and scheduler: the ``dask`` tier.
pytestmark = pytest.mark.usefixtures("dask_extra")

#: Largest absolute difference allowed on a number (sums of scores: times the rows).
TOL = 1e-12
BIN_COUNTS = (1, 7, 15, 100)


def _predictions(k: int, n: int = 3000, seed: int = 5) -> Predictions:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[: n // 4] = np.round(p[: n // 4], 2)  # scores exactly on bin edges
    p[: n // 4] /= p[: n // 4].sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in p])
    return Predictions.from_probs(p, y, name="m")


def _engines(pred: Predictions):
    from calibration_core.distributed import ModelSummary

    return PredictionsSummary(pred), ModelSummary.of(pred)


def _notions(k: int) -> tuple[str, ...]:
    return ("confidence", "classwise", "binary") if k == 2 else ("confidence", "classwise")


def _assert_same_statistics(a, b, n: int) -> None:
    assert type(a) is type(b) is BinStatistics
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.count, b.count)
    np.testing.assert_array_equal(a.sum_target, b.sum_target)
    np.testing.assert_allclose(a.sum_score, b.sum_score, rtol=0, atol=TOL * n)


def _assert_same_numbers(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for key in a:
        assert abs(a[key] - b[key]) <= TOL, (key, a[key], b[key])


def _assert_same_answers(memory, dask, n_bins: int, scheme: str) -> None:
    n, k = memory.n_samples, memory.n_classes
    for notion in _notions(k):
        _assert_same_statistics(
            memory.statistics(notion, n_bins, scheme), dask.statistics(notion, n_bins, scheme), n
        )
        if notion != "classwise":
            a = memory.reliability_curve(notion, n_bins, scheme)
            b = dask.reliability_curve(notion, n_bins, scheme)
            assert type(a) is type(b) is ReliabilityCurve and a.binning == b.binning
            np.testing.assert_allclose(a.x, b.x, rtol=0, atol=TOL)
            np.testing.assert_array_equal(np.isnan(a.y), np.isnan(b.y))
    _assert_same_numbers(memory.metrics(n_bins, scheme), dask.metrics(n_bins, scheme))
    parts_memory, parts_dask = memory.score_parts(n_bins, scheme), dask.score_parts(n_bins, scheme)
    assert list(parts_memory) == list(parts_dask) == list(PART_FIELDS)
    if k > 2:  # the Dask engine's log-loss parts do not merge for K > 2 (distributed.parts)
        assert parts_dask["log_loss_calibration"] is parts_dask["log_loss_refinement"] is None
        parts_memory = {key: parts_memory[key] for key in PART_FIELDS[:2]}
        parts_dask = {key: parts_dask[key] for key in PART_FIELDS[:2]}
    _assert_same_numbers(parts_memory, parts_dask)


def test_both_engines_implement_the_interface():
    pred = _predictions(3, n=200)
    memory, dask = _engines(pred)
    for summary in (memory, dask):
        assert isinstance(summary, CalibrationSummary)
        assert (summary.name, summary.class_names) == ("m", tuple(pred.class_names))
        assert (summary.n_samples, summary.n_classes) == (200, 3)


@pytest.mark.parametrize("k", [2, 4])
def test_both_engines_give_equal_equal_width_answers(k):
    memory, dask = _engines(_predictions(k))
    for n_bins in BIN_COUNTS:
        _assert_same_answers(memory, dask, n_bins, "width")


@pytest.mark.parametrize("k", [2, 4])
def test_both_engines_give_equal_equal_frequency_answers(k, tmp_path):
    from calibration_core.distributed import dataset_summaries, frequency_statistics

    pred = _predictions(k)
    cols = {f"p_{j}": pred.probs[:, j] for j in range(k)}
    pq.write_table(pa.table({**cols, "label": pred.labels}), tmp_path / "m.parquet",
                   row_group_size=700)  # fmt: skip
    path = str(tmp_path / "m.parquet")
    summaries = dataset_summaries(path)
    (name,) = summaries
    memory = PredictionsSummary(Predictions.from_probs(pred.probs, pred.labels, name=name))
    for n_bins in (1, 7, 15):
        frequency = frequency_statistics(path, summaries, n_bins)[name]
        dask = summaries[name].with_frequency(n_bins, frequency)
        _assert_same_answers(memory, dask, n_bins, "frequency")
        _assert_same_answers(memory, dask, n_bins, "width")  # the cells still answer


def test_questions_an_engine_cannot_answer_are_clear_errors():
    memory, dask = _engines(_predictions(3, n=300))
    with pytest.raises(CalibrationInputError, match="with_frequency"):
        dask.metrics(10, "frequency")
    for summary in (memory, dask):
        with pytest.raises(CalibrationInputError, match="binary notion needs 2"):
            summary.statistics("binary", 10)
        with pytest.raises(CalibrationInputError, match="unknown notion 'class'"):
            summary.statistics("class", 10)
        with pytest.raises(CalibrationInputError, match="one column"):
            summary.reliability_curve("classwise", 10)
