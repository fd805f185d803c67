"""Export buttons: metrics CSV/JSON, fitted maps JSON, the deployable map
(:mod:`app.deployable`) and the HTML report through ``dcc.Download``;
calibrated predictions (possibly millions of rows; one CSV per model and map,
zipped when several) streamed from ``GET /api/export/<token>``.

The token is created by the button's callback for the current session and
view, kept server-side for ten minutes, and only honoured for that session;
a small clientside function (``assets/downloads.js``) opens its URL.
"""

from __future__ import annotations

import secrets

from dash import ClientsideFunction, Input, Output, State, no_update
from dash import ctx as dash_ctx
from flask import Flask, Response, abort, stream_with_context

from calibration_core import CalibrationInputError

from .. import ids
from ..analysis import UNCALIBRATED, variants
from ..context import AppContext
from ..deployable import deployable_download, map_picker
from ..exports import (
    CalibratedFile,
    calibrated_download,
)
from ..services.report import small_export
from ..services.view import compute_view
from ..settings import RawSettings
from .controls import setting_states

EXPORT_TTL_SECONDS = 600
EXPORT_PATH = "/api/export/"


def create_calibrated_export(ctx: AppContext, sid, raw: RawSettings) -> str:
    """Register a streamed export of the view's calibrated predictions; returns its URL.

    One file per model and fitted map (the uncalibrated predictions are the
    input itself, so they are left out).
    """
    result = compute_view(ctx, sid, raw)
    items = []
    for mv in result.models:
        for v in variants(ctx.store, mv.info, result.maps, result.heldout):
            if v.handle is not None and v.calibrator != UNCALIBRATED:
                items.append((mv.info.handle, mv.info.name, v.calibrator, v.handle))
    if not items:
        raise CalibrationInputError(
            " ".join(result.messages)
            or "nothing to export yet: pick a model and a map (and wait for its fit)."
        )
    token = secrets.token_urlsafe(24)
    record = {"sid": sid, "items": items, "heldout": result.heldout}
    ctx.store.cache.set(f"export:{token}", record, expire=EXPORT_TTL_SECONDS)
    return export_url(token)


def export_url(token: str) -> str:
    """The address of an export, relative to the page: it keeps a path prefix the page has
    (a notebook's token, :mod:`app.token_check`)."""
    return EXPORT_PATH.lstrip("/") + token


def export_stream(ctx: AppContext, sid, token: str):
    """``(file name, mimetype, byte chunks)`` of a registered export, or None.

    None when the token is unknown, expired or another session's. Raises
    :class:`~calibration_core.CalibrationInputError` when its data expired.
    """
    record = ctx.store.cache.get(f"export:{token}", default=None)
    if record is None or record["sid"] != sid:
        return None
    files = []
    for handle, name, calibrator, variant in record["items"]:
        score = ctx.store.predictions(handle).score_column
        pred = ctx.store.predictions(variant)
        rows = ctx.store.scored_rows(handle, record["heldout"])
        files.append(CalibratedFile(name, calibrator, pred, rows, score))
    return calibrated_download(files)


def register_export_route(server: Flask, ctx: AppContext) -> None:
    """``GET /api/export/<token>``: the streamed calibrated predictions (CSV, or zip of CSVs)."""

    @server.get(EXPORT_PATH + "<token>")
    def export_calibrated(token: str):
        if len(token) > 64:
            abort(404)
        try:
            found = export_stream(ctx, ctx.session_id(), token)
        except CalibrationInputError:
            abort(410)
        if found is None:
            abort(404)
        filename, mimetype, chunks = found
        headers = {
            "Content-Disposition": f'attachment; filename="{filename}"',
            "X-Content-Type-Options": "nosniff",
        }
        return Response(stream_with_context(chunks), mimetype=mimetype, headers=headers)


def failed_export(rid: str) -> tuple:
    """No download, and a message with the request id."""
    return no_update, f"The export failed (request id {rid})."


def deployable_export(ctx: AppContext, sid, raw: RawSettings, model, map_choice) -> tuple:
    """Download data and message of the deployable map (raises CalibrationInputError)."""
    result = compute_view(ctx, sid, raw)
    if not result.models:
        raise CalibrationInputError(" ".join(result.messages) or "nothing to deploy: pick a model.")
    return deployable_download(ctx.store, result, model, map_choice)


