"""The import arrows of the project, checked as rules.

Every module of ``calibration_core``, ``app``, ``tests`` and ``benchmarks`` is
parsed (never imported) and each of its imports, at module level or inside a
function, is resolved to an absolute module name. :data:`FORBIDDEN_IMPORTS`
says which packages may not import which; the other tests say that no module
imports another module's private name and that only a package's
``__init__`` may consist of imports alone. To allow or forbid another arrow,
add a row to the data below.

Between the *units* of ``app`` and of ``calibration_core`` (each subpackage,
such as ``app.figures``, and each top-level module, such as ``app.context``)
the arrows form no cycle. An import inside a function is an arrow like any
other (it only defers the cycle to the first call), and so is one under
``if TYPE_CHECKING:``. :data:`LAYERS` orders the app's page code: compute and
view-models, then figures, then layout (the page and the HTML report), then
the services the callbacks, the factory and the command line share, then
callbacks; a unit never imports one of a later layer. Hosting (the factory,
the servers, the command line, the notebook) sits beside them and may import any.
So, for now, do the server-side datasets' modules (``app.datasets``,
``app.dataset_view``, ``app.dataset_diagnostics``): their cluster jobs and
their views cross the layers, and the streaming engine (issue 30) reshapes them.
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
        ("app.layout", "app.report", "app.callbacks", "dash"),
        "the store keeps data; the page and its callbacks use it, not the other way round",
    ),
    Rule(
        "app.layout",
        ("app.callbacks",),
        "the layout describes the page; callbacks refer to its ids, not the reverse",
    ),
    Rule("app.report", ("app.callbacks",), "the report is drawn like the page, from its rows"),
    Rule(
        "app.services",
        ("dash", "app.callbacks"),
        "the shared work runs without a page: the callbacks call it, not the reverse",
    ),
    Rule(
        "app.offline_report",
        ("app.callbacks",),
        "the command line's report runs the page's work through app.services",
    ),
    Rule("app.notebook", ("app.callbacks",), "as app.offline_report"),
    Rule("app.cli", ("app.callbacks",), "as app.offline_report"),
)

#: Top-level packages whose units (subpackages and top-level modules) form no import cycle.
ACYCLIC = ("app", "calibration_core")


@dataclass(frozen=True)
class Layer:
    """Units of one layer of the page code: they never import a unit of a later layer."""

    name: str
    units: tuple[str, ...]


LAYERS = (
    Layer(
        "compute and view-models",
        (
            "app.analysis",
            "app.curves",
            "app.diagnostics",
            "app.groups",
            "app.map_policy",
            "app.metrics_table",
            "app.options",
            "app.settings",
            "app.store",
            "app.verdict",
        ),
    ),
    Layer("figures", ("app.figures",)),
    Layer("layout", ("app.layout", "app.report", "app.view_update")),
    Layer("services", ("app.services",)),
    Layer("callbacks", ("app.callbacks",)),
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


def unit_of(module: str, top: str) -> str | None:
    """The unit of ``top`` holding ``module`` (``app.figures.common`` -> ``app.figures``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == top and len(parts) > 1 else None


#: (unit, imported unit) -> the first import making that arrow, as ``module:line``.
Arrows = dict[tuple[str, str], str]


def unit_arrows(top: str) -> Arrows:
    """Every arrow between two units of ``top``, with one import that makes it."""
    arrows: Arrows = {}
    for module, imports in IMPORTS.items():
        source = unit_of(module, top)
        for imp in imports:
            target = unit_of(imp.module, top)
            if source and target and source != target:
                arrows.setdefault((source, target), f"{module}:{imp.line}")
    return arrows


def cycles(arrows: Arrows) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan), each sorted."""
    after: dict[str, list[str]] = {}
    for source, target in sorted(arrows):
        after.setdefault(source, []).append(target)
        after.setdefault(target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for target in after[unit]:
            if target not in index:
                visit(target)
                low[unit] = min(low[unit], low[target])
            elif target in stack:
                low[unit] = min(low[unit], index[target])
        if low[unit] == index[unit]:
            component = stack[stack.index(unit) :]
            del stack[stack.index(unit) :]
            if len(component) > 1:
                found.append(sorted(component))

    for unit in after:
        if unit not in index:
            visit(unit)
    return found


def describe_cycle(component: list[str], arrows: Arrows) -> str:
    inner = [
        f"{source} -> {target} ({where})"
        for (source, target), where in sorted(arrows.items())
        if source in component and target in component
    ]
    return f"{len(component)} units {component}: " + "; ".join(inner)


def layer_breaches(arrows: Arrows, layers: tuple[Layer, ...]) -> list[str]:
    """Arrows from a unit of one layer to a unit of a later layer."""
    rank = {unit: i for i, layer in enumerate(layers) for unit in layer.units}
    return [
        f"{source} ({layers[rank[source]].name}) imports {target} "
        f"({layers[rank[target]].name}) at {where}"
        for (source, target), where in sorted(arrows.items())
        if source in rank and target in rank and rank[target] > rank[source]
    ]


@pytest.mark.parametrize("top", ACYCLIC)
def test_no_import_cycle_between_units(top: str):
    arrows = unit_arrows(top)
    found = [describe_cycle(component, arrows) for component in cycles(arrows)]
    assert not found, f"import cycles between the units of {top}: " + " | ".join(found)


def test_layers_import_only_earlier_layers():
    units = {unit for top in ACYCLIC for pair in unit_arrows(top) for unit in pair}
    unknown = [u for layer in LAYERS for u in layer.units if u not in units]
    assert not unknown, f"LAYERS names units that do not exist: {unknown}"
    breaches = layer_breaches(unit_arrows("app"), LAYERS)
    assert not breaches, "a layer imports a later one: " + ", ".join(breaches)


#: What the compute layer never imports: it draws nothing, so a job or the CLI runs it bare.
WEB_STACK = ("dash", "dash_ag_grid", "plotly", "flask", "werkzeug")


def test_compute_layer_imports_no_web_stack():
    broken = [
        f"{module}:{imp.line} imports {imp.module}"
        for module, imports in IMPORTS.items()
        if any(inside(module, unit) for unit in LAYERS[0].units)
        for imp in imports
        if any(inside(imp.module, web) for web in WEB_STACK)
    ]
    assert not broken, f"{LAYERS[0].name} must not import {WEB_STACK}: {broken}"


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


def test_the_cycle_and_layer_checks_catch_what_they_should():
    arrows = {
        ("app.a", "app.b"): "app.a:1",
        ("app.b", "app.c"): "app.b:2",
        ("app.c", "app.a"): "app.c.x:3",
        ("app.c", "app.d"): "app.c:4",
        ("app.d", "app.e"): "app.d:5",
        ("app.e", "app.d"): "app.e:6",
    }
    assert cycles(arrows) == [["app.d", "app.e"], ["app.a", "app.b", "app.c"]]
    assert "app.c -> app.a (app.c.x:3)" in describe_cycle(["app.a", "app.b", "app.c"], arrows)
    assert cycles({("app.a", "app.b"): "", ("app.b", "app.c"): ""}) == []
    assert unit_of("app.figures.common", "app") == "app.figures"
    assert unit_of("app", "app") is None
    layers = (Layer("low", ("app.a",)), Layer("high", ("app.b",)))
    assert layer_breaches({("app.b", "app.a"): ""}, layers) == []
    assert layer_breaches({("app.a", "app.b"): "app.a:1"}, layers) == [
        "app.a (low) imports app.b (high) at app.a:1"
    ]


def test_the_wheel_lists_every_package():
    """``pyproject.toml`` names its packages one by one: a new package must be added there.

    Left out, it is missing from the wheel, and the installed app (the image)
    fails on import while the source tree works.
    """
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        module_name(init.parent / "__init__.py")
        for top in ("app", "calibration_core")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert not found - listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
