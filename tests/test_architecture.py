"""The package's layering, read from the source with `ast` (every import statement,
those inside functions included): the core imports no other part of detokgui, the core,
the figures and the CLI never import the GUI or Qt, the GUI never imports the CLI
(`detokgui.app`, the entry point, may import both), and no detokgui modules import each
other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "detokgui"
QT = ("PySide6", "pyqtgraph", "superqt", "shiboken6")

#: What the modules of each part must never import (packages and their modules).
FORBIDDEN = {
    "detokgui.core": ("detokgui.figures", "detokgui.cli", "detokgui.gui", *QT),
    "detokgui.figures": ("detokgui.cli", "detokgui.gui", *QT),
    "detokgui.api": ("detokgui.cli", "detokgui.gui", *QT),
    "detokgui.cli": ("detokgui.gui", *QT),
    "detokgui.gui": ("detokgui.cli",),
}

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package)."""
    return {_module_name(p): (p, p.name == "__init__.py") for p in sorted(PACKAGE.rglob("*.py"))}


SOURCES = _sources()


def _in(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def imports_of(module: str) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement in `module`. `from P import x`
    imports the module P.x when that is one of detokgui's modules, else P itself (whose
    __init__ runs and re-exports x); relative imports are resolved."""
    path, is_package = SOURCES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    here = module.split(".") if is_package else module.split(".")[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = here[: len(here) - node.level + 1]
                base = ".".join(stem + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub if sub in SOURCES else base, node.lineno))
    return out


def import_graph() -> dict[str, dict[str, int]]:
    """detokgui module -> {detokgui module it imports: line of the first such import}."""
    graph: dict[str, dict[str, int]] = {}
    for module in SOURCES:
        edges = graph.setdefault(module, {})
        for target, line in imports_of(module):
            if target in SOURCES and target != module:
                edges.setdefault(target, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(component: frozenset[str], graph) -> str:
    edges = [f"{a} -> {b} (line {graph[a][b]})" for a in sorted(component)
             for b in sorted(graph[a]) if b in component]
    return "; ".join(edges)


def test_the_graph_sees_function_level_and_package_imports():
    """The reader finds what the checks below rely on: an import inside a function, a
    package's __init__ re-export, and `from package import submodule`."""
    graph = import_graph()
    assert "detokgui.cli" in graph["detokgui.app"]  # inside main()
    assert "detokgui.gui.launch" in graph["detokgui.app"]
    assert "detokgui.core.weights" in graph["detokgui.core"]  # __init__ re-export
    assert "detokgui.core.checkpoint" in graph["detokgui.core.weights"]  # from core import x
    assert "detokgui.figures.style" in graph["detokgui.figures.paper"]
    demo = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert circles(demo) == [frozenset("abc")]


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_no_wrong_way_imports(part):
    bad = [f"{m} imports {target} (line {line})"
           for m in SOURCES if _in(m, part)
           for target, line in imports_of(m)
           if any(_in(target, f) for f in FORBIDDEN[part])]
    assert not bad, "\n".join(bad)


def test_no_import_circles():
    graph = import_graph()
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(_describe(c, graph) for c in found)
