"""The Diagnostics section of the page (below the metrics table) and its table renderer.

The section is collapsed at first: nothing is computed until it is opened
(``DIAG_OPEN``). Cheap diagnostics then follow every setting; the resampling
test and the bootstrap run on demand in background jobs with a progress bar
and a cancel button. All ids come from :mod:`app.ids`.
"""

from __future__ import annotations

from dash import dcc, html

from .. import ids
from ..diagnostics.beyond import BEYOND_TITLE
from ..diagnostics.resampling import SEED
from ..diagnostics.tables import TextTable
from ..diagnostics.target import (
    BOOT_LEVELS,
    DEFAULT_BOOT_LEVEL,
    DEFAULT_RESAMPLES,
    HL_DEFAULT_GROUPS,
    HL_MAX_GROUPS,
    HL_MIN_GROUPS,
    MEASURE_LABELS,
    RESAMPLE_CHOICES,
)
from ..figures.common import MODEBAR_CONFIG
from ..groups.time import MAX_REFERENCE_CHARS, WINDOW_CHOICES, TimeSettings
from ..options import model_picker, selected_infos
from ..statistics_page import statistics_link
from ..store.records import ModelInfo
from .jobs import job_controls

GRAPH_CONFIG = {
    **MODEBAR_CONFIG,
    "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "diagnostics"},
}


def table_component(table: TextTable, class_name: str = "diag-table") -> html.Div:
    """A :class:`TextTable` as an HTML table, its warnings and its notes (text only)."""
    head = html.Thead(html.Tr([html.Th(h) for h in table.header]))
    marked = set(table.highlight)
    body = html.Tbody(
        [
            html.Tr([html.Td(c) for c in row], className="highlight" if i in marked else None)
            for i, row in enumerate(table.rows)
        ]
    )
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
        href=statistics_link(doc),
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


def _loading(child) -> dcc.Loading:
    """A spinner over results that take a second or more on a million rows."""
    return dcc.Loading(child, type="dot", delay_show=400)


def _number_input(id_: str, value, **kw) -> dcc.Input:
    return dcc.Input(
        id=id_, type="number", value=value, debounce=True, className="diag-number", **kw
    )


def _dropdown(id_: str, options: list[dict], value, class_name: str) -> dcc.Dropdown:
    return dcc.Dropdown(id=id_, options=options, value=value, clearable=False, className=class_name)


def _shared_controls(infos: list[ModelInfo], selected) -> html.Div:
    """The model every card diagnoses and the resamples of the test and the bootstrap."""
    options, value = model_picker(selected_infos(infos, selected), None)
    resamples = [{"label": f"{r:,}", "value": r} for r in RESAMPLE_CHOICES]
    return html.Div(
        [
            _label("Model", _dropdown(ids.DIAG_MODEL, options, value, "diag-model")),
            _label(
                "Resamples",
                _dropdown(ids.DIAG_RESAMPLES, resamples, DEFAULT_RESAMPLES, "diag-small-dropdown"),
                f"test and bootstrap; seed {SEED}",
            ),
        ],
        className="diag-controls",
    )


def _test_card() -> html.Div:
    measures = [{"label": v, "value": k} for k, v in MEASURE_LABELS.items()]
    measure = _label(
        "Measure", _dropdown(ids.DIAG_MEASURE, measures, "confidence_ece", "diag-measure")
    )
    return _card(
        "Resampling test of calibration",
        job_controls(
            "Run test",
            ids.DIAG_TEST_RUN,
            ids.DIAG_TEST_CANCEL,
            ids.DIAG_TEST_PROGRESS,
            ids.DIAG_TEST_STATUS,
            measure,
        ),
        html.Div(id=ids.DIAG_TEST_TABLE),
        dcc.Graph(id=ids.DIAG_TEST_GRAPH, config=GRAPH_CONFIG, style={"display": "none"}),
        card_id="diag-test-card",
        doc="resampling-test",
    )


def _boot_card() -> html.Div:
    levels = [{"label": f"{v:.0%}", "value": v} for v in BOOT_LEVELS]
    level = _label(
        "Level", _dropdown(ids.DIAG_BOOT_LEVEL, levels, DEFAULT_BOOT_LEVEL, "diag-small-dropdown")
    )
    return _card(
        "Bootstrap confidence intervals of the metrics table",
        job_controls(
            "Compute intervals for every metric",
            ids.DIAG_BOOT_RUN,
            ids.DIAG_BOOT_CANCEL,
            ids.DIAG_BOOT_PROGRESS,
            ids.DIAG_BOOT_STATUS,
            level,
        ),
        html.Div(id=ids.DIAG_BOOT_TABLE),
        card_id="diag-boot-card",
        doc="bootstrap-intervals",
    )


def _beyond_card() -> html.Div:
    return _card(
        BEYOND_TITLE,
        job_controls(
            "Compute measures",
            ids.DIAG_BEYOND_RUN,
            ids.DIAG_BEYOND_CANCEL,
            ids.DIAG_BEYOND_PROGRESS,
            ids.DIAG_BEYOND_STATUS,
        ),
        html.Div(id=ids.DIAG_BEYOND_TABLE),
        card_id="diag-beyond-card",
        doc="beyond-bins",
    )


#: The hint under a reference period's field (the "Over time" card, a dataset's windows).
REFERENCE_HINT = (
    "K: the first K windows; A:B: windows A to B; dates 2024-01-01:2024-01-31; "
    "or one day or month (2024-01)"
)


