"""Which tests need Qt (the `gui` marker), and a run without them that never imports Qt.

A test is gui when its module cannot be imported without Qt (read from the source: the
imports a file runs when it is imported, through the tests' helpers and detokgui's own
modules), when it uses pytest-qt (`qtbot`, `qapp`, or a fixture built on them), or when
it says so itself (`@pytest.mark.gui`: the window in a subprocess, a CLI export that Qt
draws, Qt imported inside the test).

When `-m` leaves out every gui test (`-m "not gui"`), conftest does not collect the
modules that need Qt, keeps pytest-qt (which imports Qt when it starts) from loading, and
makes `import PySide6` fail, so a test that needs Qt without the marker fails loudly."""

from __future__ import annotations

import ast
import functools
import itertools
import re
import sys
from pathlib import Path

QT_PACKAGES = ("PySide6", "shiboken6", "pyqtgraph", "superqt")
QT_FIXTURES = ("qtbot", "qapp")
PYTEST_QT = "pytest-qt"  # the name pytest registers the plugin under (its entry point)

_TESTS = Path(__file__).resolve().parent
_ROOT = _TESTS.parent


@functools.cache
def gui_excluded(markexpr: str) -> bool:
    """Whether the `-m` expression rejects every test marked gui, whatever other markers
    it has (each combination of the other names in the expression is tried)."""
    if not markexpr or "gui" not in markexpr:
        return False
    try:
        from _pytest.mark.expression import Expression  # pytest's own -m parser

        expr = Expression.compile(markexpr)
    except Exception:  # noqa: BLE001 - an expression pytest will refuse itself, or another pytest
        return False
    others = sorted(set(re.findall(r"[A-Za-z_]\w*", markexpr)) - {"and", "or", "not", "gui"})
    if len(others) > 10:
        return False
    for n in range(len(others) + 1):
        for on in itertools.combinations(others, n):
            if expr.evaluate(lambda name, /, on=on, **kw: name == "gui" or name in on):
                return False
    return True


def _module_files(name: str) -> list[Path]:
    """The files of this checkout that `import name` runs: a tests' helper (tests/x.py),
    or a detokgui module with the __init__.py of its packages; [] for other libraries."""
    parts = name.split(".")
    if len(parts) == 1 and (_TESTS / f"{name}.py").is_file():
        return [_TESTS / f"{name}.py"]
    if parts[0] != "detokgui":
        return []
    files = []
    for i in range(1, len(parts) + 1):
        base = _ROOT.joinpath(*parts[:i])
        files += [f for f in (base / "__init__.py", base.with_suffix(".py")) if f.is_file()]
    return files


def _package(path: Path) -> list[str]:
    """The package of a detokgui file (x/y/z.py or x/y/__init__.py: [x, y]), for relative
    imports."""
    return list(path.relative_to(_ROOT).with_suffix("").parts[:-1])


def _imports(path: Path) -> set[str]:
    """The modules a file imports when it is itself imported: not those inside functions
    or under `if TYPE_CHECKING:`."""
    names: set[str] = set()

    def visit(nodes):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = _package(path)
                    pkg = pkg[: len(pkg) - node.level + 1]
                    base = ".".join([*pkg, *([base] if base else [])])
                names.add(base)
                names.update(f"{base}.{a.name}" for a in node.names)
            visit(ast.iter_child_nodes(node))

    visit([ast.parse(path.read_text(encoding="utf-8"))])
    return names


_NEEDS_QT: dict[Path, bool] = {}


def needs_qt_to_import(path: Path) -> bool:
    """Whether importing this file imports Qt (through this checkout's files)."""
    path = Path(path).resolve()
    if path not in _NEEDS_QT:
        seen, todo, found = set(), [path], False
        while todo and not found:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            for name in _imports(f):
                if name.split(".")[0] in QT_PACKAGES:
                    found = True
                    break
                todo += _module_files(name)
        _NEEDS_QT[path] = found
    return _NEEDS_QT[path]


def is_gui(item) -> bool:
    return (item.get_closest_marker("gui") is not None
            or any(f in item.fixturenames for f in QT_FIXTURES)
            or needs_qt_to_import(item.path))


class _QtBlocked:
    """A meta-path finder that refuses Qt: the run was asked for the tests without it."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in QT_PACKAGES:
            raise ModuleNotFoundError(f"{name} is not imported in a run without gui tests "
                                      f"(-m \"not gui\"): mark the test that needs it "
                                      f"`gui`", name=name)


def block_qt() -> None:
    """Make `import PySide6` (and pyqtgraph, superqt) fail from now on in this process."""
    loaded = [m for m in sys.modules if m.split(".")[0] in QT_PACKAGES]
    assert not loaded, f"Qt was imported before the tests started: {loaded}"
    if not any(isinstance(f, _QtBlocked) for f in sys.meta_path):
        sys.meta_path.insert(0, _QtBlocked())
