"""Inputs and plain-numpy references of ``benchmarks/bench_core.py``.

The references are the straightforward ``np.bincount`` implementations each
metric of ``calibration_core`` is timed against (see the docstring of
``bench_core.py`` for what each computes); they validate nothing. The data
helpers draw reproducible binary scores and softmax rows with labels.
"""

from __future__ import annotations

import numpy as np

N_BINS = 15


# ------------------------------------------------------------- references
def ref_binary_width(s, y, m=N_BINS):
    idx = np.clip((s * m).astype(np.intp), 0, m - 1)
    count = np.bincount(idx, minlength=m)
    sum_score = np.bincount(idx, weights=s, minlength=m)
    sum_target = np.bincount(idx, weights=y, minlength=m)
    return np.abs(sum_target - sum_score).sum() / count.sum()


def ref_binary_frequency(s, y, m=N_BINS):
    n = s.shape[0]
    positions = (np.arange(1, m) * n) // m
    edges = np.sort(s)[positions]
    idx = np.searchsorted(edges, s, side="right")
    count = np.bincount(idx, minlength=m)
    sum_score = np.bincount(idx, weights=s, minlength=m)
    sum_target = np.bincount(idx, weights=y, minlength=m)
    return np.abs(sum_target - sum_score).sum() / count.sum()


def ref_confidence(p, y, m=N_BINS, binary=ref_binary_width):
    conf = p.max(axis=1)
    correct = p.argmax(axis=1) == y
    return binary(conf, correct, m)


def ref_confidence_frequency(p, y, m=N_BINS):
    return ref_confidence(p, y, m, ref_binary_frequency)


def ref_classwise_width(p, y, m=N_BINS):
    n, k = p.shape
    idx = np.clip((p * m).astype(np.intp), 0, m - 1) + np.arange(k) * m
    count = np.bincount(idx.ravel(), minlength=k * m).reshape(k, m)
    sum_score = np.bincount(idx.ravel(), weights=p.ravel(), minlength=k * m).reshape(k, m)
    sum_target = np.bincount(idx[np.arange(n), y], minlength=k * m).reshape(k, m)
    return float(np.mean(np.abs(sum_target - sum_score).sum(axis=1) / count.sum(axis=1)))


def ref_classwise_frequency(p, y, m=N_BINS):
    return float(np.mean([ref_binary_frequency(p[:, j], y == j, m) for j in range(p.shape[1])]))


def ref_brier(p, y):
    onehot = np.zeros_like(p)
    onehot[np.arange(p.shape[0]), y] = 1.0
    return ((p - onehot) ** 2).sum(axis=1).mean()


def ref_log_loss(p, y):
    return -np.log(np.clip(p[np.arange(p.shape[0]), y], 1e-15, 1.0)).mean()


# ----------------------------------------------------------------- data
def binary_data(n, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    y = (rng.random(n) < s**1.3).astype(np.int64)
    return s, y


def multiclass_data(n, k, seed=0):
    rng = np.random.default_rng(seed)
    p = np.empty((n, k))
    y = np.empty(n, dtype=np.int64)
    step = 100_000
    for start in range(0, n, step):
        z = rng.normal(scale=2.5, size=(min(step, n - start), k))
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        block = e / e.sum(axis=1, keepdims=True)
        p[start : start + step] = block
        u = rng.random(block.shape[0])[:, None]
        y[start : start + step] = np.minimum((np.cumsum(block, axis=1) < u).sum(axis=1), k - 1)
    return p, y
