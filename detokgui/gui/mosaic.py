"""A grid of heatmaps (one per head, or one per term) as ONE image in ONE plot.

The maps sit at the cells of a near-square grid, side by side in one array with a gap of
NaN between them (drawn as the background), coloured by one colour map on one colour
scale (its colour bar beside them), so that the maps compare. Their titles are one text
item each, the outlined cell of the selection is one path (the same cell in every map),
the selected map's frame one rectangle: a grid of 12 or 25 maps costs what one heatmap
costs.

`cell_at(scene_pos)` maps the mouse back to (map, row, column)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QFont, QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsRectItem

from detokgui.gui.colorbar import ColorBar
from detokgui.gui.plots import diverging_colormap, plain_axes
from detokgui.gui.small_multiples import cosmetic_pen, grid_columns

GAP = 0.08  # between two maps, in map widths (at least one cell)
TITLE_ROOM = 0.14  # above each map, in map heights, for its title


class HeatmapMosaic(QObject):
    """The maps of one PlotItem (`plot`) and its colour bar (`colorbar`), placed in
    `layout` at row 0 (`attach` places them there again after the layout was cleared):
    `set_maps(values [k, n, m], titles, levels)`."""

    cellClicked = Signal(int, int, int)  # map, row, column
    cellHovered = Signal(int, int, int)  # map, row, column; (-1, -1, -1) off the maps

    def __init__(self, layout: pg.GraphicsLayout, colormap: pg.ColorMap | None = None,
                 label: str = ""):
        super().__init__()
        self.plot = plain_axes(pg.PlotItem(enableMenu=False))
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.hideButtons()
        self.vb: pg.ViewBox = self.plot.getViewBox()
        self.vb.setMouseEnabled(False, False)
        self.vb.invertY(True)  # row 0 at the top, as in a single heatmap
        self.vb.setAspectLocked(False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.vb.addItem(self.image)
        self.colorbar = ColorBar(colormap or diverging_colormap(), label=label)
        self.colorbar.setImageItem(self.image)
        self.frames = QGraphicsPathItem()
        self.frames.setPen(cosmetic_pen("k", 1))
        self.frames.setZValue(5)
        self.vb.addItem(self.frames, ignoreBounds=True)
        self.marks = QGraphicsPathItem()
        self.marks.setPen(cosmetic_pen("k", 2))
        self.marks.setZValue(10)
        self.vb.addItem(self.marks, ignoreBounds=True)
        self.selected = QGraphicsRectItem()
        self.selected.setZValue(11)
        self.selected.setVisible(False)
        self.vb.addItem(self.selected, ignoreBounds=True)
        self.titles: list[pg.TextItem] = []
        self.values = np.zeros((0, 0, 0), dtype=np.float32)
        self.cols = self.rows = 0
        self.gap = 1
        self.title_rows = 1
        self.attach(layout)
        layout.scene().sigMouseMoved.connect(self._hovered)
        layout.scene().sigMouseClicked.connect(self._clicked)

    def attach(self, layout: pg.GraphicsLayout) -> None:
        """Place the maps and the colour bar in `layout`'s first row."""
        layout.addItem(self.plot, row=0, col=0)
        layout.addItem(self.colorbar, row=0, col=1)

    def shown(self) -> bool:
        """Whether the maps are in a scene (their layout may have been cleared)."""
        return self.plot.scene() is not None

    # ------------------------------------------------------------------ layout

    def origin(self, k: int) -> tuple[int, int]:
        """(x, y) of map k's top-left cell in the mosaic image."""
        n, m = self.values.shape[1:]
        r, c = divmod(k, self.cols)
        return c * (m + self.gap), self.title_rows + r * (n + self.gap + self.title_rows)

    def set_maps(self, values: np.ndarray, titles: Sequence[str],
                 levels: tuple[float, float], colors: Sequence[str] | None = None) -> None:
        """Show the maps `values` [k, n, m] (rows: queries, columns: keys) with their
        titles (in `colors`, else black), on one colour scale `levels`."""
        values = np.asarray(values, dtype=np.float32)
        k, n, m = values.shape
        self.values = values
        self.cols = grid_columns(k)
        self.rows = math.ceil(k / self.cols) if k else 0
        self.gap = max(1, round(GAP * m))
        self.title_rows = max(1, round(TITLE_ROOM * n))
        width = self.cols * (m + self.gap) - self.gap if k else 0
        height = self.rows * (n + self.gap + self.title_rows) - self.gap if k else 0
        mosaic = np.full((max(height, 1), max(width, 1)), np.nan, dtype=np.float32)
        frames = QPainterPath()
        for j in range(k):
            x, y = self.origin(j)
            mosaic[y:y + n, x:x + m] = values[j]
            frames.addRect(QRectF(x, y, m, n))
        self.image.setImage(mosaic, levels=levels)
        self.colorbar.setLevels(levels)
        self.frames.setPath(frames)
        while len(self.titles) < k:
            item = pg.TextItem("", color="k", anchor=(0, 1))
            font = QFont()
            font.setPointSizeF(9)
            item.setFont(font)
            self.vb.addItem(item, ignoreBounds=True)
            self.titles.append(item)
        for j, item in enumerate(self.titles):
            item.setVisible(j < k)
            if j < k:
                item.setText(titles[j])
                item.setColor(colors[j] if colors is not None else "k")
                item.setPos(*self.origin(j))
        self.vb.setRange(xRange=(0, max(width, 1)), yRange=(0, max(height, 1)), padding=0.01)

    # ------------------------------------------------------------------ selection

    def mark(self, r: int, c: int) -> None:
        """Outline cell (r, c) in every map (row r alone when c < 0, column c alone when
        r < 0; nothing when both are)."""
        path = QPainterPath()
        k, n, m = self.values.shape
        if r >= 0 or c >= 0:
            dx, w = (c, 1) if c >= 0 else (0, m)
            dy, h = (r, 1) if r >= 0 else (0, n)
            for j in range(k):
                x, y = self.origin(j)
                path.addRect(QRectF(x + dx, y + dy, w, h))
        self.marks.setPath(path)

    def select(self, k: int | None, color: str = "#d62728") -> None:
        """A thick frame in `color` around map k (None: none)."""
        maps, n, m = self.values.shape
        if k is None or not 0 <= k < maps or maps < 2:
            self.selected.setVisible(False)
            return
        x, y = self.origin(k)
        self.selected.setRect(QRectF(x, y, m, n))
        self.selected.setPen(cosmetic_pen(color, 3))
        self.selected.setVisible(True)

    # ------------------------------------------------------------------ mouse

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int, int] | None:
        """(map, row, column) under a scene position, or None off the maps."""
        k, n, m = self.values.shape
        if not k or not self.shown() or not self.vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = self.vb.mapSceneToView(scene_pos)
        c_map = math.floor(p.x() / (m + self.gap))
        r_map = math.floor(p.y() / (n + self.gap + self.title_rows))
        j = r_map * self.cols + c_map
        if not (0 <= c_map < self.cols and 0 <= j < k):
            return None
        x, y = self.origin(j)
        col, row = math.floor(p.x() - x), math.floor(p.y() - y)
        if 0 <= row < n and 0 <= col < m:
            return j, row, col
        return None

    def _hovered(self, scene_pos) -> None:
        hit = self.cell_at(scene_pos)
        self.cellHovered.emit(*(hit if hit is not None else (-1, -1, -1)))

    def _clicked(self, ev) -> None:
        if ev.button() != Qt.LeftButton:
            return
        hit = self.cell_at(ev.scenePos())
        if hit is not None:
            self.cellClicked.emit(*hit)
            ev.accept()
