"""The window's dismissible banner: an error (a model that could not be loaded) or a
notice (the demo model opened instead of gpt2, a load cancelled), with one-click
actions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
)

ERROR, NOTICE = "error", "notice"
_STYLES = {
    ERROR: ("#fdecea", "#f5c6cb", "#611a15"),
    NOTICE: ("#e8f1fb", "#b6d4f2", "#0b3a66"),
}


@dataclass(frozen=True)
class BannerAction:
    """A button of the banner: its text, tooltip and what a click does (the banner stays
    unless the action itself dismisses it or loads another model)."""

    text: str
    tooltip: str
    run: Callable[[], None]


class Banner(QFrame):
    """A dismissible banner: rich text that wraps (never widens the window), a row of
    action buttons under it and a close button. `show_text(html, actions, kind)` shows
    it; the close button or `dismiss()` hides it."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.kind = ERROR
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 6, 4, 6)
        body = QVBoxLayout()
        body.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.label.setMinimumWidth(100)
        body.addWidget(self.label)
        self.action_row = QHBoxLayout()
        self.action_row.setContentsMargins(0, 2, 0, 0)
        self.action_row.addStretch(1)
        body.addLayout(self.action_row)
        lay.addLayout(body, 1)
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setToolTip("Dismiss this message")
        self.close_button.clicked.connect(self.dismiss)
        lay.addWidget(self.close_button, 0, Qt.AlignTop)
        self._buttons: list[QPushButton] = []
        self._style(ERROR)
        self.hide()

    def _style(self, kind: str) -> None:
        self.kind = kind
        back, border, text = _STYLES[kind]
        self.setStyleSheet(
            f"QFrame#banner {{ background: {back}; border: 1px solid {border};"
            f" border-radius: 4px; }} QLabel {{ color: {text}; }}")

    def show_text(self, html: str, actions: tuple[BannerAction, ...] | list = (),
                  kind: str = ERROR) -> None:
        self._style(kind)
        self.label.setText(html)
        for button in self._buttons:
            self.action_row.removeWidget(button)
            button.deleteLater()
        self._buttons = []
        for i, action in enumerate(actions):
            button = QPushButton(action.text)
            button.setToolTip(action.tooltip)
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, run=action.run: run())
            self.action_row.insertWidget(i, button)
            self._buttons.append(button)
        self.show()

    def text(self) -> str:
        return self.label.text()

    def buttons(self) -> dict[str, QPushButton]:
        """The action buttons shown, by their text."""
        return {b.text(): b for b in self._buttons}

    @Slot()
    def dismiss(self) -> None:
        self.hide()

    def heightForWidth(self, w: int) -> int:
        return self.layout().heightForWidth(w)

    def hasHeightForWidth(self) -> bool:
        return True
