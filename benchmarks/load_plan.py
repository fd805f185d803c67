"""Session files of ``benchmarks/load_test.py`` and what the dashboard must show for them.

:func:`prepare_session` (run in a worker process) writes one session's
synthetic CSV of logits and labels and computes, with ``calibration_core``
alone, every metric the dashboard should show for it: the uncalibrated
predictions and each map fitted the way the server fits it, for every bin
count and scheme the session may pick. :func:`expected_row` reads one
metrics-table row off that plan.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BIN_CHOICES = (5, 10, 15, 20, 30, 50, 100)
SCHEMES = ("width", "frequency")
MAPS = ("temperature", "isotonic")
ALL_CLASSES = "__all__"


# ------------------------------------------------------------------ session data
@dataclass
class SessionPlan:
    """One session's file and what the dashboard must show for it.

    ``expected[(variant, scheme, bins)]`` holds ``conf_ece``, ``conf_mce``
    (floats) and ``class_ece``, ``class_mce`` (lists of K floats);
    ``rules[variant]`` the binning-free metrics.
    """

    index: int
    name: str
    path: str
    n: int
    classes: list[str]
    file_sha256: str
    expected: dict = field(default_factory=dict)
    rules: dict = field(default_factory=dict)
    prepare_seconds: float = 0.0


def synthetic_file(path: Path, n: int, k: int, seed: int, temperature: float) -> None:
    """Logits (float32) and labels drawn from ``softmax(logits / temperature)``."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    z = (rng.normal(size=(n, k)) * 2.5).astype(np.float32)
    z[np.arange(n), rng.integers(0, k, n)] += np.float32(2.0)
    t = z.astype(np.float64) / temperature
    p = np.exp(t - t.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    labels = (p.cumsum(axis=1) < rng.random(n)[:, None]).sum(axis=1).clip(0, k - 1)
    columns = {f"logit_{j}": z[:, j] for j in range(k)}
    columns["label"] = labels.astype(np.int64)
    pacsv.write_csv(pa.table(columns), str(path))


def prepare_session(
    index: int, seed: int, rows: int, classes: int, folder: str, folds: int
) -> SessionPlan:
    """Write session ``index``'s file and compute its expected numbers (in a worker process)."""
    from calibration_core import (
        accuracy,
        brier_score,
        classwise_statistics,
        confidence_statistics,
        log_loss,
    )
    from calibration_core.compare import compare_maps
    from calibration_core.io import load_predictions

    start = time.perf_counter()
    name = f"load-{index:02d}-{secrets.token_hex(3)}"
    path = Path(folder) / f"{name}.csv"
    synthetic_file(path, rows, classes, seed * 1000 + index, temperature=0.6 + 0.15 * index)
    (pred,) = load_predictions(str(path))
    assert pred.name == name, (pred.name, name)
    variants = {"uncalibrated": pred}
    for m in MAPS:  # one map per call, as the server's background fit does
        comparison = compare_maps(pred, maps=[m], folds=folds, seed=0)
        variants[m] = comparison.calibrated[m]
    plan = SessionPlan(
        index=index,
        name=name,
        path=str(path),
        n=pred.n_samples,
        classes=list(pred.class_names),
        file_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )
    for variant, p in variants.items():
        plan.rules[variant] = {
            "brier_score": brier_score(p.probs, p.labels),
            "log_loss": log_loss(p.probs, p.labels),
            "accuracy": accuracy(p.probs, p.labels),
            "n": p.n_samples,
        }
        for scheme in SCHEMES:
            for bins in BIN_CHOICES:
                conf = confidence_statistics(p.probs, p.labels, n_bins=bins, scheme=scheme)
                cw = classwise_statistics(p.probs, p.labels, n_bins=bins, scheme=scheme)
                plan.expected[(variant, scheme, bins)] = {
                    "conf_ece": float(conf.ece()),
                    "conf_mce": float(conf.mce()),
                    "class_ece": [float(v) for v in np.asarray(cw.ece())],
                    "class_mce": [float(v) for v in np.asarray(cw.mce())],
                }
    plan.prepare_seconds = time.perf_counter() - start
    return plan


def expected_row(plan: SessionPlan, variant: str, notion: str, class_value, scheme, bins) -> dict:
    """The metrics row the dashboard must show for one variant and setting."""
    e = plan.expected[(variant, scheme, bins)]
    if notion == "confidence":
        ece, mce = e["conf_ece"], e["conf_mce"]
    elif class_value in (None, "", ALL_CLASSES):
        ece, mce = float(np.mean(e["class_ece"])), float(np.max(e["class_mce"]))
    else:
        j = plan.classes.index(class_value)
        ece, mce = e["class_ece"][j], e["class_mce"][j]
    rules = plan.rules[variant]
    return {
        "model": plan.name,
        "map": variant,
        "n": rules["n"],
        "ece": ece,
        "mce": mce,
        "classwise_ece": float(np.mean(e["class_ece"])),
        "brier_score": rules["brier_score"],
        "log_loss": rules["log_loss"],
        "accuracy": rules["accuracy"],
    }
