"""The controls drawer below 1000 px: its toggle button opens and closes it in the browser.

A clientside callback (``calibration.toggleDrawer`` in ``assets/downloads.js``):
no request to the server, and the state lives in the components' props, so a
re-render keeps it. The stylesheet decides when the drawer is a drawer.
"""

from __future__ import annotations

from dash import ClientsideFunction, Input, Output

from .. import ids
from ..context import AppContext


def register(app, ctx: AppContext) -> None:
    """Toggle button -> the dock's class (``open``) and its ``aria-expanded``; ``ctx`` unused."""
    app.clientside_callback(
        ClientsideFunction(namespace="calibration", function_name="toggleDrawer"),
        Output(ids.CONTROLS_DOCK, "className"),
        Output(ids.CONTROLS_TOGGLE, "aria-expanded"),
        Input(ids.CONTROLS_TOGGLE, "n_clicks"),
        prevent_initial_call=True,
    )
