"""The Diagnostics section of the page (below the metrics table) and its table renderer.

The section is collapsed at first: nothing is computed until it is opened
(``DIAG_OPEN``). Cheap diagnostics then follow every setting; the resampling
test and the bootstrap run on demand in background jobs with a progress bar
and a cancel button. All ids come from :mod:`app.ids`.
"""

from __future__ import annotations

from dash import dcc, html

from .. import ids
from ..figures.common import MODEBAR_CONFIG
from ..options import model_picker, selected_infos
from ..statistics_page import STATISTICS_PATH
from ..store.records import ModelInfo
from .beyond import BEYOND_TITLE
from .resampling import SEED
from .tables import TextTable
from .target import (
    BOOT_LEVELS,
    DEFAULT_BOOT_LEVEL,
    DEFAULT_RESAMPLES,
    HL_DEFAULT_GROUPS,
    HL_MAX_GROUPS,
    HL_MIN_GROUPS,
    MEASURE_LABELS,
    RESAMPLE_CHOICES,
)

GRAPH_CONFIG = {
    **MODEBAR_CONFIG,
    "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "diagnostics"},
}


def table_component(table: TextTable, class_name: str = "diag-table") -> html.Div:
    """A :class:`TextTable` as an HTML table, its warnings and its notes (text only)."""
    head = html.Thead(html.Tr([html.Th(h) for h in table.header]))
    body = html.Tbody([html.Tr([html.Td(c) for c in row]) for row in table.rows])
    children = [html.Div(html.Table([head, body], className=class_name), className="table-wrap")]
    children += [html.Div(w, className="diag-warning", role="note") for w in table.warnings]
    if table.notes:
        children.append(html.Ul([html.Li(n) for n in table.notes], className="diag-notes"))
    return html.Div(children)


def _card(title: str, *children, card_id: str | None = None, doc: str = "") -> html.Div:
    """A diagnostic's card: title, a link to what its numbers promise (``/statistics#doc``)."""
    props = {"id": card_id} if card_id else {}
    link = html.A(
        "What these numbers promise",
        href=f"{STATISTICS_PATH}#{doc}" if doc else STATISTICS_PATH,
        target="_blank",
        rel="noopener",
        className="diag-doc-link",
    )
    return html.Div(
        [html.H3(title, className="diag-title"), link, *children], className="diag-card", **props
    )


def _label(text: str, control, hint: str | None = None) -> html.Label:
    kids = [html.Span(text, className="diag-label"), control]
    if hint:
        kids.append(html.Span(hint, className="field-hint"))
    return html.Label(kids, className="diag-control")


def _progress(progress_id: str, status_id: str) -> list:
    return [
        html.Progress(id=progress_id, value="0", max="1", className="progress idle"),
        html.Span(id=status_id, className="diag-status", role="status"),
    ]


def _loading(child) -> dcc.Loading:
    """A spinner over results that take a second or more on a million rows."""
    return dcc.Loading(child, type="dot", delay_show=400)


def _number_input(id_: str, value, **kw) -> dcc.Input:
    return dcc.Input(
        id=id_, type="number", value=value, debounce=True, className="diag-number", **kw
    )


