"""Counting paint events, for the tests of how often the window paints (issue 16)."""

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget


class CountingWidget(QWidget):
    """A widget that counts its paint events (`painted`)."""

    def __init__(self, width: int = 200, height: int = 150):
        super().__init__()
        self.setMinimumSize(width, height)
        self.painted = 0

    def paintEvent(self, event):
        self.painted += 1


class PaintCounter(QObject):
    """Counts the paint events of the widgets it watches: `painted[widget]`, and `total`."""

    def __init__(self, *widgets):
        super().__init__()
        self.painted = {w: 0 for w in widgets}
        for w in widgets:
            w.installEventFilter(self)

    @property
    def total(self) -> int:
        return sum(self.painted.values())

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and obj in self.painted:
            self.painted[obj] += 1
        return False
