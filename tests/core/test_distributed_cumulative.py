"""The whole dataset's cumulative curve from cell statistics, against the in-memory curve.

:func:`~calibration_core.distributed.cumulative.summary_cumulative` of a
:class:`ModelSummary` equals :func:`calibration_core.measures.cumulative_differences`
of the same rows at every cell edge to 1e-12 (rank and difference), and
everything the cells only bound (the curve between edges, sigma, the KS and
Kuiper statistics and their p-values) brackets the in-memory value.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="the 'dask' extra is not installed")

from calibration_core import CalibrationInputError, Predictions
from calibration_core.distributed import ModelSummary
from calibration_core.distributed.cumulative import summary_cumulative
from calibration_core.measures import cumulative_differences
from calibration_core.measures.cumulative import cumulative_test_from_curve

#: The Numba kernel: compiled on first use, in the ``dask`` tier.
pytestmark = pytest.mark.usefixtures("dask_extra")


def _predictions(n: int, k: int, seed: int, shift: float = 2.5) -> Predictions:
    """Overconfident softmax rows (a quarter rounded to 2 digits: ties on cell edges)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * shift
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[: n // 4] = np.round(p[: n // 4], 2)
    p[: n // 4] /= p[: n // 4].sum(axis=1, keepdims=True)
    soft = p**0.7 / (p**0.7).sum(axis=1, keepdims=True)  # the labels' law: less confident
    y = (rng.random(n)[:, None] > np.cumsum(soft, axis=1)).sum(axis=1).clip(0, k - 1)
    return Predictions.from_probs(p, y, name="m")


CASES = [
    (4, "confidence", None),
    (4, "class", 0),
    (4, "class", 3),
    (2, "binary", None),
    (2, "confidence", None),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"K{c[0]}-{c[1]}-{c[2]}")
def pair(request):
    """``(cell curve, in-memory curve)`` of 20,000 rows for one notion."""
    k, notion, class_index = request.param
    pred = _predictions(20_000, k, seed=k)
    cells = summary_cumulative(ModelSummary.of(pred), notion, class_index)
    return cells, cumulative_differences(pred, notion=notion, class_index=class_index)


def _matching(cells, full) -> np.ndarray:
    """Index in ``full`` of each edge point of ``cells`` (the same number of rows below)."""
    n = full.n_samples
    full_rows = np.rint(full.rank * n).astype(np.int64)
    edge_rows = np.rint(cells.curve.rank * n).astype(np.int64)
    found = np.searchsorted(full_rows, edge_rows)
    assert np.array_equal(full_rows[found], edge_rows), "an edge is not a point of the full curve"
    return found


def test_the_curve_is_exact_at_every_cell_edge(pair):
    cells, full = pair
    at = _matching(cells, full)
    assert cells.curve.rank.shape[0] > 50  # many edges, not only the ends
    np.testing.assert_allclose(cells.curve.rank, full.rank[at], rtol=0, atol=1e-12)
    np.testing.assert_allclose(cells.curve.difference, full.difference[at], rtol=0, atol=1e-12)
    assert cells.curve.rank[-1] == 1.0 and cells.curve.n_samples == full.n_samples


def test_the_standard_deviation_is_bracketed(pair):
    cells, full = pair
    at = _matching(cells, full)
    assert np.all(cells.std_lower <= full.std[at] + 1e-12)
    assert np.all(full.std[at] <= cells.curve.std + 1e-12)
    # cells of width <= 0.01: the bracket is narrow
    assert cells.curve.std[-1] - cells.std_lower[-1] < 0.02 * cells.curve.std[-1]


def test_the_curve_between_edges_stays_in_its_cells_range(pair):
    cells, full = pair
    at = _matching(cells, full)
    for i in range(1, at.shape[0]):
        inside = full.difference[at[i - 1] : at[i] + 1]
        assert inside.min() >= cells.lower[i] - 1e-12, i
        assert inside.max() <= cells.upper[i] + 1e-12, i


def test_ks_kuiper_sigma_and_p_values_are_bracketed(pair):
    cells, full = pair
    exact = cumulative_test_from_curve(full)
    bounds = cells.test()
    for name in ("ks_error", "kuiper", "sigma", "ks_p_value", "kuiper_p_value"):
        low, high = getattr(bounds, name)
        value = getattr(exact, name)
        assert low - 1e-12 <= value <= high + 1e-12, (name, low, value, high)
    assert bounds.at_edges.ks_error == bounds.ks_error[0]


def test_a_miscalibrated_model_has_a_tight_ks_bracket_and_a_small_p_value():
    pred = _predictions(50_000, 3, seed=7, shift=4.0)
    bounds = summary_cumulative(ModelSummary.of(pred)).test()
    exact = cumulative_test_from_curve(cumulative_differences(pred))
    assert bounds.ks_error[0] > 0.02  # overconfident: a clear drift
    assert bounds.ks_p_value[1] < 1e-6 and exact.ks_p_value < 1e-6


def test_bad_notions_are_refused_with_a_clear_message():
    summary = ModelSummary.of(_predictions(100, 3, seed=1))
    with pytest.raises(CalibrationInputError, match="binary notion needs 2"):
        summary_cumulative(summary, "binary")
    with pytest.raises(CalibrationInputError, match=r"class_index must be one of 0\.\.2"):
        summary_cumulative(summary, "class", 3)
    with pytest.raises(CalibrationInputError, match="unknown notion 'classwise'"):
        summary_cumulative(summary, "classwise")


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["densenet-bc-100-cifar-100", "wideresnet-16-4-cifar-10"])
def test_cifar_curves_are_exact_at_the_edges_and_their_ks_tightly_bracketed(realdata, name):
    """Real overconfident networks (most rows in the last cell): exact at every edge, and
    the KS bracket within 1e-3 (measured: 6.0e-4 and 4.2e-4) around the in-memory value."""
    with np.load(realdata[name], allow_pickle=False) as data:
        pred = Predictions.from_probs(data["predictions"], data["ground_truth"], renormalize=True)
    summary = ModelSummary.of(pred)
    for notion, k in (("confidence", None), ("class", 3)):
        cells = summary_cumulative(summary, notion, k)
        full = cumulative_differences(pred, notion=notion, class_index=k)
        at = _matching(cells, full)
        np.testing.assert_allclose(cells.curve.difference, full.difference[at], atol=1e-12)
        low, high = cells.test().ks_error
        exact = cumulative_test_from_curve(full).ks_error
        assert low - 1e-12 <= exact <= high + 1e-12 and high - low < 1e-3, (notion, low, high)
