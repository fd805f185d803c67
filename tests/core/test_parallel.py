"""calibration_core.parallel: the thread count and the block map."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from scipy.special import expit

from calibration_core import CalibrationInputError
from calibration_core.maps.logistic_columns import fit_logistic_columns
from calibration_core.parallel import ENV_VAR, MAX_THREADS, map_blocks, n_threads


def test_thread_count_follows_the_environment_variable(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "3")
    assert n_threads() == 3
    monkeypatch.delenv(ENV_VAR)
    assert 1 <= n_threads() <= MAX_THREADS


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_bad_thread_count_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv(ENV_VAR, value)
    with pytest.raises(CalibrationInputError, match=f"{ENV_VAR}=.*positive integer"):
        n_threads()


def test_map_blocks_keeps_order_and_uses_several_threads():
    seen: set[int] = set()
    barrier = threading.Barrier(2, timeout=10)

    def work(i: int) -> int:
        seen.add(threading.get_ident())
        if i < 2:  # both first blocks must be running at once to pass the barrier
            barrier.wait()
        return i * i

    assert map_blocks(work, range(6), threads=2) == [i * i for i in range(6)]
    assert len(seen) == 2
    one: set[int] = set()
    assert map_blocks(lambda i: one.add(threading.get_ident()) or i, range(4), threads=1) == [
        0,
        1,
        2,
        3,
    ]
    assert one == {threading.get_ident()}


def test_threaded_logistic_fit_equals_the_sequential_fit_bit_for_bit():
    rng = np.random.default_rng(11)
    c, n = 7, 3_000
    x = rng.normal(size=(c, n))
    labels = np.argmax(x + rng.gumbel(size=(c, n)), axis=0)
    init = np.tile([1.0, 0.0], (c, 1))
    # Tiny blocks (one column each) so that the threads really split the work.
    kwargs = dict(block_elements=n, warm_start_rows=None)
    one = fit_logistic_columns([x], labels, init, threads=1, **kwargs)
    four = fit_logistic_columns([x], labels, init, threads=4, **kwargs)
    assert np.array_equal(one.params, four.params)
    assert np.array_equal(one.loss, four.loss)
    assert np.array_equal(one.n_iter, four.n_iter)
    assert one.converged.all()
    # and the fit is a real one: the fitted sigmoid of column 0 beats the identity.
    t = labels == 0
    z0 = init[0, 0] * x[0] + init[0, 1]
    z1 = one.params[0, 0] * x[0] + one.params[0, 1]

    def nll(z):
        return -np.mean(np.where(t, np.log(expit(z)), np.log(expit(-z))))

    assert nll(z1) < nll(z0)
