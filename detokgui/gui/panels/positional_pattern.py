"""B4 Positional pattern ("contextual circuit"): for the selected query token x at the
selected query position n, softmax_{j<=n}((T_ep + T_pp + T_p) / sqrt(d')) with the key
sigma = vocabulary mean — the attention if every past token were average — as a line over
j and laid out on a near-square grid (20 x 20 at n = 399); below it, every head classified
by measured criteria (effective span, weight on the last positions, self-rank, bias slope)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Slot
from PySide6.QtGui import QBrush, QColor, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from detokgui.core import positional
from detokgui.core.tables import pattern_table
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame, head_color

LABEL_COLORS = {
    "duplicate-token": "#e8d5f5",
    "detokenization": "#d4ecd4",
    "contextual": "#d6e6f7",
    "other": "#f2f2f2",
}

#: (key in HeadClassification.rows(), header, tooltip, number format)
CLASS_COLUMNS = (
    ("head", "head", "Head index (0-based). Click a row to select the head.", "d"),
    ("label", "class", (
        "Class from the first rule that holds (hover for the reason):\n"
        f"duplicate-token: self in top {positional.DUPLICATE_SELF_TOP_K} for ≥ "
        f"{positional.DUPLICATE_MIN_SELF_FRACTION:.0%} of tokens;\n"
        f"detokenization: weight on the last {positional.RECENT_WINDOW} positions ≥ "
        f"{positional.DETOK_MIN_RECENT_WEIGHT};\n"
        f"contextual: effective span ≥ {positional.CONTEXTUAL_MIN_SPAN_FRACTION:.0%} of n+1;\n"
        "other: none of these."), ""),
    ("span", "span", ("Effective attention span exp(entropy) of the pattern, in key "
                      "positions\n(mean over the sampled query tokens)"), ".4g"),
    ("span_fraction", "span / (n+1)", "Effective span as a fraction of the n+1 keys", ".3f"),
    ("mean_distance", "mean distance", ("Σ_j a_j (n − j): how far back the pattern looks,\n"
                                        "in positions"), ".4g"),
    ("recent_weight", f"last {positional.RECENT_WINDOW}",
     f"Pattern weight on the last {positional.RECENT_WINDOW} key positions (query included)",
     ".3f"),
    ("self_rank_median", "self-rank", ("Median rank of each sampled token u among all keys by\n"
                                       "T_ee(u, ·), from the token side (1 = attends most to "
                                       "itself)"), ".6g"),
    ("self_top_fraction", f"self in top {positional.DUPLICATE_SELF_TOP_K}",
     (f"Fraction of sampled tokens that rank themselves in their top "
      f"{positional.DUPLICATE_SELF_TOP_K} keys"), ".3f"),
    ("bias_slope", "bias slope", ("Least-squares slope of T_p(j) over j = 0..n per position\n"
                                  "(σ = vocabulary mean): > 0 favours recent keys"), ".4g"),
)

class _SortItem(QTableWidgetItem):
    """A cell that sorts by its number (Qt.UserRole), not by its text."""

    def __lt__(self, other):
        a, b = self.data(Qt.UserRole), other.data(Qt.UserRole)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return a < b
        return super().__lt__(other)


class PositionalPatternPanel(Panel):
    title = "Positional pattern"
    view_name = "pattern"
    tooltip = ("Attention of a query token at position n if every past token were average "
               "(B4), and a classification of the heads")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.result: positional.PositionalPattern | None = None
        self.request = None
        self.classes: positional.HeadClassification | None = None
        self.classes_for = None  # id(layer) the table was computed (or asked) for
        self.grid_values = np.zeros((0, 0))
        self.grid_cols = 1
        self.line_items: dict[int, pg.PlotDataItem] = {}
        lay = QVBoxLayout(self)

        controls = QHBoxLayout()
        self.query_label = QLabel()
        self.query_label.setTextFormat(Qt.RichText)
        self.query_label.setToolTip("The query token x (select it in the Tokens panel or any "
                                    "token table)")
        controls.addWidget(self.query_label)
        controls.addSpacing(12)
        controls.addWidget(QLabel("position n"))
        self.n_spin = QSpinBox()
        self.n_spin.setRange(0, 0)
        self.n_spin.setKeyboardTracking(False)
        self.n_spin.setToolTip("Query position n (0-based), shared with the other position "
                               "panels.\nClicking a position on either plot sets it too.")
        controls.addWidget(self.n_spin)
        controls.addStretch(1)
        self.heads_combo = QComboBox()
        self.heads_combo.addItem("Selected head", "selected")
        self.heads_combo.addItem("All heads", "all")
        self.heads_combo.setToolTip("Line plot: the head selected in the toolbar, or every head "
                                    "(the selected one drawn thicker)")
        controls.addWidget(self.heads_combo)
        self.log_check = QCheckBox("Log scale")
        self.log_check.setToolTip("Logarithmic weight axis (line) and log10 colours (grid): "
                                  "shows the small weights far from the peaks")
        controls.addWidget(self.log_check)
        controls.addWidget(QLabel("grid columns"))
        self.cols_spin = QSpinBox()
        self.cols_spin.setRange(0, 64)
        self.cols_spin.setSpecialValueText("√(n+1)")
        self.cols_spin.setToolTip("Columns of the grid (key j sits at row j // C, column j % C).\n"
                                  "√(n+1): a near-square grid, 20 x 20 at n = 399.")
        controls.addWidget(self.cols_spin)
        lay.addLayout(controls)

        vsplit = QSplitter(Qt.Vertical)
        plots = QSplitter(Qt.Horizontal)
        self.line_frame = PlotFrame("Positional pattern", self._line_table)
        self.line_plot = self.line_frame.view.addPlot()
        self.line_plot.showGrid(x=True, y=True, alpha=0.25)
        self.line_plot.setLabel("bottom", "key position j")
        self.line_plot.setLabel("left", "attention weight")
        self.legend = self.line_plot.addLegend(offset=(-10, 10), colCount=4,
                                              brush=(255, 255, 255, 210), pen="#bbb")
        self.line_frame.setToolTip("Click a position to make it the query position n")
        plots.addWidget(self.line_frame)

        self.grid_frame = PlotFrame("Positional pattern grid", self._grid_table)
        self.grid_plot = self.grid_frame.view.addPlot()
        self.grid_plot.setMenuEnabled(False)
        self.grid_plot.hideButtons()
        vb = self.grid_plot.getViewBox()
        vb.invertY(True)
        vb.setMouseEnabled(False, False)
        self.grid_plot.setLabel("left", "first j of the row")
        self.grid_plot.setLabel("bottom", "column (j mod C)")
        self.grid_image = pg.ImageItem()
        self.grid_image.setColorMap(pg.colormap.get("viridis"))
        self.grid_plot.addItem(self.grid_image)
        self.grid_mark = pg.QtWidgets.QGraphicsRectItem()
        self.grid_mark.setPen(QPen(QColor("#d62728"), 0))
        self.grid_mark.setVisible(False)
        self.grid_plot.addItem(self.grid_mark)
        self.colorbar = pg.ColorBarItem(colorMap=pg.colormap.get("viridis"), interactive=False,
                                        width=12)
        self.colorbar.setImageItem(self.grid_image)
        self.colorbar.axis.enableAutoSIPrefix(False)
        self.colorbar.axis.setWidth(58)
        self.grid_frame.view.addItem(self.colorbar, 0, 1)
        self.grid_frame.setToolTip("Key positions laid out row by row; blank cells are past n.\n"
                                   "Click a cell to make its position the query position n.")
        plots.addWidget(self.grid_frame)
        plots.setSizes([640, 480])
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(plots, 1)
        self.hover = QLabel(" ")
        self.hover.setToolTip("Hover over a plot to read a value")
        tl.addWidget(self.hover)
        vsplit.addWidget(top)

        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        head_row = QHBoxLayout()
        self.classes_label = QLabel("<b>Head classification</b>")
        self.classes_label.setWordWrap(True)
        head_row.addWidget(self.classes_label, 1)
        self.classify_button = QPushButton("Classify heads")
        self.classify_button.setToolTip("Compute the head classification (a whole-vocabulary "
                                        "pass for the self-ranks; cancellable)")
        self.classify_button.clicked.connect(lambda: self.classify(force=True))
        head_row.addWidget(self.classify_button)
        bl.addLayout(head_row)
        self.class_table = QTableWidget(0, len(CLASS_COLUMNS))
        self.class_table.setHorizontalHeaderLabels([c[1] for c in CLASS_COLUMNS])
        for k, col in enumerate(CLASS_COLUMNS):
            self.class_table.horizontalHeaderItem(k).setToolTip(col[2])
        self.class_table.verticalHeader().hide()
        self.class_table.verticalHeader().setDefaultSectionSize(22)
        self.class_table.horizontalHeader().setSortIndicator(0, Qt.AscendingOrder)
        self.class_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.class_table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.class_table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.class_table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.class_table.setToolTip("Measured per head; click a row to select the head, a "
                                    "header to sort")
        self.class_table.cellClicked.connect(self._class_clicked)
        bl.addWidget(self.class_table, 1)
        vsplit.addWidget(bottom)
        vsplit.setSizes([560, 300])
        lay.addWidget(vsplit, 1)
        self.status = QLabel()
        lay.addWidget(self.status)

        self.n_spin.valueChanged.connect(self.state.set_query_position)
        self.heads_combo.currentIndexChanged.connect(self._draw)
        self.log_check.toggled.connect(self._draw)
        self.cols_spin.valueChanged.connect(self._draw)
        self.line_frame.view.scene().sigMouseClicked.connect(self._line_clicked)
        self.line_frame.view.scene().sigMouseMoved.connect(self._line_hover)
        self.grid_frame.view.scene().sigMouseClicked.connect(self._grid_clicked)
        self.grid_frame.view.scene().sigMouseMoved.connect(self._grid_hover)
        self.jobs.cancelled.connect(self._job_cancelled)
        state.modelChanged.connect(self._model_changed)
        state.queryTokenChanged.connect(self.refresh)
        state.queryPositionChanged.connect(self._position_changed)
        state.headChanged.connect(self._head_changed)
        self._model_changed(state.layer)

    def plot_frames(self):
        return [self.line_frame, self.grid_frame]

    # ------------------------------------------------------------------ selection

    @Slot(object)
    def _model_changed(self, layer) -> None:
        self.n_spin.blockSignals(True)
        self.n_spin.setRange(0, layer.n_positions - 1 if layer is not None else 0)
        self.n_spin.setValue(self.state.query_position)
        self.n_spin.blockSignals(False)
        self.classes = None
        self.classes_for = None
        self._fill_classes()
        self.refresh()
        if self.isVisible():
            self.classify()

    @Slot(int)
    def _position_changed(self, n: int) -> None:
        self.n_spin.blockSignals(True)
        self.n_spin.setValue(n)
        self.n_spin.blockSignals(False)
        self.refresh()

    @Slot(int)
    def _head_changed(self, *_):
        self._draw()
        self._mark_class_row()

    def showEvent(self, event):
        super().showEvent(event)
        self.refresh()
        self.classify()  # once per model, when the panel is first seen

    # ------------------------------------------------------------------ pattern

    @Slot()
    def refresh(self, *_) -> None:
        layer, token, n = self.layer, self.state.query_token, self.state.query_position
        self.query_label.setText(
            f"<b>Query x:</b> {self.state.token_text(token)}"
            + (f" <span style='color:gray'>(id {token})</span>" if token >= 0 else ""))
        if layer is None or token < 0:
            self.request = None
            self.result = None
            self.status.setText("Select a query token in the Tokens panel." if layer else "")
            self._draw()
            return
        request = (id(layer), token, n)
        if not self.isVisible():
            self.request = None  # computed when the panel is shown; drop what is in flight
            return
        if request == self.request:
            return
        self.request = request
        self.status.setText("computing…")
        self.jobs.submit(self.job_key("pattern"),
                         lambda: positional.positional_pattern(layer, token, n),
                         lambda res, req=request: self._pattern_done(req, res),
                         label="Positional pattern")

    def _pattern_done(self, request, result) -> None:
        if request != self.request:
            return  # made for an older selection
        self.result = result
        self.status.setText(
            f"x = {self.state.token_text(result.token)} at n = {result.n}: "
            f"σ(e_x + p_n) = {result.query_sigma:.4g}; key σ = vocabulary mean per position; "
            f"temperature √d' = {self.layer.temperature:.4g}")
        self._draw()

    def shown_heads(self) -> list[int]:
        if self.result is None:
            return []
        if self.heads_combo.currentData() == "all":
            return list(self.result.heads)
        return [self.state.head] if self.state.head in self.result.heads else []

    def columns(self) -> int:
        if self.result is None:
            return 1
        return self.cols_spin.value() or math.isqrt(self.result.n) + 1

    @Slot()
    def _draw(self, *_) -> None:
        self._draw_line()
        self._draw_grid()

    def _draw_line(self) -> None:
        plot = self.line_plot
        plot.clear()
        self.legend.clear()
        self.line_items = {}
        res = self.result
        log = self.log_check.isChecked()
        plot.setLogMode(y=log)
        if res is None:
            plot.setTitle("")
            return
        j = np.arange(res.n + 1)
        heads = self.shown_heads()
        sel = self.state.head
        for h in heads:
            y = res.pattern[res.heads.index(h)]
            width = 3 if (h == sel and len(heads) > 1) else 2 if len(heads) == 1 else 1
            sym = "o" if res.n < 60 else None
            item = plot.plot(j, y, pen=pg.mkPen(head_color(h), width=width), symbol=sym,
                             symbolSize=5, symbolBrush=head_color(h), symbolPen=None,
                             name=f"head {h}" if len(heads) > 1 else None)
            if h == sel:
                item.setZValue(10)
            self.line_items[h] = item
        self.legend.setVisible(len(heads) > 1)
        plot.setXRange(-0.5, res.n + 0.5, padding=0.02)
        plot.enableAutoRange(axis="y")
        who = f"head {sel}" if len(heads) == 1 else "all heads"
        plot.setTitle(f"{who}: positional pattern of {self.state.token_text(res.token)!s} "
                      f"at n = {res.n}")

    def _draw_grid(self) -> None:
        res = self.result
        head = self.state.head
        if res is None or head not in res.heads:
            self.grid_values = np.zeros((0, 0))
            self.grid_image.clear()
            self.grid_mark.setVisible(False)
            self.grid_plot.setTitle("")
            return
        c = self.columns()
        self.grid_cols = c
        values = positional.pattern_grid(res.pattern[res.heads.index(head)], c)
        self.grid_values = values
        log = self.log_check.isChecked()
        shown = np.log10(np.clip(values, 1e-30, None)) if log else values
        shown = np.where(np.isnan(values), np.nan, shown).astype(np.float32)
        finite = shown[np.isfinite(shown)]
        lo, hi = (float(finite.min()), float(finite.max())) if log else (0.0, float(finite.max()))
        if hi <= lo:
            hi = lo + 1.0
        self.grid_image.setImage(shown, levels=(lo, hi), autoLevels=False)
        rows = values.shape[0]
        self.grid_image.setRect(QRectF(0, 0, c, rows))
        self.colorbar.setLevels((lo, hi))
        step = max(1, math.ceil(rows / 20))
        self.grid_plot.getAxis("left").setTicks(
            [[(r + 0.5, str(r * c)) for r in range(0, rows, step)], []])
        cstep = max(1, math.ceil(c / 20))
        self.grid_plot.getAxis("bottom").setTicks(
            [[(k + 0.5, str(k)) for k in range(0, c, cstep)], []])
        self.grid_plot.setRange(xRange=(0, c), yRange=(0, rows), padding=0)
        n = res.n
        self.grid_mark.setRect(QRectF(n % c, n // c, 1, 1))
        self.grid_mark.setVisible(True)
        what = "log10 weight" if log else "weight"
        self.grid_plot.setTitle(f"head {head}: {what} on a {rows} x {c} grid (red: n)")

    # ------------------------------------------------------------------ mouse

    def _line_position(self, scene_pos) -> int | None:
        vb = self.line_plot.getViewBox()
        if self.result is None or not vb.sceneBoundingRect().contains(scene_pos):
            return None
        return round(vb.mapSceneToView(scene_pos).x())

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

    def _line_clicked(self, ev) -> None:
        if ev.button() != Qt.LeftButton:
            return
        j = self._line_position(ev.scenePos())
        if j is not None and self.layer is not None:
            self.state.set_query_position(max(0, min(j, self.layer.n_positions - 1)))

    def _grid_clicked(self, ev) -> None:
        if ev.button() != Qt.LeftButton:
            return
        j = self._grid_position(ev.scenePos())
        if j is not None:
            self.state.set_query_position(j)

    def _describe(self, j: int) -> str:
        res = self.result
        if res is None or not 0 <= j <= res.n:
            return " "
        heads = self.shown_heads()
        vals = "  ".join(f"head {h}: {res.pattern[res.heads.index(h), j]:.4g}" for h in heads[:12])
        return f"key j = {j} ({res.n - j} back)   {vals}   — click to set n = {j}"

    def _line_hover(self, pos) -> None:
        j = self._line_position(pos)
        self.hover.setText(self._describe(j) if j is not None else " ")

    def _grid_hover(self, pos) -> None:
        j = self._grid_position(pos)
        if j is None:
            self.hover.setText(" ")
            return
        h = self.state.head
        self.hover.setText(f"key j = {j} ({self.result.n - j} back)   head {h}: "
                           f"{self.result.pattern[self.result.heads.index(h), j]:.4g}"
                           f"   — click to set n = {j}")

    # ------------------------------------------------------------------ head classes

    def classify(self, force: bool = False) -> None:
        """Compute the head classification for the current model (once per model)."""
        layer = self.layer
        if layer is None or (self.classes_for == id(layer) and not force):
            return
        self.classes_for = id(layer)
        self.classes = None
        self._fill_classes()
        self.classify_button.setEnabled(False)
        self.classes_label.setText("<b>Head classification</b> — computing…")
        key = id(layer)
        self.jobs.submit(self.job_key("classes"),
                         lambda: positional.iter_classify_heads(layer),
                         lambda res, k=key: self._classes_done(k, res),
                         label="Classifying heads",
                         on_error=lambda _exc: self._classes_stopped("failed"))

    def _classes_done(self, key, result) -> None:
        if self.layer is None or key != id(self.layer):
            return
        self.classes = result
        self.classify_button.setEnabled(True)
        self._fill_classes()

    @Slot(str)
    def _job_cancelled(self, key: str) -> None:
        if key == self.job_key("classes"):
            self._classes_stopped("cancelled")

    def _classes_stopped(self, why: str) -> None:
        self.classes_for = None
        self.classify_button.setEnabled(True)
        self.classes_label.setText(f"<b>Head classification</b> — {why}; press "
                                   "<i>Classify heads</i> to compute it.")

    def _fill_classes(self) -> None:
        t = self.class_table
        t.setSortingEnabled(False)
        t.setRowCount(0)
        res = self.classes
        if res is None:
            self.classify_button.setEnabled(self.layer is not None)
            return
        m = positional
        self.classes_label.setText(
            f"<b>Head classification</b> at n = {res.n}, mean over {len(res.tokens)} sampled "
            f"query tokens. Rules, first match wins: <i>duplicate-token</i> self in top "
            f"{m.DUPLICATE_SELF_TOP_K} ≥ {m.DUPLICATE_MIN_SELF_FRACTION:.0%}; "
            f"<i>detokenization</i> last-{m.RECENT_WINDOW} weight ≥ {m.DETOK_MIN_RECENT_WEIGHT}; "
            f"<i>contextual</i> span ≥ {m.CONTEXTUAL_MIN_SPAN_FRACTION:.0%} of n+1; else "
            "<i>other</i>.")
        rows = res.rows()
        t.setRowCount(len(rows))
        for r, d in enumerate(rows):
            bg = QBrush(QColor(LABEL_COLORS.get(d["label"], "#ffffff")))
            tip = f"head {d['head']}: {d['label']} — {d['reason']}"
            for c, (key, _hdr, _tip, spec) in enumerate(CLASS_COLUMNS):
                v = d[key]
                item = _SortItem(format(v, spec) if spec else str(v))
                item.setData(Qt.UserRole, v if spec else str(v))
                item.setData(Qt.UserRole + 1, d["head"])
                item.setToolTip(tip)
                if spec:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if key == "label":
                    item.setBackground(bg)
                t.setItem(r, c, item)
        t.setSortingEnabled(True)
        self._mark_class_row()

    def class_rows(self) -> list[dict]:
        """The classification table as a person sees it: one dict per row, header -> text."""
        t = self.class_table
        return [{CLASS_COLUMNS[c][0]: t.item(r, c).text() for c in range(t.columnCount())}
                for r in range(t.rowCount())]

    def _mark_class_row(self) -> None:
        t = self.class_table
        for r in range(t.rowCount()):
            item = t.item(r, 0)
            if item is not None and item.data(Qt.UserRole + 1) == self.state.head:
                t.blockSignals(True)
                t.selectRow(r)
                t.blockSignals(False)
                t.scrollToItem(item)
                return
        t.clearSelection()

    @Slot(int, int)
    def _class_clicked(self, row: int, _col: int) -> None:
        item = self.class_table.item(row, 0)
        if item is not None:
            self.state.set_head(int(item.data(Qt.UserRole + 1)))

    # ------------------------------------------------------------------ export

    def _line_table(self):
        if self.result is None:
            return None
        return pattern_table(self.layer, self.result, self.shown_heads(), self.columns())

    def _grid_table(self):
        if self.result is None or self.state.head not in self.result.heads:
            return None
        return pattern_table(self.layer, self.result, [self.state.head], self.columns())
