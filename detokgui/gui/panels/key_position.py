"""B7 Key-position components ("layer 0 by hand"): for every query token u and head h, the
least-squares slope over key positions j of the raw e_u W^QK_h p_j^T — does this token,
as a query, prefer recent (slope > 0) or early (slope < 0) keys? A histogram over the
whole vocabulary, the tokens with the most positive and most negative slopes, and the
selected query token's curve over j with its fitted line."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from detokgui.core import positional
from detokgui.core.tables import slope_histogram_table, token_position_curve_table
from detokgui.core.tokens import display_token
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame, head_color

SIDES = (("top", "Most positive slopes (prefer recent keys)"),
         ("bottom", "Most negative slopes (prefer early keys)"))


def slopes_job(layer, k: int, bins: int) -> dict:
    """Everything the panel shows for all heads: slopes over the vocabulary, their
    extremes with token strings, and one histogram per head."""
    res = positional.token_position_slopes(layer)
    ext = positional.slope_extremes(res, k)
    hists = {h: positional.slope_histogram(res, h, bins) for h in res.heads}
    ids = set(ext.top_ids.ravel().tolist()) | set(ext.bottom_ids.ravel().tolist())
    names = {t: display_token(layer.tokenizer, t) for t in ids}
    return {"slopes": res, "extremes": ext, "hists": hists, "names": names}


def curve_job(layer, token: int) -> dict:
    """The raw e_u W^QK_h p_j^T over j and its fitted line for every head, as arrays."""
    _header, rows = token_position_curve_table(layer, token)
    rows = list(rows)
    H, L = layer.n_heads, layer.n_positions
    raw = np.array([r[4] for r in rows], dtype=np.float64).reshape(H, L)
    fit = np.array([r[5] for r in rows], dtype=np.float64).reshape(H, L)
    return {"token": token, "raw": raw, "fit": fit}


class KeyPositionPanel(Panel):
    title = "Key-position slopes"
    view_name = "slopes"
    tooltip = ("Per head, the slope over key positions j of e_u W^QK p_j^T for every query "
               "token u (B7): histogram and extreme tokens")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.data: dict | None = None
        self.request = None
        self.curve: dict | None = None
        self.curve_request = None
        self.marker: pg.InfiniteLine | None = None  # the query token's slope, on the histogram
        self.position_line: pg.InfiniteLine | None = None  # the query position, on the curve
        lay = QVBoxLayout(self)

        controls = QHBoxLayout()
        self.head_label = QLabel()
        self.head_label.setTextFormat(Qt.RichText)
        controls.addWidget(self.head_label)
        controls.addStretch(1)
        controls.addWidget(QLabel("extremes"))
        self.k_spin = QSpinBox()
        self.k_spin.setRange(1, 500)
        self.k_spin.setValue(20)
        self.k_spin.setToolTip("How many tokens each extremes table lists")
        controls.addWidget(self.k_spin)
        controls.addWidget(QLabel("bins"))
        self.bins_spin = QSpinBox()
        self.bins_spin.setRange(5, 500)
        self.bins_spin.setValue(60)
        self.bins_spin.setToolTip("Number of histogram bins")
        controls.addWidget(self.bins_spin)
        self.log_check = QCheckBox("Log counts")
        self.log_check.setToolTip("Logarithmic count axis: shows the sparse tails where the "
                                  "extreme tokens lie")
        controls.addWidget(self.log_check)
        lay.addLayout(controls)

        split = QSplitter(Qt.Horizontal)
        plots = QSplitter(Qt.Vertical)
        self.hist_frame = PlotFrame("Token-position slopes histogram", self._hist_table)
        self.hist_plot = self.hist_frame.view.addPlot()
        self.hist_plot.showGrid(x=True, y=True, alpha=0.25)
        self.hist_plot.setLabel("bottom", "slope of e_u W^QK p_j^T over j (per position)")
        self.hist_plot.setLabel("left", "tokens")
        self.hist_frame.setToolTip("The red line marks the selected query token")
        plots.addWidget(self.hist_frame)
        self.curve_frame = PlotFrame("Query token vs key position", self._curve_table)
        self.curve_plot = self.curve_frame.view.addPlot()
        self.curve_plot.showGrid(x=True, y=True, alpha=0.25)
        self.curve_plot.setLabel("bottom", "key position j")
        self.curve_plot.setLabel("left", "raw e_u W^QK p_j^T")
        self.curve_frame.setToolTip("The selected query token's raw term over key positions "
                                    "and its least-squares line.\nClick a position to make it "
                                    "the query position.")
        plots.addWidget(self.curve_frame)
        plots.setSizes([420, 320])
        split.addWidget(plots)

        tables = QWidget()
        tl = QHBoxLayout(tables)
        tl.setContentsMargins(0, 0, 0, 0)
        self.tables: dict[str, QTableWidget] = {}
        self.side_labels: dict[str, QLabel] = {}
        for side, text in SIDES:
            box = QWidget()
            bl = QVBoxLayout(box)
            bl.setContentsMargins(0, 0, 0, 0)
            label = QLabel(f"<b>{text}</b>")
            label.setWordWrap(True)
            self.side_labels[side] = label
            bl.addWidget(label)
            t = QTableWidget(0, 3)
            t.setHorizontalHeaderLabels(["token", "id", "slope"])
            t.verticalHeader().setDefaultSectionSize(22)
            t.setEditTriggers(QAbstractItemView.NoEditTriggers)
            t.setSelectionBehavior(QAbstractItemView.SelectRows)
            t.setSelectionMode(QAbstractItemView.SingleSelection)
            t.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
            t.setToolTip("Click a token to select it as the query token")
            t.cellClicked.connect(lambda r, _c, tbl=t: self._token_clicked(tbl, r))
            self.tables[side] = t
            bl.addWidget(t, 1)
            tl.addWidget(box)
        split.addWidget(tables)
        split.setSizes([640, 600])
        lay.addWidget(split, 1)
        self.status = QLabel()
        lay.addWidget(self.status)

        self.k_spin.valueChanged.connect(self.refresh)
        self.bins_spin.valueChanged.connect(self.refresh)
        self.log_check.toggled.connect(self._draw_hist)
        self.curve_frame.view.scene().sigMouseClicked.connect(self._curve_clicked)
        state.modelChanged.connect(self.refresh)
        state.headChanged.connect(self._draw)
        state.queryTokenChanged.connect(self._query_changed)
        state.queryPositionChanged.connect(self._draw_position)
        self.refresh()

    def plot_frames(self):
        return [self.hist_frame, self.curve_frame]

    def showEvent(self, event):
        super().showEvent(event)
        self.refresh()

    # ------------------------------------------------------------------ compute

    @Slot()
    def refresh(self, *_) -> None:
        layer = self.layer
        self._head_text()
        if layer is None:
            self.request = self.data = None
            return
        request = (id(layer), self.k_spin.value(), self.bins_spin.value())
        if not self.isVisible():  # computed when the panel is shown; drop what is in flight
            if request != self.request:
                self.request = self.data = None
            self.curve_request = None
            return
        if request != self.request:
            self.request = request
            k, bins = request[1:]
            self.status.setText("computing slopes over the vocabulary…")
            self.jobs.submit(self.job_key("slopes"), lambda: slopes_job(layer, k, bins),
                             lambda res, req=request: self._slopes_done(req, res),
                             label="Token-position slopes")
        self._query_changed()

    @Slot()
    def _query_changed(self, *_) -> None:
        self._head_text()
        layer, token = self.layer, self.state.query_token
        if layer is None or token < 0:
            self.curve_request = self.curve = None
            self._draw()
            return
        request = (id(layer), token)
        if not self.isVisible():
            self.curve_request = None  # computed when the panel is shown
            return
        if request == self.curve_request:
            return
        self.curve_request = request
        self.jobs.submit(self.job_key("curve"), lambda: curve_job(layer, token),
                         lambda res, req=request: self._curve_done(req, res),
                         label="Query token vs key position")
        self._draw_marker()

    def _slopes_done(self, request, data) -> None:
        if request != self.request:
            return
        self.data = data
        V = data["slopes"].slopes.shape[0]
        self.status.setText(f"slopes of {V:,} query tokens x {len(data['slopes'].heads)} heads, "
                            "least squares over all key positions j = 0..L-1")
        self._draw()

    def _curve_done(self, request, curve) -> None:
        if request != self.curve_request:
            return
        self.curve = curve
        self._draw_curve()

    # ------------------------------------------------------------------ draw

    def _head_text(self) -> None:
        h = self.state.head
        self.head_label.setText(f"<b>Head {h}</b> (toolbar) · query token "
                                f"<b>{self.state.token_text(self.state.query_token)}</b>")

    @Slot()
    def _draw(self, *_) -> None:
        self._head_text()
        self._draw_hist()
        self._fill_tables()
        self._draw_curve()

    def head_slopes(self) -> np.ndarray | None:
        if self.data is None or self.state.head not in self.data["slopes"].heads:
            return None
        return self.data["slopes"].column(self.state.head)

    def histogram(self):
        """(counts, edges) of the selected head, as drawn."""
        if self.data is None:
            return None
        return self.data["hists"].get(self.state.head)

    @Slot()
    def _draw_hist(self, *_) -> None:
        plot = self.hist_plot
        plot.clear()
        hist = self.histogram()
        log = self.log_check.isChecked()
        plot.setLogMode(y=log)
        if hist is None:
            plot.setTitle("")
            return
        counts, edges = hist
        h = self.state.head
        y = counts.astype(np.float64)
        if log:  # a step plot needs finite values: empty bins sit at the axis floor
            y = np.where(y > 0, y, 0.5)
        color = pg.mkColor(head_color(h))
        fill = pg.mkColor(head_color(h))
        fill.setAlpha(90)
        plot.plot(edges, y, stepMode="center", fillLevel=np.log10(0.5) if log else 0,
                  pen=pg.mkPen(color, width=1.5), brush=fill)
        plot.addItem(pg.InfiniteLine(0, angle=90, pen=pg.mkPen("#888", style=Qt.DashLine)))
        self.marker = pg.InfiniteLine(angle=90, pen=pg.mkPen("#d62728", width=2),
                                      label="", labelOpts={"position": 0.92, "color": "#d62728",
                                                           "fill": (255, 255, 255, 200)})
        plot.addItem(self.marker)
        plot.setTitle(f"head {h}: slopes of all {int(counts.sum()):,} query tokens")
        self._draw_marker()

    def _draw_marker(self) -> None:
        marker = self.marker
        slopes = self.head_slopes()
        token = self.state.query_token
        if marker is None or marker.scene() is None:
            return
        if slopes is None or not 0 <= token < len(slopes):
            marker.setVisible(False)
            return
        v = float(slopes[token])
        marker.setValue(v)
        marker.label.setFormat(f"{self.state.token_text(token)}  {v:.4g}")
        marker.setVisible(True)

    def _fill_tables(self) -> None:
        data, h = self.data, self.state.head
        for side, t in self.tables.items():
            t.setRowCount(0)
            if data is None or h not in data["extremes"].heads:
                continue
            ext = data["extremes"]
            r = ext.heads.index(h)
            ids = getattr(ext, f"{side}_ids")[r].tolist()
            vals = getattr(ext, f"{side}_values")[r].tolist()
            t.setRowCount(len(ids))
            for row, (tid, v) in enumerate(zip(ids, vals)):
                cells = (data["names"][tid], str(tid), f"{v:.4g}")
                for c, text in enumerate(cells):
                    item = QTableWidgetItem(text)
                    if c:
                        item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                    item.setToolTip(f"{cells[0]!r} (id {tid}): slope {v:.6g} per position, "
                                    f"head {h}. Click to select it as the query token.")
                    t.setItem(row, c, item)
            t.resizeColumnToContents(1)
            t.resizeColumnToContents(2)
        self._mark_rows()

    def _mark_rows(self) -> None:
        token = str(self.state.query_token)
        for t in self.tables.values():
            t.blockSignals(True)
            t.clearSelection()
            for r in range(t.rowCount()):
                if t.item(r, 1).text() == token:
                    t.selectRow(r)
            t.blockSignals(False)

    def _draw_curve(self) -> None:
        plot = self.curve_plot
        plot.clear()
        curve, h = self.curve, self.state.head
        if curve is None or curve["token"] != self.state.query_token or h >= len(curve["raw"]):
            plot.setTitle("")
            self._draw_marker()
            return
        j = np.arange(curve["raw"].shape[1])
        plot.plot(j, curve["raw"][h], pen=pg.mkPen(head_color(h), width=1.5))
        plot.plot(j, curve["fit"][h], pen=pg.mkPen("k", width=2, style=Qt.DashLine)).setZValue(5)
        slope = (curve["fit"][h][-1] - curve["fit"][h][0]) / max(1, len(j) - 1)
        self.position_line = pg.InfiniteLine(angle=90, pen=pg.mkPen("#888", width=1))
        plot.addItem(self.position_line)
        self._draw_position()
        plot.setTitle(f"head {h}: {self.state.token_text(curve['token'])}, "
                      f"slope {slope:.4g} (dashed: fit)")
        self._draw_marker()
        self._mark_rows()

    @Slot()
    def _draw_position(self, *_) -> None:
        line = self.position_line
        if line is not None and line.scene() is not None:
            line.setValue(self.state.query_position)

    def _curve_clicked(self, ev) -> None:
        if ev.button() != Qt.LeftButton or self.layer is None or self.curve is None:
            return
        vb = self.curve_plot.getViewBox()
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        j = round(vb.mapSceneToView(ev.scenePos()).x())
        self.state.set_query_position(max(0, min(j, self.layer.n_positions - 1)))

    def _token_clicked(self, table: QTableWidget, row: int) -> None:
        item = table.item(row, 1)
        if item is not None:
            self.state.set_query_token(int(item.text()))

    def extreme_ids(self, side: str) -> list[int]:
        """The token ids a person sees in one extremes table, top to bottom."""
        t = self.tables[side]
        return [int(t.item(r, 1).text()) for r in range(t.rowCount())]

    # ------------------------------------------------------------------ export

    def _hist_table(self):
        if self.data is None or self.histogram() is None:
            return None
        return slope_histogram_table(self.data["slopes"], self.state.head,
                                     self.bins_spin.value())

    def _curve_table(self):
        if self.curve is None or self.layer is None:
            return None
        return token_position_curve_table(self.layer, self.curve["token"], [self.state.head])
