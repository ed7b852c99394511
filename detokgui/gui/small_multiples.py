"""Small multiples: a figure of per-head cells drawn in ONE pyqtgraph plot.

Every head's cell sits at an offset in the plot's own coordinates, on a near-square grid
(cell k at row k // cols, column k % cols; unit squares with gaps between them). What a
figure shows is drawn per figure, not per cell:

- a series (one line per head: T_pp for the mean sigma, the softmax, ...) is one curve
  item for every cell, its cells separated by a NaN (`connect="finite"`);
- a band (lower..upper per head) is one path of polygons;
- the cells' frames, the grid lines, the keys past the query (masked) and the j = i
  markers are one path each;
- tick labels are the plot's own two axes with explicit ticks: the shared y values on
  every row's left, the shared x values under every column (every cell shows the same
  ranges, as matplotlib's sharex / sharey);
- only the heads' names are an item per cell; the title is the frame's (a word-wrapping
  `PlotTitle` above the plot, which a new i repaints without a layout pass).

A redraw is a few numpy operations and one `setData` per series, however many heads.
`at(scene_pos)` maps the mouse back to (head, x, y) in data coordinates, and `data(name,
head)` gives what a curve shows there (tests, hover text)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsSimpleTextItem,
)

from detokgui.core.base.decimation import cell_lines, pixel_envelope
from detokgui.core.base.plot_axes import nice_step, tick_values
from detokgui.gui.plots import PlotFrame, add_plot, head_color

GAP_X = 0.14  # between two columns of cells, in cell widths
GAP_Y = 0.10  # between two rows, in cell heights
TICK_PX_X = 48  # at least this many pixels between labelled x ticks
TICK_PX_Y = 26
MASKED_BRUSH = QColor(120, 120, 120, 38)
FRAME_PEN = QColor(150, 150, 150)
GRID_PEN = QColor(0, 0, 0, 28)
NAME_FILL = QColor(255, 255, 255, 170)
NAME_INSET = 4  # pixels between a cell's top left corner and its head's name
NAME_SHORT_BELOW_PX = 75  # a cell narrower than this shows its head's number alone


def grid_columns(n: int) -> int:
    """Columns of a near-square grid of n cells."""
    return 1 if n <= 1 else math.ceil(math.sqrt(n))


def cosmetic_pen(color, width: float = 1.0, style=Qt.SolidLine) -> QPen:
    """A pen `width` pixels wide whatever the view's scale."""
    pen = QPen(QColor(color), width, style)
    pen.setCosmetic(True)
    return pen


