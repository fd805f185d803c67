"""The verdict of the page's view (app.verdict): pending maps, fitted maps, escaped HTML."""

from __future__ import annotations

import html
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import numpy as np

from app.callbacks.view import render
from app.layout.verdict import verdict_children
from app.report.verdict import verdict_html
from app.services.fit import run_fits
from app.services.view import compute_view
from app.settings import HeldOut, RawSettings
from app.store.data_store import DataStore
from app.store.records import FitRecord
from app.verdict import VERDICT_CAPTION, verdict_headline, verdict_lines, view_verdicts
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
    assert done.verdict == compare_maps(pred, maps=["temperature"], folds=5, seed=0).verdict()
    assert done.verdict.parameters["temperature"].startswith("T = ")
    text = verdict_html([done])
    assert "<h3>&lt;b&gt;m&lt;/b&gt;</h3>" in text and "<b>m</b>" not in text
    assert "temperature beats uncalibrated" in text
    assert verdict_html([]) == ""


def _cards(children) -> list:
    """The verdict cards of :func:`app.layout.verdict.verdict_children`'s output."""
    (cards,) = [c for c in children if getattr(c, "className", "") == "verdict-cards"]
    return cards.children


def _texts(card) -> list[str]:
    return [li.children for li in card.children[1].children]


def test_page_verdict_waits_for_the_fits_then_says_the_reports_words(ctx, sid, monkeypatch):
    import calibration_core.compare as compare

    calls = []
    real = compare.choose_map
    monkeypatch.setattr(compare, "choose_map", lambda *a, **k: calls.append(1) or real(*a, **k))
    pred = overconfident()
    (info,) = ctx.store.add_models(sid, [pred], source="m.csv")
    raw = RawSettings([info.handle], ["temperature", "platt"], "folds", 5)
    (waiting,) = _cards(render(ctx, sid, raw)[6])
    assert waiting.className == "verdict-card verdict-waiting"
    assert waiting.to_plotly_json()["props"]["data-model"] == "<b>m</b>"  # an attribute
    assert _texts(waiting) == [
        "The verdict waits for platt, temperature: fitting… (see the progress bar)."
    ]
    assert calls == []  # nothing computed (nor the comparison imported) while fitting
    run_fits(ctx, sid, [info.handle], ["temperature", "platt"], "folds", 5, 0.5, lambda _: None)
    assert len(calls) == 1  # the fit job computed the verdict and stored it
    children = render(ctx, sid, raw)[6]
    (card,) = _cards(children)
    (item,) = view_verdicts(ctx.store, compute_view(ctx, sid, raw))
    assert card.className == f"verdict-card verdict-{item.state}"
    assert item.state in ("clear", "unclear")
    head = card.children[0].children
    assert [head[0].children, head[1].children] == ["<b>m</b>", verdict_headline(item)]
    assert _texts(card) == verdict_lines(item)  # the page and the report say the same words
    for line in verdict_lines(item):
        assert html.escape(line) in verdict_html([item])
    assert any(t.startswith("temperature: T = ") for t in _texts(card))
    assert children[-1].children == VERDICT_CAPTION
    # One verdict per fitted state, computed by the fit job: the views only read it, and
    # other binnings re-bin only the ECE.
    assert len(calls) == 1
    ten = RawSettings([info.handle], ["temperature", "platt"], "folds", 5, n_bins=10)
    (rebinned,) = view_verdicts(ctx.store, compute_view(ctx, sid, ten))
    assert len(calls) == 1
    assert rebinned.verdict.summary == item.verdict.summary
    winner = item.verdict.winner
    assert rebinned.verdict.confidence_ece[winner] != item.verdict.confidence_ece[winner]


def test_no_model_no_verdict_section(ctx, sid):
    assert render(ctx, sid, RawSettings([], ["temperature"]))[6] == []
    assert verdict_children([]) == []


def test_page_shows_matrix_and_dirichlet_as_one_contender_with_parameter_counts(ctx, sid):
    pred = overconfident(name="m")
    (info,) = ctx.store.add_models(sid, [pred], source="m.csv")
    maps = ["temperature", "matrix", "dirichlet"]
    raw = RawSettings([info.handle], maps, "folds", 5)
    run_fits(ctx, sid, [info.handle], maps, "folds", 5, 0.5, lambda _: None)
    (item,) = view_verdicts(ctx.store, compute_view(ctx, sid, raw))
    verdict = item.verdict
    assert len(verdict.contenders) == 3  # uncalibrated, temperature, matrix = dirichlet
    assert {verdict.winner, verdict.runner_up} != {"matrix", "dirichlet"}
    lines = verdict_lines(item)
    assert lines[1] == verdict.recommendation and lines[1].startswith("Recommended: ")
    counts = lines[2]
    assert counts.startswith("Held-out log-loss (parameters): ")
    assert "matrix = dirichlet" in counts and "(12)" in counts
    assert "temperature " in counts and "(1)" in counts and "uncalibrated " in counts
    assert any(
        line.startswith("matrix = dirichlet: matrix scaling on probabilities") for line in lines
    )
    head = verdict_headline(item)
    assert "dirichlet" not in head or "matrix = dirichlet" in head
    # Dirichlet reused matrix's fit, in-sample losses included: the core's verdict.
    assert verdict == compare_maps(pred, maps=maps, folds=5, seed=0).verdict()


