"""gui.colorbar.ColorBar: its images take its colour map and levels, its axis shows the
levels, and it draws the map's gradient (low at the bottom, high at the top)."""

import numpy as np
import pyqtgraph as pg

from detokgui.gui.colorbar import ColorBar


def shown_bar(qtbot, bar: ColorBar) -> pg.GraphicsLayoutWidget:
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(200, 300)
    view.addItem(bar)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_images_take_the_bar_s_colour_map_and_levels(qapp):
    image = pg.ImageItem(np.arange(12, dtype=np.float32).reshape(3, 4))
    other = pg.ImageItem(np.ones((2, 2), dtype=np.float32))
    bar = ColorBar("viridis", values=(0.0, 1.0), label="similarity")
    bar.setImageItem(image)
    viridis = pg.colormap.get("viridis")
    assert np.array_equal(image.getColorMap().getLookupTable(nPts=8),
                          viridis.getLookupTable(nPts=8))
    assert tuple(image.getLevels()) == (0.0, 1.0)
    bar.setLevels((-2.5, 7.0))
    assert bar.levels() == (-2.5, 7.0) and tuple(image.getLevels()) == (-2.5, 7.0)
    assert tuple(bar.getAxis("right").range) == (-2.5, 7.0)
    assert bar.getAxis("right").labelText == "similarity"
    bar.setLevels((3.0, 1.0))  # reversed: both ends meet in the middle
    assert bar.levels() == (2.0, 2.0)
    bar.setImageItem([image, other])
    bar.setLevels((0.0, 5.0))
    assert tuple(other.getLevels()) == (0.0, 5.0)
    del other  # an image that is gone is left out
    assert bar.images() == [image]


def test_the_gradient_runs_from_the_low_colour_at_the_bottom_to_the_high_one_on_top(qtbot):
    cmap = pg.ColorMap([0.0, 1.0], [(255, 0, 0), (0, 0, 255)])
    bar = ColorBar(cmap, width=20)
    view = shown_bar(qtbot, bar)
    qtbot.waitUntil(lambda: bar.gradient.size().height() > 100)
    img = view.grab().toImage()
    rect = bar.gradient.mapRectToScene(bar.gradient.rect())
    top_left = view.mapFromScene(rect.topLeft())
    bottom_right = view.mapFromScene(rect.bottomRight())
    x = (top_left.x() + bottom_right.x()) // 2
    top = img.pixelColor(x, top_left.y() + 4)
    bottom = img.pixelColor(x, bottom_right.y() - 4)
    assert top.blue() > 240 and top.red() < 15
    assert bottom.red() > 240 and bottom.blue() < 15
    assert bar.getAxis("right").isVisible()
