"""What every panel has: the shared state, the job runner, and its exportable plots."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from detokgui.gui.jobs import JobRunner
from detokgui.gui.state import AppState


class Panel(QWidget):
    """Base for panels. Subclasses set `title` and `view_name` (used by --view and the
    export commands) and return their PlotFrames from `plot_frames()`."""

    title = "Panel"
    view_name = "panel"
    tooltip = ""

    def __init__(self, state: AppState, jobs: JobRunner, parent=None):
        super().__init__(parent)
        self.state = state
        self.jobs = jobs
        self.setToolTip(self.tooltip)

    def plot_frames(self) -> list:
        return []

    @property
    def layer(self):
        return self.state.layer

    def job_key(self, what: str = "") -> str:
        return f"{self.view_name}:{what}" if what else self.view_name
