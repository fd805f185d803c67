"""The page: a control sidebar (upload, models, notion, binning, band, maps,
held-out scheme, exports) and the results (reliability grid, metrics table).

All ids come from :mod:`app.ids`. The layout is a function so that each page
load lists the demo plus the uploads of *its* session.
"""

from __future__ import annotations

from dash import dcc, html

from calibration_core.maps import MAP_NAMES

from .. import ids
from ..deployable import BEST_MAP, deploy_model_picker, map_options
from ..groups.time import TimeSettings
from ..metrics_table import PARTS_CAPTION
from ..model_list import model_options
from ..options import all_binary, class_choices, default_selection, selected_infos
from ..settings import (
    ALL_CLASSES_SHOWN,
    BAND_LABELS,
    DIAGRAM_KINDS,
    DIAGRAM_LABELS,
    LEVELS,
    MAX_BINS,
    MAX_FOLDS,
    MAX_SELECTED_MODELS,
    MAX_TEST_FRACTION,
    MIN_BINS,
    MIN_FOLDS,
    MIN_TEST_FRACTION,
    SCORE_PARTS_ON,
    RawSettings,
)
from ..store.records import ModelInfo
from ..view_update import grid_slots
from .dataset_groups import dataset_slices_section
from .diagnostics import diagnostics_section
from .groups import group_picker, group_section
from .jobs import job_controls
from .results import metrics_grid

DEFAULT_MAPS = ("temperature", "isotonic")
MAP_LABELS = {
    "histogram": "histogram binning",
    "isotonic": "isotonic regression",
    "platt": "Platt scaling",
    "beta": "beta calibration",
    "temperature": "temperature scaling",
    "vector": "vector scaling",
    "matrix": "matrix scaling",
    "dirichlet": "Dirichlet calibration",
}
#: Help under the map picker (the rule: :func:`calibration_core.maps.same_model_as`).
SAME_MODEL_HINT = (
    "On probabilities (no logit_ columns) matrix scaling and Dirichlet calibration are "
    "the same model: it is fitted once and shown under both. On logits they differ."
)
ACCEPT = ".csv,.tsv,.gz,.parquet,.pq,.npz"
#: The example file under the drop zone: ``assets/example_predictions.csv``
#: (written by ``scripts/example_predictions.py``), served by Dash from the
#: assets folder (the app has no URL prefix) and shipped in the wheel.
EXAMPLE_FILE = "example_predictions.csv"
EXAMPLE_URL = f"/assets/{EXAMPLE_FILE}"


def _field(
    label: str,
    *children,
    field_id: str | None = None,
    hint: str | None = None,
    style: dict | None = None,
):
    kids = [html.Div(label, className="field-label"), *children]
    if hint:
        kids.append(html.Div(hint, className="field-hint"))
    props = {"id": field_id} if field_id else {}
    if style is not None:
        props["style"] = style
    return html.Div(kids, className="field", **props)


def named(name: str, control) -> html.Div:
    """``control`` (a dcc component) inside a wrapper that carries its accessible name.

    Dash 4's ``dcc.Checklist``, ``dcc.RadioItems`` and ``dcc.Slider`` take no
    ``aria-*`` props; ``assets/a11y.js`` gives their group, slider thumb and
    number box the wrapper's ``data-a11y-name`` as ``aria-label``.
    """
    return html.Div(control, className="a11y-named", **{"data-a11y-name": name})


