"""Small multiples drawn as one plot: every head's cell at an offset, one curve item per
series for every cell, the mouse mapped back to (head, x, y)."""

import itertools

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QObject, QPointF, Signal
from PySide6.QtGui import QColor, QFont

from detokgui.gui.plots import PlotFrame
from detokgui.gui.small_multiples import (
    GAP_X,
    GAP_Y,
    SmallMultiples,
    grid_columns,
)


class State(QObject):
    headChanged = Signal(int)

    def __init__(self, head=0):
        super().__init__()
        self.head = head


@pytest.fixture
def grid(qtbot):
    frame = PlotFrame("test")
    qtbot.addWidget(frame)
    frame.resize(900, 600)
    frame.show()
    state = State(2)
    sm = SmallMultiples(frame, state, x_label="key position j")
    sm.state_for_test = state
    return sm


def cell_centre(sm, k):
    r, c = divmod(k, sm.cols)
    return sm.vb.mapViewToScene(QPointF(c * (1 + GAP_X) + 0.5,
                                        (sm.rows - 1 - r) * (1 + GAP_Y) + 0.5))


def test_layout_and_mouse_map_back_to_head_and_data(grid, qtbot):
    heads = [3, 5, 7, 8, 10]
    assert grid.set_heads(heads) and not grid.set_heads(heads)
    assert (grid.cols, grid.rows) == (grid_columns(5), 2) == (3, 2)
    grid.set_ranges((0, 100), (-2, 2))
    qtbot.wait(10)
    for k, h in enumerate(heads):
        head, x, y = grid.at(cell_centre(grid, k))
        assert head == h and x == pytest.approx(50, abs=0.5) and y == pytest.approx(0, abs=0.05)
        assert grid.position(cell_centre(grid, k), 1000) == round(x)
    empty = cell_centre(grid, 5)  # the grid's sixth place holds no cell
    assert grid.at(empty) is None
    gap = grid.vb.mapViewToScene(QPointF(1 + GAP_X / 2, (grid.rows - 1) * (1 + GAP_Y) + 0.5))
    assert grid.at(gap) is None


def test_one_item_per_series_whatever_the_heads(grid):
    heads = list(range(12))
    grid.set_heads(heads)
    grid.add_series("mean", pg.mkPen("b"))
    grid.add_series("max", pg.mkPen("r"))
    x = np.arange(50.0)
    ys = np.random.default_rng(0).normal(size=(12, 50))
    grid.set_ranges((-1, 60), (-5, 5))
    grid.set_series("mean", x, ys)
    grid.set_series("max", x, ys + 1)
    curves = [i for i in grid.vb.addedItems if isinstance(i, pg.PlotCurveItem)]
    assert len(curves) == 2  # not 12 x 2
    px, _py = grid.curves["mean"].getData()
    assert px.shape == (12 * 51,)  # each cell's points, then a break
    assert np.isnan(px[50::51]).all() and np.isfinite(px[:50]).all()
    for r, h in enumerate(heads):
        gx, gy = grid.data("mean", h)
        np.testing.assert_array_equal(gx, x)
        np.testing.assert_array_equal(gy, ys[r])
    # the cells are laid out row by row, left to right: head 4 is row 1, column 0
    cx = px[4 * 51:4 * 51 + 50]
    assert cx.min() == pytest.approx(1 / 61) and cx.max() < 1  # x = 0..49 of -1..60


def test_points_outside_the_x_range_are_left_out_and_y_is_clipped(grid):
    grid.set_heads([0])
    grid.add_series("s", pg.mkPen("b"))
    grid.set_ranges((10, 20), (0, 1))
    grid.set_series("s", np.arange(30.0), np.full((1, 30), 5.0))
    px, py = grid.curves["s"].getData()
    assert np.count_nonzero(np.isfinite(px)) == 11  # x = 10..20
    assert np.nanmax(py) == pytest.approx(1.0)  # clipped to the cell's top
    assert grid.data("s", 0)[0].shape == (30,)  # the data as given


