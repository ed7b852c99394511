"""What a plot axis draws (its line, ticks or grid lines, and tick labels), laid out as
pyqtgraph's AxisItem.generateDrawSpecs does, in a third of its time.

pyqtgraph's layout runs each time an axis's range or size changes: ~0.8 ms per axis on
an idle machine, about an eighth of the GUI thread's CPU in the soak benchmark's longest
passes. Most of it is overhead around a little arithmetic: numpy calls on arrays of a few
dozen ticks, a pg.Point per tick end, the axis's bounding rectangle recomputed for every
label, every label's text measured anew. Here: the same arithmetic on Python floats,
QPointF ends, the rectangle once, and text sizes remembered per font and device (0.57
against 1.61 ms for a plot's two axes). `draw_specs` returns what pyqtgraph's would, to
the last bit (tests/test_axis_specs.py compares them); axes it does not cover (explicit
ticks, log scale, axis lines stopped at a tick, a subclass's own tick values) are laid out
by pyqtgraph."""

from __future__ import annotations

from bisect import bisect_left
from math import ceil, hypot

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen

_ALIGN = {
    "left": Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
    "right": Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
    "top": Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom,
    "bottom": Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
}
_FLAGS = {side: align | Qt.TextFlag.TextDontClip for side, align in _ALIGN.items()}
_MEASURE_BOX = QRectF(0, 0, 100, 100)
_CENTER = Qt.AlignmentFlag.AlignCenter
_SOLID = Qt.BrushStyle.SolidPattern
_SIZES_KEPT = 4096  # text sizes remembered (a few axes' labels over many ranges)
_sizes: dict[tuple, tuple[float, float]] = {}


def covers(axis) -> bool:
    """Whether `draw_specs` lays out this axis (else pyqtgraph's own layout does)."""
    return axis._tickLevels is None and not axis.logMode \
        and axis.style["stopAxisAtTick"] == (False, False) \
        and type(axis).tickValues is pg.AxisItem.tickValues


def tick_values(axis, lo: float, hi: float, size: float) -> list[tuple[float, list[float]]]:
    """AxisItem.tickValues without log scale: per level of axis.tickSpacing (major first),
    (spacing, values): the multiples of the spacing (plus its offset) within [lo, hi] in
    the axis's scaled units, less those within spacing / 100 of a value of a level before."""
    lo, hi = sorted((lo, hi))
    scale = axis.scale
    lo *= scale
    hi *= scale
    seen: list[float] = []  # sorted
    levels = []
    for spacing, offset in axis.tickSpacing(lo, hi, size):
        start = (ceil((lo - offset) / spacing) * spacing) + offset
        num = int((hi - start) / spacing) + 1
        tol = spacing / scale * 0.01
        values = [(k * spacing + start) / scale for k in range(num)]
        kept = [v for v in values if not _near(seen, v, tol)]
        for v in kept:
            seen.insert(bisect_left(seen, v), v)
        levels.append((spacing / scale, kept))
    return levels


def _near(sorted_values: list[float], v: float, tol: float) -> bool:
    """Some value within `tol` of v (numpy's isclose with rtol=0: |a - v| <= tol)."""
    i = bisect_left(sorted_values, v)
    return (i < len(sorted_values) and abs(sorted_values[i] - v) <= tol) or \
        (i > 0 and abs(sorted_values[i - 1] - v) <= tol)


def _text_size(p: QPainter, key: tuple, text: str) -> tuple[float, float]:
    """Width and 0.8 x height of `text` as pyqtgraph measures a tick label."""
    size = _sizes.get(key + (text,))
    if size is None:
        if len(_sizes) >= _SIZES_KEPT:
            _sizes.clear()
        br = p.boundingRect(_MEASURE_BOX, _CENTER, text)
        br.setHeight(br.height() * 0.8)
        size = _sizes[key + (text,)] = (br.width(), br.height())
    return size


def _measure_key(p: QPainter) -> tuple:
    device = p.device()
    dpi = (device.logicalDpiX(), device.logicalDpiY()) if device is not None else None
    return p.font().key(), dpi


