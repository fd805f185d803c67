"""Plotly figures of the Diagnostics section: plain functions from core results to dicts.

* :func:`sensitivity_figure`: ECE against the number of bins, one line per
  calibrator (colour) and scheme (solid: equal width, dotted: equal
  frequency), the view's bin count marked;
* :func:`null_figure`: the resampling test's null distribution of each
  calibrator as a histogram, the observed value as a vertical line;
* :func:`cost_figure`: expected cost against the threshold of each
  calibrator, the cost-sensitive (and prior-shifted) threshold marked.

Figures are ``{"data", "layout"}`` dicts (what ``dcc.Graph`` takes; wrap in
``go.Figure`` for the report). Every user-supplied name is escaped with
:func:`app.figures.plot_text`. Colours: Okabe-Ito, the uncalibrated
predictions in vermillion as in the reliability diagrams.
"""

from __future__ import annotations

import math

import numpy as np

from ..analysis import UNCALIBRATED
from ..diagnostics.cards import DecisionView, shifted_threshold
from ..diagnostics.resampling import ResamplingRow
from ..diagnostics.tables import format_p
from ..diagnostics.target import MEASURE_LABELS
from .common import FONT, OKABE_ITO, UNCALIBRATED_COLOUR, plot_text, plotly_template

#: Colours of the fitted calibrators, in the order of the maps.
MAP_COLOURS = (
    OKABE_ITO["blue"],
    OKABE_ITO["green"],
    OKABE_ITO["purple"],
    OKABE_ITO["orange"],
    OKABE_ITO["sky_blue"],
    OKABE_ITO["black"],
    "#8c6d31",
    "#7f7f7f",
)
NULL_BINS = 40
#: Cost curves are thinned to about this many points per calibrator.
MAX_CURVE_POINTS = 1500
HEIGHT = 340


def calibrator_colours(names) -> dict[str, str]:
    """Colour of each calibrator: vermillion for the uncalibrated, then Okabe-Ito."""
    out, i = {}, 0
    for name in names:
        if name == UNCALIBRATED:
            out[name] = UNCALIBRATED_COLOUR
        else:
            out[name] = MAP_COLOURS[i % len(MAP_COLOURS)]
            i += 1
    return out


def _layout(title: str, subtitle: str, height: int = HEIGHT, **extra) -> dict:
    layout = {
        "title": {
            "text": plot_text(title),
            "subtitle": {"text": plot_text(subtitle)},
            "x": 0.0,
            "xanchor": "left",
            "xref": "container",
            "pad": {"l": 10},
            "font": {"size": 14},
        },
        "height": height,
        "margin": {"l": 64, "r": 16, "t": 92, "b": 52},
        "template": plotly_template(),
        "font": {"family": FONT, "size": 12, "color": "#1f2328"},
        # A vertical legend right of the plot never collides with the title and subtitle.
        "legend": {
            "orientation": "v",
            "x": 1.02,
            "xanchor": "left",
            "y": 1.0,
            "yanchor": "top",
            "font": {"size": 11},
        },
        "hoverlabel": {"font": {"family": FONT}},
    }
    layout.update(extra)
    return layout


def message_figure(message: str, height: int = 160) -> dict:
    """A blank figure carrying a message."""
    return {
        "data": [],
        "layout": {
            "annotations": [
                {
                    "text": plot_text(message),
                    "x": 0.5,
                    "y": 0.5,
                    "xref": "paper",
                    "yref": "paper",
                    "showarrow": False,
                    "font": {"size": 13, "color": "#444444"},
                }
            ],
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
            "height": height,
            "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
            "template": plotly_template(),
        },
    }


