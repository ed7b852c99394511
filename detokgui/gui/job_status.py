"""The status bar's part in the background jobs: a progress bar and Cancel, shown once
jobs have run for BUSY_SHOW_MS; each job's progress message with the time left;
"Cancelled."; and the lines the core logged while jobs ran (the core logs on the
`detokgui` logger from the jobs' worker threads: `_Relay` hands each line to a signal, whose
queued connection delivers it on the GUI thread)."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QTimer, Signal, Slot
from PySide6.QtWidgets import QToolButton

from detokgui.gui.models import PAIR_JOBS
from detokgui.gui.progress_bar import ProgressBar

NOTICE_MS = 15000  # how long a line the core logged stays in the status bar
# The progress bar and Cancel appear once jobs have run this long: a slider step's or a
# token change's jobs (a few ms) would show and hide them, relaying out the status bar,
# several times a second.
BUSY_SHOW_MS = 250


class _Relay(logging.Handler):
    def __init__(self, status: JobStatus):
        super().__init__()
        self.status = status

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.status.noticeLogged.emit(record.getMessage())
        except RuntimeError:  # its window was deleted without closing
            logging.getLogger("detokgui").removeHandler(self)


class JobStatus(QObject):
    """Adds `progress` and `cancel_button` to `status_bar` and follows `jobs`."""

    noticeLogged = Signal(str)  # a message of the `detokgui` logger, from any thread

    def __init__(self, parent, jobs, status_bar):
        super().__init__(parent)
        self.jobs, self.status_bar = jobs, status_bar
        self._progress_message = ""
        self._notice = ""  # the last line the core logged while jobs ran
        self.progress = ProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.hide()
        status_bar.addPermanentWidget(self.progress)
        self.cancel_button = QToolButton()
        self.cancel_button.setText("Cancel")
        self.cancel_button.setToolTip("Cancel running computations (Esc)")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        status_bar.addPermanentWidget(self.cancel_button)
        self._busy_shown = QTimer(self)
        self._busy_shown.setSingleShot(True)
        self._busy_shown.setInterval(BUSY_SHOW_MS)
        self._busy_shown.timeout.connect(self._show_busy)
        jobs.progress.connect(self._on_progress)
        jobs.submitted.connect(self.progress.start)
        jobs.busyChanged.connect(self._on_busy)
        jobs.cancelled.connect(self._on_cancelled)
        self.noticeLogged.connect(self._on_notice)
        self._relay = _Relay(self)
        logging.getLogger("detokgui").addHandler(self._relay)

    @Slot()
    def cancel(self) -> None:
        """Cancel every running job."""
        self.jobs.cancel()

    @Slot(str, float, str)
    def _on_progress(self, key: str, fraction: float, message: str) -> None:
        self.progress.set_fraction(fraction, key)
        if message:
            left = self.progress.left_text(key, fraction)
            self._progress_message = f"{message} — {left}" if left else message
            self.status_bar.showMessage(self._progress_message)
            self.progress.setToolTip(self._progress_message)  # whole, however narrow

    @Slot(bool)
    def _on_busy(self, busy: bool) -> None:
        if busy:
            self._busy_shown.start()
            return
        self._busy_shown.stop()
        if not self.progress.isHidden():
            self.progress.hide()
            self.cancel_button.hide()
        self.progress.set_fraction(0.0)
        self.progress.reset_jobs()
        if self._notice:  # progress messages covered it: show it again
            self.status_bar.showMessage(self._notice, NOTICE_MS)
            self._notice = ""
        elif self.status_bar.currentMessage() == self._progress_message:
            self.status_bar.clearMessage()

    @Slot()
    def _show_busy(self) -> None:
        if self.jobs.busy:
            self.progress.show()
            self.cancel_button.show()

    @Slot(str)
    def _on_notice(self, text: str) -> None:
        """A line the core logged (a damaged cache entry discarded, a run without the
        cache): shown now, and again when the running jobs end."""
        self.status_bar.showMessage(text, NOTICE_MS)
        if self.jobs.busy:
            self._notice = text

    @Slot(str)
    def _on_cancelled(self, key: str) -> None:
        if key not in PAIR_JOBS:  # the model controller says what those mean
            self.status_bar.showMessage("Cancelled.", 3000)

    def close(self) -> None:
        logging.getLogger("detokgui").removeHandler(self._relay)