def _conventions() -> html.Details:
    """Which columns a file needs (closed by default), with the example file's link.

    The rules are those of :mod:`calibration_core.io.columns` and
    :mod:`calibration_core.io.npz`; the link sits in the body, not in the
    ``<summary>``, so no interactive element is nested in another.
    """
    return html.Details(
        [
            html.Summary("Which columns? · example file"),
            html.Ul(
                [
                    html.Li(
                        [
                            html.Code("label"),
                            ": the true class (or ",
                            html.Code("y"),
                            ", ",
                            html.Code("target"),
                            ", ",
                            html.Code("true"),
                            ", ",
                            html.Code("ground_truth"),
                            ")",
                        ]
                    ),
                    html.Li(
                        [
                            "one ",
                            html.Code("p_<class>"),
                            " column per class (rows sum to 1), or ",
                            html.Code("logit_<class>"),
                            ", or for two classes one ",
                            html.Code("score"),
                            " column (probability of class 1, labels 0/1)",
                        ]
                    ),
                    html.Li(
                        [
                            "optional ",
                            html.Code("model"),
                            ": several models in one file, one per value",
                        ]
                    ),
                    html.Li(
                        [
                            "CSV, TSV (also .gz) or Parquet; NPZ with arrays ",
                            html.Code("probs"),
                            " (or ",
                            html.Code("logits"),
                            ") and ",
                            html.Code("labels"),
                        ]
                    ),
                    html.Li(
                        [
                            "equal-width bin of a score s: ",
                            html.Code("floor(s · M)"),
                            " in float64, so a score typed on an edge can land on either side "
                            "(0.6 with M = 10 goes up; 0.29 with M = 100 goes down)",
                        ]
                    ),
                ]
            ),
            html.A(
                "Download an example (CSV: 2 models, 3 classes)",
                id=ids.EXAMPLE_DOWNLOAD,
                href=EXAMPLE_URL,
                download=EXAMPLE_FILE,
            ),
        ],
        id=ids.UPLOAD_CONVENTIONS,
        className="upload-conventions",
    )


def _renormalize_switch() -> html.Div:
    """ "Renormalise rows": divide probability rows by their sums (read by ``assets/upload.js``).

    Rows within the rounding tolerance are always divided by their sums; the
    switch is for rows further off (unnormalised scores).
    """
    return named(
        "Upload option",
        dcc.Checklist(
            id=ids.UPLOAD_RENORMALIZE,
            options=[{"label": " renormalise rows", "value": "1"}],
            value=[],
            className="upload-option",
        ),
    )


def _label_picker() -> html.Div:
    """The label-column picker, shown after a file was refused for its label column.

    Choosing a column sends that file again with it (``assets/upload.js``).
    """
    return html.Div(
        [
            html.Label("Label column", htmlFor=ids.UPLOAD_LABEL_COLUMN),
            html.Select(id=ids.UPLOAD_LABEL_COLUMN, children=[]),
        ],
        id=ids.UPLOAD_LABEL_FIELD,
        className="upload-option",
        hidden=True,
    )


def _dataset_picker(datasets: list[str] | None) -> list:
    """The server-side datasets' dropdown, compute and cancel buttons, progress (None: nothing)."""
    if datasets is None:
        return []
    return [
        html.Div(
            [
                html.Label("Or pick a dataset on the server", htmlFor=ids.DATASET_SELECT),
                dcc.Dropdown(
                    id=ids.DATASET_SELECT,
                    options=[{"label": name, "value": name} for name in datasets],
                    placeholder="Server dataset (computed on the server)"
                    if datasets
                    else "No dataset on this server yet",
                    className="dataset-select",
                ),
                job_controls(
                    "Compute",
                    ids.DATASET_RUN,
                    ids.DATASET_CANCEL,
                    ids.DATASET_PROGRESS,
                    ids.DATASET_STATUS,
                ),
                dcc.Store(id=ids.DATASET_DONE),
            ],
            className="dataset-picker",
        )
    ]