def draw_specs(axis, p: QPainter):
    """AxisItem.generateDrawSpecs(p) for an axis that `covers` accepts: (axis line spec,
    tick specs, text specs), or None where the axis has no length on the device."""
    style = axis.style
    if style["tickFont"] is not None:
        p.setFont(style["tickFont"])
    bounds = axis.mapRectFromParent(axis.geometry())
    view = axis.linkedView()
    tick_bounds = bounds if view is None or axis.grid is False else \
        view.mapRectToItem(axis, view.boundingRect())
    side = axis.orientation
    if side == "left":
        span = (QPointF(bounds.right() - 1.0, bounds.top() - 1.0),
                QPointF(bounds.right() - 1.0, bounds.bottom() + 1.0))
        tick_start, tick_stop, tick_dir, along = tick_bounds.right(), bounds.right(), -1, 0
    elif side == "right":
        span = (QPointF(bounds.left() + 1.0, bounds.top() - 1.0),
                QPointF(bounds.left() + 1.0, bounds.bottom() + 1.0))
        tick_start, tick_stop, tick_dir, along = tick_bounds.left(), bounds.left(), 1, 0
    elif side == "top":
        span = (QPointF(bounds.left() - 1.0, bounds.bottom() - 1.0),
                QPointF(bounds.right() + 1.0, bounds.bottom() - 1.0))
        tick_start, tick_stop, tick_dir, along = tick_bounds.bottom(), bounds.bottom(), -1, 1
    elif side == "bottom":
        span = (QPointF(bounds.left() - 1.0, bounds.top() + 1.0),
                QPointF(bounds.right() + 1.0, bounds.top() + 1.0))
        tick_start, tick_stop, tick_dir, along = tick_bounds.top(), bounds.top(), 1, 1
    else:
        raise ValueError("self.orientation must be in {'left', 'right', 'top', 'bottom'}")
    ends = [axis.mapToDevice(point) for point in span]
    if None in ends:
        return None
    along_device = ends[1] - ends[0]
    length = hypot(along_device.x(), along_device.y())
    if length == 0:
        return None

    lo, hi = axis.range
    levels = tick_values(axis, lo, hi, length)
    dif = hi - lo
    if dif == 0:
        x_scale, offset = 1, 0
    elif along == 0:
        x_scale = -bounds.height() / dif
        offset = lo * x_scale - bounds.height()
    else:
        x_scale = bounds.width() / dif
        offset = lo * x_scale
    x_lo, x_hi = sorted((lo * x_scale - offset, hi * x_scale - offset))

    positions: list[list[float | None]] = []
    tick_specs = []
    base_pen = axis.tickPen()
    for i, (_, values) in enumerate(levels):
        tick_length = style["tickLength"] / ((i * 0.5) + 1.0)
        pen = _level_pen(axis, base_pen, i, len(values), length)
        stop = tick_stop if axis.grid is not False else tick_stop + tick_length * tick_dir
        at: list[float | None] = []
        for v in values:
            x = (v * x_scale) - offset
            if x < x_lo or x > x_hi:
                at.append(None)
                continue
            at.append(x)
            if along == 0:
                tick_specs.append((pen, QPointF(tick_start, x), QPointF(stop, x)))
            else:
                tick_specs.append((pen, QPointF(x, tick_start), QPointF(x, stop)))
        positions.append(at)
    axis_spec = (axis.pen(), span[0], span[1])

    text_specs: list = []
    if not style["showValues"]:
        return axis_spec, tick_specs, text_specs
    text_offset = style["tickTextOffset"][along]
    last_size2 = 0
    sizes: list[tuple[float, float]] = []  # every label measured so far, all levels
    key = _measure_key(p)
    clip = axis.boundingRect()
    flags = _FLAGS[side]
    gap = max(0, style["tickLength"]) + text_offset
    for i in range(min(len(levels), style["maxTextLevel"] + 1)):
        spacing, values = levels[i]
        strings = axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)
        if len(strings) == 0:
            continue
        at = positions[i]
        level_sizes = [None if at[j] is None else _text_size(p, key, s)
                       for j, s in enumerate(strings)]
        sizes.extend(s for s in level_sizes if s is not None)
        if sizes:
            if along == 0:
                size, size2 = np.sum([h for _, h in sizes]), np.max([w for w, _ in sizes])
            else:
                size, size2 = np.sum([w for w, _ in sizes]), np.max([h for _, h in sizes])
        else:
            size = size2 = 0
        if i > 0:
            fill = float(size) / length
            if any(len(text_specs) >= n and fill >= limit
                   for n, limit in style["textFillLimits"]):
                break
        last_size2 = size2
        for j, text in enumerate(strings):
            if at[j] is None:
                continue
            x = at[j]
            width, height = level_sizes[j]
            if side == "left":
                rect = QRectF(tick_stop - gap - width, x - (height / 2), width, height)
            elif side == "right":
                rect = QRectF(tick_stop + gap, x - (height / 2), width, height)
            elif side == "top":
                rect = QRectF(x - width / 2., tick_stop - gap - height, width, height)
            else:
                rect = QRectF(x - width / 2., tick_stop + gap, width, height)
            if clip & rect != rect:
                continue
            text_specs.append((rect, flags, text))
    axis._updateMaxTextSize(last_size2)
    return axis_spec, tick_specs, text_specs


def _level_pen(axis, pen: QPen, level: int, n_ticks: int, length: float) -> QPen:
    """The tick pen of a level, its opacity as pyqtgraph sets it."""
    alpha = axis.style["tickAlpha"]
    if alpha is None:
        alpha = 255 / (level + 1)
        if axis.grid is not False:
            share = 0.05 * length / (n_ticks + 1)
            alpha *= axis.grid / 255. * (0. if share < 0. else min(share, 1.))
    elif isinstance(alpha, float):
        alpha = min(255, max(0, round(alpha * 255)))
    elif isinstance(alpha, int):
        if alpha > 255 or alpha < 0:
            raise ValueError("lineAlpha should be [0..255]")
    else:
        raise TypeError("Line Alpha should be of type None, float or int")
    if pen.brush().style() != _SOLID:
        return pen
    pen = QPen(pen)
    color = QColor(pen.color())
    color.setAlpha(int(alpha))
    pen.setColor(color)
    return pen


class FastAxis(pg.AxisItem):
    """pyqtgraph's AxisItem, laid out by `draw_specs` where it covers the axis."""

    def generateDrawSpecs(self, p: QPainter):
        if covers(self):
            return draw_specs(self, p)
        return super().generateDrawSpecs(p)
