"""The status bar's progress bar, with the time a job has left."""

from __future__ import annotations

import time

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QProgressBar

from detokgui.core.base.progress import duration_text, remaining_seconds


class ProgressBar(QProgressBar):
    """A QProgressBar showing "37% · 1 min 20 s left" for the job that reported last
    (`start(key)` when a job starts, `set_fraction(fraction, key)` as it reports), whose
    `set_fraction` repaints it with the window's next paint.

    QProgressBar.setValue repaints at once (`repaint()`), and a widget's synchronous
    repaint paints everything the window has pending: each progress report of a job
    painted, in the middle of the GUI thread's work, the plots and tables waiting for
    their own update (which were then painted again)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setRange(0, 1000)
        self.setFormat("%p%")
        self._started: dict[str, float] = {}
        # room for the longest text it shows: a narrow window's other labels give way
        self.setMinimumWidth(self.fontMetrics().horizontalAdvance("100% · 10 min 00 s left")
                             + 24)

    @Slot(str)
    def start(self, key: str) -> None:
        """A job with `key` starts now: its remaining time is measured from here."""
        self._started[key] = time.monotonic()

    def left_text(self, key: str, fraction: float) -> str:
        """"1 min 20 s left" for the job `key` at `fraction`, or "" while unknown."""
        started = self._started.get(key)
        if started is None:
            return ""
        left = remaining_seconds(time.monotonic() - started, fraction)
        return "" if left is None else f"{duration_text(left)} left"

    def set_fraction(self, fraction: float, key: str = "") -> None:
        """Show `fraction` (clamped to 0..1) done, and the time job `key` has left."""
        fraction = max(0.0, min(1.0, fraction))
        value = int(1000 * fraction)
        left = self.left_text(key, fraction)
        text = f"%p% · {left}" if left else "%p%"
        if value == self.value() and text == self.format():
            return
        self.setUpdatesEnabled(False)  # no repaint() inside setValue
        self.setFormat(text)
        self.setValue(value)
        self.setUpdatesEnabled(True)  # update(): painted with the rest of the window

    def reset_jobs(self) -> None:
        """No job runs: forget their start times."""
        self._started.clear()
