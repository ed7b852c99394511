"""The status bar's progress bar."""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar


class ProgressBar(QProgressBar):
    """A QProgressBar whose `set_fraction` repaints it with the window's next paint.

    QProgressBar.setValue repaints at once (`repaint()`), and a widget's synchronous
    repaint paints everything the window has pending: each progress report of a job
    painted, in the middle of the GUI thread's work, the plots and tables waiting for
    their own update (which were then painted again)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setRange(0, 1000)

    def set_fraction(self, fraction: float) -> None:
        """Show `fraction` (clamped to 0..1) done."""
        value = int(1000 * max(0.0, min(1.0, fraction)))
        if value == self.value():
            return
        self.setUpdatesEnabled(False)  # no repaint() inside setValue
        self.setValue(value)
        self.setUpdatesEnabled(True)  # update(): painted with the rest of the window
