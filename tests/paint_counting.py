"""Counting paint events, for the tests of how often the window paints (issue 16)."""

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget

from detokgui.gui.paint_prep import paints_put_off


class CountingWidget(QWidget):
    """A widget that counts its paint events (`painted`)."""

    def __init__(self, width: int = 200, height: int = 150):
        super().__init__()
        self.setMinimumSize(width, height)
        self.painted = 0

    def paintEvent(self, event):
        self.painted += 1


class PaintCounter(QObject):
    """Counts the paint events of the widgets it watches: `painted[widget]`, and `total`;
    `drawn()`: those not put off to a later pass by the window's paint pacing."""

    def __init__(self, *widgets):
        super().__init__()
        self.painted = {w: 0 for w in widgets}
        self._put_off = {w: paints_put_off(w) for w in widgets}
        for w in widgets:
            w.installEventFilter(self)

    @property
    def total(self) -> int:
        return sum(self.painted.values())

    def drawn(self) -> dict:
        return {w: n - (paints_put_off(w) - self._put_off[w]) for w, n in self.painted.items()}

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and obj in self.painted:
            self.painted[obj] += 1
        return False
