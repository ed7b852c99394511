"""A splitter that puts its sides one above the other when it is too narrow for them
side by side."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QSplitter


class AdaptiveSplitter(QSplitter):
    """A QSplitter whose sides are side by side while it is at least `min_width` pixels
    wide and one above the other when it is narrower (a small window, a wide dock), so
    that neither side is squeezed to a sliver; `turned(orientation)` says when it turns.

    `min_width` must exceed the sum of the sides' minimum widths: side by side, the
    splitter cannot be narrower than that sum, so it would never turn."""

    turned = Signal(Qt.Orientation)

    def __init__(self, min_width: int, parent=None):
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.min_width = min_width

    def resizeEvent(self, event) -> None:
        wanted = (Qt.Orientation.Horizontal if event.size().width() >= self.min_width
                  else Qt.Orientation.Vertical)
        if wanted != self.orientation():
            self.setOrientation(wanted)
            self.turned.emit(wanted)
        super().resizeEvent(event)
