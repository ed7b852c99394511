"""An axis laid out fast (gui/axis_specs.py, issue 16: pyqtgraph's layout was an eighth of
the GUI thread's CPU in the soak's longest passes) lays it out exactly as pyqtgraph does:
the same axis line, tick ends and pens, label rectangles and texts, to the last bit, over
many ranges, sizes, sides and styles; and axes it does not cover go to pyqtgraph. Exact
comparisons are right here: both compute the same scalar float operations in the same
order (no BLAS, no reduction reordered), which IEEE 754 rounds alike on every machine."""

import math

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QFont, QImage, QPainter

from detokgui.gui import axis_specs
from detokgui.gui.axis_specs import FastAxis, covers, draw_specs, tick_values


def point(q) -> tuple[float, float]:
    return q.x(), q.y()


def rect(r) -> tuple[float, float, float, float]:
    return r.x(), r.y(), r.width(), r.height()


def pen(p) -> tuple:
    return p.color().rgba(), p.widthF(), p.style(), p.isCosmetic(), p.brush().style()


def comparable(specs):
    """The specs as plain tuples: QPointF's and QRectF's == are fuzzy, these are exact."""
    if specs is None:
        return None
    (axis_pen, a, b), ticks, texts = specs
    return ((pen(axis_pen), point(a), point(b)),
            [(pen(p), point(a), point(b)) for p, a, b in ticks],
            [(rect(r), int(flags), text) for r, flags, text in texts])


@pytest.fixture
def plot(qtbot):
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(640, 420)
    item = view.addPlot(axisItems={n: FastAxis(n) for n in ("left", "bottom", "top", "right")})
    item.showAxis("top")
    item.showAxis("right")
    view.show()
    qtbot.waitExposed(view)
    return view, item


def both(axis, painter) -> tuple:
    """Ours, then pyqtgraph's, on the same axis and painter; each once more, so that an
    axis that resized itself after the first (its label space) is compared settled."""
    for _ in range(2):
        theirs = comparable(pg.AxisItem.generateDrawSpecs(axis, painter))
        ours = comparable(draw_specs(axis, painter))
    return ours, theirs


RANGES = [(0, 1), (0, 1023), (-3.7, 2.2), (1e-7, 3e-7), (-5e6, 7e6), (2, 2), (10, -4),
          (0.1, 0.30000000000000004), (-1e-3, 1e-3), (123456.789, 123456.791), (0, 0.5)]


@pytest.mark.parametrize("grid", [False, 77])
def test_the_same_layout_as_pyqtgraph(plot, qtbot, grid):
    view, item = plot
    image = QImage(700, 500, QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    try:
        seen_labels = 0
        for size in [(640, 420), (260, 150), (900, 700)]:
            view.resize(*size)
            qtbot.wait(5)
            for side in ("left", "bottom", "top", "right"):
                axis = item.getAxis(side)
                axis.setGrid(grid)
                assert covers(axis)
                for lo, hi in RANGES:
                    axis.setRange(lo, hi)
                    ours, theirs = both(axis, painter)
                    assert ours == theirs, (size, side, lo, hi)
                    seen_labels += 0 if ours is None else len(ours[2])
        assert seen_labels > 200  # labels were laid out, not only lines
    finally:
        painter.end()


def test_the_same_layout_with_other_styles(plot):
    _view, item = plot
    image = QImage(700, 500, QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    font = QFont()
    font.setPointSize(15)
    styles = [{"tickLength": -8}, {"tickLength": 12, "tickTextOffset": 9},
              {"tickAlpha": 0.4}, {"tickAlpha": 120}, {"maxTickLevel": 2, "maxTextLevel": 2},
              {"textFillLimits": [(0, 0.9)]}, {"showValues": False},
              {"tickFont": font}, {"hideOverlappingLabels": False}]
    try:
        for style in styles:
            for side in ("left", "bottom"):
                axis = item.getAxis(side)
                axis.setStyle(**style)
                axis.setPen((200, 30, 30))
                axis.setTickPen(pg.mkPen((20, 120, 20), width=2))
                axis.enableAutoSIPrefix(side == "left")
                for lo, hi in RANGES:
                    axis.setRange(lo, hi)
                    ours, theirs = both(axis, painter)
                    assert ours == theirs, (style, side, lo, hi)
                axis.setScale(0.001)
                axis.setRange(-2500, 4000)
                ours, theirs = both(axis, painter)
                assert ours == theirs, (style, side, "scaled")
                axis.setScale(1.0)
    finally:
        painter.end()


def test_tick_values_as_pyqtgraphs(plot):
    _, item = plot
    axis = item.getAxis("bottom")
    rng = np.random.default_rng(0)
    for _ in range(300):
        lo = float(rng.normal() * 10.0 ** rng.integers(-6, 7))
        hi = lo + float(abs(rng.normal()) * 10.0 ** rng.integers(-6, 7))
        size = float(rng.uniform(20, 2000))
        assert tick_values(axis, lo, hi, size) == pg.AxisItem.tickValues(axis, lo, hi, size)


def test_axes_it_does_not_cover_are_laid_out_by_pyqtgraph(plot, monkeypatch):
    _, item = plot
    calls = []
    monkeypatch.setattr(axis_specs, "draw_specs", lambda *a: calls.append(a))
    image = QImage(300, 300, QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    try:
        left, bottom, top = item.getAxis("left"), item.getAxis("bottom"), item.getAxis("top")
        left.setTicks([[(0.5, "half"), (1.0, "one")]])
        bottom.setLogMode(True)
        top.setStyle(stopAxisAtTick=(True, False))
        for axis in (left, bottom, top):
            assert not covers(axis)
            specs = axis.generateDrawSpecs(painter)
            assert comparable(specs) == comparable(pg.AxisItem.generateDrawSpecs(axis, painter))
        assert comparable(left.generateDrawSpecs(painter))[2][0][2] in ("half", "one")
        assert calls == []
        right = item.getAxis("right")
        assert covers(right)
        right.generateDrawSpecs(painter)
        assert len(calls) == 1
    finally:
        painter.end()


def test_text_sizes_are_remembered_within_bounds(plot, monkeypatch):
    _, item = plot
    monkeypatch.setattr(axis_specs, "_SIZES_KEPT", 50)
    axis_specs._sizes.clear()
    image = QImage(300, 300, QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    try:
        axis = item.getAxis("left")
        for k in range(40):
            axis.setRange(k * 1000.5, k * 1000.5 + 7 * math.pi)
            ours, theirs = both(axis, painter)
            assert ours == theirs
            assert 0 < len(axis_specs._sizes) <= 50
    finally:
        painter.end()