def _upload_panel(max_upload_mb: int, datasets: list[str] | None = None) -> html.Div:
    return html.Div(
        [
            html.Div(
                [
                    html.Div("Drop prediction files here", className="upload-title"),
                    html.Div(
                        f"or press to browse · CSV, TSV, Parquet, NPZ · up to {max_upload_mb} MB "
                        "each",
                        className="upload-hint",
                    ),
                ],
                id=ids.UPLOAD_ZONE,
                className="upload-zone",
                tabIndex="0",
                role="button",
                # Named by its text (no aria-label): what a speech user reads is the name.
                **{
                    "data-max-bytes": str(max_upload_mb * 1024 * 1024),
                    "data-accept": ACCEPT,
                },
            ),
            _renormalize_switch(),
            _conventions(),
            html.Div(id=ids.UPLOAD_STATUS, className="upload-status", role="status"),
            html.Div(id=ids.UPLOAD_MESSAGE, className="upload-message", role="alert"),
            _label_picker(),
            dcc.Store(id=ids.UPLOAD_RESULT),
            *_dataset_picker(datasets),
        ],
        className="panel",
    )


def diagram_field(kind: str) -> html.Div:
    """The diagram kind: binned reliability, smooth reliability or cumulative differences."""
    return _field(
        "Diagram",
        named(
            "Diagram",
            dcc.RadioItems(
                id=ids.DIAGRAM_KIND,
                options=[{"label": DIAGRAM_LABELS[k], "value": k} for k in DIAGRAM_KINDS],
                value=kind,
                className="radio",
            ),
        ),
        hint="smooth and cumulative diagrams use no bins (see docs/measures.md)",
    )


def default_settings(infos: list[ModelInfo]) -> RawSettings:
    """What the page starts with: the default demo models and maps, 15 equal-width bins."""
    return RawSettings(handles=default_selection(infos), maps=list(DEFAULT_MAPS))


def _controls_class(infos: list[ModelInfo], raw: RawSettings):
    """The class picker's initial value when the page chose it (no class in ``raw``)."""
    if raw.class_value is not None:
        return None
    return class_choices([i.to_json() for i in infos], raw.handles, raw.notion, None)[1]


def _controls(
    infos: list[ModelInfo], raw: RawSettings, group_options: list[dict] | None = None
) -> html.Div:
    """The settings panel: models, notion, class, diagram, group, bins, band, maps, held-out."""
    return html.Div(
        [
            _models_field(infos, raw),
            _notion_field(raw),
            _class_field(infos, raw),
            diagram_field(raw.kind),
            group_picker(raw, group_options),
            _binning_field(raw),
            _band_field(raw),
            _maps_field(raw),
            _heldout_field(raw),
        ],
        className="panel",
    )


def _models_field(infos: list[ModelInfo], raw: RawSettings) -> html.Div:
    """The model search box and checklist (the models shown side by side)."""
    return _field(
        "Models",
        html.Div(
            [
                dcc.Input(
                    id=ids.MODEL_SEARCH,
                    type="search",
                    placeholder="Search models by name or file",
                    className="model-search",
                ),
                named(
                    "Models",
                    dcc.Checklist(
                        id=ids.MODEL_SELECT,
                        options=model_options(infos),
                        value=list(raw.handles or []),
                        className="checklist models",
                    ),
                ),
                html.Div(id=ids.MODEL_LIST_NOTE, className="model-list-note", role="status"),
            ],
            className="model-list",
        ),
        hint=f"shown side by side; at most {MAX_SELECTED_MODELS} at a time",
    )


def _notion_field(raw: RawSettings) -> html.Div:
    """Confidence, one class vs rest, or binary."""
    return _field(
        "Calibration notion",
        named(
            "Calibration notion",
            dcc.RadioItems(
                id=ids.NOTION,
                options=[
                    {"label": "confidence (top label)", "value": "confidence"},
                    {"label": "one class vs rest", "value": "class"},
                    {"label": "binary (K = 2)", "value": "binary"},
                ],
                value=raw.notion,
                className="radio",
            ),
        ),
    )


def _class_field(infos: list[ModelInfo], raw: RawSettings) -> html.Div:
    """The class picker of the one-class-vs-rest notion (hidden for the others)."""
    class_options, class_value, class_style = class_choices(
        [i.to_json() for i in infos], raw.handles, raw.notion, raw.class_value
    )
    return _field(
        "Class",
        dcc.Dropdown(
            id=ids.CLASS_SELECT, options=class_options, value=class_value, clearable=False
        ),
        field_id=ids.CLASS_FIELD,
        hint=f"opens on the worst class; “all classes”: at most {ALL_CLASSES_SHOWN} worst.",
        style=class_style,
    )


