"""A plot frame's title (gui.plot_title.PlotTitle): rich text wrapped to the frame's width;
a new text of as many lines repaints the title alone, without a layout pass (a query
slider changes the i in three titles on every step, issue 41); a text that needs more
lines makes the title taller."""

from PySide6.QtCore import QEvent, QObject

from detokgui.gui.plots import PlotFrame


class Events(QObject):
    """Counts the layout requests and paints each watched widget receives."""

    def __init__(self, *widgets):
        super().__init__()
        self.layouts = dict.fromkeys(widgets, 0)
        self.paints = dict.fromkeys(widgets, 0)
        for w in widgets:
            w.installEventFilter(self)

    def eventFilter(self, obj, ev):
        if ev.type() == QEvent.LayoutRequest:
            self.layouts[obj] += 1
        elif ev.type() == QEvent.Paint:
            self.paints[obj] += 1
        return False


def shown_frame(qtbot, title: str) -> PlotFrame:
    frame = PlotFrame("T")
    qtbot.addWidget(frame)
    frame.resize(500, 300)
    frame.set_title(title)
    frame.show()
    qtbot.waitExposed(frame)
    qtbot.wait(20)
    return frame


def test_a_new_title_of_the_same_height_is_repainted_without_a_layout_pass(qtbot):
    frame = shown_frame(qtbot, "<b>T<sub>pp</sub></b>(i = 99, j) — σ mean")
    title = frame.title
    height, view_y = title.height(), frame.view.y()
    events = Events(frame, title)
    frame.set_title("<b>T<sub>pp</sub></b>(i = 100, j) — σ mean")
    qtbot.waitUntil(lambda: events.paints[title] > 0, timeout=2000)
    qtbot.wait(20)
    assert frame.title_text() == "<b>T<sub>pp</sub></b>(i = 100, j) — σ mean"
    assert events.layouts[frame] == 0  # a QLabel's setText asks for one every time
    assert events.paints[frame] == 0  # the title is opaque: nothing behind it repainted
    assert (title.height(), frame.view.y()) == (height, view_y)
    # the same text again: nothing at all
    events.paints[title] = 0
    frame.set_title("<b>T<sub>pp</sub></b>(i = 100, j) — σ mean")
    qtbot.wait(20)
    assert events.paints[title] == 0 and events.layouts[frame] == 0


def test_a_longer_title_wraps_and_the_title_grows(qtbot):
    frame = shown_frame(qtbot, "<b>A short title</b>")
    title = frame.title
    one_line = title.height()
    assert 0 < one_line < 40
    events = Events(frame)
    frame.set_title("<b>A title</b> long enough to need a second line " * 4)
    qtbot.waitUntil(lambda: title.height() > 1.5 * one_line, timeout=2000)
    assert events.layouts[frame] > 0
    assert frame.view.y() == title.height()  # the plot moved down under it
    assert title.heightForWidth(2000) < title.heightForWidth(300)  # narrower: more lines
    frame.set_title(" ")  # blank hides it
    assert not title.isVisibleTo(frame)
