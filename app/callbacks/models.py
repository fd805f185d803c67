"""Models and what follows them: upload follow-up, notion, class picker, held-out fields.

The upload itself is a Flask route (:mod:`app.upload`); the page script posts
the files there and then writes the JSON answer into the ``upload-result``
store, which triggers :func:`after_upload`. The list of models always comes
from the server-side store (the answer is only used for messages and to
pre-select what was just loaded).
"""

from __future__ import annotations

from dash import ALL, Input, Output, State, html, no_update
from dash import ctx as dash_ctx

from .. import ids
from ..analysis import opening_class
from ..context import AppContext
from ..deployable import deploy_model_picker
from ..model_list import (
    cap_after_upload,
    deselect_group,
    first_upload,
    model_options,
    select_group,
    without_demo,
)
from ..options import class_choices, model_picker, notion_for_selection, selected_models
from ..store.data_store import DataStore
from .groups.columns import picker_options


def upload_messages(result, known: set[str]) -> list[tuple[str, str]]:
    """``(kind, text)`` lines from the upload script's result (plain text, never HTML).

    Only models whose handles the session really owns (``known``) are
    reported as loaded: the result comes from the browser.
    """
    lines: list[tuple[str, str]] = []
    if not isinstance(result, dict):
        return lines
    for item in result.get("results", [])[:20]:
        if not isinstance(item, dict):
            continue
        file = str(item.get("file", "file"))[:200]
        error = item.get("error")
        if error:
            lines.append(("error", str(error)[:2000]))
            continue
        names = [
            str(m.get("name", ""))
            for m in item.get("models", [])
            if isinstance(m, dict) and m.get("handle") in known
        ]
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            lines.append(("ok", f"{file}: loaded {shown}."))
            notices = item.get("notices")
            for note in notices[:5] if isinstance(notices, list) else []:
                lines.append(("notice", str(note)[:2000]))
    return lines


def label_picker(result) -> tuple[list, bool]:
    """The label-column picker's options and whether it is hidden, from an upload result.

    Shown with the refused file's columns when the loader could not tell
    which column holds the true classes (``remedy == "label_column"``).
    """
    items = result.get("results", []) if isinstance(result, dict) else []
    for item in items[:20]:
        if isinstance(item, dict) and item.get("remedy") == "label_column":
            columns = [str(c)[:200] for c in item.get("columns", [])[:500]]
            choose = html.Option("choose the column of true classes", value="")
            return [choose, *(html.Option(c, value=c) for c in columns)], False
    return [], True


def after_upload(store: DataStore, sid, result, selected, query=None) -> tuple:
    """The models store, dropdown options and selection, the upload message and label picker.

    Newly uploaded models (those the session owns and the result names) are
    added to the selection; previously selected models stay selected, except
    the demo's on the session's first upload (the user came for their files).
    """
    infos = store.session_models(sid)
    known = {i.handle for i in infos}
    selection = [h for h in (selected or []) if isinstance(h, str) and h in known]
    if isinstance(result, dict):
        for item in result.get("results", []):
            for m in item.get("models", []) if isinstance(item, dict) else []:
                handle = m.get("handle") if isinstance(m, dict) else None
                if handle in known and handle not in selection:
                    selection.append(handle)
    new = set(selection) - set(selected or [])
    if first_upload(infos, new):
        selection = without_demo(infos, selection)
    selection, note = cap_after_upload(selection, new)
    lines = upload_messages(result, known) + ([("notice", note)] if note else [])
    message = [html.Div(text, className=f"upload-line {kind}") for kind, text in lines]
    options, hidden = label_picker(result)
    return (
        [i.to_json() for i in infos],
        model_options(infos, query),
        selection,
        message,
        options,
        hidden,
    )


def class_picker(
    store: DataStore, sid, models_json, selected, notion, current, auto, scheme, n_bins
) -> tuple:
    """The class picker's options, value and style, and the class the page picked itself.

    While no model is selected (briefly, between two clicks) the picker is
    left as it is, so the user's class survives. A value the page chose, or
    none, becomes the worst class (one-vs-rest ECE at the current binning) of
    the first selected model; a class the user chose stays while valid.
    """
    chosen = selected_models(models_json, selected)
    picked: list[str] = []

    def default():
        worst = opening_class(store, sid, [m.handle for m in chosen], scheme, n_bins)
        if worst is not None:
            picked.append(worst)
        return worst

    options, value, style = class_choices(models_json, selected, notion, current, auto, default)
    if not chosen:
        return no_update, no_update, style, no_update
    return options, value, style, (picked[0] if picked else auto)


def model_pickers(models_json, selected, deploy_current, diag_current) -> tuple:
    """Options and values of the deployable map's and the Diagnostics section's model pickers.

    Both offer the selected models; a model still selected stays picked.
    """
    chosen = selected_models(models_json, selected)
    return (*deploy_model_picker(chosen, deploy_current), *model_picker(chosen, diag_current))


def group_action(store: DataStore, sid, trigger, selected) -> tuple:
    """The selection and note after a file's "all" or "none" button."""
    infos = store.session_models(sid)
    known = {i.handle for i in infos}
    selection = [h for h in (selected or []) if isinstance(h, str) and h in known]
    source = str(trigger.get("group", ""))
    if trigger.get("type") == ids.MODEL_GROUP_NONE:
        return deselect_group(infos, selection, source), ""
    return select_group(infos, selection, source)