def _binning_field(raw: RawSettings) -> html.Div:
    """The binning scheme and the number of bins."""
    return _field(
        "Binning",
        named(
            "Binning scheme",
            dcc.RadioItems(
                id=ids.SCHEME,
                options=[
                    {"label": "equal width", "value": "width"},
                    {"label": "equal frequency", "value": "frequency"},
                ],
                value=raw.scheme,
                className="radio inline",
            ),
        ),
        named(
            "Number of bins",
            dcc.Slider(
                id=ids.N_BINS,
                min=MIN_BINS,
                max=MAX_BINS,
                step=1,
                value=raw.n_bins,
                marks={v: str(v) for v in (2, 25, 50, 75, 100)},
            ),
        ),
        hint=f"number of bins, {MIN_BINS} to {MAX_BINS}",
    )


def _band_field(raw: RawSettings) -> html.Div:
    """The reliability band's kind and level."""
    return _field(
        "Band",
        html.Div(
            [
                dcc.Dropdown(
                    id=ids.BAND,
                    options=[{"label": v, "value": k} for k, v in BAND_LABELS.items()],
                    value=raw.band,
                    clearable=False,
                    className="grow",
                ),
                dcc.Dropdown(
                    id=ids.BAND_LEVEL,
                    options=[{"label": f"{v:.0%}", "value": v} for v in LEVELS],
                    value=raw.level,
                    clearable=False,
                    className="level",
                ),
            ],
            className="row",
        ),
    )


def _maps_field(raw: RawSettings) -> html.Div:
    """The calibration maps to fit and compare."""
    return _field(
        "Calibration maps",
        named(
            "Calibration maps",
            dcc.Checklist(
                id=ids.MAPS,
                options=[{"label": MAP_LABELS.get(n, n), "value": n} for n in MAP_NAMES],
                value=list(raw.maps or []),
                className="checklist",
            ),
        ),
        hint=SAME_MODEL_HINT,
    )


def _heldout_field(raw: RawSettings) -> html.Div:
    """k-fold cross-fitting (number of folds) or a train/test split (test fraction)."""
    folds = named(
        "Number of folds",
        dcc.Slider(
            id=ids.FOLDS,
            min=MIN_FOLDS,
            max=MAX_FOLDS,
            step=1,
            value=raw.folds,
            marks={v: str(v) for v in (2, 5, 10, 20)},
        ),
    )
    fraction = named(
        "Test fraction",
        dcc.Slider(
            id=ids.TEST_FRACTION,
            min=MIN_TEST_FRACTION,
            max=MAX_TEST_FRACTION,
            step=0.05,
            value=raw.fraction,
            marks={0.1: "10%", 0.5: "50%", 0.9: "90%"},
        ),
    )
    return _field(
        "Held-out scheme",
        named(
            "Held-out scheme",
            dcc.RadioItems(
                id=ids.HELDOUT,
                options=[
                    {"label": "k-fold cross-fitting", "value": "folds"},
                    {"label": "train/test split", "value": "split"},
                ],
                value=raw.heldout,
                className="radio",
            ),
        ),
        html.Div(folds, id=ids.FOLDS_FIELD),
        html.Div(fraction, id=ids.SPLIT_FIELD, style={"display": "none"}),
        hint="maps are always scored on rows they were not fitted on",
    )