class SmallMultiples(QObject):
    """The per-head cells of one PlotFrame (see the module docstring). Set the heads, then
    the shared ranges, then the series; `set_marker` marks j = i and shades j > i."""

    def __init__(self, frame: PlotFrame, state=None, x_label: str = "", y_label: str = ""):
        super().__init__(frame)
        self.frame = frame
        self.state = state  # with it, the selected head's cell is framed
        self.plot = add_plot(frame, bottom=x_label, left=y_label, controls=False, mouse=False)
        self.vb: pg.ViewBox = self.plot.getViewBox()
        self.vb.disableAutoRange()
        for side in ("bottom", "left"):
            axis = self.plot.getAxis(side)
            axis.setStyle(tickLength=-4)
            axis.setTicks([[]])  # the ticks are self.x_ticks / self.y_ticks, none yet
        self.heads: list[int] = []
        self.cols = self.rows = 0
        self.corners: dict[int, tuple[float, float]] = {}  # head -> its cell's lower left
        self.x_range: tuple[float, float] | None = None
        self.y_range: tuple[float, float] | None = None
        self.marker_at: tuple[float, float] | None = None  # (i, mask_to)
        # the ticks given to the bottom and left axes: (position in the plot, label)
        self.x_ticks: list[tuple[float, str]] = []
        self.y_ticks: list[tuple[float, str]] = []
        self._data: dict[str, dict[int, tuple[np.ndarray, np.ndarray]]] = {}
        self._bands: dict[str, dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        self.curves: dict[str, pg.PlotCurveItem] = {}
        self.band_items: dict[str, QGraphicsPathItem] = {}
        self.names: dict[int, HeadName] = {}
        self.frames = self._path_item(cosmetic_pen(FRAME_PEN), -15)
        self.grid_lines = self._path_item(cosmetic_pen(GRID_PEN), -20)
        self.masked = self._path_item(QPen(Qt.NoPen), -30, QBrush(MASKED_BRUSH))
        self.markers = self._path_item(cosmetic_pen(QColor(0, 0, 0, 170), 1, Qt.DashLine), -5)
        self.selected = QGraphicsRectItem()
        self.selected.setZValue(10)
        self.selected.setVisible(False)
        self.vb.addItem(self.selected, ignoreBounds=True)
        self.vb.sigResized.connect(self._relayout)
        if state is not None:
            state.headChanged.connect(self.mark_head)

    def _path_item(self, pen: QPen, z: float, brush: QBrush | None = None) -> QGraphicsPathItem:
        item = QGraphicsPathItem()
        item.setPen(pen)
        if brush is not None:
            item.setBrush(brush)
        item.setZValue(z)
        self.vb.addItem(item, ignoreBounds=True)
        return item

    # ------------------------------------------------------------------ layout

    def set_title(self, html: str) -> None:
        """The figure's title, above the cells (the frame's, left-aligned)."""
        self.frame.set_title(html or " ", Qt.AlignLeft)

    def title_text(self) -> str:
        return self.frame.title_text()

    def set_heads(self, heads: Sequence[int]) -> bool:
        """Lay out the cells of `heads`; False when they are already shown."""
        heads = [int(h) for h in heads]
        if heads == self.heads:
            return False
        self.heads = heads
        n = len(heads)
        self.cols = grid_columns(n)
        self.rows = math.ceil(n / self.cols) if n else 0
        # cell k at row k // cols (top to bottom), column k % cols: its lower-left corner
        self.corners = {h: ((k % self.cols) * (1 + GAP_X),
                            (self.rows - 1 - k // self.cols) * (1 + GAP_Y))
                        for k, h in enumerate(heads)}
        for h, (x, y) in self.corners.items():
            if h not in self.names:
                self.names[h] = HeadName(f"head {h}", head_color(h))
                self.vb.addItem(self.names[h], ignoreBounds=True)
            self.names[h].setPos(x + 0.01, y + 1.0 - 0.01)
        for h, item in self.names.items():
            item.setVisible(h in self.corners)
        width = max(1, self.cols) * (1 + GAP_X) - GAP_X
        height = max(1, self.rows) * (1 + GAP_Y) - GAP_Y
        self.vb.setRange(xRange=(-0.01, width + 0.01), yRange=(-0.01, height + 0.01), padding=0)
        antialias = n <= 4  # at small-multiple size the difference is not visible
        for curve in self.curves.values():
            curve.setData(antialias=antialias)
        self._relayout()
        self.mark_head()
        return True

    def set_ranges(self, x_range, y_range) -> None:
        """The data ranges every cell shows (shared axes)."""
        x_range = (float(x_range[0]), float(x_range[1]))
        y_range = (float(y_range[0]), float(y_range[1]))
        if y_range[1] <= y_range[0]:
            y_range = (y_range[0] - 0.5, y_range[0] + 0.5)
        if (x_range, y_range) == (self.x_range, self.y_range):
            return
        self.x_range, self.y_range = x_range, y_range
        self._relayout()

    def _relayout(self, *_) -> None:
        """Frames, ticks, grid lines, marker and every series, for the heads, the ranges and
        the size (a series gets as many points as its pixel columns hold)."""
        frames = QPainterPath()
        for x, y in self.corners.values():
            frames.addRect(QRectF(x, y, 1.0, 1.0))
        self.frames.setPath(frames)
        self._update_ticks()
        self._draw_marker()
        for name in list(self._data):
            self._draw_series(name)
        for name in list(self._bands):
            self._draw_band(name)
        self.mark_head()

    # ------------------------------------------------------------------ mapping

    def _to_plot(self, h: int, x, y):
        """Data (x, y) of head h's cell (numbers or arrays) to plot coordinates."""
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        cx, cy = self.corners[h]
        return cx + (x - x0) / (x1 - x0), cy + (y - y0) / (y1 - y0)

    def _map(self, h: int, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Data (x, y) of head h's cell to plot coordinates; points outside the x range
        are dropped, y is clipped to the cell."""
        keep = (x >= self.x_range[0]) & (x <= self.x_range[1])
        return self._to_plot(h, x[keep], np.clip(y[keep], *self.y_range))

    def scene_pos(self, h: int, x: float, y: float) -> QPointF:
        """The scene position of data point (x, y) in head h's cell."""
        return self.vb.mapViewToScene(QPointF(*self._to_plot(h, x, y)))

    def to_data(self, h: int, px, py) -> tuple[np.ndarray, np.ndarray]:
        """Plot coordinates in head h's cell back to data coordinates (`_map` inverted)."""
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        cx, cy = self.corners[h]
        return (x0 + (np.asarray(px) - cx) * (x1 - x0),
                y0 + (np.asarray(py) - cy) * (y1 - y0))

    def at(self, scene_pos: QPointF) -> tuple[int, float, float] | None:
        """(head, x, y) in data coordinates under a scene position, or None off the cells."""
        if not self.heads or self.x_range is None or \
                not self.vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = self.vb.mapSceneToView(scene_pos)
        c = math.floor(p.x() / (1 + GAP_X))
        r = self.rows - 1 - math.floor(p.y() / (1 + GAP_Y))
        fx = p.x() - c * (1 + GAP_X)
        fy = p.y() - (self.rows - 1 - r) * (1 + GAP_Y)
        if not (0 <= c < self.cols and 0 <= r < self.rows and 0 <= fx <= 1 and 0 <= fy <= 1):
            return None
        k = r * self.cols + c
        if k >= len(self.heads):
            return None
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        return self.heads[k], x0 + fx * (x1 - x0), y0 + fy * (y1 - y0)

    def position_at(self, scene_pos: QPointF, n_positions: int) -> tuple[int, int] | None:
        """(head, position) under a scene position: x rounded to the nearest integer
        within 0..n_positions-1; None off the cells."""
        hit = self.at(scene_pos)
        if hit is None or n_positions <= 0:
            return None
        return hit[0], int(max(0, min(n_positions - 1, round(hit[1]))))

    def position(self, scene_pos: QPointF, n_positions: int) -> int | None:
        """The position under a scene position in any cell (`position_at`), or None."""
        hit = self.position_at(scene_pos, n_positions)
        return None if hit is None else hit[1]

    # ------------------------------------------------------------------ content

    def add_series(self, name: str, pen, steady: bool = False) -> pg.PlotCurveItem:
        """A series drawn with `pen` (one item for every cell), at most four points a pixel
        column, both ends exact (`pixel_line`; pyqtgraph's peak downsampling drops the
        j = i end). `steady`: a series that a query slider does not change (T_p over every
        key), painted from a pixmap while the marker and the shading over it move."""
        curve = pg.PlotCurveItem(pen=pen, connect="finite", antialias=len(self.heads) <= 4)
        if steady:
            curve.setCacheMode(pg.PlotCurveItem.DeviceCoordinateCache)
        self.vb.addItem(curve)
        self.curves[name] = curve
        self._data.setdefault(name, {})
        return curve

    def set_series(self, name: str, x: np.ndarray, ys) -> None:
        """Series `name`: y over x for each shown head, `ys` [len(heads), len(x)] in the
        order of `heads`."""
        x = np.asarray(x, dtype=np.float64)
        ys = np.asarray(ys, dtype=np.float64)
        self._data[name] = {h: (x, ys[r]) for r, h in enumerate(self.heads)}
        self._draw_series(name)

    def show_series(self, name: str, shown: bool) -> None:
        self.curves[name].setVisible(shown)

    def _draw_series(self, name: str) -> None:
        curve = self.curves.get(name)
        if curve is None:
            return
        data = self._data.get(name, {})
        heads = [h for h in self.heads if h in data] if self.x_range is not None else []
        if not heads:
            curve.setData([], [])
            return
        # set_series gives every head the same x: all cells mapped at once
        px, py = cell_lines([self.corners[h] for h in heads], data[heads[0]][0],
                            np.stack([data[h][1] for h in heads]), self.x_range, self.y_range,
                            self._cell_pixels()[0])
        curve.setData(px, py, connect="finite")

    def data(self, name: str, head: int) -> tuple[np.ndarray, np.ndarray]:
        """The (x, y) data of series `name` for `head`, as given."""
        return self._data[name][head]

    def drawn(self, name: str, head: int) -> tuple[np.ndarray, np.ndarray]:
        """What the curve item of series `name` draws in `head`'s cell, in data
        coordinates: the points within the x range, y clipped to the y range."""
        px, py = self.curves[name].getData()
        if px is None:
            return np.zeros(0), np.zeros(0)
        breaks = np.flatnonzero(np.isnan(px))
        starts = np.r_[0, breaks[:-1] + 1]
        with_data = [h for h in self.heads if h in self._data.get(name, {})]
        k = with_data.index(head)
        return self.to_data(head, px[starts[k]:breaks[k]], py[starts[k]:breaks[k]])

    def add_band(self, name: str, brush) -> QGraphicsPathItem:
        """A band (lower..upper per head) filled with `brush`, behind the series."""
        item = self._path_item(QPen(Qt.NoPen), -10, pg.mkBrush(brush))
        # A band of a thousand points a head is slow to fill and changes only with its
        # data or the view's size: Qt paints it from a pixmap in between.
        item.setCacheMode(QGraphicsPathItem.DeviceCoordinateCache)
        self.band_items[name] = item
        self._bands.setdefault(name, {})
        return item

    def set_band(self, name: str, x: np.ndarray, lower, upper) -> None:
        """Band `name` between lower and upper [len(heads), len(x)] over x."""
        x = np.asarray(x, dtype=np.float64)
        lo, hi = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
        self._bands[name] = {h: (x, lo[r], hi[r]) for r, h in enumerate(self.heads)}
        self._draw_band(name)

    def band(self, name: str, head: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._bands[name][head]

    def _draw_band(self, name: str) -> None:
        item = self.band_items.get(name)
        if item is None:
            return
        path = QPainterPath()
        if self.x_range is not None:
            columns = self._cell_pixels()[0]
            for h in self.heads:
                if h not in self._bands[name]:
                    continue
                x, lo, hi = self._bands[name][h]
                px, plo = self._map(h, x, lo)
                _, phi = self._map(h, x, hi)
                px, plo, phi = pixel_envelope(px, plo, phi, columns)
                if px.size:
                    path.addPolygon(pg.functions.arrayToQPolygonF(
                        np.concatenate([px, px[::-1]]), np.concatenate([plo, phi[::-1]])))
        item.setPath(path)

    def set_marker(self, i: float | None, mask_to: float = 0.0) -> None:
        """Mark j = i in every cell and shade the keys past it up to `mask_to`; None:
        neither."""
        self.marker_at = None if i is None else (float(i), float(mask_to))
        self._draw_marker()

    def _draw_marker(self) -> None:
        lines, shade = QPainterPath(), QPainterPath()
        if self.marker_at is not None and self.x_range is not None:
            i, mask_to = self.marker_at
            (x0, x1), _ = self.x_range, self.y_range
            for cx, cy in self.corners.values():
                if x0 <= i <= x1:
                    px = cx + (i - x0) / (x1 - x0)
                    lines.moveTo(px, cy)
                    lines.lineTo(px, cy + 1.0)
                a, b = max(i + 0.5, x0), min(mask_to, x1)
                if b > a:
                    shade.addRect(QRectF(cx + (a - x0) / (x1 - x0), cy, (b - a) / (x1 - x0), 1.0))
        self.markers.setPath(lines)
        self.masked.setPath(shade)

    def mark_head(self, *_) -> None:
        """Frame the selected head's cell when several are shown."""
        head = self.state.head if self.state is not None else None
        if len(self.heads) > 1 and head in self.corners:
            x, y = self.corners[head]
            self.selected.setRect(QRectF(x, y, 1.0, 1.0))
            self.selected.setPen(cosmetic_pen(head_color(head), 2))
            self.selected.setVisible(True)
        else:
            self.selected.setVisible(False)

    def _cell_pixels(self) -> tuple[float, float]:
        """A cell's width and height on screen, in pixels."""
        view = self.vb.viewRect()
        return (self.vb.width() / max(view.width(), 1e-9),
                self.vb.height() / max(view.height(), 1e-9))

    # ------------------------------------------------------------------ ticks

    def _update_ticks(self, *_) -> None:
        """Shared tick values from the cells' size in pixels, labelled under every column
        and left of every row; light grid lines at them inside every cell."""
        bottom, left = self.plot.getAxis("bottom"), self.plot.getAxis("left")
        if self.x_range is None or not self.heads:
            self.x_ticks, self.y_ticks = [], []
            bottom.setTicks([[]])
            left.setTicks([[]])
            self.grid_lines.setPath(QPainterPath())
            return
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        cell_w, cell_h = self._cell_pixels()
        # x labels sit side by side, also across the gap to the next column: as far apart
        # as the widest label needs, none within half a label of a cell's side, and only
        # one per cell when two do not fit
        font = bottom.style.get("tickFont") or QFont()
        widest = max((f"{round(max(abs(x0), abs(x1)))}", f"{nice_step(x1 - x0):g}"), key=len)
        label_px = QFontMetrics(font).horizontalAdvance(widest) + 8
        x_per_px = (x1 - x0) / max(cell_w, 1.0)
        two = cell_w >= 2.5 * label_px
        xs = tick_values(x0, x1, x_per_px * max(TICK_PX_X, label_px), x_per_px * label_px / 2,
                          least=2 if two else 1, floor=x_per_px * (label_px - 4) if two else 0)
        y_per_px = (y1 - y0) / max(cell_h, 1.0)
        # two labels a row where they fit; in a short cell none closer than a digit's
        # height and a little space
        label_h = QFontMetrics(left.style.get("tickFont") or QFont()).capHeight() + 4
        ys = tick_values(y0, y1, y_per_px * TICK_PX_Y, 0.04 * (y1 - y0),
                          floor=y_per_px * label_h)
        x_step = xs[1] - xs[0] if len(xs) > 1 else 1.0
        y_step = ys[1] - ys[0] if len(ys) > 1 else 1.0
        x_text = bottom.tickStrings(xs, 1.0, x_step)
        y_text = left.tickStrings(ys, 1.0, y_step)
        fxs = [(v - x0) / (x1 - x0) for v in xs]  # the fractions of a cell's width, height
        fys = [(v - y0) / (y1 - y0) for v in ys]
        x_ticks = [(c * (1 + GAP_X) + f, t) for c in range(self.cols) for f, t in zip(fxs, x_text)]
        y_ticks = [((self.rows - 1 - r) * (1 + GAP_Y) + f, t)
                   for r in range(self.rows) for f, t in zip(fys, y_text)]
        grid = _grid_path(self.corners.values(), fxs, fys)
        for h, name in self.names.items():  # the number alone where a cell is small
            name.setText(f"head {h}" if cell_w >= NAME_SHORT_BELOW_PX else str(h))
        if x_ticks != self.x_ticks:  # an axis given ticks draws them again
            bottom.setTicks([x_ticks])
        if y_ticks != self.y_ticks:
            left.setTicks([y_ticks])
            _fit_left_axis(left, y_text)
        self.x_ticks, self.y_ticks = x_ticks, y_ticks
        self.grid_lines.setPath(grid)


class HeadName(QGraphicsSimpleTextItem):
    """A cell's "head h", top left in the cell, on a light ground that keeps it legible
    over the curves. Its size on screen is fixed (Qt's ItemIgnoresTransformations) and it
    is kept as a pixmap: pyqtgraph's TextItem recomputes its transform in Python before
    every paint of the scene, which with 25 heads x 4 plots was a quarter of the GUI
    thread's time to show all heads."""

    def __init__(self, text: str, color: str):
        super().__init__(text)
        font = QFont()
        font.setPointSizeF(8.5)
        font.setBold(True)
        self.setFont(font)
        self.setBrush(QColor(color))
        self.setPen(QPen(Qt.NoPen))
        self.setZValue(20)
        self.setFlag(QGraphicsItem.ItemIgnoresTransformations)
        self.setCacheMode(QGraphicsItem.DeviceCoordinateCache)

    def boundingRect(self) -> QRectF:  # the text NAME_INSET pixels into the cell, its ground
        return super().boundingRect().adjusted(-2, -1, 2, 1).translated(NAME_INSET, NAME_INSET)

    def paint(self, painter, option, widget=None) -> None:
        painter.fillRect(self.boundingRect(), NAME_FILL)
        painter.translate(NAME_INSET, NAME_INSET)
        super().paint(painter, option, widget)


def _fit_left_axis(left: pg.AxisItem, texts: list[str]) -> None:
    """The left axis as wide as its widest label now: pyqtgraph widens it only when it
    paints them, and the cells would move under the mouse after that paint."""
    font = left.style.get("tickFont") or QFont()
    widest = max((QFontMetrics(font).horizontalAdvance(t) for t in texts), default=0)
    label = QFontMetrics(QFont()).height() + 4 if left.label.isVisible() else 0
    width = max(30, widest + 12 + label)
    if left.width() != width:
        left.setWidth(width)


def _grid_path(corners, xs, ys) -> QPainterPath:
    """Grid lines in every unit cell whose lower-left corner is in `corners`: vertical at
    the fractions `xs` of its width, horizontal at the fractions `ys` of its height."""
    grid = QPainterPath()
    for cx, cy in corners:
        for fx in xs:
            grid.moveTo(cx + fx, cy)
            grid.lineTo(cx + fx, cy + 1.0)
        for fy in ys:
            grid.moveTo(cx, cy + fy)
            grid.lineTo(cx + 1.0, cy + fy)
    return grid
