"""Built-in demo: real models' real held-out predictions on data shipped with scikit-learn.

Two data sets that come with scikit-learn (nothing is downloaded):

* ``breast cancer`` (569 rows, K = 2, classes ``malignant`` / ``benign``);
* ``digits`` (1797 rows, K = 10, classes ``"0"``..``"9"``).

On each, four classifiers with well-known calibration behaviour:

* Gaussian naive Bayes: over-confident (probabilities pushed to 0 and 1);
* a random forest: under-confident (averaged votes shy away from 0 and 1);
* a logistic regression: close to calibrated;
* a small multi-layer perceptron.

The predictions are **out-of-fold**: every row is predicted by a model fitted
on the other folds (stratified, seeded), so each data set gives held-out
predictions for all of its rows. The logistic regression keeps its decision
function as logits, and the MLP its log-probabilities, so logit-based maps
(temperature, vector, matrix scaling) can use them.

The result is computed once per process and then reused; call
:func:`demo_predictions` freely. For the default seed the models' outputs ship
with the package (``demo_data/demo-seed0.npz``, written by
``python -m calibration_core.demo``), so nothing is trained at run time; a test
checks that they are what training gives.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np

from .predictions import Predictions

#: Folds of the out-of-fold predictions.
DEMO_FOLDS = 3


def _model_factories(seed: int) -> dict[str, object]:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {
        "naive Bayes": lambda: GaussianNB(),
        "random forest": lambda: RandomForestClassifier(
            n_estimators=30, min_samples_leaf=3, random_state=seed, n_jobs=1
        ),
        "logistic regression": lambda: make_pipeline(
            StandardScaler(), LogisticRegression(C=1.0, max_iter=300)
        ),
        "MLP": lambda: make_pipeline(
            StandardScaler(),
            MLPClassifier(
                hidden_layer_sizes=(16,), learning_rate_init=0.01, max_iter=40, random_state=seed
            ),
        ),
    }


def _out_of_fold(factory, X: np.ndarray, y: np.ndarray, k: int, seed: int, kind: str):
    """Out-of-fold outputs, shape (N, K): probabilities, logits or log-probabilities."""
    from sklearn.model_selection import StratifiedKFold

    out = np.empty((X.shape[0], k), dtype=np.float64)
    folds = StratifiedKFold(n_splits=DEMO_FOLDS, shuffle=True, random_state=seed)
    for train, test in folds.split(X, y):
        model = factory()
        with warnings.catch_warnings():
            # The small MLP stops early on purpose (a realistic, imperfect model).
            warnings.simplefilter("ignore")
            model.fit(X[train], y[train])
        if kind == "logits":
            z = model.decision_function(X[test])
            out[test] = np.column_stack([np.zeros_like(z), z]) if z.ndim == 1 else z
        elif kind == "log_probs":
            out[test] = np.log(np.clip(model.predict_proba(X[test]), 1e-12, 1.0))
        else:
            out[test] = model.predict_proba(X[test])
    return out


_OUTPUT_KIND = {
    "naive Bayes": "probs",
    "random forest": "probs",
    "logistic regression": "logits",
    "MLP": "log_probs",
}


#: Out-of-fold outputs of the demo's models for seed 0, as trained by
#: :func:`train_demo_outputs` (``python -m calibration_core.demo`` rewrites it).
#: Reading them replaces training (and importing scikit-learn), so a first start
#: draws the demo at once.
SHIPPED_OUTPUTS = Path(__file__).resolve().parent / "demo_data" / "demo-seed0.npz"
#: Seed of :data:`SHIPPED_OUTPUTS`; other seeds are trained.
SHIPPED_SEED = 0

#: (data set, class names, labels, model, output kind, out-of-fold outputs (N, K)).
DemoOutput = tuple[str, list[str], np.ndarray, str, str, np.ndarray]


def train_demo_outputs(seed: int) -> list[DemoOutput]:
    """Train the eight demo models and return their out-of-fold outputs.

    Parameters
    ----------
    seed : int
        Seeds the folds and the random models.

    Returns
    -------
    list of tuple
        ``(data set, class names, labels (N,), model, kind, outputs (N, K))`` per
        model, kind one of ``"probs"``, ``"logits"``, ``"log_probs"``.
    """
    from sklearn.datasets import load_breast_cancer, load_digits
    from threadpoolctl import threadpool_limits

    datasets = {
        "breast cancer": load_breast_cancer(),
        "digits": load_digits(),
    }
    result = []
    # Tiny problems: one BLAS thread, as contending threads only slow them down.
    with threadpool_limits(limits=1):
        for data_name, bunch in datasets.items():
            X = np.asarray(bunch.data, dtype=np.float64)
            y = np.asarray(bunch.target, dtype=np.intp)
            class_names = [str(c) for c in bunch.target_names]
            k = len(class_names)
            for model_name, factory in _model_factories(seed).items():
                kind = _OUTPUT_KIND[model_name]
                out = _out_of_fold(factory, X, y, k, seed, kind)
                result.append((data_name, class_names, y, model_name, kind, out))
    return result


def save_demo_outputs(outputs: list[DemoOutput], path: Path) -> None:
    """Write :func:`train_demo_outputs`'s result as a compressed ``.npz``."""
    arrays: dict[str, np.ndarray] = {}
    for i, (data_name, class_names, y, model_name, kind, out) in enumerate(outputs):
        arrays[f"out_{i}"] = out
        arrays[f"labels_{i}"] = y.astype(np.int64)
        arrays[f"meta_{i}"] = np.array([data_name, model_name, kind, *class_names])
    path.parent.mkdir(parents=True, exist_ok=True)
    # numpy >= 2.1's stubs match **arrays against allow_pickle, which numpy 1.24 would
    # store as an array: not passed.
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]


