"""A panel hidden during a change redraws once when it is brought to the front, before
its first paint (it never shows what it drew before the change), and not while hidden."""

from paint_counting import CountingWidget
from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

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


def test_a_panel_shown_after_a_change_redraws_before_it_paints(qtbot):
    state, tabs, probe, order = tabs_with_probe(qtbot)
    state.set_head(3)
    assert order == []  # hidden: put off
    tabs.setCurrentWidget(probe)
    assert order == ["redraw head 3"]  # in the show itself
    qtbot.waitUntil(lambda: "paint" in order, timeout=2000)
    assert order.count("redraw head 3") == 1

    order.clear()  # shown: at once
    state.set_head(4)
    assert order == ["redraw head 4"]


def test_changes_while_hidden_make_one_redraw_of_the_last(qtbot):
    state, tabs, probe, order = tabs_with_probe(qtbot)
    tabs.setCurrentWidget(probe)
    tabs.setCurrentIndex(0)
    order.clear()
    for h in (5, 6, 7):
        state.set_head(h)
    qtbot.wait(20)
    assert order == []
    tabs.setCurrentWidget(probe)
    assert [o for o in order if o != "paint"] == ["redraw head 7"]
