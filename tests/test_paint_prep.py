"""A pyqtgraph plot is painted once per change (issue 16: each change painted every plot
twice, the second time for the view matrix its first paint had moved); a long paint of
the window is split between event-loop passes."""

import time
from itertools import pairwise

import numpy as np
import pyqtgraph as pg
from paint_counting import PaintCounter
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QAbstractScrollArea, QHBoxLayout, QVBoxLayout, QWidget

from detokgui.gui.event_passes import LONG_PASS_S, clock
from detokgui.gui.paint_prep import (
    MOST_PUT_OFF,
    PAINT_BUDGET_S,
    PaintPreparer,
    pace_paints,
    paints_put_off,
    prepare_before_paint,
)
from detokgui.gui.plots import PlotFrame


def paints_per_change(qtbot, view: pg.GraphicsLayoutWidget, window: QWidget) -> list[int]:
    """Paints of the view's viewport (not those put off to a later pass: PaintPacer) for
    each of five data changes that move the auto-ranged x axis (its labels keep their
    height: a change of an axis's label size costs pyqtgraph another paint, as it sizes
    its axes while painting them)."""
    plot = view.addPlot()
    curve = plot.plot(np.arange(10.0), np.arange(10.0))
    qtbot.addWidget(window)
    window.resize(500, 400)
    window.show()
    qtbot.waitExposed(window)
    qtbot.wait(50)
    counter = PaintCounter(view.viewport())
    out = []
    for k in range(1, 6):
        before = counter.drawn()[view.viewport()]
        curve.setData(np.arange(10.0) + 10 * k, np.arange(10.0))
        qtbot.wait(60)
        out.append(counter.drawn()[view.viewport()] - before)
    return out


def test_a_plot_frame_is_painted_once_per_change(qtbot):
    frame = PlotFrame("test")
    assert paints_per_change(qtbot, frame.view, frame) == [1] * 5
    assert frame.findChild(PaintPreparer) is not None


def test_a_plain_pyqtgraph_view_is_painted_twice(qtbot):
    """The cost PlotFrame avoids is real in this pyqtgraph."""
    window = QWidget()
    view = pg.GraphicsLayoutWidget()
    QVBoxLayout(window).addWidget(view)
    assert min(paints_per_change(qtbot, view, window)) >= 2


def test_one_preparer_per_window(qtbot):
    window = QWidget()
    lay = QVBoxLayout(window)
    views = [pg.GraphicsLayoutWidget() for _ in range(3)]
    for v in views:
        lay.addWidget(v)
    qtbot.addWidget(window)
    window.show()
    for v in views:
        prepare_before_paint(v)
    preparers = window.findChildren(PaintPreparer)
    assert len(preparers) == 1 and set(preparers[0].views) == set(views)


class SlowView(QAbstractScrollArea):
    """A scroll area whose viewport's paint takes twice the paint budget of CPU time and
    fills it with its colour of the moment; `drawn` counts its paints, `painted_in` lists
    the event-loop pass of each."""

    def __init__(self, color: str):
        super().__init__()
        self.color, self.drawn, self.painted_in = QColor(color), 0, []
        self.setMinimumSize(120, 90)
        pace_paints(self.viewport())

    def paintEvent(self, event):
        t0 = time.thread_time()
        while time.thread_time() - t0 < 2 * PAINT_BUDGET_S:
            pass
        self.drawn += 1
        self.painted_in.append(clock().number)  # the event-loop pass
        painter = QPainter(self.viewport())
        painter.fillRect(self.viewport().rect(), self.color)
        painter.end()


def window_with_slow_views(qtbot, colors):
    window = QWidget()
    lay = QHBoxLayout(window)
    views = [SlowView(c) for c in colors]
    for v in views:
        lay.addWidget(v)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: all(v.drawn for v in views))
    qtbot.wait(50)
    return window, views


class PassLog(QObject):
    """How many paints of `views` each paint of the window made: `per_pass()`."""

    def __init__(self, window, views):
        super().__init__(window)
        self.views, self.marks = views, []
        window.installEventFilter(self)  # after the window's PaintPreparer: runs before it

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.UpdateRequest:
            self.marks.append(sum(v.drawn for v in self.views))
        return False

    def per_pass(self) -> list[int]:
        marks = self.marks + [sum(v.drawn for v in self.views)]
        return [b - a for a, b in pairwise(marks) if b > a]


def after_a_short_pass(qtbot) -> None:
    """Run the event loop until a long paint may begin (event_passes): a window paint
    sent straight after it is not put off whole for a long pass before it (the suite's
    garbage collection, another test's paint)."""
    qtbot.waitUntil(lambda: clock().long_work_may_start(), timeout=2000)


def center_color(window, view) -> str:
    """The colour on the window's backing store (what the screen shows) at the view's
    centre."""
    image = window.screen().grabWindow(window.winId()).toImage()
    vp = view.viewport()
    return image.pixelColor(vp.mapTo(window, vp.rect().center())).name()


