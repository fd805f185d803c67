"""Drawing the view: validate -> core (re-binning stored predictions) -> figures and table.

Every setting change lands here, cheap or not; nothing here fits a map.
Fitted predictions that are not in the store yet show as "fitting…" panels
until the background fit (:mod:`app.callbacks.fit`) stores them and bumps
the fit-state store, which triggers this callback again.
"""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update
from dash import ctx as dash_ctx

from calibration_core import CalibrationInputError

from .. import ids
from ..analysis import CANCELLED, NOT_FITTED, PENDING, ViewResult
from ..context import AppContext
from ..figures.common import empty_figure, graph_config, view_title
from ..figures.diagram import diagram_figure_dict
from ..groups.time import parse_time
from ..layout.verdict import verdict_children
from ..metrics_table import caption, column_defs, row_data
from ..services.fit import fit_status_line
from ..services.view import compute_view
from ..session import SESSION_LOST_MESSAGE
from ..settings import RawSettings, SettingsError
from ..store.data_store import EVICTED_MESSAGE
from ..verdict import view_verdicts
from ..view_update import EMPTY_SLOT, PART_NAMES, SLOTS, slot_id, view_update
from ..view_url import encode_view
from .controls import (
    SECTION_FIELDS,
    SETTING_PROPS,
    VIEW_FIELDS,
    setting_inputs,
    setting_states,
    time_inputs,
    time_states,
)


def graphs(ctx: AppContext, result: ViewResult, fmt: str = "png", pending: str = PENDING) -> list:
    """One ``dcc.Graph`` per model (pattern id ``{"type": GRAPH_TYPE, "model": handle}``).

    The diagram is the view's kind (:func:`app.figures.diagram.diagram_figure_dict`).
    With several models the figures get fewer panel columns, and the
    stylesheet puts them side by side when the screen is wide enough.
    """
    side_by_side = len(result.models) > 1
    out = []
    for mv in result.models:
        out.append(
            dcc.Graph(
                # One id per model, not per position: a graph that stays keeps its
                # React component when others come or go (app.view_update).
                id={"type": ids.GRAPH_TYPE, "model": mv.info.handle},
                figure=diagram_figure_dict(ctx.store, result, mv, pending, side_by_side),
                config=graph_config(mv.info.name, fmt),
                className="reliability-graph",
            )
        )
    return out


def page_title(result: ViewResult) -> str:
    """The view's title above the diagrams, with the count of classes shown.

    E.g. "one class vs rest (all classes) · … · showing the 12 worst of 100
    classes by ECE" (each different count once, when the models differ).
    """
    notes = dict.fromkeys(n for n in (mv.classes_note() for mv in result.models) if n)
    return " · ".join([view_title(result.view), *notes])


def session_notices(ctx: AppContext, sid) -> list[str]:
    """What the page says about the session and the store, above the view's own messages.

    A session that could not be restored (bad or expired cookie), uploads
    removed to make room (until the session uploads again), and a banner
    while the disk refuses writes.
    """
    notices = []
    if ctx.sessions.lost():
        notices.append(SESSION_LOST_MESSAGE)
    if ctx.store.was_evicted(sid):
        notices.append(EVICTED_MESSAGE)
    problem = ctx.store.storage_problem
    if problem:
        notices.append(problem)
    return notices


def render(ctx: AppContext, sid, raw: RawSettings, fit_state=None, fmt="png") -> tuple:
    """Everything the view shows; the plain function behind the callback.

    Returns
    -------
    tuple
        (grid children, rowData, columnDefs, caption, title, messages, verdict children,
        fit status); the verdict (:mod:`app.verdict`) waits until every selected map
        is fitted, and the fit status (:func:`app.services.fit.fit_status_line`) says
        so only when the panels drawn with it are.
    """
    messages = session_notices(ctx, sid)
    pending = PENDING
    if isinstance(fit_state, dict):
        if isinstance(fit_state.get("error"), str):
            messages.append(fit_state["error"])
            pending = NOT_FITTED  # the fit is over: what is missing stays missing
        if fit_state.get("cancelled") is True:
            pending = CANCELLED
    try:
        result = compute_view(ctx, sid, raw, pending)
    except CalibrationInputError as exc:
        return (
            [dcc.Graph(figure=empty_figure("Nothing to show: fix the setting on the left."))],
            [],
            [],
            "",
            "",
            [*messages, str(exc)],
            [],
            fit_status_line(fit_state, None),
        )
    messages.extend(result.messages)
    if not result.models:
        children = [
            dcc.Graph(figure=empty_figure("Pick a model on the left, or drop a file to upload."))
        ]
    else:
        children = graphs(ctx, result, fmt if fmt in ("png", "svg") else "png", pending)
    return (
        children,
        row_data(result.rows),
        column_defs(result.view),
        caption(result.view),
        page_title(result),
        messages,
        verdict_children(view_verdicts(ctx.store, result, wait=True)),
        fit_status_line(fit_state, [name for mv in result.models for name in mv.pending]),
    )


