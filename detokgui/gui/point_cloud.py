"""Tens of thousands of points in one scatter plot, with hover and click found by numpy."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, Qt, Signal, Slot


class PointCloud(QObject):
    """Many points (x, y, token id) in a PlotItem: one ScatterPlotItem without per-point
    brushes, and the point nearest the mouse (within `radius` pixels) found with numpy,
    so hover stays quick for 50,000 points. `hovered(index)` (-1 when none) and
    `clicked(index)` give indices into the arrays of the last `set_points`."""

    hovered = Signal(int)
    clicked = Signal(int)

    def __init__(self, plot: pg.PlotItem, radius: float = 8.0):
        super().__init__(plot)
        self.plot = plot
        self.radius = radius
        self.x = np.zeros(0)
        self.y = np.zeros(0)
        self.scatter = pg.ScatterPlotItem(size=4, pen=None, brush=pg.mkBrush(31, 119, 180, 110),
                                          hoverable=False, pxMode=True, antialias=True)
        self.mark = pg.ScatterPlotItem(size=12, pen=pg.mkPen("#d62728", width=2), brush=None,
                                       symbol="o", antialias=True)
        self.mark.setZValue(10)
        plot.addItem(self.scatter)
        plot.addItem(self.mark)
        scene = plot.scene()
        scene.sigMouseMoved.connect(self._moved)
        scene.sigMouseClicked.connect(self._clicked)

    def set_points(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x = np.asarray(x, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.scatter.setData(x=self.x, y=self.y)

    def mark_point(self, index: int) -> None:
        """Ring the point `index` (-1: none)."""
        if 0 <= index < self.x.shape[0]:
            self.mark.setData(x=[self.x[index]], y=[self.y[index]])
        else:
            self.mark.setData(x=[], y=[])

    def nearest(self, scene_pos: QPointF) -> int:
        vb = self.plot.getViewBox()
        if self.x.size == 0 or not vb.sceneBoundingRect().contains(scene_pos):
            return -1
        p = vb.mapSceneToView(scene_pos)
        px, py = vb.viewPixelSize()
        if px <= 0 or py <= 0:
            return -1
        d = ((self.x - p.x()) / px) ** 2 + ((self.y - p.y()) / py) ** 2
        i = int(np.nanargmin(d)) if np.isfinite(d).any() else -1
        return i if i >= 0 and d[i] <= self.radius ** 2 else -1

    @Slot(object)
    def _moved(self, pos) -> None:
        self.hovered.emit(self.nearest(pos))

    def _clicked(self, ev) -> None:
        if ev.button() != Qt.LeftButton or ev.double():
            return
        i = self.nearest(ev.scenePos())
        if i >= 0:
            self.clicked.emit(i)
            ev.accept()
