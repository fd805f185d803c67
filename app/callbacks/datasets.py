"""The server-side datasets (``DATASETS_DIR``): the job of a picked dataset and its view.

* The job (:func:`run_dataset_job`, registered with the Diagnostics section's job
  wiring: progress bar, cancel button) starts when a dataset is picked or
  "Compute" is pressed; it summarises the dataset once per session and keeps the
  statistics (:class:`app.datasets.Datasets`): on the Dask cluster as a
  :func:`~app.job_limits.cluster_job` (no limit of the web side), or without a
  scheduler streamed in the job's process under the job limits of uploads.
* The view (:func:`dataset_panel`) follows the picked dataset, the job's
  record and the view's settings, and draws from the kept statistics only
  (:mod:`app.dataset_view`): a change of bin count, notion or band never
  touches the data.
* "Fit maps on a sample" (:func:`run_maps_job`, another job of the same kind) cross-fits
  the page's calibration maps on a reproducible sample of each model; its view
  (:func:`maps_panel`) draws the kept held-out predictions for the page's
  binning (either scheme), notion, band and diagram kind, and the verdict
  of each model's sample (:func:`app.verdict.sample_verdicts`).
* Diagnostics cards (:mod:`app.dataset_diagnostics`): the uploads' cards, on
  all rows under the dataset's view where the cached statistics give them
  exactly, on the sample under the maps' view otherwise, each saying which.
* "Per group and over time" of the dataset: :mod:`app.callbacks.groups.dataset`.
"""

from __future__ import annotations

import time
from typing import Any

from dash import Input, Output, State, dcc, html

from calibration_core import CalibrationInputError

from .. import ids
from ..context import AppContext
from ..dataset_diagnostics import DatasetCard, sample_cards, whole_cards
from ..dataset_view import dataset_view, maps_view
from ..diagnostics.beyond import MEASURES
from ..figures.common import graph_config
from ..layout.diagnostics import GRAPH_CONFIG, table_component
from ..layout.verdict import verdict_children
from ..metrics_table import PARTS
from ..settings import RawSettings, SettingsError
from .controls import setting_inputs
from .diagnostics.wiring import JobIds, failure_message, note, register_job, run_job
from .groups import dataset as group_dataset

#: The view's settings a dataset follows (not the models, the maps or the held-out scheme).
DATASET_FIELDS = (
    "notion",
    "class_value",
    "scheme",
    "n_bins",
    "band",
    "level",
    "kind",
    "score_parts",
)
NOT_COMPUTED = (
    "Dataset {name}: not computed yet. Picking it starts the computation (see the progress "
    "bar under the picker); after a cancel or an error, press Compute."
)


def run_dataset_job(
    ctx: AppContext, sid: str | None, _handle, raw, name: Any, set_progress
) -> dict:
    """Summarise the picked dataset, once per session (the job's body).

    With equal-frequency bins picked, their exact statistics at the page's bin
    count are computed too (four more passes, once per bin count).
    """

    def work(progress) -> None:
        if name is None:
            return
        ctx.datasets.compute(sid, name, progress)
        view = None if raw is None else frequency_view(raw)
        if view is not None:
            ctx.datasets.compute_frequency(sid, name, view.n_bins, progress)

    return run_job(work, set_progress)


NO_MAPS = (
    "Dataset {name}: no maps fitted yet. Pick maps under Calibration maps and press Fit maps "
    "on a sample: they are cross-fitted on a reproducible sample of each model."
)


def run_maps_job(ctx: AppContext, sid: str | None, _handle, raw, name: Any, set_progress) -> dict:
    """Cross-fit the page's maps on a sample of the picked dataset (the job's body)."""

    def work(progress) -> None:
        if name is None:
            raise CalibrationInputError("pick a dataset first.")
        try:
            _, maps, heldout, _ = raw.parse()
        except SettingsError as exc:
            raise CalibrationInputError(str(exc)) from None
        ctx.datasets.fit_maps(sid, name, maps, heldout, progress)

    return run_job(work, set_progress)