def test_a_long_window_paint_is_split_between_passes(qtbot):
    """Once a paint of the window has run past the budget, the paced viewports still to
    paint wait for the next pass and show what they showed until then (no blank); each
    is painted once, one per pass here, as each takes longer than the budget."""
    window, views = window_with_slow_views(qtbot, ["#ff0000", "#00ff00", "#0000ff"])
    assert [center_color(window, v) for v in views] == ["#ff0000", "#00ff00", "#0000ff"]
    before = [v.drawn for v in views]
    put_off = [paints_put_off(v.viewport()) for v in views]
    passes = PassLog(window, views)
    after_a_short_pass(qtbot)
    for v in views:
        v.color = QColor("#ffff00")
        v.viewport().update()
    QCoreApplication.sendPostedEvents(window, QEvent.Type.UpdateRequest)  # one window paint
    drawn = [v.drawn - b for v, b in zip(views, before)]
    assert sorted(drawn) == [0, 0, 1], drawn
    waiting = [v for v, d in zip(views, drawn) if d == 0]
    assert [center_color(window, v) for v in waiting] == \
        [c for v, c in zip(views, ["#ff0000", "#00ff00", "#0000ff"]) if v in waiting]
    qtbot.waitUntil(lambda: all(v.drawn > b for v, b in zip(views, before)), timeout=2000)
    qtbot.wait(50)
    assert passes.per_pass() == [1, 1, 1]
    assert [v.drawn - b for v, b in zip(views, before)] == [1, 1, 1]
    # 2 + 1, and more where a pass of the suite in between was long (event_passes)
    assert sum(paints_put_off(v.viewport()) - p for v, p in zip(views, put_off)) >= 3
    assert [center_color(window, v) for v in views] == ["#ffff00"] * 3


def test_a_view_just_shown_waits_blank_and_a_grab_paints_at_once(qtbot):
    """A paced viewport shown anew has nothing of it on the screen: put off, it shows its
    background, not another page's pixels. A grab of the window is not paced."""
    window, views = window_with_slow_views(qtbot, ["#ff0000", "#00ff00"])
    for v in views:
        v.hide()
    qtbot.wait(50)
    after_a_short_pass(qtbot)
    for v in views:
        v.color = QColor("#0000ff")
        v.show()
    before = [v.drawn for v in views]
    QCoreApplication.sendPostedEvents(window, QEvent.Type.UpdateRequest)
    drawn = [v.drawn - b for v, b in zip(views, before)]
    assert sorted(drawn) == [0, 1], drawn
    waiting = views[drawn.index(0)]
    background = waiting.viewport().palette().color(waiting.viewport().backgroundRole())
    assert center_color(window, waiting) == background.name() != "#0000ff"
    qtbot.waitUntil(lambda: waiting.drawn > before[views.index(waiting)])
    before = [v.drawn for v in views]
    image = window.grab().toImage()
    assert [v.drawn - b for v, b in zip(views, before)] == [1, 1]
    vp = waiting.viewport()
    assert image.pixelColor(vp.mapTo(window, vp.rect().center())).name() == "#0000ff"


def test_views_that_change_on_every_pass_take_turns(qtbot):
    """Views that change on every pass (a dragged slider) are painted one to a pass, and
    the one that comes first does not keep the others waiting: each waits MOST_PUT_OFF
    passes at most, and they take turns."""
    _window, views = window_with_slow_views(qtbot, ["#ff0000", "#00ff00", "#0000ff"])
    c = clock()
    start = c.number
    timer = QTimer()
    timer.setInterval(0)
    timer.timeout.connect(lambda: [v.viewport().update() for v in views])
    timer.start()
    try:
        qtbot.waitUntil(lambda: c.number - start >= 40, timeout=5000)
    finally:
        timer.stop()
    painted = [[n for n in v.painted_in if start < n <= start + 40] for v in views]
    passes = sorted(n for ns in painted for n in ns)
    assert len(passes) == len(set(passes)), painted  # one slow paint a pass
    for ns in painted:
        gaps = np.diff([start, *ns, start + 41])
        assert gaps.max() <= MOST_PUT_OFF + 1, painted
    # in turn, once each has been painted: no view twice in three paints in a row
    order = [i for n in passes for i, ns in enumerate(painted) if n in ns]
    turns = order[max(order.index(i) for i in range(3)) - 2:]
    assert all(len(set(turns[j:j + 3])) == 3 for j in range(len(turns) - 2)), painted


def test_a_resized_view_on_the_screen_is_painted_at_once(qtbot):
    """What a view shows no longer fits it once resized: a window being resized is painted
    whole, not in passes."""
    window, views = window_with_slow_views(qtbot, ["#ff0000", "#00ff00", "#0000ff"])
    before = [v.drawn for v in views]
    put_off = [paints_put_off(v.viewport()) for v in views]
    window.resize(window.width() + 90, window.height() + 40)
    QCoreApplication.sendPostedEvents()  # the layout and the window's paint; no timers
    assert all(v.drawn > b for v, b in zip(views, before))
    assert [paints_put_off(v.viewport()) for v in views] == put_off


def test_a_window_paint_just_after_a_long_pass_waits_for_a_short_one(qtbot):
    """A result drawn in one pass and painted in the next would keep the window from
    taking input for both: the paint waits, its one view included, for a pass after a
    short one, and shows what it showed until then."""
    window, views = window_with_slow_views(qtbot, ["#ff0000"])
    view = views[0]
    c = clock()
    before, put_off = view.drawn, paints_put_off(view.viewport())
    marks = {}

    def long_draw():  # as a result's draw: CPU time, then a change to paint
        t0 = time.thread_time()
        while time.thread_time() - t0 < 2 * LONG_PASS_S:
            pass
        view.color = QColor("#ffff00")
        view.viewport().update()
        marks["long"] = c.number

    QTimer.singleShot(5, long_draw)
    qtbot.waitUntil(lambda: paints_put_off(view.viewport()) > put_off, timeout=2000)
    assert view.drawn == before and center_color(window, view) == "#ff0000"
    qtbot.waitUntil(lambda: view.drawn > before, timeout=2000)
    assert view.painted_in[-1] >= marks["long"] + 2
    assert center_color(window, view) == "#ffff00"
