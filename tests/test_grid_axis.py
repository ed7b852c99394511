"""Grid lines painted fast (issue 16: translucent grid lines were a third to a half of a
plot's paint): the same pixels as pyqtgraph's own axis, and vectors in an SVG export."""

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QGraphicsItem

from detokgui.gui.grid_axis import GridAxis


def plot_image(qtbot, axis_class, cached: bool, grid: str, size=(600, 400),
               points: int = 200) -> np.ndarray:
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(*size)
    plot = view.addPlot(axisItems={n: axis_class(n) for n in ("left", "bottom")})
    x = np.arange(float(points))
    plot.plot(x, np.sin(x / 9), fillLevel=0, brush=(40, 90, 200, 110))
    plot.showGrid(x="x" in grid, y="y" in grid, alpha=0.3)
    if cached:
        for n in ("left", "bottom"):
            plot.getAxis(n).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    view.show()
    qtbot.waitExposed(view)
    qtbot.wait(30)
    image = view.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    return np.frombuffer(image.constBits(), np.uint8).reshape(
        image.height(), image.width(), 4)[..., :3].astype(int).copy()


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("grid", ["xy", "x", ""])
def test_the_same_pixels_as_pyqtgraphs_axis(qtbot, cached, grid):
    ours = plot_image(qtbot, GridAxis, cached, grid)
    theirs = plot_image(qtbot, pg.AxisItem, cached, grid)
    diff = np.abs(ours - theirs).max(axis=2)
    assert diff.max() <= 2  # the rounding of one blend against another's
    if grid:  # the grid is there: lines over the fill, fainter than the axis
        lines = (np.abs(theirs - plot_image(qtbot, pg.AxisItem, cached, "")).max(axis=2) > 0)
        assert lines.sum() > 1000
        assert (diff[lines] <= 2).all()


def test_the_same_pixels_after_a_bigger_plot_with_other_lines(qtbot):
    """The lines of every axis are drawn in one image kept between paints: what a bigger
    plot left in it never shows in a smaller one's."""
    plot_image(qtbot, GridAxis, False, "xy", size=(900, 700), points=37)
    ours = plot_image(qtbot, GridAxis, False, "xy")
    theirs = plot_image(qtbot, pg.AxisItem, False, "xy")
    assert np.abs(ours - theirs).max() <= 2
