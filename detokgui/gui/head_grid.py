"""The per-head small multiples of one PlotFrame (HeadGrid of HeadCell), shared by the
position and text panels: shared axes, light cells, curves thinned to the pixels they get."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsRectItem,
    QGraphicsSimpleTextItem,
)

from detokgui.gui.axis_specs import FastAxis
from detokgui.gui.plots import PlotFrame, head_color, laid_out_once
from detokgui.gui.position import position_at
from detokgui.gui.view_ranges import nice_step, smaller_nice_step

LEFT_AXIS_WIDTH = 46
TICK_PX_X = 40  # at least this many pixels between labelled x ticks
TICK_PX_Y = 28
TITLE_SIZE = "10pt"
TITLE_HEIGHT = 24  # one line; a long title wraps and its row grows
MASKED_BRUSH = QColor(120, 120, 120, 38)




def peak_decimate(x: np.ndarray, y: np.ndarray, pixels: float) -> tuple[np.ndarray, np.ndarray]:
    """At most ~2 points per pixel: consecutive points in bins of k, each bin drawn as its
    min and its max (so every spike stays visible), the last partial bin as is.

    A 1024-point line in a 100-pixel plot draws 5x faster and looks the same."""
    n = y.shape[0]
    k = int(np.ceil(n / max(pixels, 1.0)))
    if pixels < 2 or k < 3:
        return x, y
    m = (n // k) * k
    yb = y[:m].reshape(-1, k)
    ys = np.empty(2 * yb.shape[0] + (n - m), dtype=y.dtype)
    xs = np.empty_like(ys, dtype=np.float64)
    ys[0:2 * yb.shape[0]:2] = yb.min(axis=1)
    ys[1:2 * yb.shape[0]:2] = yb.max(axis=1)
    xb = x[:m].reshape(-1, k)
    xs[0:2 * yb.shape[0]:2] = xb[:, 0]
    xs[1:2 * yb.shape[0]:2] = xb[:, -1]
    ys[2 * yb.shape[0]:] = y[m:]
    xs[2 * yb.shape[0]:] = x[m:]
    return xs, ys


def envelope_decimate(x: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                      pixels: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The band lower..upper over increasing x at pixel resolution: x[0]..x[-1] cut into
    `pixels` equal bins, each drawn from its first x to its last at the least `lower` and
    the greatest `upper` of its points, so the band is never thinner than the data's.
    Unchanged when that would not make fewer points (or `pixels` is None).

    Filling a 1024-point band in a 130-pixel cell takes ~7x less time thinned."""
    n = x.shape[0]
    if pixels is None or pixels < 2 or n <= 2 * pixels:
        return x, lower, upper
    span = float(x[-1]) - float(x[0])
    bins = np.minimum(((x - x[0]) * (pixels / span)).astype(np.int64), int(pixels))
    starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
    ends = np.r_[starts[1:] - 1, n - 1]
    xs = np.column_stack([x[starts], x[ends]]).ravel()
    return (xs, np.repeat(np.minimum.reduceat(lower, starts), 2),
            np.repeat(np.maximum.reduceat(upper, starts), 2))


def grid_columns(n: int) -> int:
    return 1 if n <= 1 else math.ceil(math.sqrt(n))