def test_ticks_are_shared_and_marker_and_selection_drawn(grid, qtbot):
    grid.set_heads([0, 1, 2, 3])
    grid.set_ranges((0, 1000), (0, 1))
    qtbot.wait(10)
    # the shared x values under every column, at the same place within each cell
    per_column = len(grid.x_ticks) // grid.cols
    assert per_column >= 2 and len(grid.x_ticks) == per_column * grid.cols
    first = [(pos, text) for pos, text in grid.x_ticks[:per_column]]
    second = [(pos - (1 + GAP_X), text) for pos, text in grid.x_ticks[per_column:2 * per_column]]
    assert [t for _, t in first] == [t for _, t in second]
    np.testing.assert_allclose([p for p, _ in first], [p for p, _ in second])
    values = [float(t) for _, t in first]
    np.testing.assert_allclose([p for p, _ in first], np.array(values) / 1000)  # x of the cell
    assert len(grid.y_ticks) == 2 * (len(grid.y_ticks) // 2)  # every row
    grid.set_marker(400, 1000)
    path = grid.markers.path()
    assert path.elementCount() == 2 * 4  # one line per cell
    assert grid.masked.path().boundingRect().width() > 0
    state = grid.state_for_test
    state.head = 3
    state.headChanged.emit(3)
    rect = grid.selected.rect()
    assert grid.selected.isVisible() and rect.width() == pytest.approx(1.0)
    assert grid.at(grid.vb.mapViewToScene(rect.center()))[0] == 3
    grid.set_heads([3])
    assert not grid.selected.isVisible()  # one head: nothing to pick out


def test_band_is_one_path(grid):
    grid.set_heads([0, 1, 2])
    grid.add_band("b", (0, 0, 255, 60))
    grid.set_ranges((0, 9), (-1, 1))
    x = np.arange(10.0)
    grid.set_band("b", x, np.full((3, 10), -0.5), np.full((3, 10), 0.5))
    path = grid.band_items["b"].path()
    assert path.toSubpathPolygons()  # one closed polygon per cell
    assert len(path.toSubpathPolygons()) == 3
    lo, hi = grid.band("b", 1)[1:]
    assert (lo == -0.5).all() and (hi == 0.5).all()


def test_a_dense_band_is_drawn_with_two_points_per_pixel_column(grid, qtbot):
    """A band of 1024 jagged points a head is given to Qt as its envelope per pixel
    column (Qt fills the whole polygons far more slowly): at most two points per column,
    the same x ends, every column's lowest and highest values."""
    rng = np.random.default_rng(0)
    grid.set_heads([0, 1, 2])
    grid.add_band("b", (0, 0, 255, 60))
    x = np.arange(1024.0)
    lo = rng.normal(size=(3, 1024))
    hi = lo + rng.random((3, 1024))
    grid.set_ranges((0, 1023), (-4, 5))
    grid.set_band("b", x, lo, hi)
    qtbot.waitUntil(lambda: grid._cell_pixels()[0] > 100)
    columns = grid._cell_pixels()[0]
    polygons = grid.band_items["b"].path().toSubpathPolygons()
    assert len(polygons) == 3
    for k, poly in enumerate(polygons):
        px, py = grid.to_data(k, [p.x() for p in poly], [p.y() for p in poly])
        assert len(poly) <= 4 * (columns + 1) + 1  # upper and lower edges, closed
        assert px.min() == pytest.approx(0) and px.max() == pytest.approx(1023)
        assert py.min() == pytest.approx(lo[k].min()) and py.max() == pytest.approx(hi[k].max())
    assert grid.band("b", 1)[1] is not None  # the data as given stays readable


def test_a_dense_series_is_drawn_with_four_points_per_pixel_column(grid, qtbot):
    """1024 points a head in cells a few hundred pixels wide: the curve gets at most four
    points per pixel column (first, lowest, highest, last), both ends exactly, every
    column's lowest and highest values; after a resize as many as fit then."""
    rng = np.random.default_rng(1)
    heads = [0, 1, 2]
    grid.set_heads(heads)
    grid.add_series("s", pg.mkPen("b"))
    x = np.arange(1024.0)
    ys = rng.normal(size=(3, 1024))
    grid.set_ranges((0, 1023), (-5, 5))
    grid.set_series("s", x, ys)
    qtbot.waitUntil(lambda: grid._cell_pixels()[0] > 100)
    for width in (900, 500):
        grid.frame.resize(width, 600)
        qtbot.waitUntil(lambda w=width: grid.frame.width() == w)
        columns = grid._cell_pixels()[0]
        for r, h in enumerate(heads):
            xd, yd = grid.drawn("s", h)
            assert len(xd) <= 4 * (columns + 1)
            assert (xd[0], yd[0]) == pytest.approx((0, ys[r, 0]))
            assert (xd[-1], yd[-1]) == pytest.approx((1023, ys[r, -1]))
            col = np.minimum(np.floor(x / 1023 * columns), np.ceil(columns) - 1)
            dcol = np.minimum(np.floor(xd / 1023 * columns + 1e-9), np.ceil(columns) - 1)
            for c in np.unique(col)[::7]:
                assert yd[dcol == c].min() == pytest.approx(ys[r, col == c].min())
                assert yd[dcol == c].max() == pytest.approx(ys[r, col == c].max())
    assert grid.data("s", 1)[1] is not None  # the data as given stays readable


def test_small_cells_keep_their_labels_apart(qtbot):
    """25 heads in a small plot (a 1024 x 700 window): the x labels under the columns stay
    apart, also across the gap to the next column, and the cells show their heads'
    numbers alone; wide cells name the heads in full."""
    from PySide6.QtGui import QFontMetrics

    frame = PlotFrame("test")
    qtbot.addWidget(frame)
    frame.resize(340, 220)
    frame.show()
    sm = SmallMultiples(frame, State(0), x_label="key position j")
    sm.set_heads(range(25))
    axis = sm.plot.getAxis("bottom")
    metrics = QFontMetrics(axis.style.get("tickFont") or QFont())
    for width, x_range in ((340, (-20.46, 1043.46)), (700, (-0.5, 1022.5))):
        frame.resize(width, 220)
        qtbot.waitUntil(lambda w=width: frame.width() == w and sm._cell_pixels()[0] > 10)
        sm.set_ranges(x_range, (-30, 30))
        placed = sorted((sm.vb.mapViewToScene(QPointF(x, 0)).x(), metrics.horizontalAdvance(t))
                        for x, t in sm.x_ticks)
        assert len(placed) >= sm.cols  # a label under every column
        for (x1, w1), (x2, w2) in itertools.pairwise(placed):
            assert x2 - x1 >= (w1 + w2) / 2 + 4
        if width == 340:
            assert {sm.names[h].text() for h in (0, 24)} == {"0", "24"}

    frame.resize(1400, 900)
    qtbot.waitUntil(lambda: sm._cell_pixels()[0] > 150)
    assert sm.names[24].text() == "head 24"


def test_what_is_drawn_maps_back_to_the_data_and_the_title_is_the_frames(grid, qtbot):
    heads = [4, 1, 6]
    grid.set_heads(heads)
    grid.add_series("s", pg.mkPen("b"))
    grid.set_ranges((5, 40), (-1, 1))
    x = np.arange(50.0)
    ys = np.sin(x / 7)[None] * np.array([[0.5], [2.0], [1.0]])
    grid.set_series("s", x, ys)
    for r, h in enumerate(heads):
        xd, yd = grid.drawn("s", h)
        keep = (x >= 5) & (x <= 40)
        np.testing.assert_allclose(xd, x[keep], atol=1e-9)
        np.testing.assert_allclose(yd, np.clip(ys[r][keep], -1, 1), atol=1e-9)
        # a data point's scene position lies in its head's cell and maps back to it
        head, px, py = grid.at(grid.scene_pos(h, 12.0, 0.25))
        assert head == h and px == pytest.approx(12.0) and py == pytest.approx(0.25)
    grid.set_title("<b>T</b> over j")
    assert grid.title_text() == grid.frame.title_text() == "<b>T</b> over j"
    assert grid.frame.title.isVisibleTo(grid.frame)


def test_the_png_export_shows_the_title_above_the_cells(grid, qtbot, tmp_path):
    from PySide6.QtGui import QImage

    grid.set_heads([0, 1])
    grid.add_series("s", pg.mkPen("b"))
    grid.set_ranges((0, 9), (-1, 1))
    grid.set_series("s", np.arange(10.0), np.zeros((2, 10)))
    grid.set_title("<b>A title</b> long enough to be seen " * 3)
    qtbot.wait(20)
    frame = grid.frame
    frame.export(tmp_path / "f.png")
    img = QImage(str(tmp_path / "f.png")).convertToFormat(QImage.Format_RGB32)
    assert img.width() == 2 * frame.width() and img.height() > 2 * frame.height()  # + footer
    top = 2 * frame.title.height()  # the title's strip, above the view

    def dark(y0, y1):
        return sum(1 for y in range(y0, y1, 2) for x in range(0, img.width(), 2)
                   if QColor(img.pixel(x, y)).lightness() < 100)

    assert dark(0, top) > 50  # the title's text
    assert dark(top, 2 * frame.height()) > 50  # the cells, under it


def test_a_steady_series_is_painted_from_a_pixmap_that_follows_its_data(grid, qtbot):
    """A steady series (T_p: the query slider moves only the marker over it) is painted
    from Qt's cache; new data, another range or a new marker still show on screen."""
    from PySide6.QtGui import QImage

    grid.set_heads([0, 1])
    curve = grid.add_series("s", pg.mkPen("k", width=3), steady=True)
    assert curve.cacheMode() == curve.CacheMode.DeviceCoordinateCache
    grid.set_ranges((0, 9), (-1, 1))
    x = np.arange(10.0)
    grid.set_series("s", x, np.full((2, 10), -0.8))
    qtbot.wait(30)

    def dark_rows():
        img = grid.frame.view.grab().toImage().convertToFormat(QImage.Format_RGB32)
        cx = round(grid.frame.view.mapFromScene(grid.scene_pos(0, 4.5, 0)).x())
        return {y for y in range(img.height()) if QColor(img.pixel(cx, y)).lightness() < 60}

    low = dark_rows()
    grid.set_series("s", x, np.full((2, 10), 0.8))  # the line moves up in its cell
    qtbot.wait(30)
    high = dark_rows()
    y_low = grid.frame.view.mapFromScene(grid.scene_pos(0, 4.5, -0.8)).y()
    y_high = grid.frame.view.mapFromScene(grid.scene_pos(0, 4.5, 0.8)).y()
    assert any(abs(y - y_low) <= 2 for y in low) and not any(abs(y - y_low) <= 2 for y in high)
    assert any(abs(y - y_high) <= 2 for y in high)


def test_head_names_keep_their_size_on_screen_inside_their_cells(qtbot):
    """A head's name is as large on screen however large the plot (it is not scaled with
    the cells) and sits just inside its cell's top left corner, in every cell."""
    frame = PlotFrame("test")
    qtbot.addWidget(frame)
    frame.show()
    sm = SmallMultiples(frame, State(0))
    sm.set_heads(range(4))
    sm.set_ranges((0, 10), (0, 1))
    sizes = set()
    for width, height in ((520, 360), (1100, 760)):
        frame.resize(width, height)
        qtbot.waitUntil(lambda w=width: frame.width() == w)
        qtbot.wait(50)
        view = frame.view
        for h in range(4):
            name = sm.names[h]
            rect = name.deviceTransform(view.viewportTransform()).mapRect(name.boundingRect())
            corner = view.mapFromScene(sm.scene_pos(h, 0, 1))  # the cell's top left
            assert 0 <= rect.left() - corner.x() <= 8 and 0 <= rect.top() - corner.y() <= 8
            sizes.add((round(rect.width()), round(rect.height())))
    assert len(sizes) == 1, sizes  # "head 0".."head 3": one size, at both plot sizes
