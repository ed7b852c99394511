"""A table of per-head rows (the head classes, the attention sinks, the layer-1 circuit):
read-only, sortable, one row selected at a time."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from superqt.utils import signals_blocked

from detokgui.gui.records import Column, RecordsModel, TokenTableView


class HeadTable(TokenTableView):
    """A RecordsModel of `columns` without tokens, sorted by its first column until a
    header is clicked; each column as wide as its header and values, the last one filling
    what is left (a narrow table scrolls). A click on a row emits `recordActivated` with
    the row's record."""

    recordActivated = Signal(object)

    def __init__(self, columns: list[Column], tip: str, parent=None):
        model = RecordsModel(columns, token=None)
        super().__init__(model, sortable=True, stretch=None, tip=tip, parent=parent)
        model.setParent(self)
        self.sortByColumn(0, Qt.AscendingOrder)
        self.horizontalHeader().setStretchLastSection(True)
        self.clicked.connect(lambda index: self.recordActivated.emit(model.record(index.row())))

    def select_head(self, head: int) -> None:
        """Select the row whose record's "head" is `head` (none when absent) without
        emitting, and scroll to it."""
        model = self.records()
        heads = [model.record(r)["head"] for r in range(model.rowCount())]
        with signals_blocked(self.selectionModel()):
            self.clearSelection()
            if head in heads:
                self.selectRow(heads.index(head))
                self.scrollTo(model.index(heads.index(head), 0))
        self.viewport().update()
