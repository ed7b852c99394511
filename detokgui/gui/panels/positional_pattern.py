"""B4 Positional pattern ("contextual circuit"): for the selected query token x at the
selected query position n, softmax_{j<=n}((T_ep + T_pp + T_p) / tau) with the key
weights of the position convention (paper, the default: E_v[1/sigma(e_v+p_j)]; or
1/mean_v sigma(e_v+p_j)) — the attention if every past token were average — as a line
over j and laid out on a near-square grid (20 x 20 at n = 399); below it, every head
classified at the same n by measured criteria (effective span, weight on the last
positions, self-rank, bias slope)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Slot
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout

from detokgui.core.base.plot_axes import cell_ticks
from detokgui.core.model.conventions import DEFAULT_POSITION_CONVENTION, INK_COLOUR
from detokgui.core.position_side import positional, titles
from detokgui.core.position_side.tables import pattern_table
from detokgui.core.position_side.titles import CONVENTION_NAMES
from detokgui.gui.colorbar import ColorBar
from detokgui.gui.controls import bare_column
from detokgui.gui.option_rows import STRETCH, OptionRow, check, combo, custom, option, spin
from detokgui.gui.panels.base import Panel
from detokgui.gui.panels.head_classes import HeadClassesTable
from detokgui.gui.plots import PlotFrame, add_plot, head_color, set_log_y, set_title
from detokgui.gui.position import (
    ConventionBox,
    QueryPositionControl,
    connect_position_clicks,
    position_at,
)


@dataclass(frozen=True)
class Options:
    heads: str = option("selected", combo(  # line plot: "selected" or "all"
        [("selected", "Selected head"), ("all", "All heads")],
        "Line plot: the head selected in the toolbar, or every head "
        "(the selected one drawn thicker)"))
    log: bool = option(False, check("Log scale",
                                    "Logarithmic weight axis (line) and log10 colours (grid): "
                                    "shows the small weights far from the peaks"))
    columns: int = option(0, spin(  # of the grid; 0 = ceil(sqrt(n + 1))
        0, 64, "Columns of the grid (key j sits at row j // C, column j % C).\n"
               "√(n+1): a near-square grid, 20 x 20 at n = 399.",
        label="grid columns", special="√(n+1)"))
    convention: str = option(DEFAULT_POSITION_CONVENTION, custom(ConventionBox))  # conventions.POSITION_CONVENTIONS


@dataclass(frozen=True)
class Request:
    serial: int
    token: int
    n: int
    convention: str


@dataclass(frozen=True)
class ClassesRequest:
    serial: int
    n: int


class PositionalPatternPanel(Panel):
    title = "Positional pattern"
    view_name = "pattern"
    tooltip = ("Attention of a query token at position n if every past token were average "
               "(B4), and a classification of the heads")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.grid_values = np.zeros((0, 0))
        self.line_items: dict[int, pg.PlotDataItem] = {}
        lay = QVBoxLayout(self)

        self.query_label = QLabel()
        self.query_label.setTextFormat(Qt.RichText)
        self.query_label.setToolTip("The query token x (select it in the Tokens panel or any "
                                    "token table)")
        self.position = QueryPositionControl(
            state, "position n", tip="Query position n (0-based), shared with the other "
            "position panels.\nClicking a position on either plot sets it too.")
        self.n_spin = self.position.spin
        self.options = OptionRow("pattern", Options, self)
        lay.addLayout(self.options.row(self.query_label, self.position, STRETCH,
                                       ("convention", "heads", "log", "columns")))

        vsplit = QSplitter(Qt.Vertical)
        plots = QSplitter(Qt.Horizontal)
        self.line_frame = PlotFrame("Positional pattern", self._line_table,
                                    analysis="pattern_lines")
        self.line_plot = add_plot(self.line_frame, grid="xy", bottom="key position j",
                                  left="attention weight")
        self.legend = self.line_plot.addLegend(offset=(-10, 10), colCount=4,
                                              brush=(255, 255, 255, 210), pen="#bbb",
                                              labelTextColor=INK_COLOUR)
        self.line_frame.setToolTip("Click a position to make it the query position n")
        plots.addWidget(self.line_frame)

        self.grid_frame = PlotFrame("Positional pattern grid", self._grid_table,
                                    analysis="pattern")
        self.grid_plot = add_plot(self.grid_frame, controls=False, mouse=False, invert_y=True,
                                  left="first j of the row", bottom="column (j mod C)")
        self.grid_image = pg.ImageItem(axisOrder="row-major")
        self.grid_plot.addItem(self.grid_image)
        self.grid_mark = pg.QtWidgets.QGraphicsRectItem()
        self.grid_mark.setPen(QPen(QColor("#d62728"), 0))
        self.grid_mark.setVisible(False)
        self.grid_plot.addItem(self.grid_mark)
        self.colorbar = ColorBar("viridis")
        self.colorbar.setImageItem(self.grid_image)
        self.colorbar.axis.setWidth(58)
        self.grid_frame.view.addItem(self.colorbar, 0, 1)
        self.grid_frame.setToolTip("Key positions laid out row by row; blank cells are past n.\n"
                                   "Click a cell to make its position the query position n.")
        plots.addWidget(self.grid_frame)
        plots.setSizes([640, 480])
        top, tl = bare_column()
        tl.addWidget(plots, 1)
        self.status.setToolTip("Hover over a plot to read a value")
        tl.addWidget(self.status)
        vsplit.addWidget(top)
        self.classes = HeadClassesTable()
        vsplit.addWidget(self.classes)
        vsplit.setSizes([560, 300])
        lay.addWidget(vsplit, 1)

        classes = self.add_channel(
            "classes", self._classes_request,
            lambda layer, req: positional.iter_classify_heads(layer, req.n),
            self._draw_classes, status=self.classes.status, label="Head classification",
            coalesce=True)
        self.classes.classify.connect(classes.update)  # an up-to-date table stays as it is
        self.classes.headActivated.connect(state.set_head)
        self.options.changed.connect(self.refresh)
        self.options.changed.connect(self.redraw)
        connect_position_clicks(self.line_frame.view.scene(), self._line_position,
                                state.set_query_position)
        connect_position_clicks(self.grid_frame.view.scene(), self._grid_position,
                                state.set_query_position)
        self.line_frame.view.scene().sigMouseMoved.connect(self._line_hover)
        self.grid_frame.view.scene().sigMouseMoved.connect(self._grid_hover)
        state.headChanged.connect(self.when_visible(self._head_changed))

    def plot_frames(self):
        return [self.line_frame, self.grid_frame]

    @Slot(int)
    def _head_changed(self, *_):
        self.redraw()
        self.classes.mark_head(self.state.head)

    # ------------------------------------------------------------------ pattern

    def request(self):
        token = self.state.query_token
        if token < 0:
            return None
        return Request(self.serial, token, self.state.query_position,
                       self.options.value.convention)

    def _classes_request(self):
        """The classification at the n shown by the plots."""
        return ClassesRequest(self.serial, min(self.state.query_position,
                                               self.layer.n_positions - 1))

    @staticmethod
    def compute(layer, req: Request) -> positional.PositionalPattern:
        return positional.positional_pattern(layer, req.token, req.n,
                                             convention=req.convention)

    def draw(self, res: positional.PositionalPattern | None) -> None:
        token = res.token if res is not None else self.state.query_token
        self.query_label.setText(
            f"<b>Query x:</b> {self.state.token_text(token)}"
            + (f" <span style='color:gray'>(id {token})</span>" if token >= 0 else ""))
        if res is None:
            self.status.setText("Select a query token in the Tokens panel." if self.layer else "")
        else:
            self.status.setText(
                titles.pattern_note(self.layer, res, self.state.token_text(res.token)))
        self._draw_line(res)
        self._draw_grid(res)

    def shown_heads(self) -> list[int]:
        if self.result is None:
            return []
        if self.options.value.heads == "all":
            return list(self.result.heads)
        return [self.state.head] if self.state.head in self.result.heads else []

    def columns(self) -> int:
        if self.result is None:
            return 1
        return self.options.value.columns or math.isqrt(self.result.n) + 1

    def _draw_line(self, res) -> None:
        plot = self.line_plot
        log = self.options.value.log
        set_log_y(plot, log, "attention weight")
        heads = self.shown_heads() if res is not None else []
        items = list(self.line_items.values())
        if len(heads) != len(items) or (len(heads) > 1 and list(self.line_items) != heads):
            plot.clear()  # other curves (and legend entries): made anew
            self.legend.clear()
            items = []
        self.line_items = dict(zip(heads, items))
        if res is None:
            set_title(plot, "")
            return
        j = np.arange(res.n + 1)
        sel = self.state.head
        for h in heads:
            y = res.pattern[res.heads.index(h)]
            # the selected head stands out among many; hairlines otherwise (a 1024-point
            # antialiased curve wider than 1 px takes ~20x longer to stroke)
            width = 2.5 if (h == sel and len(heads) > 1) else 1
            style = {"pen": pg.mkPen(head_color(h), width=width),
                     "symbol": "o" if res.n < 60 else None, "symbolSize": 5,
                     "symbolBrush": head_color(h), "symbolPen": None, "antialias": True}
            item = self.line_items.get(h)
            if item is None:
                item = plot.plot(j, y, name=f"head {h}" if len(heads) > 1 else None, **style)
                self.line_items[h] = item
            else:
                item.setData(j, y, **style)
            item.setZValue(10 if h == sel else 0)
        self.legend.setVisible(len(heads) > 1)
        plot.setXRange(-0.5, res.n + 0.5, padding=0.02)
        plot.enableAutoRange(axis="y")
        who = f"head {sel}" if len(heads) == 1 else "all heads"
        set_title(plot, f"Positional pattern of {self.state.token_text(res.token)!s} at n = "
                      f"{res.n}, {who} ({CONVENTION_NAMES[res.convention]})")

    def _draw_grid(self, res) -> None:
        head = self.state.head
        if res is None or head not in res.heads:
            self.grid_values = np.zeros((0, 0))
            self.grid_image.clear()
            self.grid_mark.setVisible(False)
            set_title(self.grid_plot, "")
            return
        c = self.columns()
        values = positional.pattern_grid(res.pattern[res.heads.index(head)], c)
        self.grid_values = values
        log = self.options.value.log
        shown, levels = positional.pattern_grid_image(values, log)
        self.grid_image.setImage(shown, levels=levels, autoLevels=False)
        rows = values.shape[0]
        self.grid_image.setRect(QRectF(0, 0, c, rows))
        self.colorbar.setLevels(levels)
        self.grid_plot.getAxis("left").setTicks(cell_ticks(rows, lambda r: str(r * c)))
        self.grid_plot.getAxis("bottom").setTicks(cell_ticks(c))
        self.grid_plot.setRange(xRange=(0, c), yRange=(0, rows), padding=0)
        n = res.n
        self.grid_mark.setRect(QRectF(n % c, n // c, 1, 1))
        self.grid_mark.setVisible(True)
        what = "log10 weight" if log else "weight"
        set_title(self.grid_plot, f"head {head}: {what} on a {rows} x {c} grid (red: n; "
                                f"{CONVENTION_NAMES[res.convention]})")
        self.colorbar.getAxis("right").setLabel("log10 attention weight" if log
                                                else "attention weight")

    # ------------------------------------------------------------------ mouse

    def _line_position(self, scene_pos) -> int | None:
        if self.result is None or self.layer is None:
            return None
        return position_at(self.line_plot.getViewBox(), scene_pos, self.layer.n_positions)

    def _grid_position(self, scene_pos) -> int | None:
        vb = self.grid_plot.getViewBox()
        if self.grid_values.size == 0 or not vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = vb.mapSceneToView(scene_pos)
        r, c = math.floor(p.y()), math.floor(p.x())
        rows, cols = self.grid_values.shape
        if not (0 <= r < rows and 0 <= c < cols):
            return None
        j = r * cols + c
        return j if j <= self.result.n else None

    def _line_hover(self, pos) -> None:
        j = self._line_position(pos)
        if j is not None and j <= self.result.n:
            self.status.setText(titles.pattern_hover(self.result, j, self.shown_heads()))

    def _grid_hover(self, pos) -> None:
        j = self._grid_position(pos)
        if j is not None:
            self.status.setText(titles.pattern_hover(self.result, j, [self.state.head]))

    # ------------------------------------------------------------------ head classes

    def _draw_classes(self, res) -> None:
        self.classes.show_classes(res)
        self.classes.mark_head(self.state.head)

    # ------------------------------------------------------------------ export

    def _line_table(self):
        if self.result is None:
            return None
        return pattern_table(self.layer, self.result, self.shown_heads(), self.columns())

    def _grid_table(self):
        if self.result is None or self.state.head not in self.result.heads:
            return None
        return pattern_table(self.layer, self.result, [self.state.head], self.columns())