def load_demo_outputs(path: Path) -> list[DemoOutput]:
    """Read outputs written by :func:`save_demo_outputs`."""
    outputs = []
    with np.load(path, allow_pickle=False) as data:
        for i in range(len([k for k in data.files if k.startswith("out_")])):
            data_name, model_name, kind, *class_names = (str(v) for v in data[f"meta_{i}"])
            y = data[f"labels_{i}"].astype(np.intp)
            outputs.append((data_name, class_names, y, model_name, kind, data[f"out_{i}"]))
    return outputs


def _predictions(outputs: list[DemoOutput]) -> tuple[Predictions, ...]:
    result = []
    for data_name, class_names, y, model_name, kind, out in outputs:
        name = f"{data_name} · {model_name}"
        if kind == "probs":
            pred = Predictions.from_probs(
                out, y, class_names=class_names, name=name, renormalize=True
            )
        else:
            pred = Predictions.from_logits(out, y, class_names=class_names, name=name)
        result.append(pred)
    return tuple(result)


@lru_cache(maxsize=4)
def _demo(seed: int) -> tuple[Predictions, ...]:
    if seed == SHIPPED_SEED and SHIPPED_OUTPUTS.is_file():
        try:
            return _predictions(load_demo_outputs(SHIPPED_OUTPUTS))
        except (OSError, ValueError, KeyError):
            pass  # a damaged file: train instead
    return _predictions(train_demo_outputs(seed))


def demo_predictions(seed: int = 0) -> list[Predictions]:
    """The built-in demo predictions (computed once per process and seed).

    Parameters
    ----------
    seed : int
        Seeds the folds and the random models; the same seed gives the same
        predictions.

    Returns
    -------
    list of Predictions
        Eight models: for ``breast cancer`` (K = 2) then ``digits`` (K = 10),
        ``naive Bayes``, ``random forest``, ``logistic regression`` and
        ``MLP``, named ``"<data set> · <model>"``. The logistic regression
        and the MLP carry logits; the others only probabilities.
    """
    return list(_demo(int(seed)))


__all__ = [
    "DEMO_FOLDS",
    "SHIPPED_OUTPUTS",
    "demo_predictions",
    "load_demo_outputs",
    "save_demo_outputs",
    "train_demo_outputs",
]


if __name__ == "__main__":  # python -m calibration_core.demo: rewrite the shipped outputs
    save_demo_outputs(train_demo_outputs(SHIPPED_SEED), SHIPPED_OUTPUTS)
    print(f"wrote {SHIPPED_OUTPUTS}")
