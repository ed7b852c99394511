"""A row of controls that wraps onto further lines when the panel is narrow."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLabel, QLayout, QSizePolicy, QSpacerItem, QWidget


class FlowLayout(QLayout):
    """A row of controls that wraps onto further lines when the panel is narrow, so that a
    long row of options never sets the window's minimum width. addWidget / addLayout /
    addSpacing / addStretch as in QHBoxLayout (a stretch only ends nothing: items flow).
    A label is never left at the end of a line: it wraps with the control after it.

    Not superqt's QFlowLayout: that one places each item at the top of its line (a label
    beside a taller combo box sits high), has no addLayout, reports its widest item as its
    size hint, and asks every item for its size hint three times per pass (1-3.5x slower
    here)."""

    def __init__(self, parent=None, spacing: int = 6):
        super().__init__(parent)
        self._items: list = []
        self.setSpacing(spacing)
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item) -> None:
        self._items.append(item)

    def addSpacing(self, size: int) -> None:
        self.addItem(QSpacerItem(size, 0, QSizePolicy.Fixed, QSizePolicy.Minimum))

    def addStretch(self, _stretch: int = 0) -> None:
        self.addSpacing(12)

    def addLayout(self, layout) -> None:
        box = QWidget()
        box.setLayout(layout)
        layout.setContentsMargins(0, 0, 0, 0)
        self.addWidget(box)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self):
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        # Qt asks for the same widths many times per layout pass (every ancestor's size
        # hint): cached until the layout is invalidated.
        cache = self.__dict__.setdefault("_hfw", {})
        h = cache.get(width)
        if h is None:
            h = cache[width] = self._arrange(QRect(0, 0, width, 0), move=False)
        return h

    def invalidate(self) -> None:
        self.__dict__["_hfw"] = {}
        super().invalidate()

    def setGeometry(self, rect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:
        """One line with everything on it."""
        items = [i for i in self._items if not i.isEmpty()]
        w = sum(i.sizeHint().width() for i in items) + self.spacing() * max(0, len(items) - 1)
        h = max((i.sizeHint().height() for i in items), default=0)
        m = self.contentsMargins()
        return QSize(w + m.left() + m.right(), h + m.top() + m.bottom())

    def minimumSize(self) -> QSize:
        """The widest single item: anything wider wraps."""
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _arrange(self, rect, move: bool) -> int:
        m = self.contentsMargins()
        r = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line_h, gap = r.x(), r.y(), 0, self.spacing()
        line: list = []  # (item, x, size)

        def place(line, y, line_h):
            for item, px, size in line:  # each item vertically centred on its line
                item.setGeometry(QRect(QPoint(px, y + (line_h - size.height()) // 2), size))

        for item in self._items:
            if item.isEmpty():
                continue
            size = _size(item, r.width())
            if line and x + size.width() > r.right() + 1:
                # a label goes onto the next line with the control it names
                carried = [line.pop()] if len(line) > 1 and _is_label(line[-1][0]) else []
                if move:
                    place(line, y, max(s.height() for _, _, s in line))
                y += max(s.height() for _, _, s in line) + gap
                x, line, line_h = r.x(), [], 0
                for label, _, label_size in carried:
                    line.append((label, x, label_size))
                    x += label_size.width() + gap
                    line_h = label_size.height()
                if isinstance(item, QSpacerItem):  # no spacing at the start of a line
                    continue
            line.append((item, x, size))
            x += size.width() + gap
            line_h = max(line_h, size.height())
        if move and line:
            place(line, y, line_h)
        return y + line_h - rect.y() + m.bottom()


def _size(item, width: int) -> QSize:
    """An item's size on a line `width` pixels wide: its size hint, or, for an item wider
    than the line that wraps its own contents (a row of its own, as HeadSet's boxes), the
    line's width and the height it needs there."""
    hint = item.sizeHint()
    if hint.width() > width > 0 and item.hasHeightForWidth():
        return QSize(width, item.heightForWidth(width))
    return hint


def _is_label(item) -> bool:
    return isinstance(item.widget(), QLabel)
