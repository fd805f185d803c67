"""The view in the page address: the settings as a query string, and back.

A reload keeps the view, and the address can be shared as a link within the
same session (the models are named by their handles, which only their
session can use)::

    ?models=demo-0,demo-3&maps=temperature,isotonic&notion=class&class=3
     &bins=15&scheme=width&band=wilson&level=0.95&heldout=folds&folds=5&group=hospital

* :func:`encode_view`: the controls' values (a :class:`~app.settings.RawSettings`)
  as a query string. A callback writes it into a ``dcc.Location``'s ``search``
  (``refresh=False``: the browser's address changes, the page is not reloaded).
  ``class`` is written only for the one-vs-rest notion, ``level`` only with a
  band, ``folds`` or ``fraction`` after the held-out scheme they belong to,
  ``parts=1`` only when the Brier and log-loss parts are shown, ``diagram``
  only for the smooth or cumulative diagram, ``group`` only when rows are
  grouped (the "Per group" section, :mod:`app.groups.columns`).
* :func:`decode_view`: a query string back to the settings of a session's page.
  The address is untrusted input: its length and number of fields are
  bounded, every value is checked with the validators of :mod:`app.settings`,
  models must be the session's own, the class one of the selected models'.
  What cannot be used is dropped (the default stays) and named in one short
  notice; a missing parameter keeps its default.
* :func:`decode_time`: the Diagnostics section's "Over time" settings
  (``time=`` column, ``window=``, ``rows=``, ``ref=`` reference windows),
  written by :func:`encode_view` only where they differ from the defaults.
* :func:`page_query`: the query string of the page that asked for its layout.
  Dash fetches the layout with a request of its own (``/_dash-layout``),
  which carries the page's address only as its ``Referer``; the dashboard
  sends same-origin referrers for that (:func:`app.security.static_headers`).

Nothing of the uploaded data is ever in the address: only handles, map
names, the class name and settings.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from flask import has_request_context, request

from calibration_core.maps import MAP_NAMES

from .groups.columns import parse_group, parse_min_rows
from .groups.time import TimeSettings, parse_time
from .options import class_choices
from .settings import (
    LEVELS,
    MAX_SELECTED_MODELS,
    SCORE_PARTS_ON,
    RawSettings,
    SettingsError,
    parse_maps,
)
from .store.records import ModelInfo

#: Longest query string read (a full view with a long class name needs under 600).
MAX_QUERY_CHARS = 2000
#: Most ``name=value`` fields read; an address with more is not restored.
MAX_FIELDS = 30
#: Longest value of a number parameter (bins, folds, level, fraction).
MAX_NUMBER_CHARS = 8
#: Parameter of the address -> RawSettings field, in the order they are written.
PARAMS: dict[str, str] = {
    "models": "handles",
    "maps": "maps",
    "notion": "notion",
    "class": "class_value",
    "bins": "n_bins",
    "scheme": "scheme",
    "band": "band",
    "level": "level",
    "heldout": "heldout",
    "folds": "folds",
    "fraction": "fraction",
    "parts": "score_parts",
    "diagram": "kind",
    "group": "group",
    "min_rows": "group_min_rows",
}
#: Parameter of the address -> TimeSettings field (the "Over time" card).
TIME_PARAMS: dict[str, str] = {
    "time": "column",
    "window": "window",
    "rows": "rows",
    "ref": "reference",
}
#: Settings a parameter is checked with, besides its own (folds and fraction
#: are only validated under their own held-out scheme).
CHECKED_WITH = {"folds": {"heldout": "folds"}, "fraction": {"heldout": "split"}}
#: Parameters read as whole numbers and as decimals.
WHOLE = ("bins", "folds")
DECIMAL = ("level", "fraction")
#: Parameters set one by one with their checks (models, maps and class have their own).
SCALARS = ("notion", "bins", "scheme", "band", "level", "heldout", "folds", "fraction", "diagram")
NOTICE_PREFIX = "Not restored from the page address: "


def _decimal(value: float) -> str:
    """``0.95`` -> ``"0.95"``: the shortest text of a level or fraction."""
    return f"{value:g}"


def encode_view(raw: RawSettings, time: TimeSettings | None = None) -> str:
    """The query string (with its ``?``) of the controls' values.

    Parameters
    ----------
    raw : RawSettings
        The controls' values, as a callback receives them.
    time : TimeSettings, optional
        The "Over time" card's settings; only those unlike the defaults are written.

    Returns
    -------
    str
        E.g. ``"?models=demo-0&maps=temperature&notion=confidence&bins=15&..."``.

    Raises
    ------
    SettingsError
        When a value is invalid (the address is then left as it is).
    """
    handles, maps, heldout, view = raw.parse()
    pairs = [("models", ",".join(handles)), ("maps", ",".join(maps)), ("notion", view.notion)]
    if view.notion == "class":
        pairs.append(("class", view.class_name))
    pairs += [("bins", str(view.n_bins)), ("scheme", view.scheme), ("band", view.band)]
    if view.band != "none":
        pairs.append(("level", _decimal(view.level)))
    pairs.append(("heldout", heldout.mode))
    if heldout.mode == "folds":
        pairs.append(("folds", str(heldout.folds)))
    else:
        pairs.append(("fraction", _decimal(heldout.test_fraction)))
    if view.score_parts:
        pairs.append(("parts", "1"))
    if view.kind != "binned":
        pairs.append(("diagram", view.kind))
    group = parse_group(raw.group)
    if group is not None:
        pairs.append(("group", group))
        if raw.group_min_rows not in (None, ""):
            pairs.append(("min_rows", str(parse_min_rows(raw.group_min_rows))))
    pairs += time_pairs(time or TimeSettings())
    return "?" + urlencode(pairs, safe=",", quote_via=quote)


def time_pairs(time: TimeSettings) -> list[tuple[str, str]]:
    """``(parameter, text)`` of the "Over time" settings that differ from the defaults."""
    default = TimeSettings()
    pairs = []
    for name, field in TIME_PARAMS.items():
        value = getattr(time, field)
        if value != getattr(default, field):
            pairs.append((name, str(value)))
    return pairs


def decode_time(query: str | None) -> tuple[TimeSettings, list[str]]:
    """The "Over time" settings of a page whose address has query string ``query``.

    Each parameter is checked on its own (:func:`~app.groups.time.parse_time`);
    what cannot be used keeps its default and is named in at most one notice
    (a query too long to read is :func:`decode_view`'s notice).
    """
    fields, _ = _read_query(query)
    problems = []
    time = TimeSettings()
    for name, field in TIME_PARAMS.items():
        if name not in fields:
            continue
        text = fields[name]
        value = text
        if name in ("rows", "ref"):
            value = int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else text
        values = {**time.__dict__, field: value}
        try:
            time = parse_time(
                values["column"], values["window"], values["rows"], values["reference"]
            )
        except SettingsError as exc:
            problems.append(str(exc).rstrip("."))
    return time, ([NOTICE_PREFIX + "; ".join(problems) + "."] if problems else [])


def _read_query(query: str | None) -> tuple[dict[str, str], list[str]]:
    """The known parameters of a query string (first value of each), and problems.

    Unknown parameters are ignored (links often carry tracking fields).
    """
    query = (query or "").removeprefix("?")
    if len(query) > MAX_QUERY_CHARS:
        return {}, [f"the address is longer than {MAX_QUERY_CHARS} characters"]
    try:
        pairs = parse_qsl(query, keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except ValueError:
        return {}, [f"the address has more than {MAX_FIELDS} fields"]
    fields: dict[str, str] = {}
    for name, value in pairs:
        if (name in PARAMS or name in TIME_PARAMS) and name not in fields:
            fields[name] = value
    return fields, []


def _typed(name: str, text: str) -> object:
    """The value of a parameter as the control holds it (int, float or str)."""
    if name in WHOLE or name in DECIMAL:
        what = "a whole number" if name in WHOLE else "a number"
        short = text[:MAX_NUMBER_CHARS]
        try:
            digits = text.replace(".", "", 1)
            if len(text) > MAX_NUMBER_CHARS or not (digits.isascii() and digits.isdigit()):
                raise ValueError
            return int(text) if name in WHOLE else float(text)
        except ValueError:
            raise SettingsError(f"{name} must be {what}, got {short!r}") from None
    return text


def _shown(text: str, limit: int = 24) -> str:
    """A value from the address, quoted and cut short, for a notice."""
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _models(text: str, infos: list[ModelInfo]) -> tuple[list[str], list[str]]:
    """The session's models among the handles of ``models=``, at most MAX_SELECTED_MODELS."""
    known = {i.handle for i in infos}
    wanted = [h for h in dict.fromkeys(text.split(",")) if h]
    kept = [h for h in wanted if h in known]
    problems = []
    if len(kept) < len(wanted):
        n = len(wanted) - len(kept)
        problems.append(f"{n} model{'s' if n > 1 else ''} not in this session")
    if len(kept) > MAX_SELECTED_MODELS:
        problems.append(f"models after the first {MAX_SELECTED_MODELS}")
        kept = kept[:MAX_SELECTED_MODELS]
    return kept, problems


def _maps(text: str) -> tuple[list[str], list[str]]:
    """The known calibration maps of ``maps=``, in display order."""
    wanted = [m for m in dict.fromkeys(text.split(",")) if m]
    unknown = [m for m in wanted if m not in MAP_NAMES]
    problems = [f"unknown map {_shown(m)}" for m in unknown[:3]]
    if len(unknown) > 3:
        problems.append(f"{len(unknown) - 3} more unknown maps")
    return list(parse_maps([m for m in wanted if m in MAP_NAMES])), problems


def _scalar(raw: RawSettings, name: str, text: str) -> RawSettings:
    """``raw`` with parameter ``name`` set from ``text``; SettingsError when invalid."""
    field = PARAMS[name]
    value = _typed(name, text)
    if name == "level" and value not in LEVELS:
        levels = ", ".join(_decimal(v) for v in LEVELS)
        raise SettingsError(f"the band level must be one of {levels}, got {_shown(text)}")
    # Checked on its own, in the settings it belongs to (e.g. folds with heldout=folds).
    RawSettings(**{field: value, **CHECKED_WITH.get(name, {})}).parse()
    return replace(raw, **{field: value})


def _class(raw: RawSettings, text: str | None, infos: list[ModelInfo]) -> tuple[object, list]:
    """The class of ``class=`` for the one-vs-rest notion when it is valid, else None.

    Valid as the picker's own rule (:func:`app.options.class_choices`) says
    for the selected models; None lets the page open on its own choice (the
    first model's worst class, :func:`app.analysis.opening_class`).
    """
    models_json = [i.to_json() for i in infos]
    _options, value, _style = class_choices(models_json, raw.handles, "class", text)
    problems = []
    if text is not None and value != text:
        problems.append(f"class {_shown(text)} is not a class of the selected models")
    return (text if value == text else None), problems


def decode_view(
    query: str | None, infos: list[ModelInfo], default: RawSettings
) -> tuple[RawSettings, list[str]]:
    """The settings of a page whose address has query string ``query``.

    Parameters
    ----------
    query : str or None
        The query string, with or without its ``?`` (untrusted).
    infos : list of ModelInfo
        The session's usable models (the demo and its uploads).
    default : RawSettings
        The settings of a page without parameters; what a missing or invalid
        parameter keeps.

    Returns
    -------
    tuple of (RawSettings, list of str)
        The settings, and at most one notice naming what was dropped.
    """
    fields, problems = _read_query(query)
    raw = default
    if "models" in fields:
        handles, dropped = _models(fields["models"], infos)
        raw, problems = replace(raw, handles=handles), problems + dropped
    if "maps" in fields:
        maps, dropped = _maps(fields["maps"])
        raw, problems = replace(raw, maps=maps), problems + dropped
    for name in SCALARS:
        if name in fields:
            try:
                raw = _scalar(raw, name, fields[name])
            except SettingsError as exc:
                problems.append(str(exc).rstrip("."))
    if "parts" in fields:
        raw = replace(raw, score_parts=[SCORE_PARTS_ON] if fields["parts"] == "1" else [])
    if "group" in fields:
        try:
            raw = replace(raw, group=parse_group(fields["group"]))
        except SettingsError as exc:
            problems.append(str(exc).rstrip("."))
    if "min_rows" in fields:
        try:
            raw = replace(raw, group_min_rows=parse_min_rows(fields["min_rows"]))
        except SettingsError as exc:
            problems.append(str(exc).rstrip("."))
    if raw.notion == "class":
        value, dropped = _class(raw, fields.get("class"), infos)
        raw, problems = replace(raw, class_value=value), problems + dropped
    return raw, ([NOTICE_PREFIX + "; ".join(problems) + "."] if problems else [])


def page_query() -> str:
    """The query string of the page whose layout is being requested ("" if unknown).

    Read from the ``Referer`` of Dash's layout request (see the module
    docstring); outside a request (the server's set-up) there is none.
    """
    if not has_request_context():
        return ""
    try:
        return urlsplit(request.headers.get("Referer", "")).query
    except ValueError:  # not a URL
        return ""
