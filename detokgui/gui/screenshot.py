"""`--screenshot`: wait until the model is loaded and every panel has finished drawing,
save a PNG of the window (with the provenance record of the view shown), quit."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtWidgets import QApplication

from detokgui.core.base.atomic import write_bytes
from detokgui.gui.plots import png_bytes
from detokgui.gui.sharing import panel_record


class ScreenshotWhenIdle(QObject):
    def __init__(self, window, path: str, timeout_s: float):
        super().__init__(window)
        self.window = window
        self.path = path
        self.exit_code = 1
        self.idle_ticks = 0
        self.poll = QTimer(self)
        self.poll.setInterval(100)
        self.poll.timeout.connect(self._check)
        self.poll.start()
        QTimer.singleShot(int(timeout_s * 1000), self, self._timeout)

    @Slot()
    def _check(self) -> None:
        w = self.window
        if w.jobs.busy or w.loading_name is not None or w.loading_b_name is not None:
            self.idle_ticks = 0
            return
        self.idle_ticks += 1
        if self.idle_ticks < 5:  # idle for half a second: late requests have been made
            return
        if w.compare_error is not None:
            print(f"detokgui: error: {w.compare_error}", file=sys.stderr)
            self._shoot(1)
        elif w.state.layer is not None:
            self._shoot(0)
        elif w.load_error is not None:
            print(f"detokgui: error: {w.load_error}", file=sys.stderr)
            self._shoot(1)

    @Slot()
    def _timeout(self) -> None:
        print("detokgui: error: timed out before the window was ready", file=sys.stderr)
        self._shoot(1)

    def _record(self) -> dict | None:
        """The provenance record of the view in front (`gui.sharing.panel_record`) when a
        model is shown."""
        panel = self.window.current_panel()
        if panel is None or self.window.state.layer is None:
            return None
        return panel_record(panel, "screenshot")

    def _shoot(self, code: int) -> None:
        self.poll.stop()
        QApplication.processEvents()
        try:
            write_bytes(self.path, png_bytes(self.window.grab().toImage(), self._record()))
        except OSError as exc:
            print(f"detokgui: error: cannot write {self.path}: {exc.strerror or exc}",
                  file=sys.stderr)
            code = 1
        else:
            print(f"wrote {self.path}")
        self.exit_code = code
        self.window.close()
        QApplication.quit()
