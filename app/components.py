"""The app's own Dash components (their React code is in ``assets/``).

:class:`Deferred` holds part of the page back until the first diagrams are
drawn (``assets/deferred.js``). Dash serves every ``.js`` file of the assets
folder with the page, so these components need no build step or JS bundle.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dash.development.base_component import Component

#: Namespace of the components in the browser (``window.calibration_dashboard``).
NAMESPACE = "calibration_dashboard"

#: A reliability diagram that Plotly has not drawn yet (dcc.Graph's outer div
#: carries the class name; Plotly adds ``.main-svg`` inside it when it draws).
UNDRAWN_DIAGRAM = ".reliability-graph:not(:has(.main-svg))"


class Deferred(Component):
    """Render ``children`` once no element matches ``pending`` (or after ``timeout``).

    The browser draws everything mounted in one React commit in one long
    task: the page's first diagrams wait for a data grid built alongside
    them. Wrapping the grid in ``Deferred(grid, pending=UNDRAWN_DIAGRAM)``
    lets the diagrams paint first; the grid follows in the next task. The
    children stay in Dash's layout the whole time, so callbacks update their
    props before and after they are shown.

    Parameters
    ----------
    children : Dash component or list, optional
        What to render once ready (rendered once, then kept).
    id : str, optional
        Id of the wrapping ``div``.
    pending : str
        CSS selector; while an element of the page matches it, the children
        wait. Empty: render at once.
    timeout : int
        Milliseconds after which the children render anyway (default 3000).
    className : str, optional
        Class of the wrapping ``div``.
    """

    _children_props: ClassVar[list[str]] = []
    _base_nodes: ClassVar[list[str]] = ["children"]
    _namespace = NAMESPACE
    _type = "Deferred"

    def __init__(
        self,
        children: Any = None,
        id: str | None = None,
        pending: str = "",
        timeout: int = 3000,
        className: str | None = None,
        **kwargs: Any,
    ) -> None:
        self._prop_names = ["children", "id", "pending", "timeout", "className"]
        self._valid_wildcard_attributes = []
        self.available_properties = list(self._prop_names)
        self.available_wildcard_properties = []
        props: dict[str, Any] = {
            "pending": pending,
            "timeout": int(timeout),
        }
        if id is not None:
            props["id"] = id
        if className is not None:
            props["className"] = className
        super().__init__(children=children, **props, **kwargs)
