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
        self._crosswise = None  # (inner splitter, sizes beside, sizes above)

    def turn_crosswise(self, inner: QSplitter, beside: tuple[list[int], list[int] | None],
                       above: tuple[list[int], list[int] | None]) -> None:
        """Keep `inner`, a splitter in one side, across this one: its parts one above the
        other while the sides are side by side, side by side while the sides are one above
        the other. `beside` and `above`: (this splitter's sizes, inner's sizes or None to
        leave them) to set when it turns that way."""
        self._crosswise = (inner, beside, above)

    def resizeEvent(self, event) -> None:
        wanted = (Qt.Orientation.Horizontal if event.size().width() >= self.min_width
                  else Qt.Orientation.Vertical)
        if wanted != self.orientation():
            self.setOrientation(wanted)
            if self._crosswise is not None:
                inner, beside, above = self._crosswise
                side_by_side = wanted == Qt.Orientation.Horizontal
                inner.setOrientation(Qt.Orientation.Vertical if side_by_side
                                     else Qt.Orientation.Horizontal)
                outer_sizes, inner_sizes = beside if side_by_side else above
                self.setSizes(outer_sizes)
                if inner_sizes is not None:
                    inner.setSizes(inner_sizes)
            self.turned.emit(wanted)
        super().resizeEvent(event)
