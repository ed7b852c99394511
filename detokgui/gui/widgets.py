"""Small controls shared by several panels."""

from __future__ import annotations

import re

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QSpinBox, QWidget
from superqt.utils import signals_blocked

from detokgui.core.affinity import SIGMA_CONVENTIONS, SIGMA_LABELS, SigmaChoice

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


class SigmaControls(QWidget):
    """The token-only sigma convention (SPEC §1), read from and written to AppState."""

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("LayerNorm σ:"))
        self.combo = QComboBox()
        for c in SIGMA_CONVENTIONS:
            self.combo.addItem(SIGMA_LABELS[c], c)
        self.combo.setToolTip(
            "How token-only views divide by the LayerNorm scale σ:\n"
            "mean over positions — σ_v = mean_j σ(e_v + p_j) (the paper's Table 1);\n"
            "at positions (i, j) — exact σ(e_u + p_i), σ(e_v + p_j);\n"
            "no LayerNorm — raw e W^QK e^T."
        )
        lay.addWidget(self.combo)
        self.i_label, self.i_spin = QLabel("i"), QSpinBox()
        self.j_label, self.j_spin = QLabel("j"), QSpinBox()
        self.i_spin.setToolTip("query position i")
        self.j_spin.setToolTip("key position j")
        for w in (self.i_label, self.i_spin, self.j_label, self.j_spin):
            lay.addWidget(w)
        self._sync(state.sigma)
        self.combo.currentIndexChanged.connect(self._write)
        self.i_spin.valueChanged.connect(self._write)
        self.j_spin.valueChanged.connect(self._write)
        state.sigmaChanged.connect(self._sync)
        state.modelChanged.connect(self._on_model)

    @Slot(object)
    def _on_model(self, layer) -> None:
        top = (layer.n_positions - 1) if layer is not None else 0
        for s in (self.i_spin, self.j_spin):
            s.setRange(0, top)

    @Slot(object)
    def _sync(self, choice: SigmaChoice) -> None:
        with signals_blocked(self.combo), signals_blocked(self.i_spin), \
                signals_blocked(self.j_spin):
            self.combo.setCurrentIndex(SIGMA_CONVENTIONS.index(choice.convention))
            self.i_spin.setValue(choice.positions[0])
            self.j_spin.setValue(choice.positions[1])
        at = choice.convention == "at"
        for w in (self.i_label, self.i_spin, self.j_label, self.j_spin):
            w.setVisible(at)

    @Slot()
    def _write(self) -> None:
        choice = SigmaChoice(self.combo.currentData(), (self.i_spin.value(), self.j_spin.value()))
        self.state.set_sigma(choice)
        self._sync(choice)


class HeadChooser(QWidget):
    """Which heads to plot: the selected head, all heads, or a typed set ("0,3,7").

    Its value is one string: "selected", "all" or "set:<heads>" (an option of the panel)."""

    valueChanged = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("Heads"))
        self.combo = QComboBox()
        for mode, text in HEAD_MODES:
            self.combo.addItem(text, mode)
        self.combo.setToolTip("Which heads to plot: the head selected in the toolbar, a grid of\n"
                              "all heads, or the heads typed in the box (e.g. 0,3,7 or 0-5)")
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
        i = self.combo.findData(mode)
        self.combo.setCurrentIndex(max(0, i))
        if mode == "set":
            self.edit.setText(head_set)
        self.edit.setVisible(self.mode == "set")

    def set_mode(self, mode: str, head_set: str | None = None) -> None:
        """Choose a mode (and the typed set) as a user would."""
        if head_set is not None:
            self.edit.setText(head_set)
        self.setValue(f"set:{self.edit.text()}" if mode == "set" else mode)
        self.valueChanged.emit(self.value())

    def heads(self, selected: int, n_heads: int) -> list[int]:
        return chosen_heads(self.value(), selected, n_heads)

    @Slot()
    def _edited(self, *_) -> None:
        self.edit.setVisible(self.mode == "set")
        self.valueChanged.emit(self.value())
