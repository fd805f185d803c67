"""The verdict of a view's models (which map to trust), from the store's fits: page and report.

The numbers come from :func:`calibration_core.compare.choose_map` on the
held-out calibrated predictions the page already shows (the uncalibrated
rows compete too), with the fitted maps of the store for the parameters in
words (a dataset's maps: the verdict of their comparison on the sample, kept by
the maps' job, :func:`sample_verdicts`); this module gathers them per model,
caches them, and writes them as
the page's Dash components (:func:`verdict_children`) and the report's HTML
section (:func:`verdict_html`, every text escaped). Both say the same words
(:func:`verdict_lines`).

The paired bootstrap costs about 0.5 s for 1e5 rows (1000 resamples), so each
model's verdict is kept in the store's memo per (model, fitted variants,
held-out scheme, resamples, level): it is computed once after the fits
change, not on every redraw. The confidence ECE reported alongside depends
on the view's binning and is cached apart, so re-binning does not redo the
bootstrap.

The comparison package loads scikit-learn and pandas, which the first page
does not need (``tests/app/test_warmup.py``): it is imported where a verdict
is computed, and the page does not compute one while maps are still fitting.
"""

from __future__ import annotations

import html as html_text
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dash import html

from calibration_core import CalibrationInputError, Predictions, confidence_ece

from .analysis import Variant, ViewResult, variants
from .settings import ViewSettings
from .store.data_store import DataStore

if TYPE_CHECKING:
    from calibration_core.compare import Verdict
    from calibration_core.maps.base import CalibrationMap

__all__ = [
    "VERDICT_CAPTION",
    "ModelVerdict",
    "contenders_line",
    "sample_verdicts",
    "verdict_children",
    "verdict_headline",
    "verdict_html",
    "verdict_lines",
    "view_verdicts",
]

#: How the verdict is decided, under the page's cards and the report's section.
VERDICT_CAPTION = (
    "Best map by held-out log-loss (a proper score; the uncalibrated predictions compete "
    "too, with 0 parameters). Maps whose held-out predictions coincide are one contender "
    "(“matrix = dirichlet”), so the runner-up is the best different map. The difference is "
    "the runner-up's mean per-row log-loss minus the winner's, with a paired-bootstrap "
    "percentile interval over the same held-out rows; “no clear winner” when the interval "
    "covers 0. The recommended map has the fewest parameters among the maps not clearly "
    "worse than the best (the one-standard-error rule); it is the deployable map's default. "
    "The maps are fitted once: the interval does not include the noise of fitting them."
)


@dataclass(frozen=True)
class ModelVerdict:
    """One model's verdict, or why there is none (``message``).

    ``waiting`` names the maps whose fits the verdict waits for (the page
    shows no verdict until every selected map is fitted or failed).
    """

    model: str
    verdict: Verdict | None
    message: str = ""
    waiting: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        """``"clear"``, ``"unclear"`` (no clear winner), ``"waiting"`` or ``"none"``."""
        if self.verdict is not None:
            return "clear" if self.verdict.clear else "unclear"
        return "waiting" if self.waiting else "none"


def _fitted_maps(store: DataStore, handle: str, names, heldout) -> dict[str, list[CalibrationMap]]:
    """Map name to its fitted fold maps, rebuilt from the store's exported parameters."""
    from calibration_core.maps.base import CalibrationMap

    out: dict[str, list[CalibrationMap]] = {}
    for name in names:
        record = store.get_fit(handle, name, heldout)
        if record is not None and record.error is None and record.params:
            out[name] = [CalibrationMap.from_dict(p) for p in record.params]
    return out


def _ece(store: DataStore, variant: Variant, result: ViewResult) -> float:
    """Held-out confidence ECE of a variant in the view's binning (cached)."""
    pred: Predictions = variant.pred
    view = result.view

    def compute() -> float:
        return confidence_ece(pred.probs, pred.labels, n_bins=view.n_bins, scheme=view.scheme)

    return store.memo(("verdict-ece", variant.handle, view.scheme, view.n_bins), compute)


