"""What the panels of the "Compare" tab group share: a page that asks for model B while
there is none, the pair of models as the computations' input, the head pair and the
query token of both models in one line, and a recomputation whenever B, its pair or the
head matching changes."""

from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QLabel, QPushButton, QStackedWidget, QVBoxLayout, QWidget

from detokgui.core.compare import pair_texts
from detokgui.gui.panels.base import Panel

NO_COMPARISON = "Compare with another model (Model > Compare with…)"


class NoComparison(QWidget):
    """The page shown while no model B is open: a line and a button that asks for one."""

    def __init__(self, state, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.addStretch(1)
        self.label = QLabel(NO_COMPARISON)
        self.label.setAlignment(Qt.AlignCenter)
        lay.addWidget(self.label)
        self.button = QPushButton("Compare with…")
        self.button.setToolTip("Open a second model, B, to compare with the one shown (A)")
        self.button.clicked.connect(state.request_compare)
        lay.addWidget(self.button, 0, Qt.AlignHCenter)
        lay.addStretch(2)


class ComparePanel(Panel):
    """Base of the comparison panels: subclasses put their widgets in `self.body_layout`
    (`self.pair_text`, the head pair's line, among them) and write request / compute /
    draw as any panel, with `compute(pair, request)` given the core.compare.pair.Pair;
    `request()` may rely on `self.state.pair` and `self.state.head_b` (it is asked only
    when both are there, see `ready`)."""

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.stack = QStackedWidget()
        self.empty = NoComparison(state)
        self.stack.addWidget(self.empty)
        self.body = QWidget()
        self.body_layout = QVBoxLayout(self.body)
        self.pair_text = QLabel()  # `pair_label()`; each panel places it
        self.pair_text.setTextFormat(Qt.RichText)
        self.stack.addWidget(self.body)
        outer.addWidget(self.stack)
        state.compareChanged.connect(self._compare_changed)
        state.matchingChanged.connect(self._matching_changed)
        state.headBChanged.connect(self.refresh)
        heads = self.when_visible(self.heads_changed)
        for signal in (state.headChanged, state.headBChanged):
            signal.connect(heads)
        self._show_page()

    def job_input(self):
        return self.state.pair

    def ready(self) -> bool:
        """A pair of models and B's head to show are there."""
        s = self.state
        return s.pair is not None and s.head_b is not None

    def waiting_text(self) -> str:
        """Why nothing is shown yet while B is open (`pair_texts.waiting_text`)."""
        s = self.state
        if s.layer_b is None:
            return ""
        return pair_texts.waiting_text(s.pair is not None, s.matching, s.head, s.head_b,
                                       s.layer_b.n_heads)

    def pair_label(self) -> str:
        """The head pair and the query token of both models as rich text
        (`pair_texts.pair_label`); while A's head has no head of B,
        `pair_texts.no_match_label` ("" without a matching)."""
        s = self.state
        if s.head_b is None:
            return "" if s.matching is None else pair_texts.no_match_label(s.matching, s.head)
        q, qb = s.query_token, s.query_token_b
        return pair_texts.pair_label(s.matching, s.head, s.head_b,
                                     s.token_text(q) if q >= 0 else None,
                                     s.token_text_b(qb) if qb is not None else None)

    @Slot()
    def _compare_changed(self, *_) -> None:
        for ch in self.channels.values():
            ch.forget()
        self._show_page()
        self.compare_changed()
        self.refresh()

    @Slot()
    def _matching_changed(self, *_) -> None:
        self.matching_changed()
        self.refresh()
        main = self.channels.get("")
        if main is not None and main.blank:  # still nothing to compute: say why, anew
            self.redraw()

    def heads_changed(self) -> None:
        """A's head or B's changed (when shown): what needs no computation."""

    def matching_changed(self) -> None:
        """The head matching changed (B's head with it): what needs no computation."""

    def compare_changed(self) -> None:
        """B, its pair or the matching changed: adjust widgets (results are recomputed)."""

    def _show_page(self) -> None:
        self.stack.setCurrentWidget(self.body if self.state.layer_b is not None
                                    else self.empty)
