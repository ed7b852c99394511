"""Compare (3): the head classes (B4's criteria) of A and of B side by side, A's selected
head and its match in B marked; a row selects the head (B's row: with its match in A, or
the pair)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter

from detokgui.core.compare import views as cv
from detokgui.gui.controls import bare_column
from detokgui.gui.panels.compare_base import ComparePanel
from detokgui.gui.panels.head_classes import HeadClassesTable


@dataclass(frozen=True)
class Request:
    serial: int
    compare_serial: int
    n: int


class CompareClassesPanel(ComparePanel):
    title = "Head classes A vs B"
    view_name = "compare-classes"
    tooltip = "The head classification of A and of B side by side, matched heads marked"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = self.body_layout
        lay.addWidget(self.pair_text)
        split = QSplitter(Qt.Vertical)  # nine columns each: one above the other
        self.tables = {}
        self.titles = {}
        for side in ("A", "B"):
            col, cl = bare_column()
            self.titles[side] = QLabel()
            cl.addWidget(self.titles[side])
            table = HeadClassesTable()
            table.button.hide()  # computed when shown, as the other comparison views
            if side == "B":
                table.label.hide()  # the rules, said once above
            cl.addWidget(table, 1)
            self.tables[side] = table
            split.addWidget(col)
        lay.addWidget(split, 1)
        lay.addWidget(self.status)
        self.tables["A"].headActivated.connect(state.set_head)
        self.tables["B"].headActivated.connect(self._b_clicked)

    def request(self):
        s = self.state
        if s.pair is None:
            return None
        return Request(self.serial, s.compare_serial, s.query_position)

    @staticmethod
    def compute(pair, req: Request):
        return (yield from cv.iter_classify_both(pair, req.n))

    def draw(self, res) -> None:
        s = self.state
        for k, side in enumerate("AB"):
            c = None if res is None else res[k]
            self.tables[side].show_classes(c)
            if c is None:
                self.titles[side].setText("")
            else:
                counts = sorted(Counter(c.labels).items())
                self.titles[side].setText(f"<b>{side}</b>: {(s.layer, s.layer_b)[k].name} — "
                                          + ", ".join(f"{v} {label}" for label, v in counts))
        self.status.setText(self.waiting_text() if res is None
                            else f"A at n = {res[0].n}, B at n = {res[1].n}")
        self.heads_changed()

    def heads_changed(self) -> None:
        s = self.state
        self.pair_text.setText(self.pair_label() or self.waiting_text())
        self.tables["A"].mark_head(s.head)
        self.tables["B"].mark_head(-1 if s.head_b is None else s.head_b)

    matching_changed = heads_changed

    def _b_clicked(self, head_b: int) -> None:
        m = self.state.matching
        head_a = m.match_of_b(head_b) if m is not None else None
        self.state.set_head_pair(self.state.head if head_a is None else head_a, head_b)