def maps_table(rows: list[dict], columns: dict[str, str]) -> html.Table:
    """One row per model and map: held-out metrics on the sample, or the map's error."""
    head = html.Tr(
        [
            html.Th("model"),
            html.Th("map"),
            *(html.Th(h, title=PARTS.get(f)) for f, h in columns.items()),
        ]
    )
    body = []
    for row in rows:
        cells = (
            [html.Td(f"not fitted: {row['error']}", colSpan=len(columns))]
            if row["error"]
            else [html.Td(f"{row[c]:.4f}") for c in columns]
        )
        body.append(html.Tr([html.Td(row["model"]), html.Td(row["map"]), *cells]))
    return html.Table([html.Thead(head), html.Tbody(body)], className="dataset-metrics")


#: Columns of a dataset's measures table: (header key in MEASURES, value, p-value, format).
SAMPLE_MEASURE_COLUMNS = (
    ("smooth_ece", "smooth_ece", None, ".4f"),
    ("ks", "ks_error", "ks_p_value", ".4f"),
    ("spiegelhalter", "spiegelhalter_z", "spiegelhalter_p_value", ".2f"),
    ("tace", "tace", None, ".4f"),
    ("skce", "skce", "skce_p_value", ".3g"),
    ("slope", "slope", None, ".3f"),
    ("ici", "ici", None, ".4f"),
)
SAMPLE_MEASURES_CAPTION = (
    "Binning-free measures of the uncalibrated predictions (top label; TACE over all classes, "
    "SKCE of the whole vector), on the same sample of each model as the maps. Hover a "
    "header for what it detects."
)


def measure_cell(row: dict, value: str, p_value: str | None, fmt: str) -> html.Td:
    """One measure, with its p-value under it when it has one ("-" when undefined)."""
    v = row[value]
    text = "-" if v is None else format(v, fmt)
    if p_value is None or row[p_value] is None:
        return html.Td(text)
    return html.Td([text, html.Br(), html.Span(f"p {row[p_value]:.3g}", className="measure-p")])


def measures_table(rows: list[dict]) -> html.Div:
    """One row per model: where the measures were computed, then the measures."""
    if not rows:
        return html.Div()
    head = html.Tr(
        [
            html.Th("model"),
            html.Th("on a uniform sample of"),
            *(
                html.Th(MEASURES[key][0], title=MEASURES[key][1])
                for key, *_ in SAMPLE_MEASURE_COLUMNS
            ),
        ]
    )
    body = [
        html.Tr(
            [
                html.Td(row["model"]),
                html.Td(f"{row['sample_rows']:,} rows (seed {row['sample_seed']})"),
                *(measure_cell(row, *column[1:]) for column in SAMPLE_MEASURE_COLUMNS),
            ]
        )
        for row in rows
    ]
    return html.Div(
        [
            html.H3("Measures beyond bins, on the sample", className="dataset-measures-title"),
            html.P(SAMPLE_MEASURES_CAPTION, className="caption"),
            html.Table(
                [html.Thead(head), html.Tbody(body)], className="dataset-metrics dataset-measures"
            ),
        ]
    )


def cards_section(cards: list[DatasetCard], title: str) -> html.Div:
    """A dataset's diagnostics cards, each naming its model and the rows it was computed on."""
    if not cards:
        return html.Div()
    items = []
    for card in cards:
        if card.table is not None:
            body = table_component(card.table)
        else:
            body = dcc.Graph(figure=card.figure, config=GRAPH_CONFIG)
        heading_text = f"{card.title} · {card.model}"
        items.append(
            html.Div(
                [
                    html.H3(heading_text, className="diag-title"),
                    html.P(f"Computed on {card.source}.", className="caption card-source"),
                    body,
                ],
                className="diag-card",
            )
        )
    return html.Div(
        [html.H3(title, className="dataset-measures-title"), *items],
        className="dataset-diagnostics",
    )