def _deployable(infos: list[ModelInfo], selected) -> html.Div:
    """The deployable map: model and map pickers and the button.

    The model picker starts on the selected models (the selection's callback
    follows it, :mod:`app.callbacks.models`); the map picker's callback fills it.
    """
    choices, model = deploy_model_picker(selected_infos(infos, selected), None)
    return _field(
        "Deployable map (refitted on all rows)",
        html.Div(
            [
                html.Label("Model", htmlFor=ids.DEPLOY_MODEL, className="deploy-label"),
                dcc.Dropdown(
                    id=ids.DEPLOY_MODEL,
                    options=choices,
                    value=model,
                    placeholder="first model",
                    clearable=False,
                    className="deploy-picker",
                ),
                html.Label("Map", htmlFor=ids.DEPLOY_MAP, className="deploy-label"),
                dcc.Dropdown(
                    id=ids.DEPLOY_MAP,
                    options=map_options(()),
                    value=BEST_MAP,
                    clearable=False,
                    className="deploy-picker",
                ),
                html.Button(
                    "Download deployable map",
                    id=ids.EXPORT_DEPLOYABLE,
                    className="button secondary",
                    n_clicks=0,
                ),
            ],
            className="button-row deploy-row",
        ),
        hint="one JSON document; load it with calibration_core.load_map or "
        "calibration-dashboard apply",
    )


def _score_parts_toggle(raw: RawSettings) -> dcc.Checklist:
    """The box that adds the Brier and log-loss parts to the metrics table (off at first).

    Off by default: the parts cost one more pass over every class column of
    every calibrator at each change of the binning. Exports and reports always
    carry them.
    """
    return dcc.Checklist(
        id=ids.SCORE_PARTS,
        options=[
            {
                "label": "show the calibration and refinement parts of Brier and log-loss",
                "value": SCORE_PARTS_ON,
                "title": PARTS_CAPTION,
            }
        ],
        value=list(raw.score_parts or []),
        className="checklist score-parts",
    )


def _exports(infos: list[ModelInfo], selected) -> html.Div:
    def button(id_, text, title=None):
        extra = {} if title is None else {"title": title}
        return html.Button(text, id=id_, className="button secondary", n_clicks=0, **extra)

    return html.Div(
        [
            html.Div("Export", className="field-label"),
            html.Div(
                [
                    button(ids.EXPORT_METRICS_CSV, "Metrics CSV"),
                    button(ids.EXPORT_METRICS_JSON, "Metrics JSON"),
                    button(ids.EXPORT_PARAMS_JSON, "Fitted maps JSON"),
                    button(
                        ids.EXPORT_CALIBRATED_CSV,
                        "Calibrated CSV",
                        "one CSV per model and map (a zip when several), in the uploaded "
                        "file's columns: score stays score, p_/logit_ become p_<class>",
                    ),
                    button(ids.EXPORT_REPORT_HTML, "HTML report"),
                ],
                className="button-row",
            ),
            _deployable(infos, selected),
            _field(
                "Figure download format (camera icon on each figure)",
                named(
                    "Figure download format",
                    dcc.RadioItems(
                        id=ids.FIGURE_FORMAT,
                        options=[
                            {"label": "PNG", "value": "png"},
                            {"label": "SVG", "value": "svg"},
                        ],
                        value="png",
                        className="radio inline",
                    ),
                ),
            ),
            html.Div(id=ids.EXPORT_MESSAGE, className="export-message", role="status"),
            dcc.Download(id=ids.DOWNLOAD),
            dcc.Store(id=ids.DOWNLOAD_URL),
        ],
        className="panel",
    )


def _fit_bar(summary: str = "") -> html.Div:
    # Idle until the fit planner starts a background job (its "running" outputs
    # then disable Fit and show the progress bar).
    return html.Div(
        [
            html.Progress(id=ids.FIT_PROGRESS, value="0", max="1", className="progress idle"),
            html.Span(id=ids.FIT_STATUS, className="fit-status", role="status"),
            html.Span(summary, id=ids.FIT_SUMMARY, className="fit-summary"),
            html.Button("Fit", id=ids.FIT_START, className="button", n_clicks=0, disabled=False),
            html.Button(
                "Cancel", id=ids.FIT_CANCEL, className="button secondary", n_clicks=0, disabled=True
            ),
        ],
        className="fit-bar",
    )


