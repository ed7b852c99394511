"""A grid of heatmaps as one image in one plot: each map at its cell, the mouse mapped
back to (map, row, column), the selection outlined in every map."""

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPointF

from detokgui.gui.mosaic import HeatmapMosaic
from detokgui.gui.plots import PlotFrame


@pytest.fixture
def mosaic(qtbot):
    frame = PlotFrame("maps")
    qtbot.addWidget(frame)
    frame.resize(800, 600)
    frame.show()
    mo = HeatmapMosaic(frame.view.ci)
    values = np.arange(5 * 4 * 6, dtype=np.float32).reshape(5, 4, 6)
    mo.set_maps(values, [f"head {k}" for k in range(5)], (0, 120))
    qtbot.wait(10)
    return mo, values


def test_one_image_holds_every_map(mosaic):
    mo, values = mosaic
    images = [i for i in mo.vb.addedItems if isinstance(i, pg.ImageItem)]
    assert len(images) == 1
    image = mo.image.image
    for k in range(5):
        x, y = _origin(mo, k)
        np.testing.assert_array_equal(image[y:y + 4, x:x + 6], values[k])
    assert np.isnan(image).sum() == image.size - values.size  # the gaps are NaN
    assert [mo.origin(k) for k in range(5)] == [_origin(mo, k) for k in range(5)]
    assert mo.colorbar.levels() == (0, 120) and mo.image.levels == pytest.approx((0, 120))


def test_titles_in_their_colours_and_the_selection_in_its_own(mosaic):
    mo, values = mosaic
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    mo.set_maps(values, [f"head {k}" for k in range(5)], (0, 120), colors)
    assert [t.toPlainText() for t in mo.titles[:5]] == [f"head {k}" for k in range(5)]
    assert [t.color.name() for t in mo.titles[:5]] == colors
    mo.select(2, colors[2])
    assert mo.selected.pen().color().name() == colors[2]


def _origin(mo, k):
    """Where map k sits, found from the image itself (its top-left value)."""
    ys, xs = np.nonzero(mo.image.image == mo.values[k, 0, 0])
    return int(xs[0]), int(ys[0])


def test_mouse_maps_back_to_map_row_and_column(mosaic):
    mo, _values = mosaic
    for k in range(5):
        x, y = _origin(mo, k)
        for r, c in ((0, 0), (3, 5), (2, 1)):
            scene = mo.vb.mapViewToScene(QPointF(x + c + 0.5, y + r + 0.5))
            assert mo.cell_at(scene) == (k, r, c)
    x, y = _origin(mo, 0)
    assert mo.cell_at(mo.vb.mapViewToScene(QPointF(x + 6.5, y + 0.5))) is None  # a gap


def test_selection_is_outlined_in_every_map(mosaic):
    mo, _ = mosaic
    mo.mark(1, 2)
    assert len(mo.marks.path().toSubpathPolygons()) == 5
    mo.mark(-1, -1)
    assert mo.marks.path().isEmpty()
    mo.select(3)
    x, y = _origin(mo, 3)
    assert mo.selected.isVisible() and mo.selected.rect().topLeft() == QPointF(x, y)
    mo.select(None)
    assert not mo.selected.isVisible()
