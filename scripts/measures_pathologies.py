"""Reproduce the ECE primer's pathologies on the built-in demo data (quoted in docs/measures.md).

1. **A useless model at ECE 0.** On ``breast cancer`` (569 rows, 63% benign),
   a "model" that predicts the base rate for every row is perfectly
   calibrated and useless: every calibration measure is about 0, while the
   scoring rules (Brier score, log-loss) and the accuracy show that it knows
   nothing. Calibration is not usefulness.
2. **ECE moves with the bin count.** The confidence ECE of the demo's
   digits models for 5 to 100 equal-width and equal-mass bins, beside the
   binning-free smooth ECE and KS error (one number each).
3. **Top label, class-wise, whole vector.** Per digits model: the
   confidence (top-label) ECE, the class-wise ECE, TACE, the mean class-wise
   KS error and the SKCE test: they answer different questions and can
   rank models differently.

Deterministic (demo seed 0, SKCE seed 0). Usage:
``python scripts/measures_pathologies.py`` (about 10 s).
"""

from __future__ import annotations

import numpy as np

from calibration_core import (
    Predictions,
    accuracy,
    binary_ece,
    brier_score,
    classwise_ece,
    confidence_ece,
    log_loss,
    thresholded_adaptive_ece,
)
from calibration_core.demo import demo_predictions
from calibration_core.measures import (
    classwise_ks_errors,
    ks_calibration_error,
    skce,
    smooth_ece,
)

BIN_COUNTS = (5, 10, 15, 20, 30, 50, 100)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)]
    return "\n".join(lines)


def useless_model(models: dict[str, Predictions]) -> str:
    """The base-rate predictor of breast cancer against its logistic regression."""
    real = models["breast cancer · logistic regression"]
    rate = float(np.mean(real.labels == 1))
    constant = np.tile([1 - rate, rate], (real.n_samples, 1))
    rows = []
    for name, probs in (("base rate for every row", constant), ("logistic regression", real.probs)):
        y = real.labels
        rows.append(
            [
                name,
                f"{binary_ece(probs, y):.4f}",
                f"{smooth_ece(probs, y, notion='binary').value:.4f}",
                f"{ks_calibration_error(probs, y, notion='binary'):.4f}",
                f"{brier_score(probs, y):.4f}",
                f"{log_loss(probs, y):.4f}",
                f"{accuracy(probs, y):.3f}",
            ]
        )
    header = ["breast cancer", "binary ECE (15 bins)", "smooth ECE", "KS error"]
    header += ["Brier score", "log-loss", "accuracy"]
    return f"Base rate (positive class) = {rate:.4f}\n\n" + _table(header, rows)


def bin_counts(models: dict[str, Predictions]) -> str:
    """Confidence ECE of the digits models against the number of bins, beside smECE and KS."""
    header = ["digits model", "scheme", *map(str, BIN_COUNTS), "smooth ECE", "KS error"]
    rows = []
    for name, pred in models.items():
        if not name.startswith("digits"):
            continue
        short = name.split(" · ")[1]
        sece = smooth_ece(pred).value
        ks = ks_calibration_error(pred)
        for scheme in ("width", "frequency"):
            eces = [
                confidence_ece(pred.probs, pred.labels, n_bins=m, scheme=scheme) for m in BIN_COUNTS
            ]
            label = "equal width" if scheme == "width" else "equal mass"
            tail = [f"{sece:.4f}", f"{ks:.4f}"] if scheme == "width" else ["", ""]
            rows.append([short, label, *(f"{e:.4f}" for e in eces), *tail])
    return _table(header, rows)


def notions(models: dict[str, Predictions]) -> str:
    """Top-label, class-wise and whole-vector measures of the digits models."""
    header = ["digits model", "confidence ECE", "class-wise ECE", "TACE", "mean class KS"]
    header += ["SKCE (unbiased)", "SKCE p-value"]
    rows = []
    for name, pred in models.items():
        if not name.startswith("digits"):
            continue
        p, y = pred.probs, pred.labels
        test = skce(pred, seed=0)
        rows.append(
            [
                name.split(" · ")[1],
                f"{confidence_ece(p, y):.4f}",
                f"{classwise_ece(p, y):.4f}",
                f"{thresholded_adaptive_ece(p, y):.4f}",
                f"{np.mean(classwise_ks_errors(p, y)):.4f}",
                f"{test.unbiased:.2e}",
                f"{test.p_value:.3f}",
            ]
        )
    return _table(header, rows)


def main() -> None:
    """Print the three tables (Markdown)."""
    models = {p.name: p for p in demo_predictions()}
    print("## 1. A useless model at ECE 0\n")
    print(useless_model(models))
    print("\n## 2. ECE moves with the bin count (confidence ECE, digits)\n")
    print(bin_counts(models))
    print("\n## 3. Top label, class-wise, whole vector (digits)\n")
    print(notions(models))


if __name__ == "__main__":
    main()
