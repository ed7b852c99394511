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
    assert "detokgui.core.model.weights" in graph["detokgui.core"]  # __init__ re-export
    # `from detokgui.core.model.sources import checkpoint`
    assert "detokgui.core.model.sources.checkpoint" in graph["detokgui.core.model.weights"]
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


# --------------------------------------------------------------------------- inside core

#: detokgui.core's parts, in order: a part imports only the parts before it and itself;
#: parts of one rank (the token side, the position side and composition) not each other.
CORE_ORDER = (("base",), ("model",), ("corpus",),
              ("token_side", "position_side", "composition"), ("text_side",), ("compare",))
CORE_RANK = {part: rank for rank, parts in enumerate(CORE_ORDER) for part in parts}
#: function-level imports between detokgui's modules that core may keep (each keeps a light
#: import light and says so in a comment on its line)
MAX_CORE_FUNCTION_IMPORTS = 15


def _core_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["detokgui", "core"] else None


def test_core_is_in_parts():
    """Every core module lives in one of the parts (the package's own __init__ is the
    facade), and every part says in its __init__ what it holds and may import."""
    stray = [m for m in SOURCES if _in(m, "detokgui.core") and m != "detokgui.core"
             and _core_part(m) not in CORE_RANK]
    assert not stray, stray
    for part in CORE_RANK:
        doc = ast.get_docstring(ast.parse(SOURCES[f"detokgui.core.{part}"][0].read_text()))
        assert doc and "May import:" in doc, part


def test_core_parts_import_in_order():
    bad = []
    for m in SOURCES:
        part = _core_part(m)
        if part is None:
            continue
        for target, line in imports_of(m):
            if target == "detokgui.core":
                bad.append(f"{m} imports the detokgui.core facade (line {line})")
            other = _core_part(target)
            if other is None or other == part:
                continue
            if CORE_RANK[other] >= CORE_RANK[part]:
                bad.append(f"{m} ({part}) imports {target} ({other}) (line {line})")
    assert not bad, "\n".join(bad)


def test_base_has_no_torch():
    """Every CSV writer imports core.base (its tables): torch is not imported with it (a
    check that needs a tensor imports torch inside its function)."""
    bad = [f"{m} imports {t} (line {line})" for m in SOURCES if _core_part(m) == "base"
           for t, line in imports_of(m)
           if t.split(".")[0] == "torch" and not _inside_function(m, line)]
    assert not bad, "\n".join(bad)


def _inside_function(module: str, line: int) -> bool:
    tree = ast.parse(SOURCES[module][0].read_text(encoding="utf-8"))
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and node.lineno <= line <= node.end_lineno for node in ast.walk(tree))


def function_level_imports(prefix: str) -> list[tuple[str, int, str]]:
    """(module, line, text) of each import of a detokgui module inside a function."""
    out = []
    for m, (path, _) in SOURCES.items():
        if not _in(m, prefix):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and (sub.module or "").startswith("detokgui"):
                    out.append((m, sub.lineno, lines[sub.lineno - 1]))
    return sorted(set(out))


def test_core_imports_at_the_top():
    """Imports hidden inside functions hide the dependency graph: core keeps only those
    that keep a light import light, each saying why on its line."""
    found = function_level_imports("detokgui.core")
    unexplained = [f"{m}:{line}: {text.strip()}" for m, line, text in found if "#" not in text]
    assert not unexplained, "\n".join(unexplained)
    assert len(found) <= MAX_CORE_FUNCTION_IMPORTS, "\n".join(
        f"{m}:{line}: {text.strip()}" for m, line, text in found)