def maps_heading(name: str, entry: dict, shown: list, place: str) -> html.Div:
    """What was fitted on which sample, how long it took, and how stale it is."""
    samples = ", ".join(
        f"{model}: {found['info'].rows:,} of {found['info'].dataset_rows:,} rows"
        for model, found in entry["models"].items()
    )
    return html.Div(
        [
            html.H2(f"Dataset {name}: calibration maps on a sample", className="section-title"),
            html.P(
                f"{', '.join(entry['maps'])} fitted with {entry['heldout']} on a reproducible "
                f"uniform sample (seed 0; {samples}) {place} in "
                f"{entry['seconds']:.1f} s; every row is scored by maps fitted without it. The "
                "table, verdict and diagrams follow the page's bins, notion, band and kind.",
                className="caption",
            ),
            *shown,
        ]
    )


def maps_panel(ctx: AppContext, sid: str | None, name: Any, done: Any, raw: RawSettings):
    """The children of the dataset's maps section for the picked ``name`` and the settings."""
    if name is None:
        return []
    error = done.get("error") if isinstance(done, dict) else None
    errors = [note(error)] if isinstance(error, str) else []
    try:
        entry = ctx.datasets.cached_maps(sid, name)
        stats = ctx.datasets.cached(sid, name)
        if entry is None or stats is None:
            ctx.datasets.resolve(name)
            return [*errors, note(NO_MAPS.format(name=name))]
        _, maps, _, view = raw.parse()
        shown = maps_view(name, entry, stats["summaries"], view, ctx.store)
        whole = ctx.datasets.cached_frequency(sid, name, view.n_bins) is not None
        cards = sample_cards(name, entry, stats["summaries"], view, ctx.store, whole)
    except CalibrationInputError as exc:
        return [*errors, note(str(exc))]
    stale = []
    if maps != entry["maps"]:
        stale = [
            note(
                f"Shown: the maps of the last fit ({', '.join(entry['maps'])}); press Fit maps "
                "on a sample to fit the maps picked now."
            )
        ]
    graphs = [
        dcc.Graph(
            figure=fig, config=graph_config(f"{name}-maps-{i}"), className="reliability-graph"
        )
        for i, fig in enumerate(shown.figures)
    ]
    return [
        maps_heading(name, entry, stale, ctx.datasets.place),
        *errors,
        *(note(n) for n in shown.notes),
        maps_table(shown.rows, shown.columns),
        measures_table(shown.measures),
        html.Div(
            verdict_children(shown.verdicts, "Verdict, on the sample"), className="dataset-verdict"
        ),
        html.Div(graphs, className="reliability-grid"),
        cards_section(cards, "Diagnostics, on the sample"),
    ]


def frequency_view(raw: RawSettings):
    """The page's view when it asks for equal-frequency bins, else None (or bad settings)."""
    try:
        view = raw.parse()[3]
    except SettingsError:
        return None
    return view if view.scheme == "frequency" else None


def metric_cell(field: str, value) -> html.Td:
    """One cell: rows with separators, metrics to 4 decimals, "n/a" for a part not given."""
    if value is None:
        return html.Td("n/a", title="not given for this model (see the note above)")
    return html.Td(f"{value:,}" if field == "n_samples" else f"{value:.4f}")


def metrics_table(rows: list[dict], columns: dict[str, str]) -> html.Table:
    """One row of metrics per model of the dataset, in ``columns`` (field -> header)."""
    head = html.Tr(
        [html.Th("model"), *(html.Th(h, title=PARTS.get(f)) for f, h in columns.items())]
    )
    body = [
        html.Tr([html.Td(row["model"]), *(metric_cell(f, row.get(f)) for f in columns)])
        for row in rows
    ]
    return html.Table([html.Thead(head), html.Tbody(body)], className="dataset-metrics")


def heading(name: str, entry: dict, models: int, seconds: float, place: str) -> html.Div:
    """What was computed, where (``place``, :attr:`~app.datasets.Datasets.place`), and how
    long each step took."""
    return html.Div(
        [
            html.H2(f"Dataset {name}", className="section-title"),
            html.P(
                f"{entry['rows']:,} rows, {models} model(s): summarised {place} "
                f"in {entry['seconds']:.1f} s; this view drawn from the cached statistics in "
                f"{seconds * 1000:.0f} ms without reading the data.",
                className="caption",
            ),
        ]
    )


