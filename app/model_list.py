"""The model list: models grouped by source file, a name filter, select all/none per file.

The list is one ``dcc.Checklist`` (``ids.MODEL_SELECT``, value = the selected
handles) so every callback that reads the selection keeps working. Its
options are ordered by source file; each file starts with a disabled header
option holding the file's name and its "all" and "none" buttons (pattern ids
``{"type": ids.MODEL_GROUP_ALL | ids.MODEL_GROUP_NONE, "group": source}``),
so the models' own labels stay "<name> (<N> × <K>)".
Filtering only changes the options: a Checklist keeps values that have no
option, so selections survive the filter.
"""

from __future__ import annotations

from dash import html

from . import ids
from .options import model_label
from .settings import MAX_SELECTED_MODELS
from .store.records import DEMO_SOURCE, ModelInfo

#: Value of a file's header row in the checklist (disabled: never in the selection).
GROUP_VALUE_PREFIX = "file:"


def group_sources(infos: list[ModelInfo]) -> list[str]:
    """Source files in order of first appearance (the demo first, then uploads)."""
    return list(dict.fromkeys(i.source for i in infos))


def _group_header(source: str, count: int) -> html.Div:
    """A file's header: its name, model count and the select all/none buttons."""
    return html.Div(
        [
            html.Span(source, className="model-group-name", title=source),
            html.Span(f"{count}", className="model-group-count"),
            html.Button(
                "all",
                id={"type": ids.MODEL_GROUP_ALL, "group": source},
                className="link-button",
                title=f"Select the models of {source}",
            ),
            html.Button(
                "none",
                id={"type": ids.MODEL_GROUP_NONE, "group": source},
                className="link-button",
                title=f"Deselect the models of {source}",
            ),
        ],
        className="model-group-head",
    )


def model_options(infos: list[ModelInfo], query: str | None = None) -> list[dict]:
    """Checklist options grouped by source file, filtered by ``query`` (name or file).

    Parameters
    ----------
    infos : list of ModelInfo
        The session's models, demo first.
    query : str, optional
        Only models whose name or file contains it (case-insensitive) are listed.

    Returns
    -------
    list of dict
        Per file with a listed model: a disabled header option (value
        ``GROUP_VALUE_PREFIX + source``, never selectable; CSS hides its box),
        then ``{"label": "<name> (<N> × <K>)", "value": handle}`` per model.
    """
    needle = (query or "").strip().casefold()
    options: list[dict] = []
    for source in group_sources(infos):
        members = [i for i in infos if i.source == source]
        shown = [i for i in members if needle in i.name.casefold() or needle in source.casefold()]
        if not shown:
            continue
        header = _group_header(source, len(members))
        options.append({"label": header, "value": GROUP_VALUE_PREFIX + source, "disabled": True})
        options += [{"label": model_label(i), "value": i.handle} for i in shown]
    return options


def select_group(infos: list[ModelInfo], selected: list[str], source: str) -> tuple[list, str]:
    """The selection with every model of ``source`` added, at most MAX_SELECTED_MODELS.

    When the file and the current selection do not fit, the file's first models
    come first, then what was selected before, and the note says so.
    """
    group = [i.handle for i in infos if i.source == source]
    wanted = list(selected) + [h for h in group if h not in selected]
    if len(wanted) <= MAX_SELECTED_MODELS:
        return wanted, ""
    first = group[:MAX_SELECTED_MODELS]
    rest = [h for h in selected if h not in first][: MAX_SELECTED_MODELS - len(first)]
    note = (
        f"At most {MAX_SELECTED_MODELS} models at a time: selected the first "
        f"{len(first)} of {source}" + (" and kept the earlier choices that fit." if rest else ".")
    )
    return first + rest, note


def deselect_group(infos: list[ModelInfo], selected: list[str], source: str) -> list[str]:
    """The selection without the models of ``source``."""
    group = {i.handle for i in infos if i.source == source}
    return [h for h in selected if h not in group]


def cap_after_upload(selection: list[str], new: set[str]) -> tuple[list[str], str]:
    """At most MAX_SELECTED_MODELS: the first new models, then the latest earlier ones.

    Returns the selection and a note ("" when nothing had to be left out).
    """
    if len(selection) <= MAX_SELECTED_MODELS:
        return selection, ""
    fresh = [h for h in selection if h in new][:MAX_SELECTED_MODELS]
    room = MAX_SELECTED_MODELS - len(fresh)
    older = [h for h in selection if h not in new][-room:] if room else []
    note = (
        f"At most {MAX_SELECTED_MODELS} models at a time: selected {len(fresh)} of the "
        f"{len(new)} new models; tick others in the list (the search box finds them)."
    )
    return older + fresh, note


def first_upload(infos: list[ModelInfo], new: set[str]) -> bool:
    """True when ``new`` are the session's only uploaded models (its first upload)."""
    return bool(new) and all(i.source == DEMO_SOURCE or i.handle in new for i in infos)


def without_demo(infos: list[ModelInfo], selected: list[str]) -> list[str]:
    """The selection without the built-in demo's models."""
    demo = {i.handle for i in infos if i.source == DEMO_SOURCE}
    return [h for h in selected if h not in demo]
