"""Compare (5): the head matching of A and B (core.compare.pair.HeadMatching) as a heatmap of
similarity, A's heads as rows and B's as columns, the one-to-one assignment marked: a
solid white square where the pair is matched, a dashed grey one where it has no match
(its similarity not above what unrelated heads reach); the hover shows a cell's parts and
threshold, a click selects that pair of heads."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt

from detokgui.core.compare.pair import matching_table
from detokgui.core.compare.pair_texts import matching_title
from detokgui.gui.colorbar import ColorBar
from detokgui.gui.panels.compare_base import ComparePanel
from detokgui.gui.plots import PlotFrame, add_plot, set_title
from detokgui.gui.small_multiples import cosmetic_pen

MAX_TICKS = 32
NO_MATCH_PEN = "#c8c8c8"


class HeadMatchingPanel(ComparePanel):
    title = "Head matching"
    view_name = "matching"
    tooltip = ("Similarity of every head of A with every head of B from the weights "
               "(positional pattern and token affinity), the best one-to-one assignment "
               "marked, pairs no more alike than unrelated heads as 'no match'; click a "
               "cell to select that pair")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = self.body_layout
        lay.addWidget(self.pair_text)
        self.frame = PlotFrame("Head matching", self._table, analysis="compare")
        self.plot = add_plot(self.frame, controls=False, mouse=False, invert_y=True,
                             left="head of A", bottom="head of B")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setColorMap(pg.colormap.get("viridis"))
        self.plot.addItem(self.image)
        self.assigned, self.unmatched = (  # the matched and the unmatched assigned pairs
            pg.ScatterPlotItem(symbol="s", size=14, brush=None, pen=pen, antialias=True)
            for pen in (pg.mkPen("w", width=2),
                        pg.mkPen(NO_MATCH_PEN, width=2, style=Qt.DashLine)))
        for item in (self.assigned, self.unmatched):
            item.setZValue(5)
            self.plot.addItem(item)
        self.selected = pg.QtWidgets.QGraphicsRectItem()
        self.selected.setPen(cosmetic_pen("#d62728", 3))
        self.selected.setZValue(10)
        self.selected.setVisible(False)
        self.plot.addItem(self.selected)
        self.colorbar = ColorBar("viridis", values=(0.0, 1.0), label="similarity")
        self.colorbar.setImageItem(self.image)
        self.frame.view.addItem(self.colorbar)
        self.frame.setToolTip("White squares: matched pairs of the assignment. Dashed grey: "
                              "assigned, but no match (no more alike than unrelated heads). "
                              "Red: the selected pair. Click a cell to select that pair of "
                              "heads.")
        lay.addWidget(self.frame, 1)
        lay.addWidget(self.status)
        self.frame.view.scene().sigMouseMoved.connect(self._hover)
        self.frame.view.scene().sigMouseClicked.connect(self._click)
        self._draw_matching()

    def matching_changed(self) -> None:
        self.when_visible(self._draw_matching)()

    compare_changed = matching_changed

    def showEvent(self, event):
        super().showEvent(event)
        self._draw_matching()

    def _draw_matching(self) -> None:
        m = self.state.matching
        if m is None:
            self.image.clear()
            self.assigned.setData([], [])
            self.unmatched.setData([], [])
            self.selected.setVisible(False)
            set_title(self.plot, "")
            self.status.setText(self.waiting_text())
            self.pair_text.setText("")
            return
        sim = np.asarray(m.similarity, dtype=np.float32)
        ha, hb = sim.shape
        self.image.setImage(sim, levels=(0.0, 1.0), autoLevels=False)
        self.image.setRect(QRectF(0, 0, hb, ha))
        self.colorbar.setLevels((0.0, 1.0))
        for item, want in ((self.assigned, True), (self.unmatched, False)):
            pairs = [p for p, ok in zip(m.assignment, m.matched) if ok is want]
            item.setData([b + 0.5 for _, b in pairs], [a + 0.5 for a, _ in pairs])
        for axis, n in (("left", ha), ("bottom", hb)):
            step = max(1, math.ceil(n / MAX_TICKS))
            self.plot.getAxis(axis).setTicks([[(k + 0.5, str(k)) for k in range(0, n, step)],
                                              []])
        self.plot.setRange(xRange=(0, hb), yRange=(0, ha), padding=0)
        set_title(self.plot, matching_title(m))
        self.status.setText(f"Dashed grey squares — {m.rule()}. Hover over a cell to read its "
                            "parts; click to select the pair.")
        self.heads_changed()

    def heads_changed(self) -> None:
        s = self.state
        self.pair_text.setText(self.pair_label())
        if s.matching is None or s.head_b is None:
            self.selected.setVisible(False)
            return
        self.selected.setRect(QRectF(s.head_b, s.head, 1, 1))
        self.selected.setVisible(True)

    def cell_at(self, scene_pos) -> tuple[int, int] | None:
        """(head of A, head of B) under a scene point, None outside the matrix."""
        m = self.state.matching
        vb = self.plot.getViewBox()
        if m is None or not vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = vb.mapSceneToView(scene_pos)
        a, b = math.floor(p.y()), math.floor(p.x())
        ha, hb = m.shape
        return (a, b) if 0 <= a < ha and 0 <= b < hb else None

    def _hover(self, pos) -> None:
        cell = self.cell_at(pos)
        if cell is not None:
            self.status.setText(self.state.matching.describe(*cell))

    def _click(self, ev) -> None:
        if ev.button() != Qt.LeftButton or ev.double():
            return
        cell = self.cell_at(ev.scenePos())
        if cell is not None:
            self.state.set_head_pair(*cell)
            ev.accept()

    def _table(self):
        m = self.state.matching
        return None if m is None else matching_table(m)