def register_deployable(app, ctx: AppContext) -> None:
    """The deployable map's map picker (follows the maps) and its download button.

    Its model picker follows the model selection in the selection's own
    callback (:mod:`app.callbacks.models`): one request fewer per change.
    """

    @app.callback(
        Output(ids.DEPLOY_MAP, "options"),
        Output(ids.DEPLOY_MAP, "value"),
        Input(ids.MAPS, "value"),
        State(ids.DEPLOY_MAP, "value"),
    )
    def deploy_map_picker(maps, map_choice):
        return map_picker(maps, map_choice)

    output = [
        Output(ids.DOWNLOAD, "data", allow_duplicate=True),
        Output(ids.EXPORT_MESSAGE, "children", allow_duplicate=True),
    ]
    inputs = {"clicks": Input(ids.EXPORT_DEPLOYABLE, "n_clicks")}
    state = {
        "model": State(ids.DEPLOY_MODEL, "value"),
        "map_choice": State(ids.DEPLOY_MAP, "value"),
        "settings": setting_states(),
    }
    ctx.failures.reply("export", failed_export, output=output, inputs=inputs, state=state)

    @app.callback(output=output, inputs=inputs, state=state, prevent_initial_call=True)
    def download_deployable(clicks, model, map_choice, settings: dict):
        try:
            raw = RawSettings(**settings)
            return deployable_export(ctx, ctx.session_id(), raw, model, map_choice)
        except CalibrationInputError as exc:
            return no_update, str(exc)


def register(app, ctx: AppContext) -> None:
    """Export callbacks (and the clientside opener of streamed exports)."""
    small_output = [
        Output(ids.DOWNLOAD, "data"),
        Output(ids.EXPORT_MESSAGE, "children", allow_duplicate=True),
    ]
    small_inputs = {
        "clicks": (
            Input(ids.EXPORT_METRICS_CSV, "n_clicks"),
            Input(ids.EXPORT_METRICS_JSON, "n_clicks"),
            Input(ids.EXPORT_PARAMS_JSON, "n_clicks"),
            Input(ids.EXPORT_REPORT_HTML, "n_clicks"),
        )
    }
    small_state = {"settings": setting_states()}
    ctx.failures.reply(
        "export", failed_export, output=small_output, inputs=small_inputs, state=small_state
    )

    @app.callback(
        output=small_output, inputs=small_inputs, state=small_state, prevent_initial_call=True
    )
    def download_small(clicks: tuple, settings: dict):
        which = dash_ctx.triggered_id
        try:
            return small_export(ctx, ctx.session_id(), which, RawSettings(**settings)), ""
        except CalibrationInputError as exc:
            return no_update, str(exc)

    register_deployable(app, ctx)

    calibrated_output = [
        Output(ids.DOWNLOAD_URL, "data"),
        Output(ids.EXPORT_MESSAGE, "children", allow_duplicate=True),
    ]
    calibrated_inputs = {"clicks": Input(ids.EXPORT_CALIBRATED_CSV, "n_clicks")}
    calibrated_state = {"settings": setting_states()}
    ctx.failures.reply(
        "export",
        failed_export,
        output=calibrated_output,
        inputs=calibrated_inputs,
        state=calibrated_state,
    )

    @app.callback(
        output=calibrated_output,
        inputs=calibrated_inputs,
        state=calibrated_state,
        prevent_initial_call=True,
    )
    def download_calibrated(clicks, settings: dict):
        try:
            url = create_calibrated_export(ctx, ctx.session_id(), RawSettings(**settings))
        except CalibrationInputError as exc:
            return no_update, str(exc)
        return {
            "url": url,
            "nonce": secrets.token_hex(4),
        }, "Calibrated predictions: download started."

    app.clientside_callback(
        ClientsideFunction(namespace="calibration", function_name="openDownload"),
        Output(ids.DOWNLOAD_URL, "clear_data"),
        Input(ids.DOWNLOAD_URL, "data"),
        prevent_initial_call=True,
    )
