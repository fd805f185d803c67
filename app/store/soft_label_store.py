"""Soft labels (``h_<class>`` columns) of uploaded models, kept next to their predictions.

At upload, :func:`read_upload_soft_labels` reads the file's soft-label
columns with :func:`calibration_core.io.soft_labels.load_soft_labels` (a file
without any costs one header read), and :meth:`DataStore.add_models` stores
each model's (N, K) array with the model, as a raw ``.npy`` file in the disk
store under ``soft:<handle>`` (no pickle; it counts against the session's
quota and expires with the session like the model).
The diagnostics read it back with :func:`get_soft_labels`.
"""

from __future__ import annotations

import io
import os

import numpy as np

from calibration_core import Predictions

from .data_store import DataStore, soft_key


def read_upload_soft_labels(
    stream, file_name: str, preds: list[Predictions], max_decoded_bytes: int | None = None
) -> dict:
    """Soft labels of an uploaded file, by model name (empty when it has none).

    Parameters
    ----------
    stream : binary file-like
        The uploaded file (rewound here).
    file_name : str
    preds : list of Predictions
        What :func:`calibration_core.io.load_predictions` returned for the file.
    max_decoded_bytes : int, optional
        Bound of the decoded soft-label columns (as for the predictions).

    Raises
    ------
    CalibrationInputError
        Soft-label columns that are present but unusable.
    """
    if not preds:
        return {}
    stream.seek(0)
    from calibration_core.io.soft_labels import load_soft_labels  # pandas: on first upload

    soft = load_soft_labels(
        stream,
        file_name=file_name,
        class_names=preds[0].class_names,
        max_decoded_bytes=max_decoded_bytes,
    )
    return {p.name: soft[p.name] for p in preds if p.name in soft}


def has_soft_labels(store: DataStore, handle: str) -> bool:
    """Whether soft labels are stored for a model (without reading them)."""
    return soft_key(handle) in store.cache


def get_soft_labels(store: DataStore, handle: str) -> np.ndarray | None:
    """The soft labels stored for a model, shape (N, K), or None (none given, or expired).

    Memory-mapped when the disk store keeps them as a file (anything above a
    few kB), as :meth:`DataStore.predictions` does with its arrays.
    """
    key = soft_key(handle)
    reader = store.cache.get(key, default=None, read=True)
    if reader is None:
        return None
    with reader:
        path = getattr(reader, "name", None)
        if isinstance(path, str) and os.path.isfile(path):
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        else:
            arr = np.load(io.BytesIO(reader.read()), allow_pickle=False)
    store.cache.touch(key, expire=store.ttl)
    return arr
