"""The dashboard's HTML page: Dash's template, with dash-ag-grid's bundle deferred.

dash-ag-grid's bundle (0.2 s of evaluation) is only needed by the metrics
grid, which waits for the first diagrams anyway (``app.components.Deferred``).
Its script tag becomes a prefetch link marked ``data-deferred-library``: the
browser downloads it when idle, and ``assets/deferred.js`` evaluates it when
the grid is about to render.
"""

from __future__ import annotations

import re

from dash import Dash

#: Component libraries whose main bundle the page does not evaluate at load
#: (their components must sit inside a ``Deferred(libraries=[...])``).
DEFERRED_LIBRARIES = ("dash_ag_grid",)


def with_deferred_libraries(scripts: str, libraries: tuple[str, ...] = DEFERRED_LIBRARIES) -> str:
    """Dash's script tags with each library's main bundle turned into a marked prefetch link.

    Parameters
    ----------
    scripts : str
        The ``<script>`` tags Dash writes into the page.
    libraries : tuple of str
        Namespaces (e.g. ``"dash_ag_grid"``) whose bundle
        ``_dash-component-suites/NAME/NAME.<fingerprint>.js`` is deferred.

    Returns
    -------
    str
        ``scripts`` with ``<link rel="prefetch" as="script" data-deferred-library="NAME">``
        in place of each bundle's tag; a library whose tag is not found keeps
        its script (and is then loaded with the page, as usual).
    """
    for name in libraries:
        tag = re.compile(
            rf'<script src="([^"]*/_dash-component-suites/{re.escape(name)}/'
            rf'{re.escape(name)}\.[^"/]*\.js)"></script>'
        )
        scripts = tag.sub(
            lambda m, name=name: (
                f'<link rel="prefetch" as="script" href="{m.group(1)}" '
                f'data-deferred-library="{name}">'
            ),
            scripts,
            1,
        )
    return scripts


class DashboardDash(Dash):
    """Dash, with deferred component libraries.

    Uses Dash's documented ``interpolate_index`` hook; every other part of
    the page is Dash's own.
    """

    def interpolate_index(self, **kwargs: str) -> str:
        kwargs["scripts"] = with_deferred_libraries(kwargs.get("scripts", ""))
        return super().interpolate_index(**kwargs)
