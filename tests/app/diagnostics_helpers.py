"""Shared helpers of the Diagnostics tests (test_diagnostics_*.py): context, demo models, data."""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.config import AppConfig
from app.context import AppContext
from app.session import SessionManager
from app.settings import RawSettings
from app.store.data_store import DataStore

SECRET = "test-secret-key-0123456789abcdef"
R = 200  # resamples (the smallest choice) keep the files fast


def diag_context(root) -> AppContext:
    """An isolated context (config, store, sessions) under ``root``; close ``.store`` after use."""
    config = AppConfig(cache_dir=root, secret_key=SECRET, session_ttl_seconds=3600)
    store = DataStore(root / "store", ttl_seconds=3600)
    return AppContext(config=config, store=store, sessions=SessionManager(SECRET, 3600))


def demo(ctx, name):
    return next(m for m in ctx.store.demo_models() if m.name == name)


def progress(_value):
    pass


def soft_csv(n=500, seed=0, bad=False) -> bytes:
    """A binary problem with 5 annotators per row (h_ columns) and an overconfident model."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 2, size=n)
    y = rng.random(n) < truth
    p = 1 / (1 + np.exp(-1.8 * np.log(truth / (1 - truth))))
    votes = rng.binomial(5, truth)
    frame = pd.DataFrame(
        {
            "p_no": 1 - p,
            "p_yes": p,
            "label": np.where(y, "yes", "no"),
            "h_yes": votes,
            "h_no": 5 - votes,
        }
    )
    if bad:
        frame.loc[3, "h_no"] = -1
    return frame.to_csv(index=False).encode()


def view_kwargs(raw: RawSettings) -> dict:
    return {
        "notion": raw.notion,
        "class_value": raw.class_value,
        "scheme": raw.scheme,
        "n_bins": raw.n_bins,
    }