class ViewCurve(pg.PlotCurveItem):
    """A curve whose bounding rectangle is the view range of its cell.

    pyqtgraph computes a curve's bounds from its data (nan-aware min/max and pixel
    padding) after every setData: ~0.1 ms per curve, 7 ms per slider step for 60 curves.
    The view clips its children anyway and these views never auto-range, so the view
    rectangle is a correct (if generous) bound at no cost."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self._view_rect = QRectF()

    def set_view_rect(self, rect: QRectF) -> None:
        if rect != self._view_rect:
            self.prepareGeometryChange()
            self._view_rect = QRectF(rect)

    def boundingRect(self):
        return self._view_rect

    def dataBounds(self, ax, frac=1.0, orthoRange=None):
        r = self._view_rect
        return (r.left(), r.right()) if ax == 0 else (r.top(), r.bottom())

    def set_xy(self, x: np.ndarray, y: np.ndarray) -> None:
        """setData(x, y) for 1-D float arrays of one length, less its general work (option
        parsing, a geometry change and a notice to the view about bounds that are the
        view's own, a signal nobody here listens to): ~3x less GUI time per curve, 60
        curves per slider step on the bias panel."""
        self.xData, self.yData = x, y
        self.invalidateBounds()
        self.path = self.fillPath = self._fillPathList = self._mouseShape = None
        self._lineSegmentsRendered = False
        self.update()


class HeadCell(pg.GraphicsLayout):
    """One head's plot: a view box with left and bottom axes, the head's name in its
    corner, a shaded "masked" region (keys j > i) and a marker line at j = i.

    Lighter than a PlotItem (no plot-options menu, which costs ~5 ms each to build), so
    a grid of 12 heads in four plots builds in a fraction of a second."""

    def __init__(self, head: int):
        super().__init__()
        self.head = head
        self.layout.setContentsMargins(2, 2, 2, 2)
        self.layout.setSpacing(0)
        self.vb = pg.ViewBox(enableMenu=False, defaultPadding=0)
        self.vb.disableAutoRange()
        self.left = FastAxis("left", linkView=self.vb)
        self.bottom = FastAxis("bottom", linkView=self.vb)
        self.left.setWidth(LEFT_AXIS_WIDTH)
        for ax in (self.left, self.bottom):
            ax.enableAutoSIPrefix(False)  # else every range change re-renders its label
        with laid_out_once(self):
            self.addItem(self.left, row=0, col=0)
            self.addItem(self.vb, row=0, col=1)
            self.addItem(self.bottom, row=1, col=1)
        self.name = QGraphicsSimpleTextItem(f"head {head}", self.vb)
        self.name.setBrush(QBrush(QColor(head_color(head))))
        font = QFont()
        font.setPointSizeF(8.5)
        font.setBold(True)
        self.name.setFont(font)
        self.name.setPos(4, 1)
        self.name.setZValue(20)
        # Static between range changes: paint the name and the axes from pixmaps while a
        # slider redraws the curves (a grid of 48 plots repaints in a few ms less).
        for item in (self.name, self.left, self.bottom):
            item.setCacheMode(QGraphicsItem.DeviceCoordinateCache)
        self.masked = QGraphicsRectItem()
        self.masked.setBrush(QBrush(MASKED_BRUSH))
        self.masked.setPen(QPen(Qt.NoPen))
        self.masked.setZValue(-10)
        self.masked.setVisible(False)
        self.vb.addItem(self.masked, ignoreBounds=True)
        self.marker = QGraphicsLineItem()
        pen = QPen(QColor(0, 0, 0, 170), 0, Qt.DashLine)
        pen.setCosmetic(True)
        self.marker.setPen(pen)
        self.marker.setZValue(-5)
        self.marker.setVisible(False)
        self.vb.addItem(self.marker, ignoreBounds=True)
        self.curves: dict[str, pg.PlotCurveItem] = {}
        self._small = None  # set_small's last choice
        self.selected = False
        self.ranges = None  # ((x0, x1), (y0, y1)) last set by set_view
        self.full: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # undecimated curve data
        self.vb.sigRangeChanged.connect(self._range_changed)  # set here or by the mouse

    def add_curve(self, name: str, pen, visible: bool = True) -> pg.PlotCurveItem:
        curve = ViewCurve(pen=pen, skipFiniteCheck=True)
        curve.set_view_rect(self._view_rect())
        curve.setVisible(visible)
        if self._small is not None:
            curve.opts["antialias"] = not self._small
        self.vb.addItem(curve)
        self.curves[name] = curve
        return curve

    def _view_rect(self) -> QRectF:
        return self.vb.viewRect() if self.ranges is not None else QRectF()

    def _range_changed(self, *_) -> None:
        rect = self.vb.viewRect()
        for curve in self.curves.values():
            curve.set_view_rect(rect)

    def pixels_across(self, x: np.ndarray) -> float | None:
        """How many pixels of this cell x[0]..x[-1] spans; None before set_view."""
        w = self.vb.width()
        if self.ranges is None or w <= 1 or x.shape[0] <= 2:
            return None
        x0, x1 = self.ranges[0]
        return w * (float(x[-1]) - float(x[0])) / max(x1 - x0, 1e-12)

    def set_curve(self, name: str, x: np.ndarray, y: np.ndarray) -> None:
        """Show (x, y) on curve `name`, thinned to ~2 points per pixel of this cell when
        the view's range is set (call set_view first); `full[name]` keeps the data."""
        self.full[name] = (x, y)
        pixels = self.pixels_across(x)
        if pixels is not None:
            x, y = peak_decimate(x, y, pixels)
        self.curves[name].set_xy(np.asarray(x), np.asarray(y))

    def set_small(self, small: bool) -> None:
        # Antialiasing every segment of 48 small curves costs most of a slider frame;
        # at small-multiple size the difference is not visible.
        if small == self._small:
            return  # restyling the axes re-renders them: only on a change
        self._small = small
        for curve in self.curves.values():
            curve.opts["antialias"] = not small
        self.bottom.setLabel(None if small else "key position j")
        self.bottom.showLabel(not small)
        font = QFont()
        font.setPointSizeF(7.5 if small else 9)
        for ax in (self.left, self.bottom):
            # labels may run this many pixels past the axis ends: "0" at the left edge
            # shows, a wide label would reach into the next cell and is dropped
            ax.setStyle(tickFont=font, tickLength=-4 if small else -5,
                        hideOverlappingLabels=4 if small else 12)

    def set_selected(self, selected: bool) -> None:
        """Frame the selected head's cell (in a grid of several) and underline its name.
        Only a change is applied: a new border or font repaints the cell, and a grid
        calls this for every cell at each change of head."""
        if selected == self.selected:
            return
        self.selected = selected
        pen = pg.mkPen(head_color(self.head), width=2) if selected else None
        self.vb.setBorder(pen)
        font = self.name.font()
        font.setUnderline(selected)
        self.name.setFont(font)

    def show_axes(self, left: bool, bottom: bool) -> None:
        self.left.setVisible(left)
        self.bottom.setVisible(bottom)
        self.left.setWidth(LEFT_AXIS_WIDTH if left else 0)
        self.bottom.setHeight(None if bottom else 0)

    def set_view(self, x_range, y_range, i: int | None, mask_to: float) -> None:
        """Set the shown ranges; with i, mark j = i and shade keys j > i up to mask_to."""
        (x0, x1), (y0, y1) = x_range, y_range
        if self.ranges != ((x0, x1), (y0, y1)):
            self.vb.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0, update=True)
            # pyqtgraph applies a new range to the view's transform only when it is about
            # to paint, and that change schedules a second full paint; apply it now.
            self.vb.updateMatrix()
            self.ranges = ((x0, x1), (y0, y1))
        if i is None:
            self.marker.setVisible(False)
            self.masked.setVisible(False)
            return
        self.marker.setLine(float(i), y0, float(i), y1)
        self.marker.setVisible(True)
        self.masked.setRect(QRectF(i + 0.5, y0, max(0.0, mask_to - i - 0.5), y1 - y0))
        self.masked.setVisible(mask_to > i + 0.5)

    def set_ticks(self, x_step: float | None, y_step: float | None) -> None:
        # only on a change: setting the spacing makes the axis re-render its labels
        for ax, step in ((self.bottom, x_step), (self.left, y_step)):
            if step and ax.isVisible() and ax._tickSpacing != [(step, 0)]:
                ax.setTickSpacing(levels=[(step, 0)])