def _model_verdict(
    store: DataStore,
    handle: str,
    ready: list[Variant],
    result: ViewResult,
    level: float | None,
) -> Verdict:
    """The verdict of one model's fitted variants (cached; raises CalibrationInputError)."""
    from calibration_core.compare import choose_map
    from calibration_core.compare.verdict import DEFAULT_LEVEL

    level = DEFAULT_LEVEL if level is None else level
    heldout = result.heldout
    candidates = {v.calibrator: v.pred for v in ready}

    def compute() -> Verdict:
        return choose_map(
            candidates,
            _fitted_maps(store, handle, list(candidates), heldout),
            level=level,
            n_bins=result.view.n_bins,
            scheme=result.view.scheme,
        )

    key = ("verdict", handle, tuple((v.calibrator, v.handle) for v in ready), heldout.key)
    verdict = store.memo((*key, level), compute)
    shown = {v.calibrator: v for v in ready if v.calibrator in verdict.confidence_ece}
    return replace(
        verdict, confidence_ece={name: _ece(store, shown[name], result) for name in shown}
    )


def view_verdicts(
    store: DataStore,
    result: ViewResult,
    *,
    level: float | None = None,
    wait: bool = False,
) -> list[ModelVerdict]:
    """The verdict of every model of ``result`` (an analysis ViewResult).

    Candidates are the uncalibrated predictions and every map whose fit is
    done; maps that failed are left out (and named in the message). Maps
    still pending are left out too, or, with ``wait=True`` (the page), the
    model gets no verdict until they are fitted (the message says so).
    ``level`` defaults to the core's.
    """
    out = []
    for mv in result.models:
        found = variants(store, mv.info, result.maps, result.heldout)
        pending = [v for v in found if v.pending]
        if wait and pending:
            names = ", ".join(v.calibrator for v in pending)
            message = f"The verdict waits for {names}: {pending[0].message}."
            out.append(
                ModelVerdict(mv.info.name, None, message, tuple(v.calibrator for v in pending))
            )
            continue
        ready = [v for v in found if v.pred is not None]
        missing = [v.calibrator for v in found if v.pred is None]
        note = f"not compared (pending or failed): {', '.join(missing)}" if missing else ""
        try:
            verdict = _model_verdict(store, mv.info.handle, ready, result, level)
        except CalibrationInputError as exc:
            out.append(ModelVerdict(mv.info.name, None, str(exc)))
            continue
        out.append(ModelVerdict(mv.info.name, verdict, note))
    return out


def sample_verdicts(entry: dict, view: ViewSettings) -> list[ModelVerdict]:
    """The verdict of each model's maps on its dataset sample, as the page shows it.

    ``entry``: the dataset's maps (:meth:`app.datasets.Datasets.cached_maps`),
    whose job kept each model's ``verdict``: the sample comparison's
    :meth:`~calibration_core.compare.Comparison.verdict` at the core's
    resamples and level, as ``evaluate --engine dask --maps`` computes it
    (the bootstrap runs once there, not on a redraw). The confidence ECE
    alongside is re-binned at the view's bins, as for uploads. Each message
    says which rows it was computed on; models kept without a verdict (an
    older fit) are left out.
    """
    out = []
    for model, found in entry["models"].items():
        verdict = found.get("verdict")
        if verdict is None:
            continue
        calibrated, info = found["comparison"].calibrated, found["info"]
        ece = {
            name: confidence_ece(
                calibrated[name].probs,
                calibrated[name].labels,
                n_bins=view.n_bins,
                scheme=view.scheme,
            )
            for name in verdict.confidence_ece
        }
        message = (
            f"Computed on the sample: {info.rows:,} rows of {model} drawn uniformly "
            f"(seed {info.seed}), every row held out ({entry['heldout']})."
        )
        failed = found["comparison"].errors
        if failed:
            message += f" Not compared (failed): {', '.join(failed)}."
        out.append(ModelVerdict(model, replace(verdict, confidence_ece=ece), message))
    return out


