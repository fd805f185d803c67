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