def over_time_card(time: TimeSettings) -> html.Div:
    """The "Over time" card: window controls, the time chart, its table, a window's diagram.

    ``time``: the controls' first values (from the page address).
    """
    column = dcc.Dropdown(
        id=ids.TIME_COLUMN,
        options=[] if time.column is None else [time.column],
        value=time.column,
        placeholder="timestamp, time or date",
        className="diag-measure",
    )
    windows = [{"label": v, "value": k} for k, v in WINDOW_CHOICES.items()]
    settings = [
        _label("Time column", column),
        _label("Window", _dropdown(ids.TIME_WINDOW, windows, time.window, "diag-small-dropdown")),
        _label(
            "N rows",
            _number_input(ids.TIME_ROWS, time.rows, min=1, step=1, placeholder="auto"),
            "every N rows; empty: 10 windows",
        ),
        _label(
            "Reference",
            dcc.Input(
                id=ids.TIME_REFERENCE,
                type="text",
                value=time.reference,
                debounce=True,
                placeholder="1",
                maxLength=MAX_REFERENCE_CHARS,
                className="diag-number diag-period",
            ),
            REFERENCE_HINT,
        ),
    ]
    return _card(
        "Over time",
        job_controls(
            "Compute intervals",
            ids.TIME_RUN,
            ids.TIME_CANCEL,
            ids.TIME_PROGRESS,
            ids.TIME_STATUS,
            *settings,
        ),
        html.Div(id=ids.TIME_MESSAGE),
        _loading(dcc.Graph(id=ids.TIME_GRAPH, config=GRAPH_CONFIG, style={"display": "none"})),
        html.Div(id=ids.TIME_TABLE),
        dcc.Graph(id=ids.TIME_DIAGRAM, config=GRAPH_CONFIG, style={"display": "none"}),
        card_id="diag-time-card",
        doc="bootstrap-intervals",
    )


def _rate_input(id_: str, placeholder: str) -> dcc.Input:
    return _number_input(id_, None, min=0, max=1, step="any", placeholder=placeholder)


def _decision_card() -> html.Div:
    controls = [
        _label("C(+|−)", _number_input(ids.DIAG_COST_FP, 1, min=0), "cost of a false positive"),
        _label("C(−|+)", _number_input(ids.DIAG_COST_FN, 1, min=0), "cost of a false negative"),
        _label(
            "positive rate now",
            _rate_input(ids.DIAG_TRAIN_PRIOR, "auto"),
            "empty: the scored rows' rate",
        ),
        _label(
            "deployment positive rate",
            _rate_input(ids.DIAG_DEPLOY_PRIOR, "same"),
            "empty: unchanged",
        ),
    ]
    return _card(
        "Decision view (binary problems)",
        html.Div(controls, className="diag-controls"),
        html.Div(id=ids.DIAG_DECISION),
        dcc.Graph(id=ids.DIAG_COST_GRAPH, config=GRAPH_CONFIG, style={"display": "none"}),
        card_id="diag-decision-card",
        doc="decision-view",
    )


def _hl_card() -> html.Div:
    groups = _number_input(
        ids.DIAG_HL_GROUPS, HL_DEFAULT_GROUPS, min=HL_MIN_GROUPS, max=HL_MAX_GROUPS, step=1
    )
    hint = f"{HL_MIN_GROUPS} to {HL_MAX_GROUPS} equal-frequency groups"
    return _card(
        "Hosmer-Lemeshow goodness of fit",
        html.Div(_label("Groups", groups, hint), className="diag-controls"),
        _loading(html.Div(id=ids.DIAG_HL)),
        card_id="diag-hl-card",
        doc="hosmer-lemeshow",
    )


def _cards(time: TimeSettings) -> list[html.Div]:
    """Every diagnostic's card, in page order (``time``: the "Over time" card's settings)."""
    return [
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
        _hl_card(),
        _test_card(),
        _boot_card(),
        over_time_card(time),
        _beyond_card(),
        _decision_card(),
        _card(
            "Human-uncertainty calibration (soft labels)",
            _loading(html.Div(id=ids.DIAG_HUMAN)),
            card_id="diag-human-card",
            doc="human-uncertainty",
        ),
    ]


def _head() -> html.Div:
    """The section's title, what it holds and the button that opens it."""
    return html.Div(
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
    )


def diagnostics_section(
    infos: list[ModelInfo], selected, time: TimeSettings | None = None
) -> html.Section:
    """The collapsed Diagnostics section for a page whose models are ``infos``.

    ``time``: the "Over time" card's first settings (defaults when None).
    """
    body_children = [
        _shared_controls(infos, selected),
        html.P(id=ids.DIAG_CAPTION, className="caption"),
        html.Div(id=ids.DIAG_MESSAGE, className="message", role="alert"),
        *_cards(time or TimeSettings()),
    ]
    body = html.Div(
        body_children, id=ids.DIAG_BODY, className="diag-body", style={"display": "none"}
    )
    stores = [
        dcc.Store(id=ids.DIAG_OPEN, data=False),
        *(
            dcc.Store(id=id_)
            for id_ in (
                ids.DIAG_VIEW_GATE,
                ids.DIAG_FIT_GATE,
                ids.DIAG_TEST_DONE,
                ids.DIAG_BOOT_DONE,
                ids.DIAG_BEYOND_DONE,
                ids.TIME_DONE,
            )
        ),
    ]
    return html.Section([_head(), body, *stores], id=ids.DIAG_SECTION, className="diagnostics")