def _controls_dock(panels: list) -> html.Aside:
    """The controls (an ``<aside>``) behind a toggle bar: a drawer below 1000 px (issue 15, item 9).

    On wide screens the bar is hidden and the controls are the left column.
    Below 1000 px (``assets/style.css``) the bar sticks to the top of the
    window and the button (``aria-expanded``, a clientside callback in
    :mod:`app.callbacks.drawer`) shows the controls as a drawer over the
    results, so the first diagram is on the first screen.
    """
    toggle = html.Button(
        "Controls",
        id=ids.CONTROLS_TOGGLE,
        className="button controls-toggle",
        n_clicks=0,
        **{"aria-expanded": "false", "aria-controls": ids.CONTROLS_DRAWER},
    )
    # One landmark for the bar and the drawer: no page content outside landmarks.
    return html.Aside(
        [
            html.Div(
                [toggle, html.Span("upload, models, binning, maps", className="controls-hint")],
                className="controls-bar",
            ),
            html.Div(panels, id=ids.CONTROLS_DRAWER, className="sidebar controls-drawer"),
        ],
        id=ids.CONTROLS_DOCK,
        className="controls-dock",
        **{"aria-label": "Controls"},
    )


def _dataset_maps_controls() -> html.Div:
    """ "Fit maps on a sample" of a picked dataset: its cluster job's buttons and progress."""
    return html.Div(
        [
            html.P(
                "Calibration maps on the dataset: the maps picked under Calibration maps are "
                "cross-fitted on a reproducible sample of each model (another job on the "
                "cluster) and scored on held-out sample rows.",
                className="caption",
            ),
            job_controls(
                "Fit maps on a sample",
                ids.DATASET_MAPS_RUN,
                ids.DATASET_MAPS_CANCEL,
                ids.DATASET_MAPS_PROGRESS,
                ids.DATASET_MAPS_STATUS,
            ),
            dcc.Store(id=ids.DATASET_MAPS_DONE),
        ],
        id=ids.DATASET_MAPS,
        className="dataset-maps-controls",
        hidden=True,
    )


def _dataset_section(datasets) -> list:
    """Where a picked dataset's view, maps and groups go (filled by app.callbacks.datasets and
    app.callbacks.groups.dataset); None: nothing."""
    if datasets is None:
        return []
    return [
        dcc.Loading(
            html.Section(id=ids.DATASET_VIEW, className="dataset-view"),
            type="dot",
            delay_show=400,
        ),
        _dataset_maps_controls(),
        dcc.Loading(
            html.Section(id=ids.DATASET_MAPS_VIEW, className="dataset-view"),
            type="dot",
            delay_show=400,
        ),
        dataset_slices_section(),
    ]


def build_layout(
    infos: list[ModelInfo],
    *,
    max_upload_mb: int,
    raw: RawSettings | None = None,
    view: tuple | None = None,
    address_notices: list[str] | tuple[str, ...] = (),
    class_auto: str | None = None,
    time: TimeSettings | None = None,
    datasets: list[str] | None = None,
    group_options: list[dict] | None = None,
) -> html.Div:
    """The whole page for a session whose usable models are ``infos``.

    Parameters
    ----------
    raw : RawSettings, optional
        The controls' initial values (default: :func:`default_settings`).
    view : tuple, optional
        The initial view, :func:`app.callbacks.view.render`'s output for
        ``raw``: drawn with the page itself, so the first diagrams need no
        callback round trip; its fit status is the text next to the Fit button.
    address_notices : sequence of str
        What the page address asked for that could not be restored
        (:func:`app.view_url.decode_view`); shown until the view changes.
    class_auto : str, optional
        The class in ``raw`` when the page picked it itself (the worst class,
        :func:`app.analysis.opening_class`): it moves when the models change.
    time : TimeSettings, optional
        The "Over time" card's initial settings (:func:`app.view_url.decode_time`).
    datasets : list of str, optional
        The server's datasets (``DATASETS_DIR``): a picker under the upload and
        their view above the models'; None (not configured): neither is on the page.
    group_options : list of dict, optional
        The group picker's options (:func:`app.callbacks.groups.columns.picker_options`);
        None: the column in ``raw`` alone, if any.
    """
    raw = default_settings(infos) if raw is None else raw
    empty = ([], [], [], "", "", [], [], "")
    slots, shown = grid_slots(ids.GRAPH_SLOT, view or empty)
    results = _results(raw, view or empty, slots, infos, address_notices, time, datasets)
    return html.Div(
        [
            _header(),
            html.Div(
                [
                    _controls_dock(
                        [
                            _upload_panel(max_upload_mb, datasets),
                            _controls(infos, raw, group_options),
                        ],
                    ),
                    results,
                    # After the results in the DOM (Fit comes before Export in the tab
                    # order); the stylesheet puts it under the controls on wide screens.
                    html.Aside(
                        _exports(infos, raw.handles),
                        className="sidebar sidebar-exports",
                        **{"aria-label": "Exports"},
                    ),
                ],
                className="app-body",
            ),
            *_page_state(infos, raw, class_auto, shown),
        ],
        className="app",
    )


