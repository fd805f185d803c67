"""Write ``assets/example_predictions.csv``: the example file the page offers for download.

Two models (``sharp``, ``cautious``) on the same 24 rows of a three-class problem
(``cat``, ``dog``, ``bird``), in the column layout the loader reads: ``model``,
``label`` and one ``p_<class>`` column per class. Probabilities have three
decimals and each row sums to exactly 1. Deterministic (a fixed seed), so running
it again rewrites the same bytes; ``tests/app/test_example_file.py`` checks that.

Usage: ``python scripts/example_predictions.py [OUTPUT]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

CLASSES = ("cat", "dog", "bird")
MODELS = {"sharp": 3.0, "cautious": 0.8}  # logit scale: over- and under-confident
N_ROWS = 24
OUTPUT = Path(__file__).resolve().parent.parent / "assets" / "example_predictions.csv"


def _thousandths(logits: np.ndarray) -> np.ndarray:
    """Softmax rows as integer thousandths that sum to exactly 1000."""
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    t = np.maximum(np.round(p * 1000).astype(int), 1)
    top = t.argmax(axis=1)
    t[np.arange(len(t)), top] += 1000 - t.sum(axis=1)
    return t


def example_csv() -> str:
    """The example file's text (header, then one line per model and row)."""
    rng = np.random.default_rng(15)
    labels = rng.integers(0, len(CLASSES), N_ROWS)
    signal = rng.normal(size=(N_ROWS, len(CLASSES)))
    signal[np.arange(N_ROWS), labels] += 1.0
    lines = ["model,label," + ",".join(f"p_{c}" for c in CLASSES)]
    for model, scale in MODELS.items():
        for label, row in zip(labels, _thousandths(scale * signal), strict=True):
            cells = ",".join(f"{v / 1000:.3f}" for v in row)
            lines.append(f"{model},{CLASSES[label]},{cells}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT
    target.write_text(example_csv(), encoding="utf-8", newline="\n")
    print(f"wrote {target}")
