"""A panel brought to the front after a change is painted as it was last drawn first and
catches up in a later pass of the event loop (issue 16: the redraw and the paint of the
whole page made one long pass)."""

from paint_counting import CountingWidget
from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget
from shiboken6 import delete

from detokgui.gui import later_pass
from detokgui.gui.jobs import JobRunner
from detokgui.gui.panels.base import Panel
from detokgui.gui.state import AppState


class Canvas(CountingWidget):
    def __init__(self, order):
        super().__init__()
        self.order = order

    def paintEvent(self, event):
        super().paintEvent(event)
        self.order.append("paint")


class Probe(Panel):
    """A panel that redraws (without computing) when the head changes."""

    def __init__(self, state, jobs, order):
        super().__init__(state, jobs)
        self.order = order
        QVBoxLayout(self).addWidget(Canvas(order))
        state.headChanged.connect(self.when_visible(self._redraw_head))

    def _redraw_head(self):
        self.order.append(f"redraw head {self.state.head}")


def tabs_with_probe(qtbot):
    state, jobs, order = AppState(), JobRunner(), []
    tabs = QTabWidget()
    tabs.addTab(QWidget(), "other")
    probe = Probe(state, jobs, order)
    tabs.addTab(probe, "probe")
    qtbot.addWidget(tabs)
    tabs.resize(400, 300)
    tabs.show()
    qtbot.waitExposed(tabs)
    return state, tabs, probe, order


def test_a_panel_shown_after_a_change_is_painted_before_it_catches_up(qtbot):
    state, tabs, probe, order = tabs_with_probe(qtbot)
    state.set_head(3)
    assert order == []  # hidden: put off
    tabs.setCurrentWidget(probe)
    assert order == []  # not in the show itself
    qtbot.waitUntil(lambda: "redraw head 3" in order, timeout=2000)
    assert order.index("paint") < order.index("redraw head 3")
    assert order.count("redraw head 3") == 1

    order.clear()  # shown: at once
    state.set_head(4)
    assert order == ["redraw head 4"]


def test_a_panel_hidden_again_before_it_caught_up_does_it_when_shown(qtbot):
    state, tabs, probe, order = tabs_with_probe(qtbot)
    state.set_head(5)
    tabs.setCurrentWidget(probe)
    tabs.setCurrentIndex(0)  # hidden again before the later pass
    qtbot.waitUntil(lambda: not later_pass.waiting(), timeout=2000)
    qtbot.wait(20)
    assert "redraw head 5" not in order
    tabs.setCurrentWidget(probe)
    qtbot.waitUntil(lambda: "redraw head 5" in order, timeout=2000)


def test_a_panel_deleted_before_it_caught_up_is_left_alone(qtbot):
    state, tabs, probe, order = tabs_with_probe(qtbot)
    state.set_head(6)
    tabs.setCurrentWidget(probe)
    delete(probe)
    qtbot.waitUntil(lambda: not later_pass.waiting(), timeout=2000)
    assert "redraw head 6" not in order
