"""A panel's options: one frozen dataclass, bound to the widgets that edit it and
remembered between sessions under keys derived from its fields ("<group>/<field>").

    @dataclass(frozen=True)
    class Options:
        k: int = 10
        direction: str = "keys"

    self.options = BoundOptions("topk", Options, {"k": self.k_spin,
                                                  "direction": self.direction}, self)
    self.options.changed.connect(self.refresh)
    ... self.options.value.k ...

Widgets are read and written by kind: a checkable button is a bool, a spin box an int or
float, a combo box its current item's data, a line edit its text (when editing finishes);
any other widget offers `value()`, `setValue(v)` and a `valueChanged` signal. Settings are
written when the user changes an option, never while computing. Other remembered values
(window geometry, recent models) go through `remembered` / `remember`; the file is
written a few seconds after the last change and when the window closes
(`flush_settings`).
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QSettings, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QLineEdit,
    QSpinBox,
)
from superqt.utils import signals_blocked

EXPORT_FOLDER = "export/folder"  # the folder of the last export


_settings: tuple[tuple, QSettings] | None = None


def settings() -> QSettings:
    """One QSettings for the application (made again if its name or location changed).

    A QSettings made per write rereads the file and writes it back when it goes (~13 ms
    each); one long-lived object writes changes in the background, batched."""
    global _settings
    ident = (QCoreApplication.organizationName(), QCoreApplication.applicationName(),
             QSettings.defaultFormat())
    if _settings is None or _settings[0] != ident:
        _settings = (ident, QSettings())
    return _settings[1]


_pending: dict[str, Any] = {}  # remembered, not yet written
_flush: QTimer | None = None
WRITE_AFTER_MS = 3000


def remember(key: str, value: Any) -> None:
    """Store `value` under `key`. Written when nothing has changed for a few seconds, and
    when the window closes: writing the file takes from ~10 ms to (on a busy disk) half a
    second on the GUI thread, too long to do at each change."""
    global _flush
    _pending[key] = list(value) if isinstance(value, tuple) else value
    app = QCoreApplication.instance()
    if app is None:
        flush_settings()
        return
    if _flush is None or _flush.parent() is not app:
        _flush = QTimer(app)
        _flush.setSingleShot(True)
        _flush.setInterval(WRITE_AFTER_MS)
        _flush.timeout.connect(flush_settings)
        app.aboutToQuit.connect(flush_settings)
    _flush.start()


def flush_settings() -> None:
    """Write what was remembered and not written yet."""
    if not _pending:
        return
    s = settings()
    for key, value in _pending.items():
        s.setValue(key, value)
    _pending.clear()
    s.sync()


def ask_save_path(parent, title: str, name: str, fmt: str) -> str | None:
    """A save dialog for a `fmt` file ("csv", "svg", ...) proposing `name` in the folder of
    the last export: the path chosen, ".fmt" added where it lacks it and its folder
    remembered for the next export; None when cancelled."""
    folder = remembered(EXPORT_FOLDER, str(Path.home()))
    path, _ = QFileDialog.getSaveFileName(parent, title, str(Path(folder) / name),
                                          f"{fmt.upper()} (*.{fmt})")
    if not path:
        return None
    if not path.lower().endswith("." + fmt):
        path += "." + fmt
    remember(EXPORT_FOLDER, str(Path(path).parent))
    return path


def remembered(key: str, default: Any) -> Any:
    """The value stored under `key`, of the type of `default` (which it falls back to)."""
    if key in _pending:
        value = _pending[key]
        if isinstance(default, (list, tuple)):
            return type(default)(str(v) for v in value)
        return value
    settings_ = settings()
    if not settings_.contains(key):
        return default
    try:
        if isinstance(default, (list, tuple)):
            value = settings_.value(key, default)
            if isinstance(value, str):
                value = [value]
            return type(default)(str(v) for v in (value or []))
        if isinstance(default, (bool, int, float, str)):
            return settings_.value(key, default, type=type(default))
        return settings_.value(key, default)
    except (TypeError, ValueError):
        return default


def _reader(widget):
    if isinstance(widget, QAbstractButton):
        return widget.isChecked, widget.setChecked, widget.toggled
    if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
        return widget.value, widget.setValue, widget.valueChanged
    if isinstance(widget, QComboBox):
        def set_data(v, w=widget):
            i = w.findData(v)
            if i >= 0:
                w.setCurrentIndex(i)
        return widget.currentData, set_data, widget.currentIndexChanged
    if isinstance(widget, QLineEdit):
        return widget.text, widget.setText, widget.editingFinished
    return widget.value, widget.setValue, widget.valueChanged


class BoundOptions(QObject):
    """An options dataclass kept equal to its widgets and stored under `group`."""

    changed = Signal(object)  # the new options

    def __init__(self, group: str, cls, widgets: dict[str, Any], parent=None):
        super().__init__(parent)
        self.group = group
        self.cls = cls
        self.widgets = dict(widgets)
        names = {f.name for f in fields(cls)}
        unknown = set(self.widgets) - names
        if unknown:
            raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
        defaults = cls()
        stored = {f.name: remembered(self.key(f.name), getattr(defaults, f.name))
                  for f in fields(cls)}
        for name, w in self.widgets.items():  # a stored choice that is no longer offered
            if isinstance(w, QComboBox) and w.findData(stored[name]) < 0:
                stored[name] = getattr(defaults, name)
        self.value = cls(**stored)
        self.apply(self.value)
        for name, w in self.widgets.items():
            _reader(w)[2].connect(lambda *_, n=name: self._edited(n))

    def key(self, name: str) -> str:
        return f"{self.group}/{name}"

    def widget(self, name: str):
        """The widget that edits option `name`."""
        return self.widgets[name]

    def apply(self, options=None) -> None:
        """Show `options` (default: the current ones) in the widgets without emitting their
        signals; a spin box shows a value outside its range clamped, and the option keeps
        it (call again after the range changed)."""
        options = self.value if options is None else options
        for name, w in self.widgets.items():
            with signals_blocked(w):
                _reader(w)[1](getattr(options, name))

    def _edited(self, name: str) -> None:
        new = replace(self.value, **{name: _reader(self.widgets[name])[0]()})
        if new != self.value:
            self.value = new
            remember(self.key(name), getattr(new, name))
            self.changed.emit(new)

    def set(self, **changes) -> None:
        """Change options from code: widgets, settings and `changed` follow."""
        new = replace(self.value, **changes)
        if new == self.value:
            return
        self.apply(new)
        for name in changes:
            remember(self.key(name), getattr(new, name))
        self.value = new
        self.changed.emit(new)
