"""The dashboard's HTML page: Dash's template with a lighter start.

Three changes to the page Dash writes, all about the first diagram's time:

* Preload links for the async chunks the page always needs (the graph,
  dropdown and slider chunks of dcc, the grid chunk of dash-ag-grid); Dash's
  renderer would fetch them only after the layout has arrived.
* Dash puts Babel's full polyfill (core-js and regenerator, 99 kB, about 0.2 s
  of script evaluation on a laptop core) first on every page. The browsers
  Dash 4 supports need none of core-js; the component bundles only call the
  global ``regeneratorRuntime`` of async functions compiled for old browsers.
  :class:`DashboardDash` serves the standalone regenerator runtime (MIT,
  ``assets/vendor/regenerator-runtime.js``, 25 kB) in the polyfill's place.
  If a Dash version names the polyfill differently, the page keeps it.
* dash-ag-grid's bundle (0.2 s of evaluation) is only needed by the metrics
  grid, which waits for the first diagrams anyway (``app.components.Deferred``).
  Its script tag becomes a prefetch link marked ``data-deferred-library``: the
  browser downloads it when idle, and ``assets/deferred.js`` evaluates it when
  the grid is about to render.
"""

from __future__ import annotations

import re

from dash import Dash

#: Chunks that Dash's renderer fetches only after the layout has arrived: the
#: page always needs them, so the browser is told to fetch them with the first
#: scripts (saves a round trip before the first diagram).
PRELOADED_CHUNKS = (
    "dash/dcc/async-graph.js",
    "dash/dcc/async-dropdown.js",
    "dash/dcc/async-slider.js",
)

#: Chunks needed only after the first diagrams (the metrics grid's): fetched
#: when the browser is idle (``rel="prefetch"``), so that their megabytes do not
#: hold one of the browser's six connections while the page's scripts load.
PREFETCHED_CHUNKS = ("dash_ag_grid/async-community.js",)

#: The standalone regenerator runtime, relative to the assets folder.
REGENERATOR_RUNTIME = "vendor/regenerator-runtime.js"

#: Dash serves every script of the assets folder on the page; the runtime
#: must come first instead (it replaces the polyfill), so Dash skips it.
ASSETS_IGNORE = r"^regenerator-runtime\.js$"

#: Component libraries whose main bundle the page does not evaluate at load
#: (their components must sit inside a ``Deferred(libraries=[...])``).
DEFERRED_LIBRARIES = ("dash_ag_grid",)

#: Dash's script tag for Babel's polyfill (``deps/polyfill@7.12.1.min.js``,
#: fingerprinted ``polyfill@7.v4_4_1m<mtime>.12.1.min.js``).
_POLYFILL_TAG = re.compile(r'<script src="[^"]*/dash/deps/polyfill@[^"]*"></script>')


def with_preloads(template: str, prefix: str) -> str:
    """A Dash page template plus preload and prefetch links for the chunks, after its CSS.

    Parameters
    ----------
    template : str
        A Dash ``index_string`` (with its ``{%css%}`` placeholder).
    prefix : str
        The app's ``requests_pathname_prefix`` (e.g. ``"/"``).
    """
    suites = f"{prefix}_dash-component-suites/"
    links = "".join(
        f'<link rel="preload" as="script" href="{suites}{chunk}">' for chunk in PRELOADED_CHUNKS
    ) + "".join(
        f'<link rel="prefetch" as="script" href="{suites}{chunk}">' for chunk in PREFETCHED_CHUNKS
    )
    return template.replace("{%css%}", "{%css%}\n        " + links, 1)


def without_polyfill(scripts: str, runtime_url: str) -> str:
    """Dash's script tags with the Babel polyfill replaced by the regenerator runtime.

    Parameters
    ----------
    scripts : str
        The ``<script>`` tags Dash writes into the page.
    runtime_url : str
        URL of :data:`REGENERATOR_RUNTIME`.

    Returns
    -------
    str
        ``scripts`` with the polyfill's tag (the first one) replaced; unchanged
        when there is no such tag.
    """
    return _POLYFILL_TAG.sub(lambda _: f'<script src="{runtime_url}"></script>', scripts, 1)


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
    """Dash, with the regenerator runtime for Babel's polyfill and deferred libraries.

    Uses Dash's documented ``interpolate_index`` hook; every other part of
    the page is Dash's own.
    """

    def interpolate_index(self, **kwargs: str) -> str:
        runtime = self.get_asset_url(REGENERATOR_RUNTIME)
        scripts = without_polyfill(kwargs.get("scripts", ""), runtime)
        kwargs["scripts"] = with_deferred_libraries(scripts)
        return super().interpolate_index(**kwargs)