def dataset_panel(ctx: AppContext, sid: str | None, name: Any, done: Any, raw: RawSettings):
    """The children of the dataset section for the picked ``name`` and the view's settings."""
    if name is None:
        return []
    error = done.get("error") if isinstance(done, dict) else None
    errors = [note(error)] if isinstance(error, str) else []
    try:
        entry = ctx.datasets.cached(sid, name)  # kept: drawn even if the files are gone since
        if entry is None:
            ctx.datasets.resolve(name)  # a name the server does not list is refused
            return [*errors, note(NOT_COMPUTED.format(name=name))]
        start = time.perf_counter()
        view = raw.parse()[3]
        frequency = ctx.datasets.cached_frequency(sid, name, view.n_bins)
        shown = dataset_view(name, entry["summaries"], view, frequency)
        cards = whole_cards(entry["summaries"], view, frequency)
        seconds = time.perf_counter() - start
    except CalibrationInputError as exc:
        return [*errors, note(str(exc))]
    graphs = [
        dcc.Graph(figure=fig, config=graph_config(f"{name}-{i}"), className="reliability-graph")
        for i, fig in enumerate(shown.figures)
    ]
    return [
        heading(name, entry, len(shown.figures), seconds, ctx.datasets.place),
        *errors,
        *(note(n) for n in shown.notes),
        html.Div(graphs, className="reliability-grid"),
        metrics_table(shown.rows, shown.columns),
        cards_section(cards, "Diagnostics, on all rows"),
    ]


def register(app, ctx: AppContext) -> None:
    """The dataset job and the dataset view (nothing when ``DATASETS_DIR`` is not set)."""
    if ctx.datasets is None:
        return
    register_job(
        app,
        ctx,
        JobIds.named("DATASET"),
        {"name": Input(ids.DATASET_SELECT, "value")},
        {},
        "dataset computation",
        run_dataset_job,
        cluster=ctx.datasets.on_cluster,
    )
    output = Output(ids.DATASET_VIEW, "children")
    inputs = {
        "name": Input(ids.DATASET_SELECT, "value"),
        "done": Input(ids.DATASET_DONE, "data"),
        "settings": setting_inputs(DATASET_FIELDS),
    }
    what = "dataset view"
    ctx.failures.reply(
        what, lambda rid: note(failure_message(what, rid)), output=output, inputs=inputs
    )

    @app.callback(output=output, inputs=inputs, prevent_initial_call=True)
    def update_dataset(name, done, settings: dict):
        return dataset_panel(ctx, ctx.session_id(), name, done, RawSettings(**settings))

    register_maps(app, ctx)
    group_dataset.register(app, ctx)


#: Browser-side: the maps' controls are hidden until a dataset is picked.
SHOW_MAPS = "function (name) { return !name; }"


def register_maps(app, ctx: AppContext) -> None:
    """The maps' job of a picked dataset, its controls' visibility and its view."""
    app.clientside_callback(
        SHOW_MAPS,
        Output(ids.DATASET_MAPS, "hidden"),
        Input(ids.DATASET_SELECT, "value"),
    )
    register_job(
        app,
        ctx,
        JobIds.named("DATASET_MAPS"),
        {},
        {"name": State(ids.DATASET_SELECT, "value")},
        "maps of a dataset",
        run_maps_job,
        cluster=ctx.datasets.on_cluster,
    )
    output = Output(ids.DATASET_MAPS_VIEW, "children")
    inputs = {
        "name": Input(ids.DATASET_SELECT, "value"),
        "done": Input(ids.DATASET_MAPS_DONE, "data"),
        "stats_done": Input(ids.DATASET_DONE, "data"),
        "settings": setting_inputs(("maps", *DATASET_FIELDS)),
    }
    what = "maps of a dataset"
    ctx.failures.reply(
        what, lambda rid: note(failure_message(what, rid)), output=output, inputs=inputs
    )

    @app.callback(output=output, inputs=inputs, prevent_initial_call=True)
    def update_dataset_maps(name, done, stats_done, settings: dict):
        return maps_panel(ctx, ctx.session_id(), name, done, RawSettings(**settings))
