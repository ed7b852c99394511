"""PlotTitle: a plot frame's rich-text title, wrapped to its width, that a new text of the
same height repaints without laying out the window again."""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QPainter,
    QPalette,
    QTextDocument,
    QTextOption,
)
from PySide6.QtWidgets import QSizePolicy, QWidget

HINT_CHARS = 80  # the widest the size hint asks for, in average characters (as a QLabel)


class PlotTitle(QWidget):
    """Rich text (`setText`) in black on white, wrapped onto as many lines as the width
    needs, aligned by `setAlignment` (a horizontal Qt alignment).

    Why not a word-wrapped QLabel: every QLabel.setText asks for a layout pass, which
    climbs from the frame through the splitters to the main window and repaints them. A
    dragged query slider changes the i named in three titles on every step; here a text
    that needs as many lines as the one before only repaints the title, and a layout pass
    is asked for only when the number of lines (the height) changes. The title is opaque,
    so its repaint does not repaint the widgets behind it either."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._html = ""
        self._heights: dict[int, int] = {}  # width -> height, for the current text
        self._doc = QTextDocument(self)
        self._doc.setDocumentMargin(0)
        self._doc.setDefaultFont(self.font())
        self._doc.setDefaultTextOption(QTextOption(Qt.AlignHCenter))  # word-wrapped
        self.setContentsMargins(6, 3, 6, 0)
        pal = self.palette()
        pal.setColor(QPalette.Window, Qt.white)
        for role in (QPalette.WindowText, QPalette.Text):
            pal.setColor(role, Qt.black)
        self.setPalette(pal)
        self.setAutoFillBackground(True)
        policy = QSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def text(self) -> str:
        return self._html

    def setText(self, html: str) -> None:
        if html == self._html:
            return
        height_before = self.heightForWidth(self.width())
        self._html = html
        self._doc.setHtml(html)
        self._heights.clear()
        if self.heightForWidth(self.width()) != height_before:
            self.updateGeometry()
        self.update()

    def setAlignment(self, align) -> None:
        align = align & Qt.AlignHorizontal_Mask
        if self._doc.defaultTextOption().alignment() != align:
            self._doc.setDefaultTextOption(QTextOption(align))  # word-wrapped
            self._heights.clear()
            self.update()

    def _wrap_at(self, width: int) -> None:
        """Lay the text out for the widget width `width` (a new text width lays out the
        whole document again: only when it changes)."""
        m = self.contentsMargins()
        text_width = max(1, width - m.left() - m.right())
        if self._doc.textWidth() != text_width:
            self._doc.setTextWidth(text_width)

    def heightForWidth(self, width: int) -> int:
        """The height the text needs at `width`, margins included (0 for no text)."""
        if not self._html:
            return 0
        if width not in self._heights:
            self._wrap_at(width)
            m = self.contentsMargins()
            self._heights[width] = math.ceil(self._doc.size().height()) + m.top() + m.bottom()
        return self._heights[width]

    def hasHeightForWidth(self) -> bool:
        return True

    def sizeHint(self) -> QSize:
        m = self.contentsMargins()
        self._doc.setTextWidth(-1)
        ideal = math.ceil(self._doc.idealWidth())
        width = min(ideal, HINT_CHARS * self.fontMetrics().averageCharWidth()) \
            + m.left() + m.right()
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.heightForWidth(self.width()))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.FontChange:
            self._doc.setDefaultFont(self.font())
            self._heights.clear()
            self.updateGeometry()

    def paintEvent(self, event) -> None:
        if not self._html:
            return
        rect = self.contentsRect()
        self._wrap_at(self.width())
        painter = QPainter(self)
        painter.translate(rect.topLeft())
        context = QAbstractTextDocumentLayout.PaintContext()
        context.palette = self.palette()
        self._doc.documentLayout().draw(painter, context)
        painter.end()
