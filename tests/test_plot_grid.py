"""Grid lines of the window's plots (gui.plots.add_plot): pyqtgraph draws them as part of
the axes, across the whole plot. add_plot's plots clip their children to the plot and
paint their grid axes directly, which Qt draws ~10x faster than unclipped translucent
lines (benchmarks/bench_grid.py); the grid must look as it did without the clip."""

import numpy as np
from PySide6.QtWidgets import QGraphicsItem
from svgcheck import image_array

from detokgui.gui.plots import PlotFrame, add_plot, set_log_y


def pixels(frame: PlotFrame) -> np.ndarray:
    return image_array(frame.view.grab().toImage())


def grid_frame(qtbot, grid: str) -> tuple[PlotFrame, object]:
    frame = PlotFrame("grid")
    qtbot.addWidget(frame)
    plot = add_plot(frame, grid=grid, bottom="position j")
    plot.setRange(xRange=(0, 1000), yRange=(-2, 3), padding=0)
    # pyqtgraph fits the left axis to its tick labels after a paint, which may fall between
    # the two grabs of a test: a fixed width keeps the layout the same in both
    plot.getAxis("left").setWidth(48)
    frame.resize(520, 320)
    frame.show()
    qtbot.waitExposed(frame)
    qtbot.wait(20)
    return frame, plot


def inside(frame: PlotFrame, plot, image: np.ndarray) -> np.ndarray:
    """The view box's pixels, clear of the axes' lines and ticks along its edges."""
    rect = frame.view.mapFromScene(plot.getViewBox().sceneBoundingRect()).boundingRect()
    return image[rect.top() + 8:rect.bottom() - 8, rect.left() + 8:rect.right() - 8]


def test_grid_lines_are_drawn_across_the_plot_as_without_the_clip(qtbot):
    frame, plot = grid_frame(qtbot, "xy")
    assert plot.flags() & QGraphicsItem.ItemClipsChildrenToShape
    clipped = pixels(frame)
    grey = (inside(frame, plot, clipped) < 250).any(axis=2)
    rows, cols = grey.all(axis=1).sum(), grey.all(axis=0).sum()
    assert rows >= 3 and cols >= 3  # horizontal and vertical lines from side to side

    plot.setFlag(QGraphicsItem.ItemClipsChildrenToShape, False)
    for name in ("left", "bottom"):
        plot.getAxis(name).setCacheMode(QGraphicsItem.DeviceCoordinateCache)
    qtbot.wait(20)
    unclipped = pixels(frame)
    differ = (np.abs(clipped - unclipped) > 2).any(axis=2)  # blending may round by one level
    assert differ.sum() <= 2  # the square end of a grid line past the plot's corner


def test_a_plot_without_grid_has_none(qtbot):
    frame, plot = grid_frame(qtbot, "")
    assert not (inside(frame, plot, pixels(frame)) < 250).any()


def test_a_log_scale_keeps_the_grid_axes_painted_directly(qtbot):
    """set_log_y (the log toggles of the pattern, slopes and statistics plots) keeps what
    add_plot set up: grid axes uncached, no SI prefix."""
    _frame, plot = grid_frame(qtbot, "xy")
    plot.setRange(yRange=(-3, 0), padding=0)
    for log in (True, False, True):
        set_log_y(plot, log, "weight")
        for name in ("left", "bottom"):
            axis = plot.getAxis(name)
            assert axis.cacheMode() == QGraphicsItem.NoCache
            assert not axis.autoSIPrefix
        assert plot.getAxis("left").logMode == log
        assert plot.getAxis("left").labelText == ("weight (log scale)" if log else "weight")
