"""The package's shape, checked from its source: layers that import only downwards, no import
circles, side effects in the packages named for them, pure renderers, and modules of one job.

docs/architecture.md explains the layers; this test is what keeps them true.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "revertbot"

#: Lowest first. A module may import its own layer and the ones before it, never a later one.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("revertbot", "revertbot.errors", "revertbot.globs", "revertbot.models", "revertbot.report_data",
              "revertbot.config")),
    ("git", ("revertbot.git",)),
    ("analysis_db", ("revertbot.store.analysis_db",)),  # SQLite files kept beside the analysis
    ("records", ("revertbot.store.history_branch", "revertbot.store.incident_record")),  # the history branch's records
    ("verdict", ("revertbot.verdict",)),
    ("analysis", ("revertbot.analysis",)),
    ("pipeline", ("revertbot.pipeline",)),
    ("report", ("revertbot.report",)),
    ("store", ("revertbot.store",)),
    ("github", ("revertbot.github",)),
    ("propose", ("revertbot.propose",)),
    ("faces", ("revertbot.dashboard", "revertbot.install", "revertbot.demo")),
    ("cli", ("revertbot.cli", "revertbot.__main__")),
)  # fmt: skip

#: Who may import what reaches outside the process: one package each.
SIDE_EFFECTS = {
    "subprocess": ("revertbot.git",),
    "github": ("revertbot.github.client",),  # PyGithub
    "sqlite3": ("revertbot.store",),
}

#: Renderers may not reach these, even through other modules.
IMPURE_FOR_RENDERERS = ("revertbot.git", "revertbot.github", "revertbot.store", "revertbot.pipeline")

MAX_LINES = 600


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_name(p): p for p in PACKAGE.rglob("*.py") if "demo_data" not in p.parts}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _layer(module: str) -> int:
    best, rank = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact = prefix == "revertbot"
            if (module == prefix if exact else _within(module, prefix)) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank >= 0, f"{module} belongs to no layer: add its package to LAYERS (and docs/architecture.md)"
    return rank


def _imports(module: str) -> Iterator[tuple[str, int]]:
    """Every module ``module`` imports (at any depth of its code, TYPE_CHECKING blocks included),
    with the line; names imported from a package resolve to its submodule when there is one."""
    path = _modules()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in _modules() else target), node.lineno


@cache
def _graph() -> dict[str, frozenset[str]]:
    mods = _modules()
    return {m: frozenset(t for t, _ in _imports(m) if t in mods and t != m) for m in mods}


def test_layers_import_only_downwards() -> None:
    upward = []
    for module in sorted(_modules()):
        for target, line in _imports(module):
            if target in _modules() and _layer(target) > _layer(module):
                upward.append(f"{module}:{line} imports {target} "
                              f"({LAYERS[_layer(module)][0]} -> {LAYERS[_layer(target)][0]})")  # fmt: skip
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def _cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    # A package's __init__ that re-exports its modules is not a circle with them.
    graph = {m: frozenset(t for t in ts if not (_within(m, t) and _modules()[t].name == "__init__.py"))
             for m, ts in _graph().items()}  # fmt: skip
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}) == [
        ["a", "b", "c"]
    ]


@pytest.mark.parametrize("library", sorted(SIDE_EFFECTS))
def test_side_effects_stay_in_their_package(library: str) -> None:
    allowed = SIDE_EFFECTS[library]
    users = sorted(f"{m}:{line}" for m in _modules() for target, line in _imports(m)
                   if _within(target, library) and not any(_within(m, a) for a in allowed))  # fmt: skip
    assert not users, f"{library} is imported outside {allowed}: {users}"


def _reach(module: str) -> set[str]:
    seen: set[str] = set()
    todo = [module]
    while todo:
        for target in _graph()[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


RENDERERS = ("revertbot.report", "revertbot.propose.markdown")


@pytest.mark.parametrize("renderer", sorted(m for m in _modules() if any(_within(m, r) for r in RENDERERS)))
def test_renderers_are_pure(renderer: str) -> None:
    """A renderer reaches no module that runs git, calls GitHub, writes the store or runs a check,
    even through the modules it imports."""
    impure = sorted(t for t in _reach(renderer) if any(_within(t, p) for p in IMPURE_FOR_RENDERERS))
    assert not impure, f"{renderer} reaches {impure}"


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def test_long_modules_say_why() -> None:
    """One job per module: a module over the line says at its top why it stays whole ("Size: ...")."""
    silent = []
    for module, path in sorted(_modules().items()):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_LINES and "\nSize: " not in "\n" + _docstring(path):
            silent.append(f"{module} ({lines} lines)")
    assert not silent, "modules over 600 lines without a 'Size:' reason: " + ", ".join(silent)


def test_every_module_is_in_a_layer() -> None:
    for module in _modules():
        _layer(module)
