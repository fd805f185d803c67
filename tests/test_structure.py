"""The import arrows of the project, checked as rules.

Every module of ``calibration_core``, ``app``, ``tests`` and ``benchmarks`` is
parsed (never imported) and each of its imports, at module level or inside a
function, is resolved to an absolute module name. :data:`FORBIDDEN_IMPORTS`
says which packages may not import which; the other tests say that no module
imports another module's private name and that only a package's
``__init__`` may consist of imports alone. To allow or forbid another arrow,
add a row to the data below.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Top-level folders whose modules are checked.
CHECKED = ("calibration_core", "app", "tests", "benchmarks")


@dataclass(frozen=True)
class Rule:
    """Modules named ``source`` (or inside it) never import ``forbidden`` (or inside it)."""

    source: str
    forbidden: tuple[str, ...]
    why: str


FORBIDDEN_IMPORTS = (
    Rule(
        "calibration_core",
        ("app", "dash", "dash_ag_grid", "plotly", "flask", "werkzeug"),
        "the core is a plain library, usable without the web stack",
    ),
    Rule("app.figures", ("app.callbacks",), "figures are plain functions of core results"),
    Rule(
        "app.store",
        ("app.layout", "app.diagnostics.layout", "app.callbacks", "dash"),
        "the store keeps data; the page and its callbacks use it, not the other way round",
    ),
    Rule(
        "app.layout",
        ("app.callbacks",),
        "the layout describes the page; callbacks refer to its ids, not the reverse",
    ),
    Rule("app.diagnostics.layout", ("app.callbacks",), "as app.layout"),
    Rule(
        "app.diagnostics.target",
        ("dash", "plotly", "app.callbacks", "app.figures"),
        "the diagnostics' computations are core calls only",
    ),
    Rule("app.diagnostics.overview", ("dash", "plotly", "app.callbacks", "app.figures"), "idem"),
    Rule("app.diagnostics.cards", ("dash", "plotly", "app.callbacks", "app.figures"), "idem"),
    Rule("app.diagnostics.resampling", ("dash", "plotly", "app.callbacks", "app.figures"), "idem"),
    Rule("app.analysis", ("dash", "plotly", "app.callbacks", "app.figures"), "idem"),
)

#: Packages whose modules may not import a private name (``_name``) from another module.
PRIVATE_NAME_SCOPE = (
    "calibration_core",
    "app",
    "tests.core",
    "tests.app",
    "tests.browser",
    "tests.hosting",
    "benchmarks",
)
#: Modules directly in tests/ (conftest.py, test_*.py), checked with the scope above.
PRIVATE_NAME_TOP_LEVEL = ("tests",)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    """Module name -> file, for every checked ``.py`` file."""
    out = {}
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "__pycache__" not in path.parts:
                out[module_name(path)] = path
    return out


MODULES = all_modules()


@dataclass(frozen=True)
class Import:
    """One imported module (and, for ``from m import n``, the name ``n``)."""

    module: str
    name: str | None
    line: int


def resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of a relative import ``from <level dots><target> import ...``."""
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def imports_of(path: Path) -> list[Import]:
    """Every import of a module, anywhere in its body."""
    name = module_name(path)
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend(Import(a.name, None, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = resolve(name, is_package, node.level, node.module)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in MODULES:  # "from package import module"
                    found.append(Import(submodule, None, node.lineno))
                else:
                    found.append(Import(source, alias.name, node.lineno))
    return found


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


IMPORTS = {name: imports_of(path) for name, path in MODULES.items()}


def test_every_rule_names_existing_modules():
    for rule in FORBIDDEN_IMPORTS:
        assert any(inside(m, rule.source) for m in MODULES), rule


@pytest.mark.parametrize("rule", FORBIDDEN_IMPORTS, ids=lambda r: r.source)
def test_forbidden_import_arrows(rule: Rule):
    broken = [
        f"{module}:{imp.line} imports {imp.module}"
        for module, imports in IMPORTS.items()
        if inside(module, rule.source)
        for imp in imports
        if any(inside(imp.module, forbidden) for forbidden in rule.forbidden)
    ]
    assert not broken, f"{rule.source} must not import {rule.forbidden} ({rule.why}): {broken}"


def test_no_private_name_is_imported_from_another_module():
    broken = [
        f"{module}:{imp.line} imports {imp.module}.{imp.name}"
        for module, imports in IMPORTS.items()
        if any(inside(module, scope) for scope in PRIVATE_NAME_SCOPE)
        or module.rpartition(".")[0] in PRIVATE_NAME_TOP_LEVEL
        for imp in imports
        if imp.name is not None
        and imp.name.startswith("_")
        and not imp.name.startswith("__")
        and imp.module.split(".")[0] in CHECKED
    ]
    assert not broken, "make the name public where it lives, or move it: " + ", ".join(broken)


def is_pure_reexport(tree: ast.Module) -> bool:
    """A body of imports and ``__all__`` only (a docstring aside)."""
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    has_import = False
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            has_import = has_import or not (
                isinstance(node, ast.ImportFrom) and node.module == "__future__"
            )
            continue
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if targets and all(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        return False
    return has_import


def test_no_module_only_reexports_others():
    shims = [
        name
        for name, path in MODULES.items()
        if path.name != "__init__.py" and is_pure_reexport(ast.parse(path.read_text()))
    ]
    assert not shims, f"modules that only re-export others (import from where names live): {shims}"


def test_the_rules_catch_what_they_should():
    shim = ast.parse(
        '"""doc"""\nfrom __future__ import annotations\nfrom .a import b\n__all__ = ["b"]'
    )
    assert is_pure_reexport(shim)
    assert not is_pure_reexport(ast.parse("from .a import b\nX = 1"))
    assert not is_pure_reexport(ast.parse('"""only a docstring"""'))
    assert resolve("app.figures.common", False, 2, "settings") == "app.settings"
    assert resolve("app.figures", True, 1, "common") == "app.figures.common"