def diagnostics_section(infos: list[ModelInfo], selected) -> html.Section:
    """The collapsed Diagnostics section for a page whose models are ``infos``."""
    options, value = model_picker(selected_infos(infos, selected), None)
    controls = html.Div(
        [
            _label(
                "Model",
                dcc.Dropdown(
                    id=ids.DIAG_MODEL,
                    options=options,
                    value=value,
                    clearable=False,
                    className="diag-model",
                ),
            ),
            _label(
                "Resamples",
                dcc.Dropdown(
                    id=ids.DIAG_RESAMPLES,
                    options=[{"label": f"{r:,}", "value": r} for r in RESAMPLE_CHOICES],
                    value=DEFAULT_RESAMPLES,
                    clearable=False,
                    className="diag-small-dropdown",
                ),
                f"test and bootstrap; seed {SEED}",
            ),
        ],
        className="diag-controls",
    )
    test_card = _card(
        "Resampling test of calibration",
        html.Div(
            [
                _label(
                    "Measure",
                    dcc.Dropdown(
                        id=ids.DIAG_MEASURE,
                        options=[{"label": v, "value": k} for k, v in MEASURE_LABELS.items()],
                        value="confidence_ece",
                        clearable=False,
                        className="diag-measure",
                    ),
                ),
                html.Button("Run test", id=ids.DIAG_TEST_RUN, className="button", n_clicks=0),
                html.Button(
                    "Cancel",
                    id=ids.DIAG_TEST_CANCEL,
                    className="button secondary",
                    n_clicks=0,
                    disabled=True,
                ),
                *_progress(ids.DIAG_TEST_PROGRESS, ids.DIAG_TEST_STATUS),
            ],
            className="diag-controls",
        ),
        html.Div(id=ids.DIAG_TEST_TABLE),
        dcc.Graph(id=ids.DIAG_TEST_GRAPH, config=GRAPH_CONFIG, style={"display": "none"}),
        card_id="diag-test-card",
        doc="resampling-test",
    )
    boot_card = _card(
        "Bootstrap confidence intervals of the metrics table",
        html.Div(
            [
                _label(
                    "Level",
                    dcc.Dropdown(
                        id=ids.DIAG_BOOT_LEVEL,
                        options=[{"label": f"{v:.0%}", "value": v} for v in BOOT_LEVELS],
                        value=DEFAULT_BOOT_LEVEL,
                        clearable=False,
                        className="diag-small-dropdown",
                    ),
                ),
                html.Button(
                    "Compute intervals for every metric",
                    id=ids.DIAG_BOOT_RUN,
                    className="button",
                    n_clicks=0,
                ),
                html.Button(
                    "Cancel",
                    id=ids.DIAG_BOOT_CANCEL,
                    className="button secondary",
                    n_clicks=0,
                    disabled=True,
                ),
                *_progress(ids.DIAG_BOOT_PROGRESS, ids.DIAG_BOOT_STATUS),
            ],
            className="diag-controls",
        ),
        html.Div(id=ids.DIAG_BOOT_TABLE),
        card_id="diag-boot-card",
        doc="bootstrap-intervals",
    )
    beyond_card = _card(
        BEYOND_TITLE,
        html.Div(
            [
                html.Button(
                    "Compute measures", id=ids.DIAG_BEYOND_RUN, className="button", n_clicks=0
                ),
                html.Button(
                    "Cancel",
                    id=ids.DIAG_BEYOND_CANCEL,
                    className="button secondary",
                    n_clicks=0,
                    disabled=True,
                ),
                *_progress(ids.DIAG_BEYOND_PROGRESS, ids.DIAG_BEYOND_STATUS),
            ],
            className="diag-controls",
        ),
        html.Div(id=ids.DIAG_BEYOND_TABLE),
        card_id="diag-beyond-card",
        doc="beyond-bins",
    )
    decision_card = _card(
        "Decision view (binary problems)",
        html.Div(
            [
                _label(
                    "C(+|−)", _number_input(ids.DIAG_COST_FP, 1, min=0), "cost of a false positive"
                ),
                _label(
                    "C(−|+)", _number_input(ids.DIAG_COST_FN, 1, min=0), "cost of a false negative"
                ),
                _label(
                    "positive rate now",
                    _number_input(
                        ids.DIAG_TRAIN_PRIOR,
                        None,
                        min=0,
                        max=1,
                        step="any",
                        placeholder="auto",
                    ),
                    "empty: the scored rows' rate",
                ),
                _label(
                    "deployment positive rate",
                    _number_input(
                        ids.DIAG_DEPLOY_PRIOR,
                        None,
                        min=0,
                        max=1,
                        step="any",
                        placeholder="same",
                    ),
                    "empty: unchanged",
                ),
            ],
            className="diag-controls",
        ),
        html.Div(id=ids.DIAG_DECISION),
        dcc.Graph(id=ids.DIAG_COST_GRAPH, config=GRAPH_CONFIG, style={"display": "none"}),
        card_id="diag-decision-card",
        doc="decision-view",
    )
    body_children = [
        controls,
        html.P(id=ids.DIAG_CAPTION, className="caption"),
        html.Div(id=ids.DIAG_MESSAGE, className="message", role="alert"),
        _card(
            "ECE against the number of bins",
            dcc.Graph(id=ids.DIAG_SENSITIVITY, config=GRAPH_CONFIG),
            card_id="diag-sensitivity-card",
            doc="binning",
        ),
        _card(
            "Plug-in, adaptive and debiased calibration errors",
            html.Div(id=ids.DIAG_ESTIMATORS),
            card_id="diag-estimators-card",
            doc="ece-estimators",
        ),
        _card(
            "Hosmer-Lemeshow goodness of fit",
            html.Div(
                _label(
                    "Groups",
                    _number_input(
                        ids.DIAG_HL_GROUPS,
                        HL_DEFAULT_GROUPS,
                        min=HL_MIN_GROUPS,
                        max=HL_MAX_GROUPS,
                        step=1,
                    ),
                    f"{HL_MIN_GROUPS} to {HL_MAX_GROUPS} equal-frequency groups",
                ),
                className="diag-controls",
            ),
            _loading(html.Div(id=ids.DIAG_HL)),
            card_id="diag-hl-card",
            doc="hosmer-lemeshow",
        ),
        test_card,
        boot_card,
        beyond_card,
        decision_card,
        _card(
            "Human-uncertainty calibration (soft labels)",
            _loading(html.Div(id=ids.DIAG_HUMAN)),
            card_id="diag-human-card",
            doc="human-uncertainty",
        ),
    ]
    body = html.Div(
        body_children, id=ids.DIAG_BODY, className="diag-body", style={"display": "none"}
    )
    return html.Section(
        [
            html.Div(
                [
                    html.H2("Diagnostics", className="section-title"),
                    html.P(
                        "How far to trust each number: significance tests, intervals, binning "
                        "sensitivity, decision costs and human label distributions.",
                        className="caption grow",
                    ),
                    html.Button(
                        "Show diagnostics",
                        id=ids.DIAG_TOGGLE,
                        className="button",
                        n_clicks=0,
                        **{"aria-expanded": "false", "aria-controls": ids.DIAG_BODY},
                    ),
                ],
                className="diag-head",
            ),
            body,
            dcc.Store(id=ids.DIAG_OPEN, data=False),
            dcc.Store(id=ids.DIAG_VIEW_GATE),
            dcc.Store(id=ids.DIAG_FIT_GATE),
            dcc.Store(id=ids.DIAG_TEST_DONE),
            dcc.Store(id=ids.DIAG_BOOT_DONE),
            dcc.Store(id=ids.DIAG_BEYOND_DONE),
        ],
        id=ids.DIAG_SECTION,
        className="diagnostics",
    )