def register_model_list(app, context: AppContext) -> None:
    """The model list's name filter and per-file select all/none."""

    @app.callback(
        Output(ids.MODEL_SELECT, "options", allow_duplicate=True),
        Input(ids.MODEL_SEARCH, "value"),
        prevent_initial_call=True,
    )
    def on_search(query):
        return model_options(context.store.session_models(context.session_id()), query)

    @app.callback(
        Output(ids.MODEL_SELECT, "value", allow_duplicate=True),
        Output(ids.MODEL_LIST_NOTE, "children"),
        Input({"type": ids.MODEL_GROUP_ALL, "group": ALL}, "n_clicks"),
        Input({"type": ids.MODEL_GROUP_NONE, "group": ALL}, "n_clicks"),
        State(ids.MODEL_SELECT, "value"),
        prevent_initial_call=True,
    )
    def on_group_button(_all, _none, selected):
        trigger = dash_ctx.triggered_id
        if not isinstance(trigger, dict) or not dash_ctx.triggered[0].get("value"):
            return no_update, no_update
        return group_action(context.store, context.session_id(), trigger, selected)


def after_selection(ctx: AppContext, triggers, models_json, selected, notion, state: dict) -> tuple:
    """Everything that follows a selection or notion change (the callback's outputs).

    ``triggers``: the ``"id.property"`` that changed; a notion change alone
    leaves the model and group pickers as they are. ``state``: the
    callback's states by name (see :func:`register_selection`).
    """
    if set(triggers) <= {f"{ids.NOTION}.value"}:
        pickers = (no_update,) * 6
    else:
        pickers = (
            *model_pickers(models_json, selected, state["deploy_model"], state["diag_model"]),
            *picker_options(ctx, ctx.session_id(), selected, state["group"]),
        )
    was_all_binary = bool(state["was_all_binary"])
    switch, now = notion_for_selection(models_json, selected, notion, was_all_binary)
    picker = class_picker(
        ctx.store,
        ctx.session_id(),
        models_json,
        selected,
        switch or notion,
        state["current"],
        state["auto"],
        state["scheme"],
        state["n_bins"],
    )
    return (switch or no_update, now, *picker, *pickers)


def register_upload(app, ctx: AppContext) -> None:
    """What follows an upload: the models store, the list, the message, the label picker."""

    @app.callback(
        output=[
            Output(ids.MODELS_STORE, "data"),
            Output(ids.MODEL_SELECT, "options"),
            Output(ids.MODEL_SELECT, "value"),
            Output(ids.UPLOAD_MESSAGE, "children"),
            Output(ids.UPLOAD_LABEL_COLUMN, "children"),
            Output(ids.UPLOAD_LABEL_FIELD, "hidden"),
        ],
        inputs={"result": Input(ids.UPLOAD_RESULT, "data")},
        state={
            "selected": State(ids.MODEL_SELECT, "value"),
            "query": State(ids.MODEL_SEARCH, "value"),
        },
        prevent_initial_call=True,
    )
    def on_upload(result, selected, query):
        return after_upload(ctx.store, ctx.session_id(), result, selected, query)


def register_selection(app, ctx: AppContext) -> None:
    """One callback for everything that follows the model selection in the page.

    The notion switch, the class picker, the deployable map's and the
    Diagnostics section's model pickers and the group picker's columns. The
    view waits for the first two, and the server answers one request at a
    time: one request per selection change instead of five (BENCHMARKS.md,
    issue 15). NOTION is an input and an output of the same callback (Dash
    allows that circle and does not re-run it for its own output).
    """

    @app.callback(
        output=[
            Output(ids.NOTION, "value"),
            Output(ids.ALL_BINARY_STORE, "data"),
            Output(ids.CLASS_SELECT, "options"),
            Output(ids.CLASS_SELECT, "value"),
            Output(ids.CLASS_FIELD, "style"),
            Output(ids.CLASS_AUTO, "data"),
            Output(ids.DEPLOY_MODEL, "options"),
            Output(ids.DEPLOY_MODEL, "value"),
            Output(ids.DIAG_MODEL, "options"),
            Output(ids.DIAG_MODEL, "value"),
            Output(ids.GROUP_SELECT, "options"),
            Output(ids.GROUP_SELECT, "value"),
        ],
        inputs={
            "models_json": Input(ids.MODELS_STORE, "data"),
            "selected": Input(ids.MODEL_SELECT, "value"),
            "notion": Input(ids.NOTION, "value"),
        },
        state={
            "state": {
                "was_all_binary": State(ids.ALL_BINARY_STORE, "data"),
                "current": State(ids.CLASS_SELECT, "value"),
                "auto": State(ids.CLASS_AUTO, "data"),
                "scheme": State(ids.SCHEME, "value"),
                "n_bins": State(ids.N_BINS, "value"),
                "deploy_model": State(ids.DEPLOY_MODEL, "value"),
                "diag_model": State(ids.DIAG_MODEL, "value"),
                "group": State(ids.GROUP_SELECT, "value"),
            }
        },
        prevent_initial_call=True,  # the layout starts with these values
    )
    def on_models_or_notion(models_json, selected, notion, state: dict):
        triggers = dash_ctx.triggered_prop_ids
        return after_selection(ctx, triggers, models_json, selected, notion, state)


def register_fields(app) -> None:
    """The held-out fields: the number of folds or the test fraction, as the scheme needs."""

    @app.callback(
        Output(ids.FOLDS_FIELD, "style"),
        Output(ids.SPLIT_FIELD, "style"),
        Input(ids.HELDOUT, "value"),
    )
    def on_heldout(mode):
        hidden = {"display": "none"}
        return ({}, hidden) if mode != "split" else (hidden, {})


def register(app, ctx: AppContext) -> None:
    """Upload follow-up, model list, selection, class picker and held-out field callbacks."""
    register_upload(app, ctx)
    register_model_list(app, ctx)
    register_selection(app, ctx)
    register_fields(app)
