"""Controls that choose heads: HeadChooser (selected / all / a typed set, one option
value), HeadSet (the circuit's heads, ticked), HeadSpin (the shared head), and the
functions that turn their values into head lists."""

from __future__ import annotations

import re

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QWidget,
)
from superqt.utils import signals_blocked

from detokgui.gui.controls import check_box, combo_box, spin_box
from detokgui.gui.flow_layout import FlowLayout

HEAD_MODES = (("selected", "Selected head"), ("all", "All heads"), ("set", "Chosen heads"))


def parse_heads(text: str, n_heads: int) -> list[int]:
    """'0,3,7' or '0-3 8' -> the valid heads, sorted, each once; others are ignored."""
    heads: set[int] = set()
    for a, b in re.findall(r"(\d+)(?:\s*-\s*(\d+))?", text or ""):
        lo, hi = int(a), int(b) if b else int(a)
        heads.update(h for h in range(min(lo, hi), max(lo, hi) + 1) if h < n_heads)
    return sorted(heads)


def chosen_heads(spec: str, selected: int, n_heads: int) -> list[int]:
    """The heads a HeadChooser value names ("selected", "all" or "set:0,3,7"); a set
    that names no valid head falls back to the selected one."""
    mode, _, head_set = str(spec).partition(":")
    if mode == "all":
        return list(range(n_heads))
    if mode == "set":
        return parse_heads(head_set, n_heads) or [min(selected, n_heads - 1)]
    return [min(selected, n_heads - 1)]


def state_heads(spec: str, state) -> list[int]:
    """chosen_heads for `state`'s selected head and model ([] while no model is loaded)."""
    layer = state.layer
    return [] if layer is None else chosen_heads(spec, state.head, layer.n_heads)


class HeadChooser(QWidget):
    """Which heads to plot: the selected head, all heads, or a typed set ("0,3,7").

    Its value is one string: "selected", "all" or "set:<heads>" (an option of the panel)."""

    valueChanged = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("Heads"))
        self.combo = combo_box(HEAD_MODES, "Which heads to plot: the head selected in the "
                               "toolbar, a grid of\nall heads, or the heads typed in the box "
                               "(e.g. 0,3,7 or 0-5)")
        lay.addWidget(self.combo)
        self.edit = QLineEdit("0,1,2,3")
        self.edit.setPlaceholderText("e.g. 0,3,7")
        self.edit.setToolTip("Heads to plot (0-based): numbers and ranges, e.g. 0,3,7 or 0-5")
        self.edit.setMaximumWidth(110)
        lay.addWidget(self.edit)
        self.edit.setVisible(False)
        self.combo.currentIndexChanged.connect(self._edited)
        self.edit.editingFinished.connect(self._edited)

    @property
    def mode(self) -> str:
        return self.combo.currentData()

    def value(self) -> str:
        return f"set:{self.edit.text()}" if self.mode == "set" else self.mode

    def setValue(self, value: str) -> None:
        mode, _, head_set = str(value).partition(":")
        self.combo.setCurrentIndex(max(0, self.combo.findData(mode)))
        if mode == "set":
            self.edit.setText(head_set)
        self.edit.setVisible(self.mode == "set")

    def set_mode(self, mode: str, head_set: str | None = None) -> None:
        """Choose a mode (and the typed set) as a user would."""
        if head_set is not None:
            self.edit.setText(head_set)
        self.setValue(f"set:{self.edit.text()}" if mode == "set" else mode)
        self.valueChanged.emit(self.value())

    @Slot()
    def _edited(self, *_) -> None:
        self.edit.setVisible(self.mode == "set")
        self.valueChanged.emit(self.value())


class HeadSet(QWidget):
    """The heads of the circuit: "b4" (the heads B4 classifies as contextual, shown ticked
    once known) or "set:0,1,3" (ticked by the user)."""

    valueChanged = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.lay = FlowLayout(self)  # a box per head: 25 or 72 of them wrap
        self.lay.addWidget(QLabel("Contextual heads"))
        self.auto = check_box("as classified", "The heads the head classification "
                              "(Positional pattern view) calls contextual.\nUntick to choose "
                              "the heads yourself.")
        self.auto.setChecked(True)
        self.auto.toggled.connect(self._changed)
        self.lay.addWidget(self.auto)
        self.boxes: list[QCheckBox] = []
        self._set = ""  # the typed set, kept while there are no boxes

    def set_count(self, n: int) -> None:
        for b in self.boxes:
            self.lay.removeWidget(b)
            b.deleteLater()
        self.boxes = []
        for h in range(n):
            b = check_box(str(h), f"head {h} in the circuit")
            b.toggled.connect(self._changed)
            self.lay.addWidget(b)
            self.boxes.append(b)
        self._show(parse_heads(self._set, n))

    def value(self) -> str:
        return "b4" if self.auto.isChecked() else "set:" + self._set

    def setValue(self, value: str) -> None:
        mode, _, heads = str(value).partition(":")
        with signals_blocked(self.auto):
            self.auto.setChecked(mode != "set")
        if mode == "set":
            self._set = heads
            self._show(parse_heads(heads, len(self.boxes)))
        self._enable()

    def show_heads(self, heads) -> None:
        """Tick the heads of a computed circuit (B4 mode: what the classification found)."""
        if self.auto.isChecked():
            self._show(heads)

    def _show(self, heads) -> None:
        for h, b in enumerate(self.boxes):
            with signals_blocked(b):
                b.setChecked(h in heads)
        self._enable()

    def _enable(self) -> None:
        for b in self.boxes:
            b.setEnabled(not self.auto.isChecked())

    @Slot()
    def _changed(self, *_) -> None:
        if self.sender() is not self.auto:
            self._set = ",".join(str(h) for h, b in enumerate(self.boxes) if b.isChecked())
        self._enable()
        self.valueChanged.emit(self.value())


class HeadSpin(QWidget):
    """'Head' as a spin box bound to the shared head (the toolbar's)."""

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("Head"))
        self.spin = spin_box(0, 0, "Attention head, shared with every panel (toolbar, [ and ])")
        lay.addWidget(self.spin)
        self._model(state.layer)
        self.spin.valueChanged.connect(state.set_head)
        state.modelChanged.connect(self._model)
        state.headChanged.connect(self._show)

    @Slot(object)
    def _model(self, layer) -> None:
        with signals_blocked(self.spin):
            self.spin.setRange(0, layer.n_heads - 1 if layer is not None else 0)
            self.spin.setValue(self.state.head)

    @Slot(int)
    def _show(self, head: int) -> None:
        with signals_blocked(self.spin):
            self.spin.setValue(head)
