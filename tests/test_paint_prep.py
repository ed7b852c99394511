"""A pyqtgraph plot is painted once per change (issue 16: each change painted every plot
twice, the second time for the view matrix its first paint had moved)."""

import numpy as np
import pyqtgraph as pg
from paint_counting import PaintCounter
from PySide6.QtWidgets import QVBoxLayout, QWidget

from detokgui.gui.paint_prep import PaintPreparer, prepare_before_paint
from detokgui.gui.plots import PlotFrame


def paints_per_change(qtbot, view: pg.GraphicsLayoutWidget, window: QWidget) -> list[int]:
    """Paint events of the view's viewport for each of five data changes that move the
    auto-ranged x axis (its labels keep their height: a change of an axis's label size
    costs pyqtgraph another paint, as it sizes its axes while painting them)."""
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
        before = counter.total
        curve.setData(np.arange(10.0) + 10 * k, np.arange(10.0))
        qtbot.wait(60)
        out.append(counter.total - before)
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