def verdict_headline(item: ModelVerdict) -> str:
    """The verdict in a few words, e.g. "clear winner: temperature" or "no clear winner".

    The recommended map follows when it is not the winner
    ("no clear winner (best: vector); recommended: temperature").
    """
    verdict = item.verdict
    if verdict is None:
        return "waiting for the fits" if item.waiting else "no verdict"
    winner = verdict.contender(verdict.winner)
    best = verdict.winner if winner is None else winner.label
    if verdict.runner_up is None:
        head = f"only candidate: {best}"
    elif verdict.clear:
        head = f"clear winner: {best}"
    else:
        head = f"no clear winner (best: {best})"
    if winner is not None and verdict.recommended not in winner.names:
        head += f"; recommended: {verdict.contender(verdict.recommended).label}"
    return head


def contenders_line(verdict: Verdict) -> str:
    """Every contender with its held-out log-loss and parameter count, best first."""
    parts = [
        f"{c.label} {c.log_loss:.4f} ({'?' if c.n_parameters is None else f'{c.n_parameters:,}'})"
        for c in verdict.contenders
    ]
    return f"Held-out log-loss (parameters): {', '.join(parts)}."


def verdict_lines(item: ModelVerdict) -> list[str]:
    """The sentences of one model's verdict.

    Summary, recommendation, contenders with their parameter counts, ECE,
    parameters in words, why merged maps coincide, then the notes.
    """
    lines = []
    verdict = item.verdict
    if verdict is not None:
        lines += [verdict.summary, verdict.recommendation, contenders_line(verdict)]
        ece = ", ".join(f"{name} {value:.4f}" for name, value in verdict.confidence_ece.items())
        lines.append(f"Held-out confidence ECE: {ece}.")
        lines += [f"{name}: {words}." for name, words in verdict.parameters.items()]
        lines += verdict.same_model_notes
    if item.message:
        lines.append(item.message)
    return lines


def verdict_children(verdicts: list[ModelVerdict], title: str = "Verdict") -> list:
    """The page's verdict: a heading, one card per model and the caption (no raw HTML).

    Each card is ``div.verdict-card.verdict-<state>`` with ``data-model`` set
    to the model's name (states: :attr:`ModelVerdict.state`). ``title``: the
    heading (a dataset's says it is the sample's).
    """
    if not verdicts:
        return []
    cards = [
        html.Div(
            [
                html.Div(
                    [
                        html.H3(item.model, className="verdict-model"),
                        html.Span(verdict_headline(item), className="verdict-badge"),
                    ],
                    className="verdict-head",
                ),
                html.Ul([html.Li(line) for line in verdict_lines(item)], className="verdict-lines"),
            ],
            className=f"verdict-card verdict-{item.state}",
            **{"data-model": item.model},
        )
        for item in verdicts
    ]
    return [
        html.H2(title, className="section-title"),
        html.Div(cards, className="verdict-cards"),
        html.P(VERDICT_CAPTION, className="caption"),
    ]


def verdict_html(verdicts: list[ModelVerdict]) -> str:
    """The report's "Verdict" section: one block per model, every text escaped."""
    if not verdicts:
        return ""
    parts = ["<h2>Verdict</h2>"]
    for item in verdicts:
        body = "".join(f"<li>{html_text.escape(line)}</li>" for line in verdict_lines(item))
        parts.append(
            f"<h3>{html_text.escape(item.model)}</h3>"
            f'<p class="verdict-headline">{html_text.escape(verdict_headline(item))}</p>'
            f'<ul class="verdict">{body}</ul>'
        )
    parts.append(f'<p class="caption">{html_text.escape(VERDICT_CAPTION)}</p>')
    return "".join(parts)
