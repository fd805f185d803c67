"""Fit time of the multiclass maps (temperature, vector, matrix, Dirichlet) against references.

Run ``python benchmarks/bench_maps_multiclass.py`` (several minutes on a busy
2-core machine, mostly the slow references) or ``--quick`` (N = 1e4, one
repeat). Times are medians over ``--repeats`` runs, ours and the reference
interleaved so that noise from other processes hits both alike; a reference
run longer than ``--budget`` seconds is stopped and reported as a lower bound
(``>``), and not repeated.

Data: N rows of over-confident logits (labels drawn from ``softmax(z / 2)``,
seeded), K = 10 and K = 100. Every map fits on the logits (``input="logits"``).

References (netcal is not used: it requires torch)
--------------------------------------------------
* temperature

  - ``sklearn``: scikit-learn's own temperature scaling,
    ``sklearn.calibration._TemperatureScaling`` (what
    ``CalibratedClassifierCV(method="temperature")`` fits: bounded Brent on
    ln(1/T) over its Cython multinomial loss);
  - ``brent``: ``scipy.optimize.minimize_scalar(method="bounded")`` on the
    plain formula ``mean -log_softmax(z / T)[y]`` (the tests' reference fit).

* vector (the same objective as ours: reg = 1e-2)

  - ``lbfgs-grad``: ``scipy.optimize.minimize(method="L-BFGS-B", jac=True)``
    with the analytic gradient written the straightforward way (row-major
    (N, K) arrays, ``scipy.special.softmax``, one-hot targets, no
    preconditioning);
  - ``lbfgs-fd``: the same without a gradient (scipy's finite differences,
    2K + 1 objective evaluations per gradient).

* matrix / Dirichlet: ``sklearn``: ``LogisticRegression(C=1e4)`` (multinomial
  lbfgs, L2 on all weights) on the same features, a full K x K + K softmax
  regression like ours (ours: ODIR with lambda = mu = 1e3 for ``fixed``, and
  the default, strengths chosen on a held-out 20 %, for ``auto``).

Targets (issue 3): temperature and vector scaling at least 2x faster than the
references.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from scipy.special import log_softmax, softmax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from calibration_core.maps import (
    DirichletCalibration,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
)

try:  # scikit-learn >= 1.8
    from sklearn.calibration import _TemperatureScaling
except ImportError:  # pragma: no cover
    _TemperatureScaling = None

VECTOR_REG = 1e-2


class OverBudget(Exception):
    pass


def make_data(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident logits (N, K) and labels drawn from softmax(z / 2)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=3.0, size=(n, k)) + rng.normal(size=k)
    p = softmax(z / 2.0, axis=1)
    labels = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return z, labels


# ---------------------------------------------------------------- references
def ref_temperature_sklearn(z, y, budget):
    _TemperatureScaling().fit(z, y)


def ref_temperature_brent(z, y, budget):
    rows = np.arange(len(y))

    def nll(t):
        return -np.mean(log_softmax(z / t, axis=1)[rows, y])

    minimize_scalar(nll, bounds=(1e-2, 1e2), method="bounded", options={"xatol": 1e-10})


def _vector_objective(z, y, budget, with_gradient):
    n, k = z.shape
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1.0
    deadline = time.perf_counter() + budget

    def f(theta):
        if time.perf_counter() > deadline:
            raise OverBudget
        w, b = theta[:k], theta[k:]
        out = z * w + b
        logp = log_softmax(out, axis=1)
        dev = w - w.mean()
        value = -np.sum(onehot * logp) / n + VECTOR_REG / k * (dev @ dev + b @ b)
        if not with_gradient:
            return value
        r = (softmax(out, axis=1) - onehot) / n
        grad = np.concatenate([(r * z).sum(axis=0), r.sum(axis=0)])
        grad += 2 * VECTOR_REG / k * np.concatenate([dev, b])
        return value, grad

    return f, np.concatenate([np.ones(k), np.zeros(k)])


def ref_vector_grad(z, y, budget):
    f, x0 = _vector_objective(z, y, budget, True)
    minimize(f, x0, jac=True, method="L-BFGS-B", options={"maxiter": 1000})


def ref_vector_fd(z, y, budget):
    f, x0 = _vector_objective(z, y, budget, False)
    minimize(f, x0, method="L-BFGS-B", options={"maxiter": 1000})


def ref_logistic(z, y, budget):
    x = log_softmax(z, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LogisticRegression(C=1e4, max_iter=1000).fit(x, y)


# -------------------------------------------------------------------- timing
def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def run_case(name, ours, refs, z, y, repeats, budget):
    """Interleave ours and each reference; print medians and ratios."""
    times = {"ours": []}
    over = {}
    for ref_name, _ in refs:
        times[ref_name] = []
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times["ours"].append(timed(ours, z, y))
        for ref_name, ref in refs:
            if ref_name in over:
                continue
            try:
                times[ref_name].append(timed(ref, z, y, budget))
            except OverBudget:
                over[ref_name] = budget
    mine = statistics.median(times["ours"])
    line = f"  {name:<22} ours {mine:8.3f}s"
    for ref_name, _ in refs:
        if ref_name in over:
            line += f" | {ref_name} >{over[ref_name]:.0f}s (ratio >{over[ref_name] / mine:.1f}x)"
        else:
            ref = statistics.median(times[ref_name])
            line += f" | {ref_name} {ref:8.3f}s (ratio {ref / mine:5.1f}x)"
    print(line, flush=True)
    return mine


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 1e4, one repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--classes", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per reference run")
    parser.add_argument("--slow-references", action="store_true", help="LR at K > 10 too")
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="BLAS threads for all (ours uses 1 inside its fits; 0 = library default)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeats, args.budget = 10_000, 1, 20.0
    if args.blas_threads:
        threadpool_limits(limits=args.blas_threads, user_api="blas")

    for k in args.classes:
        z, y = make_data(args.n, k)
        print(f"N = {args.n}, K = {k}", flush=True)
        temp_refs = [("brent", ref_temperature_brent)]
        if _TemperatureScaling is not None:
            temp_refs.insert(0, ("sklearn", ref_temperature_sklearn))
        run_case(
            "temperature",
            lambda z, y: TemperatureScaling(input="logits").fit(z, y),
            temp_refs,
            z,
            y,
            args.repeats,
            args.budget,
        )
        run_case(
            "vector",
            lambda z, y: VectorScaling(reg=VECTOR_REG, input="logits").fit(z, y),
            [("lbfgs-grad", ref_vector_grad), ("lbfgs-fd", ref_vector_fd)],
            z,
            y,
            args.repeats,
            args.budget,
        )
        # scikit-learn's LogisticRegression takes minutes at K = 100 (414 s at N = 1e4 on
        # the busy 2-core machine), so it runs there only with --slow-references.
        lr_refs = [("sklearn-LR", ref_logistic)] if k <= 10 or args.slow_references else []
        if not lr_refs:
            print("  (sklearn-LR reference skipped at K > 10; --slow-references runs it)")
        run_case(
            "matrix (fixed 1e3)",
            lambda z, y: MatrixScaling(reg_lambda=1e3, reg_mu=1e3, input="logits").fit(z, y),
            lr_refs,
            z,
            y,
            args.repeats,
            args.budget,
        )
        run_case(
            "dirichlet (auto)",
            lambda z, y: DirichletCalibration(input="logits").fit(z, y),
            lr_refs,
            z,
            y,
            args.repeats,
            args.budget,
        )


if __name__ == "__main__":
    main()
