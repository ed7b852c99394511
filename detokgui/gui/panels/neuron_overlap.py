"""Part of the B6 neuron browser: how much the position-heavy dimensions of P overlap the
token embedding's top SVD directions — its controls (r, m, centring), bar plot and line."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSizePolicy, QVBoxLayout, QWidget

from detokgui.core.base.numbers import num
from detokgui.core.model.conventions import INK_COLOUR
from detokgui.core.position_side import neurons
from detokgui.core.position_side.tables import embedding_overlap_table
from detokgui.gui.panels.base import StatusLine
from detokgui.gui.plots import PlotFrame, add_plot, fit_label, set_title

#: The x axis's title, longest first: the first that fits the plot's width is shown.
AXIS_TITLES = ("SVD direction of E (0 = largest)", "SVD direction (0 = largest)",
               "SVD direction")


def legend(columns: int = 1) -> pg.LegendItem:
    """A legend for a cell of a GraphicsLayout. pyqtgraph makes legends ignore transformations
    (to float unscaled over a plot); in a layout that only keeps them small in a 2x PNG."""
    leg = pg.LegendItem(labelTextSize="8pt", colCount=columns, frame=False,
                        labelTextColor=INK_COLOUR)
    leg.setFlag(leg.GraphicsItemFlag.ItemIgnoresTransformations, False)
    return leg


def entry_size(leg: pg.LegendItem) -> tuple[float, float]:
    """The width of the legend's widest entry (sample and text) and the height of its
    tallest; (0, 0) when it is empty."""
    width = max((s.boundingRect().width() + lab.item.boundingRect().width() + 12
                 for s, lab in leg.items), default=0)
    height = max((max(s.boundingRect().height(), lab.item.boundingRect().height())
                  for s, lab in leg.items), default=0)
    return width, height


def fit_legend(leg: pg.LegendItem, columns: int) -> None:
    """Lay the entries out in `columns` columns as wide as the widest entry, and fix the
    legend's size to that (a grid layout would otherwise squeeze it, or widen the plot
    past its view); hidden when empty."""
    width, height = entry_size(leg)
    columns = max(1, min(columns, len(leg.items)))
    if leg.columnCount != columns:
        leg.setColumnCount(columns)
    rows = -(-len(leg.items) // columns)
    leg.setFixedWidth(max(width * columns, 1))
    leg.setFixedHeight(max(rows * height, 1))
    leg.setVisible(bool(leg.items))


class OverlapView(QWidget):
    """The r / m / centre options of the panel's `options` (an OptionRow), the overlap bars
    with the m/d baseline, and a line of text (`info`, the channel's StatusLine)."""

    def __init__(self, options, parent=None):
        super().__init__(parent)
        self.overlap: neurons.EmbeddingOverlap | None = None
        bl = QVBoxLayout(self)
        bl.setContentsMargins(0, 0, 0, 0)
        self.options_row = options.row(("r", "m", "centre"))
        bl.addLayout(self.options_row)
        self.r_spin, self.m_spin = options.widget("r"), options.widget("m")
        self.frame = PlotFrame("PE-token SVD overlap", self._table,
                               analysis="embedding_overlap")
        self.plot = add_plot(self.frame, grid="y", mouse=False, left="share on heavy dims",
                             bottom=AXIS_TITLES[0])
        self.legend = legend(columns=2)
        self.frame.view.addItem(self.legend, row=1, col=0)
        self.frame.setMinimumHeight(200)
        self.frame.setToolTip(
            "For each top SVD direction u of the token embedding E (unit vector in R^d): "
            "Σ_{k in heavy dims} u_k²,\nthe fraction of its squared weight on the m position-heavy "
            "dimensions. Dashed: m/d, what a random direction gives.")
        bl.addWidget(self.frame, 1)
        self.info = StatusLine()
        # two short lines, their height reserved (a label that wraps on its own is not
        # given the height it then needs inside a splitter, and would cover the plot)
        self.info.setWordWrap(False)
        self.info.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self.info.setFixedHeight(2 * self.info.fontMetrics().lineSpacing() + 4)
        bl.addWidget(self.info)
        self.frame.view.scene().sigMouseMoved.connect(self._hover)
        self.plot.getAxis("bottom").geometryChanged.connect(
            lambda: fit_label(self.plot, "bottom", AXIS_TITLES))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # the options wrap onto more rows in a narrow view: ask for the height that
        # leaves the plot its minimum (a splitter does not ask the layout for it, and
        # gave the plot too little: the text line covered its legend)
        lay = self.layout()
        need = (self.options_row.heightForWidth(self.width()) + self.frame.minimumHeight()
                + self.info.height() + 2 * lay.spacing())
        if self.minimumHeight() != need:
            self.setMinimumHeight(need)
        self._fit_legend()

    def _fit_legend(self) -> None:
        """Two columns when both entries fit the view's width, else one."""
        width, _ = entry_size(self.legend)
        fit_legend(self.legend, 2 if 2 * width <= self.frame.view.width() - 16 else 1)

    def set_dims(self, d: int) -> None:
        for spin in (self.r_spin, self.m_spin):
            spin.setRange(1, d)

    def draw(self, res: neurons.EmbeddingOverlap | None, has_model: bool = True) -> None:
        self.overlap = res
        plot = self.plot
        plot.clear()
        self.legend.clear()
        if res is None:
            set_title(plot, "Overlap with the token embedding's SVD directions" if not has_model
                          else "")
            return
        r = len(res.overlap)
        x = np.arange(r)
        bars = pg.BarGraphItem(x=x, height=res.overlap, width=0.7, brush="#4c72b0",
                               pen=pg.mkPen("#2d4a78"))
        plot.addItem(bars)
        base_pen = pg.mkPen("#d62728", width=1.5, style=Qt.DashLine)
        plot.addItem(pg.InfiniteLine(pos=res.baseline, angle=0, pen=base_pen))
        self.legend.addItem(bars, "overlap")
        self.legend.addItem(pg.PlotDataItem([], [], pen=base_pen, antialias=True),
                            f"random: m/d = {res.baseline:.3f}")
        self._fit_legend()
        top = max(float(res.overlap.max()), res.baseline) * 1.15 or 1.0
        plot.setRange(xRange=(-0.6, r - 0.4), yRange=(0, top), padding=0)
        axis = plot.getAxis("bottom")
        if r <= 40:
            step = 1 if r <= 20 else 2
            axis.setTicks([[(i, str(i)) for i in range(0, r, step)], []])
        else:
            axis.setTicks(None)
        set_title(plot, neurons.overlap_title(res))
        text, tip = neurons.overlap_note(res)
        self.info.setText(text)
        self.info.setToolTip(tip)

    def _hover(self, pos) -> None:
        res = self.overlap
        vb = self.plot.getViewBox()
        if res is None or not vb.sceneBoundingRect().contains(pos):
            return
        i = round(vb.mapSceneToView(pos).x())
        if 0 <= i < len(res.overlap):
            self.info.setText(
                f"direction {i}: overlap {num(res.overlap[i])}\n"
                f"singular value {num(res.singular_values[i])}")

    def _table(self):
        return None if self.overlap is None else embedding_overlap_table(self.overlap)
