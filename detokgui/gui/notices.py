"""What the core logs for a person to read (a damaged cache entry discarded, a run without
the cache) as a Qt signal: the core logs on the `detokgui` logger from the jobs' worker
threads, and `LogNotices.line` delivers each message to GUI-thread slots (a queued
connection)."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Signal


class _Relay(logging.Handler):
    def __init__(self, notices: LogNotices):
        super().__init__()
        self.notices = notices

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.notices.line.emit(record.getMessage())
        except RuntimeError:  # its window was deleted without closing
            logging.getLogger("detokgui").removeHandler(self)


class LogNotices(QObject):
    """Relays the `detokgui` logger's messages as `line` until `close()`."""

    line = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._handler = _Relay(self)
        logging.getLogger("detokgui").addHandler(self._handler)

    def close(self) -> None:
        logging.getLogger("detokgui").removeHandler(self._handler)