def test_split_mode_verdict_is_the_cores(ctx, sid):
    pred = overconfident(n=800, name="m")
    (info,) = ctx.store.add_models(sid, [pred], source="m.csv")
    maps = ["temperature", "vector"]
    run_fits(ctx, sid, [info.handle], maps, "split", 5, 0.4, lambda _: None)
    raw = RawSettings([info.handle], maps, "split", 5, 0.4)
    (item,) = view_verdicts(ctx.store, compute_view(ctx, sid, raw), wait=True)
    core = compare_maps(pred, maps=maps, test_fraction=0.4, seed=0).verdict()
    assert item.verdict == core
    assert item.verdict.interval == "one train/test split, each map fitted on 480 rows"


def _slow_choose_map(monkeypatch, seconds: float) -> list:
    """Count the core's verdicts, each taking ``seconds`` longer (the race made explicit)."""
    import calibration_core.compare as compare

    calls = []
    real = compare.choose_map

    def slow(*args, **kwargs):
        calls.append(threading.get_ident())
        time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(compare, "choose_map", slow)
    return calls


def test_concurrent_views_compute_a_missing_verdict_once(ctx, sid, monkeypatch):
    pred = overconfident(name="m")
    (info,) = ctx.store.add_models(sid, [pred], source="m.csv")
    run_fits(ctx, sid, [info.handle], ["temperature", "platt"], "folds", 5, 0.5, print)
    calls = _slow_choose_map(monkeypatch, 0.5)
    # Platt unticked: no job ran for this selection, so no verdict is stored for it. Six
    # requests at once, each in a "worker" of its own (a DataStore on the same directory,
    # with its own memo), two per worker thread-wise.
    raw = RawSettings([info.handle], ["temperature"], "folds", 5)
    workers = [DataStore(ctx.store.directory.parent) for _ in range(3)]
    barrier = threading.Barrier(6)

    def view(i):
        store = workers[i % 3]
        result = compute_view(ctx, sid, raw)
        barrier.wait()
        (item,) = view_verdicts(store, result, wait=True)
        return item.verdict

    try:
        with ThreadPoolExecutor(6) as pool:
            verdicts = list(pool.map(view, range(6)))
    finally:
        for store in workers:
            store.close()
    assert len(calls) == 1
    assert all(v == verdicts[0] for v in verdicts)
    assert verdicts[0] == compare_maps(pred, maps=["temperature"], folds=5, seed=0).verdict()


def test_records_of_an_older_version_still_give_a_verdict_with_the_fitting_noise(ctx, sid):
    pred = overconfident(name="m")
    (info,) = ctx.store.add_models(sid, [pred], source="m.csv")
    heldout = HeldOut("folds", 5)
    run_fits(ctx, sid, [info.handle], ["temperature"], "folds", 5, 0.5, lambda _: None)
    # What an older version stored: the parameters in the record, no in-sample losses, no
    # design, no verdict.
    key = DataStore.fit_key(info.handle, "temperature", heldout)
    record = asdict(ctx.store.get_fit(info.handle, "temperature", heldout, params=True))
    del record["train_log_loss"]
    ctx.store.cache.set(key, record)
    ctx.store.cache.delete(f"params:{key}")
    assert ctx.store.get_fit(info.handle, "temperature", heldout) == FitRecord(
        **record, train_log_loss=None
    )
    ctx.store.cache.delete(DataStore.design_key(info.handle, heldout))
    for key in [k for k in ctx.store.cache.iterkeys() if str(k).startswith("result:")]:
        ctx.store.cache.delete(key)
    fresh = DataStore(ctx.store.directory.parent)  # another worker: nothing in its memo
    try:
        raw = RawSettings([info.handle], ["temperature"], "folds", 5)
        (item,) = view_verdicts(fresh, compute_view(ctx, sid, raw), wait=True)
    finally:
        fresh.close()
    verdict = item.verdict
    core = compare_maps(pred, maps=["temperature"], folds=5, seed=0).verdict()
    # The folds are derived again (no refit): the interval still holds the fitting noise,
    # with temperature's parameter count (1) in place of its unknown effective parameters.
    assert verdict.interval == core.interval == "5-fold cross-fitting, each map fitted on 480 rows"
    assert verdict.contender("temperature").effective_parameters == 1.0
    assert verdict.log_loss == core.log_loss and verdict.winner == core.winner
    assert ctx.store.get_design(info.handle, heldout) is not None  # kept for the next one
