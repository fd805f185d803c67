"""app.notebook's figures: the core's numbers, and the very figure the page draws."""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.utils import PlotlyJSONEncoder
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

import calibration_core as cc
from app.callbacks.view import graphs
from app.notebook import ReliabilityDisplay, as_models, reliability_diagram
from app.services.fit import run_fits
from app.services.view import compute_view
from app.settings import RawSettings
from calibration_core import CalibrationInputError, Predictions
from calibration_core.bands import consistency_band


def sample(n: int = 1500, k: int = 3, seed: int = 0) -> Predictions:
    """Overconfident predictions of a K-class model."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.6), size=n)
    y = np.array([rng.choice(k, p=(row + 0.3) / (1 + 0.3 * k)) for row in p])
    return Predictions.from_probs(p, y, name="sample model")


def traces(fig: go.Figure, **match) -> list:
    """Traces of the first panel (axes x/y) whose properties equal ``match``."""
    out = []
    for trace in fig.data:
        if trace.xaxis not in (None, "x"):
            continue
        if all(getattr(trace, key) == value for key, value in match.items()):
            out.append(trace)
    return out


def points_and_band(fig: go.Figure):
    (points,) = traces(fig, mode="lines+markers")
    (band,) = traces(fig, fill="toself")
    m = len(band.x) // 2
    return points, np.asarray(band.x[:m]), np.asarray(band.y[:m]), np.asarray(band.y[m:])[::-1]


@pytest.mark.parametrize("scheme", ["width", "frequency"])
@pytest.mark.parametrize("method", ["wilson", "clopper-pearson", "jeffreys"])
def test_points_at_bin_means_and_binomial_band_are_the_cores(scheme, method):
    pred = sample()
    fig = reliability_diagram(pred, n_bins=12, scheme=scheme, band=method, level=0.9)
    curve = cc.reliability_curve(pred.confidence, pred.correct, n_bins=12, scheme=scheme)
    keep = curve.count > 0
    points, band_x, upper, lower = points_and_band(fig)
    np.testing.assert_allclose(points.x, curve.x[keep], rtol=0, atol=1e-12)
    np.testing.assert_allclose(points.y, curve.y[keep], rtol=0, atol=1e-12)
    lo, hi = cc.binomial_band(curve, method=method, level=0.9)
    np.testing.assert_allclose(band_x, curve.x[keep], atol=1e-12)
    np.testing.assert_allclose(lower, lo[keep], atol=1e-12)
    np.testing.assert_allclose(upper, hi[keep], atol=1e-12)


def test_consistency_band_is_the_cores():
    pred = sample(seed=3)
    fig = reliability_diagram(pred, n_bins=10, band="consistency")
    curve = cc.reliability_curve(pred.confidence, pred.correct, n_bins=10)
    keep = curve.count > 0
    _points, _x, upper, lower = points_and_band(fig)
    lo, hi = consistency_band(pred.confidence, pred.correct, n_bins=10, seed=0)
    np.testing.assert_allclose(lower, lo[keep], atol=1e-12)
    np.testing.assert_allclose(upper, hi[keep], atol=1e-12)


def test_one_class_vs_rest_and_binary_notions_bin_the_cores_scores():
    pred = sample(k=2, seed=5)
    fig = reliability_diagram(pred, notion="binary", band="none")
    curve = cc.reliability_curve(pred.probs[:, 1], pred.labels == 1, n_bins=15)
    (points,) = traces(fig, mode="lines+markers")
    np.testing.assert_allclose(points.y, curve.y[curve.count > 0], atol=1e-12)
    fig = reliability_diagram(pred, notion="class", class_name="0", band="none")
    curve = cc.reliability_curve(pred.probs[:, 0], pred.labels == 0, n_bins=15)
    (points,) = traces(fig, mode="lines+markers")
    np.testing.assert_allclose(points.x, curve.x[curve.count > 0], atol=1e-12)


def decoded(value):
    """JSON values with Plotly's base64 arrays (``{"bdata", "dtype"}``) as lists, NaN as None."""
    if isinstance(value, dict):
        if set(value) >= {"bdata", "dtype"}:
            raw = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
            shape = value.get("shape")
            if shape is not None:
                raw = raw.reshape([int(n) for n in str(shape).split(",")])
            return decoded(raw.tolist())
        return {key: decoded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decoded(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return None  # what Dash's JSON encoder sends for NaN
    return value


def plain(figure) -> dict:
    """A figure (dict or go.Figure) as plain JSON values, for comparison."""
    if isinstance(figure, go.Figure):
        figure = figure.to_plotly_json()
    return decoded(json.loads(json.dumps(figure, cls=PlotlyJSONEncoder, sort_keys=True)))


@pytest.mark.parametrize(
    "settings",
    [
        {"maps": ["temperature", "isotonic"], "band": "wilson"},
        {"maps": ["histogram"], "band": "consistency", "scheme": "frequency", "n_bins": 8},
        {"maps": [], "kind": "smooth"},
        {"maps": ["temperature"], "kind": "cumulative"},
        {"maps": [], "notion": "class", "class_name": "c1"},
    ],
)
def test_the_figure_is_the_one_the_page_draws_for_an_upload(ctx, sid, settings):
    """The page's path: an upload in a session, the fit job's function, the view callback."""
    pred = sample(k=3, seed=7)
    pred = Predictions.from_probs(pred.probs, pred.labels, class_names=["c0", "c1", "c2"])
    pred = as_models({"sample model": pred})[0]
    handles = [info.handle for info in ctx.store.add_models(sid, [pred], source="test.csv")]
    maps = settings["maps"]
    run_fits(ctx, sid, handles, maps, "folds", 5, 0.5, lambda _value: None)
    raw = RawSettings(
        handles,
        maps,
        notion=settings.get("notion", "confidence"),
        class_value=settings.get("class_name"),
        scheme=settings.get("scheme", "width"),
        n_bins=settings.get("n_bins", 15),
        band=settings.get("band", "wilson"),
        kind=settings.get("kind", "binned"),
    )
    (graph,) = graphs(ctx, compute_view(ctx, sid, raw))
    fig = reliability_diagram(pred, **settings)
    assert plain(fig) == plain(graph.figure)


def test_display_from_estimator_and_from_predictions_draw_the_same_diagram():
    X, y = load_breast_cancer(return_X_y=True)
    clf = LogisticRegression(max_iter=5000).fit(X[::2], y[::2])
    shown = ReliabilityDisplay.from_estimator(clf, X[1::2], y[1::2], notion="binary")
    direct = ReliabilityDisplay.from_predictions(
        y[1::2], clf.predict_proba(X[1::2]), name="LogisticRegression", notion="binary"
    )
    assert plain(shown.figure_) == plain(direct.figure_)
    assert shown.plot(n_bins=5) is shown
    (points,) = traces(shown.figure_, mode="lines+markers")
    assert len(points.x) <= 5
    assert shown._repr_mimebundle_() == shown.figure_._repr_mimebundle_()


def test_estimator_labels_are_matched_to_its_classes():
    X, y = load_breast_cancer(return_X_y=True)
    names = np.where(y == 1, "benign", "malignant")
    clf = LogisticRegression(max_iter=5000).fit(X, names)
    pred = as_models({"lr": clf}, (X, names))[0]
    assert pred.class_names == ("benign", "malignant")
    np.testing.assert_array_equal(pred.labels, (names == "malignant").astype(int))
    with pytest.raises(CalibrationInputError, match="was not fitted on"):
        as_models({"lr": clf}, (X, np.where(y == 1, "benign", "other")))


def test_bad_input_gets_a_specific_message():
    with pytest.raises(CalibrationInputError, match="estimator: pass the data"):
        as_models({"lr": LogisticRegression()})
    with pytest.raises(CalibrationInputError, match="number of bins"):
        reliability_diagram(sample(), n_bins=1)
    with pytest.raises(CalibrationInputError, match="unknown calibration map"):
        reliability_diagram(sample(), maps=["nonsense"])
    with pytest.raises(CalibrationInputError, match="pass \\(probs, labels\\)"):
        as_models({"m": "not a model"})
