"""The window's dismissible error banner."""

from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QToolButton


class Banner(QFrame):
    """A dismissible error banner: rich text that wraps (never widens the window) and a
    close button. `show_text(html)` shows it; the button or `dismiss()` hides it."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.setStyleSheet(
            "QFrame#banner { background: #fdecea; border: 1px solid #f5c6cb;"
            " border-radius: 4px; } QLabel { color: #611a15; }")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 6, 4, 6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.label.setMinimumWidth(100)
        lay.addWidget(self.label, 1)
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setToolTip("Dismiss this message")
        self.close_button.clicked.connect(self.dismiss)
        lay.addWidget(self.close_button, 0, Qt.AlignTop)
        self.hide()

    def show_text(self, html: str) -> None:
        self.label.setText(html)
        self.show()

    def text(self) -> str:
        return self.label.text()

    @Slot()
    def dismiss(self) -> None:
        self.hide()

    def heightForWidth(self, w: int) -> int:
        return self.layout().heightForWidth(w)

    def hasHeightForWidth(self) -> bool:
        return True
