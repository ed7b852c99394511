"""The head-classification table (B4's "contextual circuit" criteria): every head with its
measured span, recent weight, self-rank and bias slope, and the class the first matching
rule gives; sortable, a click selects the head."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from detokgui.core.position_side.class_texts import CLASS_COLUMNS, row_tip, rules_line
from detokgui.core.position_side.positional import HeadClassification
from detokgui.gui.controls import wrapping_label
from detokgui.gui.head_table import HeadTable
from detokgui.gui.panels.base import StatusLine
from detokgui.gui.records import Column

LABEL_COLORS = {
    "duplicate-token": "#e8d5f5",
    "detokenization": "#d4ecd4",
    "contextual": "#d6e6f7",
    "other": "#f2f2f2",
}

COLUMNS = [
    Column(title, lambda r, k=key: r[k], fmt, tip, tooltip=row_tip,
           background=(lambda r: LABEL_COLORS.get(r["label"])) if key == "label" else None)
    for key, title, tip, fmt in CLASS_COLUMNS]


class HeadClassesTable(QWidget):
    """The classification of a model's heads: rules, a "Classify heads" button (`classify`
    is emitted; the panel computes), the table, and its StatusLine."""

    headActivated = Signal(int)
    classify = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.label = wrapping_label("<b>Head classification</b>")
        row.addWidget(self.label, 1)
        self.button = QPushButton("Classify heads")
        self.button.setToolTip("Compute the head classification (a whole-vocabulary pass for "
                               "the self-ranks; cancellable)")
        self.button.clicked.connect(self.classify)
        row.addWidget(self.button)
        lay.addLayout(row)
        self.status = StatusLine()
        self.status.busyChanged.connect(lambda busy: self.button.setEnabled(not busy))
        lay.addWidget(self.status)
        # each column as wide as its header and values (nine equal stretched columns cut
        # "mean distance" to "ean distanc" in a 1024-pixel window)
        self.table = HeadTable(COLUMNS, "Measured per head; click a row to select the head, "
                                        "a header to sort")
        self.model = self.table.records()
        self.table.recordActivated.connect(lambda r: self.headActivated.emit(int(r["head"])))
        lay.addWidget(self.table, 1)

    def show_classes(self, res: HeadClassification | None) -> None:
        self.model.set_records(res.rows() if res is not None else ())
        self.label.setText(rules_line(res))

    def rows(self) -> list[dict]:
        """The table as a person sees it: one dict per row, column key -> text."""
        return [{key: self.model.index(r, c).data() for c, (key, *_) in enumerate(CLASS_COLUMNS)}
                for r in range(self.model.rowCount())]

    def mark_head(self, head: int) -> None:
        self.table.select_head(head)
