"""The verdict of the page's view (app.verdict): pending maps, fitted maps, escaped HTML."""

from __future__ import annotations

import numpy as np

from app.callbacks.fit import run_fits
from app.callbacks.view import compute_view
from app.settings import RawSettings
from app.verdict import verdict_html, view_verdicts
from calibration_core import Predictions, compare_maps


def overconfident(n=600, seed=0, name="<b>m</b>") -> Predictions:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 3))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    q = np.exp(3 * z)
    return Predictions.from_probs(q / q.sum(axis=1, keepdims=True), y, name=name)


def test_view_verdict_follows_the_fits(ctx, sid):
    pred = overconfident()
    (info,) = ctx.store.add_models(sid, [pred], source="m.csv")
    raw = RawSettings([info.handle], ["temperature"], "folds", 5)
    (pending,) = view_verdicts(ctx.store, compute_view(ctx, sid, raw))
    assert pending.verdict.winner == "uncalibrated" and pending.verdict.runner_up is None
    assert "not compared (pending or failed): temperature" in pending.message
    run_fits(ctx, sid, [info.handle], ["temperature"], "folds", 5, 0.5, lambda _: None)
    (done,) = view_verdicts(ctx.store, compute_view(ctx, sid, raw))
    assert done.message == ""
    # The core's verdict of the same rows, folds and seed (the page's seed is 0).
    assert done.verdict == compare_maps(pred, ["temperature"], folds=5, seed=0).verdict()
    assert done.verdict.parameters["temperature"].startswith("T = ")
    text = verdict_html([done])
    assert "<h3>&lt;b&gt;m&lt;/b&gt;</h3>" in text and "<b>m</b>" not in text
    assert "temperature beats uncalibrated" in text
    assert verdict_html([]) == ""