# ----------------------------------------------------------------- sensitivity
def sensitivity_figure(curves, n_bins: int, notion_label: str, model_name: str) -> dict:
    """ECE against the number of bins for every calibrator and both schemes.

    Parameters
    ----------
    curves : list of (calibrator, EceSensitivity)
    n_bins : int
        The view's bin count (a vertical line).
    notion_label, model_name : str
        For the title (escaped here).
    """
    if not curves:
        return message_figure("No predictions to analyse yet.")
    colours = calibrator_colours([name for name, _ in curves])
    data = []
    top = 0.0
    for name, sens in curves:
        for scheme, dash, label in (
            ("width", "solid", "equal width"),
            ("frequency", "dot", "equal frequency"),
        ):
            y = sens.by_scheme(scheme)
            top = max(top, float(np.max(y)))
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": sens.n_bins,
                    "y": y,
                    "name": f"{plot_text(name)} · {label}",
                    "legendgroup": plot_text(name),
                    "line": {"color": colours[name], "dash": dash, "width": 1.8},
                    "hovertemplate": f"{plot_text(name)} · {label}<br>%{{x}} bins: ECE %{{y:.4f}}"
                    "<extra></extra>",
                }
            )
    spread = max(max(float(s.spread) for _, s in curves), 0.0)
    layout = _layout(
        f"ECE against the number of bins · {model_name}",
        f"{notion_label} · solid: equal width, dotted: equal frequency · dashed line: the view's "
        f"{n_bins} bins · largest spread {spread:.4f}",
        xaxis={"title": {"text": "number of bins"}, "range": [1, 101], "dtick": 10, "tick0": 0},
        yaxis={"title": {"text": "ECE"}, "rangemode": "tozero", "range": [0, top * 1.08 or 1.0]},
        shapes=[
            {
                "type": "line",
                "x0": n_bins,
                "x1": n_bins,
                "y0": 0,
                "y1": 1,
                "yref": "paper",
                "line": {"color": "#555555", "dash": "dash", "width": 1},
            }
        ],
    )
    return {"data": data, "layout": layout}


# ---------------------------------------------------------------- null figure
def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 3) or 1
    return math.ceil(n / cols) or 1, cols


def _null_traces(res, suffix: str, colour: str, label: str) -> tuple[list[dict], float]:
    """The null histogram and the observed value's line of one panel, and the y top."""
    null = np.asarray(res.null, dtype=np.float64)
    counts, edges = np.histogram(null, bins=NULL_BINS)
    ymax = float(counts.max()) * 1.1 or 1.0
    bars = {
        "type": "bar",
        "x": (edges[:-1] + edges[1:]) / 2,
        "y": counts,
        "width": np.diff(edges),
        "xaxis": f"x{suffix}",
        "yaxis": f"y{suffix}",
        "marker": {"color": "#9aa5b1", "line": {"color": "white", "width": 0.4}},
        "name": "null distribution",
        "showlegend": False,
        "customdata": np.column_stack([edges[:-1], edges[1:]]),
        "hovertemplate": "[%{customdata[0]:.4f}, %{customdata[1]:.4f}]: %{y} resamples"
        "<extra></extra>",
    }
    observed = {
        "type": "scatter",
        "mode": "lines",
        "x": [res.observed, res.observed],
        "y": [0, ymax],
        "xaxis": f"x{suffix}",
        "yaxis": f"y{suffix}",
        "line": {"color": colour, "width": 2.5},
        "name": "observed",
        "showlegend": False,
        "hovertemplate": f"observed {label} %{{x:.4f}}<extra></extra>",
    }
    return [bars, observed], ymax


def _null_axes(res, suffix: str, x_dom, y_dom, ymax: float, titles: tuple[str, str]) -> dict:
    """One panel's axes: x spans the null draws and the observed value (5 % padding)."""
    lo = min(float(np.min(res.null)), res.observed)
    hi = max(float(np.max(res.null)), res.observed)
    pad = (hi - lo) * 0.05 or max(abs(hi), 1e-6) * 0.05
    return {
        f"xaxis{suffix}": {
            "domain": x_dom,
            "anchor": f"y{suffix}",
            "range": [lo - pad, hi + pad],
            "title": {"text": titles[0]},
            "nticks": 5,
        },
        f"yaxis{suffix}": {
            "domain": y_dom,
            "anchor": f"x{suffix}",
            "range": [0, ymax],
            "title": {"text": titles[1]},
            "nticks": 4,
        },
    }


def _null_title(row: ResamplingRow, x_dom, y_top: float) -> dict:
    """The panel's title: the calibrator and its p-value."""
    return {
        "text": f"{plot_text(row.calibrator)} · p = {format_p(row.result.p_value)}",
        "x": (x_dom[0] + x_dom[1]) / 2,
        "y": y_top,
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "bottom",
        "yshift": 2,
        "showarrow": False,
        "font": {"size": 12},
    }


