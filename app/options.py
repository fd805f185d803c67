"""Options of the model and class pickers (plain functions, shared by layout and callbacks)."""

from __future__ import annotations

from collections.abc import Callable

from .settings import ALL_CLASSES, MAX_SELECTED_MODELS
from .store.records import NOTEBOOK_SOURCE, ModelInfo

DEFAULT_MODELS = ("digits · naive Bayes", "digits · random forest")


def model_label(info: ModelInfo) -> str:
    """Dropdown label of a model: name, size, classes (plain text)."""
    return f"{info.name} ({info.n_samples:,} × {info.n_classes})"


def default_selection(infos: list[ModelInfo]) -> list[str]:
    """The models shown first: the notebook's (at most 8), else the default demo models."""
    notebook = [i.handle for i in infos if i.source == NOTEBOOK_SOURCE]
    chosen = notebook[:MAX_SELECTED_MODELS] or [i.handle for i in infos if i.name in DEFAULT_MODELS]
    return chosen or [i.handle for i in infos[:1]]


def all_binary(infos: list[ModelInfo], selected) -> bool:
    """Whether a selection is non-empty and every selected model has two classes."""
    chosen = [i for i in infos if i.handle in (selected or [])]
    return bool(chosen) and all(i.n_classes == 2 for i in chosen)


def notion_for_selection(models_json, selected, notion, was_all_binary) -> tuple[str | None, bool]:
    """The notion to switch to when the model selection changes, and the new all-binary flag.

    A selection that *becomes* all binary (after an upload of binary files, or
    models picked by hand) opens in the binary view: the confidence view of a
    two-class model only shows max(p, 1 - p) on [0.5, 1]. Otherwise the notion
    is left alone (``None``), so a notion the user picked stays while the
    selection stays all binary.

    Parameters
    ----------
    models_json : list of dict
        The session's models (the ``models-store`` data).
    selected : list of str
        The selected handles.
    notion : str
        The current notion.
    was_all_binary : bool
        Whether the previous selection was all binary.

    Returns
    -------
    tuple of (str or None, bool)
        ``"binary"`` or ``None`` (no change), and whether ``selected`` is all binary.
    """
    infos = [ModelInfo.from_json(m) for m in (models_json or []) if isinstance(m, dict)]
    now = all_binary(infos, selected)
    switch = now and not was_all_binary and notion != "binary"
    return ("binary" if switch else None), now


def selected_models(models_json, selected) -> list[ModelInfo]:
    """The selected models' infos, in the order of the selection (that of the diagrams)."""
    infos = [ModelInfo.from_json(m) for m in (models_json or []) if isinstance(m, dict)]
    return selected_infos(infos, selected)


def selected_infos(infos: list[ModelInfo], selected) -> list[ModelInfo]:
    """The infos among ``infos`` whose handles are ``selected``, in the selection's order.

    Unknown handles and anything but strings are skipped, repeats counted once.
    """
    by_handle = {i.handle: i for i in infos}
    handles = selected if isinstance(selected, (list, tuple)) else []
    wanted = dict.fromkeys(h for h in handles if isinstance(h, str))
    return [by_handle[h] for h in wanted if h in by_handle]


def model_picker(
    chosen: list[ModelInfo], current, label: Callable[[ModelInfo], str] = model_label
) -> tuple[list[dict], str | None]:
    """Options and value of a picker of one model among the selected ones (``chosen``).

    The deployable map and the Diagnostics section each pick one of the
    models shown; ``current`` stays picked while it is still selected, else
    the first selected model is (None when nothing is selected).
    """
    options = [{"label": label(i), "value": i.handle} for i in chosen]
    offered = [o["value"] for o in options]
    return options, (current if current in offered else (offered[0] if offered else None))


def class_names_of(chosen: list[ModelInfo]) -> list[str]:
    """The union of the models' class names, in first-seen order."""
    names: list[str] = []
    for info in chosen:
        for c in info.class_names:
            if c not in names:
                names.append(c)
    return names


def class_value(names: list[str], current, auto, default: Callable[[], str | None]):
    """The class picker's value for the selected models' class ``names``.

    The user's choice (``current``, a class or "all classes") stays while it
    is valid; a value the page chose itself (``auto``), or none, gives way to
    ``default()`` (called only then), e.g. the first model's worst class.
    Never "all classes" by itself: that can draw hundreds of panels.
    """
    valid = current == ALL_CLASSES or current in names
    if valid and current != auto:
        return current
    return default() or (names[0] if names else None)


def class_choices(
    models_json, selected, notion, current, auto=None, default=lambda: None
) -> tuple[list[dict], object, dict]:
    """Class picker options (union of the selected models' classes), value and visibility.

    See :func:`class_value` for the value (``default`` gives the class to
    open on; without it, the first class).
    """
    names = class_names_of(selected_models(models_json, selected))
    options = [{"label": "all classes (worst first, small multiples)", "value": ALL_CLASSES}]
    options += [{"label": f"class {c}", "value": c} for c in names[:1000]]
    value = class_value(names, current, auto, default) if names else current
    style = {} if notion == "class" else {"display": "none"}
    return options, value, style