class HeadGrid:
    """The per-head cells of one PlotFrame: a title row, then the visible heads' cells on
    a near-square grid. All cells show the same ranges (shared axes: set explicitly; tick
    labels only on the left column and bottom row). Cells are built once per head and
    reused; `build(cell)` adds a new cell's curves."""

    def __init__(self, frame: PlotFrame, title: str, build: Callable[[HeadCell], None],
                 state=None):
        self.frame = frame
        self.state = state  # with it, the selected head's cell is framed
        self.layout: pg.GraphicsLayout = frame.view.ci
        self.layout.setContentsMargins(4, 2, 8, 4)
        self.layout.setSpacing(2)
        self.build = build
        self.title = pg.LabelItem(" ", size=TITLE_SIZE, justify="left")
        self.title.setMinimumWidth(0)
        self.title.setFixedHeight(TITLE_HEIGHT)
        self.set_title(title)
        self.cells: dict[int, HeadCell] = {}
        self.heads: list[int] = []
        self.x_range: tuple[float, float] | None = None  # shown by every cell
        self.y_range: tuple[float, float] | None = None
        self.layout.addItem(self.title, row=0, col=0)
        if state is not None:
            state.headChanged.connect(self.mark_head)

    def mark_head(self, *_) -> None:
        """Frame the cell of the selected head when several are shown."""
        if self.state is None:
            return
        many = len(self.heads) > 1
        for h, cell in self.cells.items():
            cell.set_selected(many and h == self.state.head and h in self.heads)

    def cell(self, head: int) -> HeadCell:
        cell = self.cells.get(head)
        if cell is None:
            cell = HeadCell(head)
            cell.vb.sigResized.connect(self.update_ticks)
            self.build(cell)
            self.cells[head] = cell
        return cell

    def visible(self) -> list[HeadCell]:
        return [self.cells[h] for h in self.heads]

    def set_heads(self, heads: list[int]) -> bool:
        """Lay out the cells of `heads`; False when they are already shown. The other
        cells stay in the scene, hidden: taking a cell out of the scene and putting it
        back walked all its items (about half of a change of heads)."""
        heads = list(heads)
        if heads == self.heads:
            return False
        n = len(heads)
        cols = grid_columns(n)
        rows = math.ceil(n / cols) if n else 0
        grid = self.layout.layout
        for index in reversed(range(grid.count())):
            grid.removeAt(index)  # out of the grid, not out of the scene
        grid.addItem(self.title, 0, 0, 1, max(1, cols))
        shown = set(heads)
        for h, cell in self.cells.items():
            if h not in shown:
                cell.hide()
        for k, h in enumerate(heads):
            cell = self.cell(h)
            r, c = divmod(k, cols)
            below = k + cols < n
            cell.show_axes(left=c == 0, bottom=not below)
            cell.set_small(n > 1)
            grid.addItem(cell, 1 + r, c)
            cell.show()
        grid.setRowStretchFactor(0, 0)
        for r in range(1, grid.rowCount()):
            grid.setRowStretchFactor(r, 1 if r <= rows else 0)
        for c in range(grid.columnCount()):
            grid.setColumnStretchFactor(c, 1 if c < cols else 0)
        grid.activate()
        # While only the (height-limited) title was in it, activating the layout shrank the
        # top-level item to the title's height; give it the view's area back.
        self.layout.setGeometry(self.frame.view.range)
        self.heads = heads
        self.mark_head()
        return True

    def set_title(self, html: str) -> None:
        """Change the title's text without asking the layout for room: LabelItem.setText
        would, and a text that grows (i = 999 -> 1000) re-lays out every cell."""
        if html != self.title.text:
            self.title.text = html
            self.title.item.setHtml(
                f"<span style='color:#000000; font-size:{TITLE_SIZE}'>{html}</span>")
            self.wrap_title()

    def wrap_title(self, *_) -> None:
        """Wrap the title to the plot's width; its row grows by whole lines (a re-layout
        only when the number of lines changes)."""
        width = max(80.0, self.frame.view.width() - 16.0)
        if self.title.item.textWidth() != width:
            self.title.item.setTextWidth(width)
        height = max(24.0, math.ceil(self.title.item.boundingRect().height()))
        if height != self.title.height():
            self.title.setFixedHeight(height)

    def set_view(self, x_range, y_range, i: int | None = None, mask_to: float = 0.0) -> None:
        self.x_range, self.y_range = tuple(x_range), tuple(y_range)
        for cell in self.visible():
            cell.set_view(x_range, y_range, i, mask_to)
        self.update_ticks()

    def update_ticks(self, *_) -> None:
        """The same tick steps on every cell (shared axes), from the smallest cell's size in
        pixels: small multiples get a few readable labels (pyqtgraph's own choice overlaps
        them in cells ~100 px wide)."""
        self.wrap_title()
        cells = [c for c in self.visible() if c.ranges is not None]
        if not cells:
            return
        (x0, x1), (y0, y1) = cells[0].ranges
        w = min(c.vb.width() for c in cells)
        h = min(c.vb.height() for c in cells)
        x_step = nice_step((x1 - x0) * TICK_PX_X / w) if w > 1 else None
        y_step = None
        if h > 1:
            y_step = nice_step((y1 - y0) * TICK_PX_Y / h)
            # Labels at the very ends are dropped (they would reach into the next cell):
            # make sure at least two ticks lie inside, away from the ends.
            margin = 7 * (y1 - y0) / h
            for _ in range(3):
                first = math.ceil((y0 + margin) / y_step)
                if math.floor((y1 - margin) / y_step) - first >= 1:
                    break
                y_step = smaller_nice_step(y_step)
        for c in cells:
            c.set_ticks(x_step, y_step)
        if y_step:
            self._fit_left_axes(cells, y0, y1, y_step)

    @staticmethod
    def _fit_left_axes(cells, y0: float, y1: float, step: float) -> None:
        """Widen the left axes (all alike, for aligned cells) to their widest tick label, so
        that small values (0.00025) keep their labels; never narrower than LEFT_AXIS_WIDTH."""
        shown = [c for c in cells if c.left.isVisible()]
        if not shown:
            return
        ax = shown[0].left
        values = [k * step for k in range(math.ceil(y0 / step), math.floor(y1 / step) + 1)]
        texts = ax.tickStrings(values, 1.0, step) if values else []
        font = ax.style.get("tickFont") or QFont()
        metrics = QFontMetrics(font)
        width = max([LEFT_AXIS_WIDTH] + [metrics.horizontalAdvance(t) + 12 for t in texts])
        for c in shown:
            if c.left.width() != width:
                c.left.setWidth(width)

    def at(self, scene_pos: QPointF, n_positions: int) -> tuple[int, int] | None:
        """(head, key position j) of the cell under a scene position, or None."""
        for h in self.heads:
            j = position_at(self.cells[h].vb, scene_pos, n_positions)
            if j is not None:
                return h, j
        return None

    def position(self, scene_pos: QPointF, n_positions: int) -> int | None:
        """The key position j under a scene position in any cell, or None."""
        hit = self.at(scene_pos, n_positions)
        return None if hit is None else hit[1]