def null_figure(rows: list[ResamplingRow], measure: str, model_name: str) -> dict:
    """Null distribution (histogram) and observed value of each calibrator's test.

    Panel ``i`` uses axes ``x{i+1}``/``y{i+1}`` (``x``/``y`` for the first);
    its title (an annotation) names the calibrator and the p-value.
    """
    shown = [r for r in rows if r.result is not None]
    if not shown:
        return message_figure("Press “Run test” to draw the null distributions.")
    n_rows, n_cols = _grid(len(shown))
    gap_x, gap_y = 0.06, 0.16
    width = (1 - gap_x * (n_cols - 1)) / n_cols
    height = (1 - gap_y * (n_rows - 1)) / n_rows
    colours = calibrator_colours([r.calibrator for r in rows])
    data, layout_axes, annotations = [], {}, []
    label = MEASURE_LABELS.get(measure, measure)
    for i, row in enumerate(shown):
        r, c = divmod(i, n_cols)
        x_dom = [c * (width + gap_x), c * (width + gap_x) + width]
        y_top = 1 - r * (height + gap_y)
        suffix = "" if i == 0 else str(i + 1)
        traces, ymax = _null_traces(row.result, suffix, colours[row.calibrator], label)
        data += traces
        titles = (label if r == n_rows - 1 else "", "resamples" if c == 0 else "")
        layout_axes.update(
            _null_axes(row.result, suffix, x_dom, [y_top - height, y_top], ymax, titles)
        )
        annotations.append(_null_title(row, x_dom, y_top))
    first = shown[0].result
    binning = f" · {first.n_bins} equal-{first.scheme} bins" if first.n_bins else ""
    layout = _layout(
        f"Resampling test of calibration · {model_name}",
        f"{label}{binning} · bars: {first.n_resamples:,} label sets drawn from the "
        f"predictions (seed {first.seed}) · line: the observed value",
        height=int(130 + 230 * n_rows),
        margin={"l": 64, "r": 16, "t": 104, "b": 52},
        annotations=annotations,
        shapes=[],
        bargap=0,
        **layout_axes,
    )
    return {"data": data, "layout": layout}


# ----------------------------------------------------------------- cost curve
def _thin(x: np.ndarray, y: np.ndarray, limit: int = MAX_CURVE_POINTS):
    """At most about ``limit`` points of a step curve, keeping both ends and the minimum."""
    if x.shape[0] <= limit:
        return x, y
    keep = np.unique(
        np.concatenate(
            [np.linspace(0, x.shape[0] - 1, limit).astype(np.int64), [int(np.argmin(y))]]
        )
    )
    return x[keep], y[keep]


def cost_figure(view: DecisionView, model_name: str) -> dict:
    """Expected cost against the threshold for every calibrator, thresholds marked."""
    colours = calibrator_colours([name for name, _, _ in view.curves])
    data = []
    for name, thresholds, costs in view.curves:
        x, y = _thin(np.minimum(thresholds, 1.0), costs)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": x,
                "y": y,
                "line": {"color": colours[name], "width": 1.8, "shape": "hv"},
                "name": plot_text(name),
                "hovertemplate": f"{plot_text(name)}<br>threshold %{{x:.4f}}: cost %{{y:.4f}}"
                "<extra></extra>",
            }
        )
    used = view.comparison.threshold
    shapes = [
        {
            "type": "line",
            "x0": used,
            "x1": used,
            "y0": 0,
            "y1": 1,
            "yref": "paper",
            "line": {"color": "#222222", "dash": "dash", "width": 1.2},
        }
    ]
    shifted = shifted_threshold(view)
    where = f"threshold c = {view.cost_threshold:.4f}"
    if shifted is not None:
        where = (
            f"threshold c = {view.cost_threshold:.4f} moved to t = {shifted:.4f} for a positive "
            f"rate of {view.deploy_prior:.3g} (from {view.train_prior:.3g})"
        )
        shapes.append(
            {
                "type": "line",
                "x0": view.cost_threshold,
                "x1": view.cost_threshold,
                "y0": 0,
                "y1": 1,
                "yref": "paper",
                "line": {"color": "#999999", "dash": "dot", "width": 1},
            }
        )
    cmp = view.comparison
    layout = _layout(
        f"Expected cost against the threshold · {model_name}",
        f"C(+|−) = {cmp.cost_fp:g}, C(−|+) = {cmp.cost_fn:g} · dashed: {where}",
        xaxis={"title": {"text": "threshold on P(positive)"}, "range": [0, 1], "dtick": 0.1},
        yaxis={"title": {"text": "expected cost per row"}, "rangemode": "tozero"},
        shapes=shapes,
    )
    return {"data": data, "layout": layout}
