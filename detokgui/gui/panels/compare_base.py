"""What the panels of the "Compare" tab group share: a page that asks for model B while
there is none, the pair of models as the computations' input, the head pair and the
query token of both models in one line, and a recomputation whenever B, its pair or the
head matching changes."""

from __future__ import annotations

from functools import partial
from html import escape

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QLabel, QPushButton, QStackedWidget, QVBoxLayout, QWidget

from detokgui.gui.panels.base import Panel

_esc = partial(escape, quote=False)  # & < > only: the text goes between tags

NO_COMPARISON = "Compare with another model (Model > Compare with…)"
MISSING = "missing in B"


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
    (`self.pair_text`, the head pair's line, among them) and write request / compute / draw as any panel, with `compute(pair, request)` given
    the core.compare.pair.Pair; `request()` may rely on `self.state.pair` and
    `self.state.head_b` (it is asked only when both are there, see `ready`)."""

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
        self._show_page()

    def job_input(self):
        return self.state.pair

    def ready(self) -> bool:
        """A pair of models and B's head to show are there."""
        s = self.state
        return s.pair is not None and s.head_b is not None

    def waiting_text(self) -> str:
        """Why nothing is shown yet while B is open."""
        s = self.state
        if s.layer_b is None:
            return ""
        if s.pair is None:
            return "Pairing the two models' tokens… (Model > Match heads of A and B if cancelled)"
        if s.matching is not None and s.head_b is None:
            assigned = s.matching.assigned_of_a(s.head)
            if assigned is not None:
                return (f"A's head {s.head} has no match in B: the assignment pairs it with "
                        f"B's head {assigned}, but {s.matching.inequality(s.head, assigned)}, "
                        "no more alike than heads of unrelated models. Click a cell of the "
                        "Head matching view to compare it with a head of B anyway.")
            return (f"A's head {s.head} has no match in B ({s.layer_b.n_heads} heads): click "
                    "a cell of the Head matching view to choose a head of B for it.")
        return "Matching the heads of A and B… (Model > Match heads of A and B if cancelled)"

    def pair_label(self) -> str:
        """"A head 3 ↔ B head 5 (matched: S 0.912 > θ 0.204) · query ' Korea' (B: ' Korea')"
        as rich text; a pair chosen by hand says "(chosen; …)", and "no match" where its
        similarity is not above what unrelated heads reach; `no_match_label` while A's
        head has no head of B."""
        s = self.state
        if s.head_b is None:
            return self.no_match_label()
        q, qb = s.query_token, s.query_token_b
        query = ""
        if q >= 0:
            b = (f"B: {_esc(s.token_text_b(qb))}" if qb is not None
                 else f"<span style='color:#b00'>{MISSING}</span>")
            query = f" · query {_esc(s.token_text(q))} ({b})"
        m = s.matching
        if m is None:
            how = "chosen"
        elif m.match_of_a(s.head) == s.head_b:
            how = m.verdict(s.head, s.head_b)
        else:
            alike = m.is_matched(s.head, s.head_b)  # above θ, though not the assignment's
            text = m.inequality(s.head, s.head_b) if alike else m.verdict(s.head, s.head_b)
            how = (f"chosen; <span style='color:{'#555' if alike else '#b00'}'>"
                   f"{_esc(text)}</span>")
        return f"<b>A head {s.head} ↔ B head {s.head_b}</b> ({how}){query}"

    def no_match_label(self) -> str:
        """"A head 0: no match in B (assigned B head 6: S 0.140 ≤ θ 0.195)" as rich text
        while the matching gives A's head no head of B; "" otherwise."""
        s = self.state
        m = s.matching
        if m is None or s.head_b is not None:
            return ""
        assigned = m.assigned_of_a(s.head)
        why = (f"assigned B head {assigned}: {m.inequality(s.head, assigned)}"
               if assigned is not None else f"B has {m.shape[1]} heads")
        return (f"<b>A head {s.head}</b>: <span style='color:#b00'>no match in B</span> "
                f"({_esc(why)})")

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

    def matching_changed(self) -> None:
        """The head matching changed (B's head with it): what needs no computation."""

    def compare_changed(self) -> None:
        """B, its pair or the matching changed: adjust widgets (results are recomputed)."""

    def _show_page(self) -> None:
        self.stack.setCurrentWidget(self.body if self.state.layer_b is not None
                                    else self.empty)
