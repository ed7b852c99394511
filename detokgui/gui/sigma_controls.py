"""The shared token-only σ convention (docs/math/sigma.md#token-only-views) as a row of
controls."""

from __future__ import annotations

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QWidget
from superqt.utils import signals_blocked

from detokgui.core.model.conventions import TOKEN_SIGMA_LABELS, TOKEN_SIGMAS, SigmaChoice
from detokgui.gui.controls import combo_box


class SigmaControls(QWidget):
    """The token-only sigma convention (docs/math/sigma.md#token-only-views), read from and written
    to AppState."""

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("LayerNorm σ:"))
        self.combo = combo_box(
            ((c, TOKEN_SIGMA_LABELS[c]) for c in TOKEN_SIGMAS),
            "How token-only views divide by the LayerNorm scale σ:\n"
            "mean over positions — σ_v = mean_j σ(e_v + p_j) (the paper's Table 1);\n"
            "at positions (i, j) — exact σ(e_u + p_i), σ(e_v + p_j);\n"
            "no LayerNorm — raw e W^QK e^T.")
        lay.addWidget(self.combo)
        self.i_label, self.i_spin = QLabel("i"), QSpinBox()
        self.j_label, self.j_spin = QLabel("j"), QSpinBox()
        self.i_spin.setToolTip("query position i")
        self.j_spin.setToolTip("key position j (a query at i attends to keys j ≤ i only)")
        for w in (self.i_label, self.i_spin, self.j_label, self.j_spin):
            lay.addWidget(w)
        self.note = QLabel()  # says when j was clamped to i
        self.note.setStyleSheet("color: #a15c00")
        self.note.hide()
        lay.addWidget(self.note)
        if state.layer is not None:  # a model already loaded: its ranges, before the values
            self._on_model(state.layer)
        self._sync(state.sigma)
        self.combo.currentIndexChanged.connect(self._write)
        self.i_spin.valueChanged.connect(self._write)
        self.j_spin.valueChanged.connect(self._write)
        state.sigmaChanged.connect(self._sync)
        state.modelChanged.connect(self._on_model)

    @Slot(object)
    def _on_model(self, layer) -> None:
        top = (layer.n_positions - 1) if layer is not None else 0
        with signals_blocked(self.i_spin), signals_blocked(self.j_spin):
            self.i_spin.setRange(0, top)
            self.j_spin.setRange(0, top)

    @Slot(object)
    def _sync(self, choice: SigmaChoice) -> None:
        with signals_blocked(self.combo), signals_blocked(self.i_spin), \
                signals_blocked(self.j_spin):
            self.combo.setCurrentIndex(TOKEN_SIGMAS.index(choice.convention))
            self.i_spin.setValue(choice.positions[0])
            self.j_spin.setValue(choice.positions[1])
        at = choice.convention == "at"
        for w in (self.i_label, self.i_spin, self.j_label, self.j_spin):
            w.setVisible(at)
        if not at:
            self.note.hide()

    @Slot()
    def _write(self) -> None:
        """The choice as shown; a key position past the query position is clamped to it
        (causal attention: keys j <= i only), and the note says so."""
        i, j = self.i_spin.value(), self.j_spin.value()
        clamped = j > i
        if clamped:
            j = i
            self.note.setText(f"j clamped to i = {i}: keys j ≤ i only")
        self.note.setVisible(clamped)
        choice = SigmaChoice(self.combo.currentData(), (i, j))
        self.state.set_sigma(choice)
        self._sync(choice)