def message_children(messages: list[str]):
    """The message area: one line per message, as text."""
    return [html.Div(m, className="message-line") for m in dict.fromkeys(messages)]


def failed_view(rid: str) -> tuple:
    """The view after an unexpected failure: nothing drawn, a message with the request id.

    The page address stays as it was.
    """
    msg = f"Something went wrong while drawing this view (request id {rid})."
    slots = [[]] * SLOTS, [EMPTY_SLOT] * SLOTS
    return *slots, [], [], "", "", message_children([msg]), [], "", {}, no_update, no_update


def address_search(raw: RawSettings, time: dict | None = None):
    """The page address's query string for these settings; ``no_update`` when one is invalid.

    ``time``: the "Over time" card's control values by name (left out when invalid:
    the card says what is wrong).
    """
    try:
        settings = parse_time(**time) if time else None
    except SettingsError:
        settings = None
    try:
        return encode_view(raw, settings)
    except SettingsError:  # the view says what is wrong; the address keeps the last good view
        return no_update


#: ``"id.property"`` of every control: a change of one of them moves the page address.
SETTING_KEYS = frozenset(f"{cid}.{prop}" for cid, prop in SETTING_PROPS.values())


def address_update(raw: RawSettings, triggers, time: dict | None = None) -> tuple:
    """The page address's query string and notice after a view callback (see :func:`register`).

    Only a changed setting (``triggers``: the ``"id.property"`` that changed)
    moves the address and clears the notice of what it asked for in vain; a
    fit that ends or a figure format leaves both as they are.
    """
    if SETTING_KEYS.isdisjoint(triggers):
        return no_update, no_update
    return address_search(raw, time), []


def register(app, ctx: AppContext) -> None:
    """The view callback; the page address follows the view's settings.

    The address is an output of the view callback rather than a callback of
    its own: the server answers one request at a time, and every request
    after a setting change is one more the page waits for (BENCHMARKS.md,
    issue 15). Not on the page's first load: the address it was opened with
    stays as it is, and so does the notice of what it asked for in vain,
    until the view changes. The group column and the "Over time" card's
    controls, which do not change the view, move the address with a callback
    of their own. The diagrams go to fixed slots, and only what the page does
    not show yet is sent (:mod:`app.view_update`). The line next to the Fit
    button is written with the view (:func:`render`), so that it and the
    panels say one fit status.
    """
    output = [
        [Output(slot_id(ids.GRAPH_SLOT, s), "children") for s in range(SLOTS)],
        [Output(slot_id(ids.GRAPH_SLOT, s), "style") for s in range(SLOTS)],
        Output(ids.METRICS_GRID, "rowData"),
        Output(ids.METRICS_GRID, "columnDefs"),
        Output(ids.METRICS_CAPTION, "children"),
        Output(ids.VIEW_TITLE, "children"),
        Output(ids.MESSAGE, "children"),
        Output(ids.VERDICT, "children"),
        Output(ids.FIT_SUMMARY, "children"),
        Output(ids.VIEW_KEYS, "data"),
        Output(ids.PAGE_URL, "search"),
        Output(ids.ADDRESS_NOTICE, "children"),
    ]
    inputs = {
        "settings": {**setting_inputs(VIEW_FIELDS), **setting_states(SECTION_FIELDS)},
        "fit_state": Input(ids.FIT_STATE, "data"),
        "fmt": Input(ids.FIGURE_FORMAT, "value"),
        "time": time_states(),
        "shown": State(ids.VIEW_KEYS, "data"),
    }
    ctx.failures.reply("drawing the view", failed_view, output=output, inputs=inputs)

    # The page arrives with the initial view drawn (app.factory.serve_layout).
    @app.callback(output=output, inputs=inputs, prevent_initial_call=True)
    def update_view(settings: dict, fit_state, fmt, time: dict, shown):
        raw = RawSettings(**settings)
        view = render(ctx, ctx.session_id(), raw, fit_state, fmt)
        children, styles, parts, keys = view_update(shown, view)
        messages = PART_NAMES.index("messages")
        if parts[messages] is not no_update:
            parts[messages] = message_children(parts[messages])
        address = address_update(raw, dash_ctx.triggered_prop_ids, time)
        return (children, styles, *parts, keys, *address)

    @app.callback(
        output=[
            Output(ids.PAGE_URL, "search", allow_duplicate=True),
            Output(ids.ADDRESS_NOTICE, "children", allow_duplicate=True),
        ],
        inputs={
            "time": time_inputs(),
            "settings": {**setting_states(VIEW_FIELDS), **setting_inputs(SECTION_FIELDS)},
        },
        prevent_initial_call=True,
    )
    def update_side_address(time: dict, settings: dict):
        return address_search(RawSettings(**settings), time), []
