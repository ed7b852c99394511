"""No code in detokgui/ reads or writes a private (underscore) attribute of a library's
object, or replaces a library object's method (issue 41, point 3): the next pyqtgraph,
PySide6 or matplotlib release may change either without notice.

Read from the source (ast), with what detokgui itself defines as its own: an underscore
name is detokgui's when detokgui defines it (a `_name` function, method, class attribute
or module variable, or an attribute it assigns, `self._name = ...`). Any other
`anything._name` is a library's internal; so is `self._name` in a subclass of a
pyqtgraph or matplotlib class whose source defines `_name` too (a subclass writing its
base's private caches; Qt's own privates are C++, not attributes). A method replaced is an assignment of a
function (a lambda, a function defined in detokgui, a bound method) to an attribute of
something other than `self` / `cls`, or any assignment to an attribute of an imported
library module or class."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from functools import cache
from pathlib import Path

import pytest

import detokgui

ROOT = Path(detokgui.__file__).parent

#: underscore names of a library that detokgui may use, each with the reason (e.g. a
#: namedtuple's documented `_replace`); none is needed today
ALLOWED: dict[str, str] = {}


def sources() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"), str(p)))
            for p in sorted(ROOT.rglob("*.py"))]


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def own_names(trees) -> set[str]:
    """The underscore names detokgui defines anywhere."""
    own = set()
    for _path, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.arg):
                own.add(node.arg)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                own.add(node.attr)
            elif isinstance(node, ast.alias):
                own.add(node.asname or node.name.split(".")[-1])
    return {n for n in own if private(n)}


PYTHON_LIBRARIES = ("pyqtgraph", "matplotlib")  # Qt's privates are C++: not attributes


def imported(tree: ast.Module) -> dict[str, str]:
    """name -> the dotted library path it is bound to by the module's imports."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                    a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def resolve(expr: ast.expr, names: dict[str, str]):
    """The library class a base-class expression names (pg.PlotCurveItem), or None."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in names:
        return None
    path = names[expr.id].split(".") + parts[::-1]
    if path[0] not in PYTHON_LIBRARIES:
        return None
    obj = importlib.import_module(path[0])
    for i, part in enumerate(path[1:], start=1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(path[: i + 1]))
    return obj if isinstance(obj, type) else None


@cache
def privates_of(cls: type) -> frozenset[str]:
    """The underscore names a library class and its library bases define on their
    objects (methods, class attributes, `self._name = ...` in their source)."""
    out = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in PYTHON_LIBRARIES:
            continue
        out.update(n for n in vars(klass) if private(n))
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        out.update(n.attr for n in ast.walk(tree)
                   if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                   and n.value.id == "self" and private(n.attr))
    return frozenset(out)


def library_bases(trees) -> dict[str, frozenset[str]]:
    """detokgui class name -> the private names of its pyqtgraph / matplotlib bases
    (directly or through another detokgui class)."""
    bases: dict[str, list[ast.expr]] = {}
    names: dict[str, dict[str, str]] = {}
    for _path, tree in trees:
        imports = imported(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = node.bases
                names[node.name] = imports
    out: dict[str, frozenset[str]] = {}

    def of(name: str, seen=()) -> frozenset[str]:
        if name in out:
            return out[name]
        found = set()
        for b in bases.get(name, []):
            lib = resolve(b, names[name])
            if lib is not None:
                found |= privates_of(lib)
            elif isinstance(b, ast.Name) and b.id in bases and b.id not in seen:
                found |= of(b.id, (*seen, name))
        out[name] = frozenset(found)
        return out[name]

    for name in bases:
        of(name)
    return out


def library_names(tree: ast.Module) -> set[str]:
    """Names a module binds to an imported library (a module, class or function not of
    detokgui)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if not a.name.startswith("detokgui"):
                    out.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                not node.module.startswith("detokgui") and node.module != "__future__":
            out.update(a.asname or a.name for a in node.names)
    return out


def functions_defined(tree: ast.Module) -> set[str]:
    return {n.name for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else None


def is_function(value: ast.expr, defined: set[str]) -> bool:
    if isinstance(value, ast.Lambda):
        return True
    if isinstance(value, ast.Name):
        return value.id in defined
    if isinstance(value, ast.Attribute):  # a bound method: self.method, obj.method
        return isinstance(value.value, ast.Name) and value.value.id == "self" and \
            value.attr in defined
    if isinstance(value, ast.Call):  # functools.partial(f, ...)
        f = value.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        return name == "partial"
    return False


def violations(trees) -> list[str]:
    own = own_names(trees)
    theirs = library_bases(trees)
    found = []
    for path, tree in trees:
        libs = library_names(tree)
        defined = functions_defined(tree)
        rel = path.relative_to(ROOT.parent)
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for node in ast.walk(cls):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                        node.value.id in ("self", "cls") and node.attr in theirs[cls.name] \
                        and node.attr not in ALLOWED:
                    found.append(f"{rel}:{node.lineno}: {ast.unparse(node)} (a private "
                                 f"attribute of {cls.name}'s library base)")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and private(node.attr) and \
                    node.attr not in own and node.attr not in ALLOWED:
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)} (a library's "
                             "private attribute)")
            targets = []
            if isinstance(node, ast.Assign):
                targets = [(t, node.value) for t in node.targets]
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = [(node.target, node.value)]
            for target, value in targets:
                if not isinstance(target, ast.Attribute):
                    continue
                base = root_name(target.value)
                if base in libs:
                    found.append(f"{rel}:{target.lineno}: {ast.unparse(target)} = … (an "
                                 "attribute of a library module or class set)")
                elif base not in ("self", "cls") and is_function(value, defined):
                    found.append(f"{rel}:{target.lineno}: {ast.unparse(target)} = "
                                 f"{ast.unparse(value)} (a method replaced)")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" \
                    and len(node.args) == 3 and is_function(node.args[2], defined):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)} (a method replaced)")
    return found


def test_no_library_internals_in_detokgui():
    found = violations(sources())
    assert not found, "\n".join(found)


@pytest.mark.parametrize("code", [
    "def f(label):\n    label._sizeHint = {}\n",
    "def f(curve):\n    return curve._fillPathList\n",
    "def f(ax):\n    return ax._tickLevels[0]\n",
    "def f(label):\n    label.updateMin = lambda: None\n",
    "def _no_layout():\n    pass\n\ndef f(grid):\n    grid.activate = _no_layout\n",
    "import pyqtgraph as pg\n\ndef f():\n    pg.AxisItem.tickValues = None\n",
    "def g():\n    pass\n\ndef f(o):\n    setattr(o, 'paint', g)\n",
    ("import pyqtgraph as pg\n\nclass C(pg.PlotCurveItem):\n    def f(self):\n"
     "        self._fillPathList = None\n"),
])
def test_the_scan_finds_them(code):
    """Each kind of use the scan is for, in a module of its own beside detokgui's."""
    found = violations(sources() + [(ROOT / "example.py", ast.parse(code))])
    assert [f for f in found if f.startswith("detokgui/example.py")], code


def test_own_privates_pass():
    """detokgui's own underscore names, on its own objects, and a signal connected or a
    value set on another object are not flagged."""
    code = ("class A:\n    def __init__(self):\n        self._cache = {}\n"
            "    def _fill(self):\n        return self._cache\n\n"
            "def f(a, b):\n    a._fill()\n    b.cache = a._cache\n    b.size = 3\n")
    assert violations([(ROOT / "example.py", ast.parse(code))]) == []
