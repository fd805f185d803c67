"""Options of the model and class pickers (plain functions, shared by layout and callbacks)."""

from __future__ import annotations

from .settings import ALL_CLASSES
from .store.records import ModelInfo

DEFAULT_MODELS = ("digits · naive Bayes", "digits · random forest")


def model_label(info: ModelInfo) -> str:
    """Dropdown label of a model: name, size, classes (plain text)."""
    return f"{info.name} ({info.n_samples:,} × {info.n_classes})"


def default_selection(infos: list[ModelInfo]) -> list[str]:
    """The demo models shown first."""
    chosen = [i.handle for i in infos if i.name in DEFAULT_MODELS]
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


def class_choices(models_json, selected, notion, current) -> tuple[list[dict], object, dict]:
    """Class picker options (union of the selected models' classes), value and visibility."""
    infos = [ModelInfo.from_json(m) for m in (models_json or []) if isinstance(m, dict)]
    chosen = [i for i in infos if i.handle in (selected or [])]
    names: list[str] = []
    for info in chosen:
        for c in info.class_names:
            if c not in names:
                names.append(c)
    options = [{"label": "all classes (small multiples)", "value": ALL_CLASSES}]
    options += [{"label": f"class {c}", "value": c} for c in names[:1000]]
    valid = {o["value"] for o in options}
    value = current if current in valid else (names[0] if names else ALL_CLASSES)
    style = {} if notion == "class" else {"display": "none"}
    return options, value, style
