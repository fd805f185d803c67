"""Fixtures for the dashboard tests: isolated configs, stores and apps (no browser)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from app.config import AppConfig
from app.context import AppContext
from app.session import SessionManager, new_session_id
from app.store.data_store import DataStore

SECRET = "test-secret-key-0123456789abcdef"


def make_config(cache_dir, **overrides) -> AppConfig:
    base = {"cache_dir": cache_dir, "secret_key": SECRET, "session_ttl_seconds": 3600}
    base.update(overrides)
    return AppConfig(**base)


def make_context(cache_dir, **overrides) -> AppContext:
    config = make_config(cache_dir, **overrides)
    store = DataStore(
        config.cache_dir / "store",
        ttl_seconds=config.session_ttl_seconds,
        max_models_per_session=config.max_models_per_session,
    )
    sessions = SessionManager(SECRET, config.session_ttl_seconds)
    return AppContext(config=config, store=store, sessions=sessions)


@pytest.fixture
def ctx(tmp_path) -> AppContext:
    context = make_context(tmp_path)
    yield context
    context.store.close()


@pytest.fixture
def sid() -> str:
    return new_session_id()


def prediction_csv(n: int = 400, k: int = 3, seed: int = 0, class_names=None, model=None) -> bytes:
    """A small, valid predictions CSV (probability columns p_<class>, a label column)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in p])
    names = class_names or [f"c{j}" for j in range(k)]
    frame = pd.DataFrame({f"p_{c}": p[:, j] for j, c in enumerate(names)})
    frame["label"] = np.asarray(names, dtype=object)[y]
    if model is not None:
        frame.insert(0, "model", model)
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    return buf.getvalue().encode()


@pytest.fixture(scope="session")
def scheduler(dask_cluster) -> str:
    """The address of the session's Dask cluster (``dask_cluster``, tests/conftest.py)."""
    return dask_cluster.scheduler_address