def _header() -> html.Header:
    """The title and the tagline."""
    return html.Header(
        [
            html.H1("Calibration dashboard"),
            html.P(
                "How far can you trust your classifier's probabilities? Reliability "
                "diagrams, calibration errors and post-hoc calibration maps, side by side.",
                className="tagline",
            ),
        ],
        className="app-header",
    )


def _results(
    raw: RawSettings,
    view: tuple,
    slots: list,
    infos: list[ModelInfo],
    address_notices: list[str] | tuple[str, ...],
    time: TimeSettings | None,
    datasets: list[str] | None,
) -> html.Main:
    """The results column: messages, diagram slots, verdict, metrics, groups, diagnostics."""
    _grid, rows, cols, table_caption, title, messages, verdict, fit_summary = view
    return html.Main(
        [
            *_dataset_section(datasets),
            _fit_bar(fit_summary),
            html.Div(
                [html.Div(m, className="message-line") for m in address_notices],
                id=ids.ADDRESS_NOTICE,
                className="message address-notice",
                role="status",
            ),
            html.Div(
                [html.Div(m, className="message-line") for m in messages],
                id=ids.MESSAGE,
                className="message",
                role="alert",
            ),
            html.H2(title, id=ids.VIEW_TITLE, className="view-title"),
            dcc.Loading(
                html.Div(slots, id=ids.RELIABILITY_GRID, className="reliability-grid"),
                type="dot",
                delay_show=400,
            ),
            html.Section(verdict, id=ids.VERDICT, className="verdict-section"),
            html.H2("Metrics", className="section-title"),
            html.P(table_caption, id=ids.METRICS_CAPTION, className="caption"),
            _score_parts_toggle(raw),
            metrics_grid(rows, cols),
            group_section(raw),
            diagnostics_section(infos, raw.handles, time),
        ],
        className="results",
    )


def _page_state(
    infos: list[ModelInfo], raw: RawSettings, class_auto: str | None, shown: dict
) -> list:
    """The page address and the browser-side stores (model list, shown diagrams, class, fit)."""
    return [
        # The address follows the view without reloading the page (app.view_url).
        dcc.Location(id=ids.PAGE_URL, refresh=False),
        dcc.Store(id=ids.MODELS_STORE, data=[i.to_json() for i in infos]),
        dcc.Store(id=ids.VIEW_KEYS, data=shown),
        dcc.Store(id=ids.ALL_BINARY_STORE, data=all_binary(infos, raw.handles)),
        # The class the page starts with is its own pick, not the user's.
        dcc.Store(id=ids.CLASS_AUTO, data=class_auto or _controls_class(infos, raw)),
        dcc.Store(id=ids.FIT_STATE),
        dcc.Store(id=ids.FIT_REQUEST),
    ]
