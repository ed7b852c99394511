"""One-line labels that elide a long text instead of widening the window: ElidedLabel, and
the window's StatusBar whose messages live in one."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, QTimer, Slot
from PySide6.QtWidgets import QLabel, QSizePolicy, QStatusBar


class ElidedLabel(QLabel):
    """A one-line plain-text label that never asks for more width than `max_hint` pixels:
    a longer text is elided (…) to the width it gets, and the full text is its tooltip.
    A long file name or message thus cannot widen the window. `set_note` gives it a
    tooltip of its own, shown whatever the width (after the full text when elided).

    Not superqt's QElidingLabel: its size hint is that of the text as last elided, so a
    label once narrowed never asks for its room back when the window widens again, and it
    has no full-text tooltip."""

    def __init__(self, text: str = "", parent=None, max_hint: int = 480,
                 elide=Qt.ElideRight):
        super().__init__(parent)
        self._full = ""
        self._note = ""
        self.max_hint = max_hint
        self.elide = elide
        self.setTextFormat(Qt.PlainText)
        # its size hint (at most max_hint) when there is room, down to "……" when not
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:
        self._full = str(text or "")
        shown = self._elided()
        self._tip(shown)
        super().setText(shown)
        self.updateGeometry()

    def set_note(self, note: str) -> None:
        self._note = str(note or "")
        self._tip(super().text())

    def _tip(self, shown: str) -> None:
        self.setToolTip("\n\n".join(t for t in (self._full if shown != self._full else "",
                                                 self._note) if t))

    def text(self) -> str:  # the full text, not the elided one on screen
        return self._full

    def shown_text(self) -> str:
        return super().text()

    def _elided(self) -> str:
        width = self.contentsRect().width()
        if width <= 1:  # not laid out yet
            width = self.max_hint
        return self.fontMetrics().elidedText(self._full, self.elide, width)

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        w = min(fm.horizontalAdvance(self._full) + 8, self.max_hint)
        return QSize(w, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("……") + 8,
                     super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        shown = self._elided()
        if shown != super().text():
            super().setText(shown)
            self._tip(shown)


class StatusBar(QStatusBar):
    """A status bar whose messages live in their own elided label (left, stretching), so
    they never run under the permanent widgets on the right nor widen the window.
    showMessage / clearMessage / currentMessage work as QStatusBar's."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.message_label = ElidedLabel(max_hint=600)
        self.message_label.setObjectName("status_message")
        self.addWidget(self.message_label, 1)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.clearMessage)

    @Slot(str)
    @Slot(str, int)
    def showMessage(self, text: str, timeout: int = 0) -> None:
        self.message_label.setText(text)
        if timeout > 0:
            self._timer.start(timeout)
        else:
            self._timer.stop()

    @Slot()
    def clearMessage(self) -> None:
        self._timer.stop()
        self.message_label.setText("")

    def currentMessage(self) -> str:
        return self.message_label.text()
