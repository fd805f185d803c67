"""The view's controls, listed once: each field of RawSettings and the property it reads.

Callbacks take them through Dash's dict-based signatures:
``inputs=dict(settings=setting_inputs(), ...)`` calls the function with
``settings``, a dict keyed by :class:`~app.settings.RawSettings` field, so
``RawSettings(**settings)`` holds the raw values by name, never by position.
The Diagnostics section's browser-side gates pass the same fields by name
(:mod:`app.callbacks.diagnostics.wiring`).
"""

from __future__ import annotations

from collections.abc import Iterable

from dash import Input, State

from .. import ids

#: RawSettings field -> (component id, property): every control of the view.
SETTING_PROPS: dict[str, tuple[str, str]] = {
    "handles": (ids.MODEL_SELECT, "value"),
    "maps": (ids.MAPS, "value"),
    "heldout": (ids.HELDOUT, "value"),
    "folds": (ids.FOLDS, "value"),
    "fraction": (ids.TEST_FRACTION, "value"),
    "notion": (ids.NOTION, "value"),
    "class_value": (ids.CLASS_SELECT, "value"),
    "scheme": (ids.SCHEME, "value"),
    "n_bins": (ids.N_BINS, "value"),
    "band": (ids.BAND, "value"),
    "level": (ids.BAND_LEVEL, "value"),
    "score_parts": (ids.SCORE_PARTS, "value"),
    "kind": (ids.DIAGRAM_KIND, "value"),
    "group": (ids.GROUP_SELECT, "value"),
    "group_min_rows": (ids.GROUP_MIN_ROWS, "value"),
}
#: The settings only the "Per group" section follows (:mod:`app.callbacks.groups.columns`).
SECTION_FIELDS = ("group_min_rows", "group")
#: What the view (diagrams, metrics table) follows: every setting but the section's.
VIEW_FIELDS = tuple(name for name in SETTING_PROPS if name not in SECTION_FIELDS)
#: What the "Per group" section follows: the model, the notion, the binning, the band, the
#: minimum group size and the group column (last: the browser-side gate reads it there).
GROUP_FIELDS = ("handles", "notion", "class_value", "scheme", "n_bins", "band", "level",
                *SECTION_FIELDS)  # fmt: skip
#: The "Over time" card's controls: argument of
#: :func:`~app.groups.time.parse_time` -> (component id, property).
TIME_PROPS: dict[str, tuple[str, str]] = {
    "column": (ids.TIME_COLUMN, "value"),
    "window": (ids.TIME_WINDOW, "value"),
    "rows": (ids.TIME_ROWS, "value"),
    "reference": (ids.TIME_REFERENCE, "value"),
}
#: What decides the calibrators: the maps and the held-out scheme.
FIT_FIELDS = ("maps", "heldout", "folds", "fraction")
#: What the Diagnostics section follows besides its model: the calibrators, the notion
#: and the binning (not the models picked for the view, nor the band).
DIAGNOSTICS_FIELDS = (*FIT_FIELDS, "notion", "class_value", "scheme", "n_bins")


def setting_inputs(fields: Iterable[str] = tuple(SETTING_PROPS)) -> dict[str, Input]:
    """``{field: Input}`` of the given settings (all by default), for ``inputs=dict(...)``."""
    return {name: Input(*SETTING_PROPS[name]) for name in fields}


def setting_states(fields: Iterable[str] = tuple(SETTING_PROPS)) -> dict[str, State]:
    """``{field: State}`` of the given settings (all by default), for ``state=dict(...)``."""
    return {name: State(*SETTING_PROPS[name]) for name in fields}


def time_inputs() -> dict[str, Input]:
    """``{argument: Input}`` of the "Over time" card's controls (:data:`TIME_PROPS`)."""
    return {name: Input(*prop) for name, prop in TIME_PROPS.items()}


def time_states() -> dict[str, State]:
    """``{argument: State}`` of the "Over time" card's controls."""
    return {name: State(*prop) for name, prop in TIME_PROPS.items()}
