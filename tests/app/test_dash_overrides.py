"""The methods the app overrides on Dash's classes keep Dash's signatures.

The job layer (:mod:`app.jobs`) overrides public methods of Dash's background
callback managers, which Dash calls with its own arguments. A Dash release that
renames, adds, removes or reorders a parameter of one of them, drops one, or adds
a method of a name the app already uses, fails here rather than in a running job.
The classes are found, not listed: every class of ``app`` with a Dash class
among its bases (the mix-ins before it included). Constructors are left out: the
app's take its own collaborators and pass Dash's arguments on.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Every method an app class overrides on Dash, by the app class that defines it.
#: A change here is a change of what Dash calls in the app: read Dash's code first.
OVERRIDES = {
    "app.jobs.JobRules": {
        "build_cache_key",
        "call_job_fn",
        "get_progress",
        "get_result",
        "get_updated_props",
        "job_running",
        "make_job_fn",
        "terminate_job",
    },
    "app.jobs.LocalJobManager": {"clear_cache_entry", "get_progress", "make_job_fn"},
    "app.jobs.CeleryJobManager": set(),
}


def _is_dash(cls: type) -> bool:
    return cls.__module__.split(".")[0] == "dash"


def _modules_importing_dash() -> list[str]:
    """The modules of ``app`` that import dash and define a class (parsed, not imported)."""
    names = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.name if isinstance(node, ast.Import) else node.module or ""
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        has_class = any(isinstance(node, ast.ClassDef) for node in ast.walk(tree))
        if has_class and any(name.split(".")[0] == "dash" for name in imported):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _dash_subclasses() -> list[type]:
    classes = []
    for name in _modules_importing_dash():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and obj.__module__ == name
                and any(_is_dash(base) for base in obj.__mro__)
            ):
                classes.append(obj)
    return classes


def _overrides() -> dict[str, dict[str, list[tuple[object, type]]]]:
    """``{app class: {method: [(app's attribute, Dash class whose attribute it overrides)]}}``.

    For each app class with Dash bases, each method (no dunder) that an app class
    of its MRO defines and a Dash class after it defines too; the Dash class is the
    nearest, the one ``super()`` reaches. A mix-in before several Dash classes
    overrides each of them.
    """
    found: dict[str, dict[str, list[tuple[object, type]]]] = {}
    for cls in _dash_subclasses():
        mro = cls.__mro__
        for i, owner in enumerate(mro):
            if not owner.__module__.startswith("app."):
                continue
            methods = found.setdefault(f"{owner.__module__}.{owner.__qualname__}", {})
            for name, attr in vars(owner).items():
                if name.startswith("__") or not callable(getattr(owner, name)):
                    continue
                dash_owner = next(
                    (c for c in mro[i + 1 :] if _is_dash(c) and name in vars(c)), None
                )
                if dash_owner is not None and (attr, dash_owner) not in methods.get(name, []):
                    methods.setdefault(name, []).append((attr, dash_owner))
    return found


FOUND = _overrides()


def _shape(attr: object) -> tuple[str, list[tuple[str, str, bool]]]:
    """Method kind and, per parameter, its name, kind and whether it has a default."""
    function = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
    parameters = inspect.signature(function).parameters.values()
    return type(attr).__name__, [
        (p.name, p.kind.name, p.default is not inspect.Parameter.empty) for p in parameters
    ]


def test_the_overrides_are_the_listed_ones():
    found = {owner: set(methods) for owner, methods in FOUND.items()}
    assert found == OVERRIDES, (
        "the app's overrides of Dash methods changed (a Dash method renamed, dropped or "
        "added under a name the app uses?): compare with Dash's code and update OVERRIDES"
    )


@pytest.mark.parametrize(
    ("owner", "name"),
    sorted((owner, name) for owner, methods in OVERRIDES.items() for name in methods),
)
def test_an_override_has_the_signature_of_dashs_method(owner, name):
    for ours, dash_class in FOUND[owner][name]:
        dashs = vars(dash_class)[name]
        assert _shape(ours) == _shape(dashs), (
            f"{owner}.{name} no longer matches {dash_class.__module__}."
            f"{dash_class.__qualname__}.{name}: {_shape(ours)} vs {_shape(dashs)}"
        )
