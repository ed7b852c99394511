"""A2 Top-k affinity (the paper's Table 1): for the selected query token, the k keys with
the highest T_ee over the whole vocabulary, per head — or, reversed, the queries that
score the selected key token highest."""

from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from detokgui.core import affinity
from detokgui.core.tables import topk_table
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame
from detokgui.gui.widgets import SigmaControls

DIRECTIONS = (("keys", "Keys for the query token"), ("queries", "Queries for the key token"))


def resulting_sequence(tokenizer, first: int, second: int) -> str:
    """The two tokens decoded together, e.g. key ' North' + query ' Korea' -> ' North Korea'."""
    if tokenizer is None:
        return f"<{first}><{second}>"
    text = tokenizer.decode([first, second], clean_up_tokenization_spaces=False)
    return text.replace("\n", "\\n")


class TopKPanel(Panel):
    title = "Top-k affinity"
    view_name = "topk"
    tooltip = "Which key tokens a query token is drawn to, over the whole vocabulary (A2)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.result: affinity.TopK | None = None
        self.request = None
        self.started = 0.0
        lay = QVBoxLayout(self)

        controls = QHBoxLayout()
        self.anchor_label = QLabel()
        self.anchor_label.setTextFormat(Qt.RichText)
        controls.addWidget(self.anchor_label)
        controls.addStretch(1)
        self.direction = QComboBox()
        for key, text in DIRECTIONS:
            self.direction.addItem(text, key)
        self.direction.setToolTip("Keys for the query: rank all keys v by T_ee(query, v).\n"
                                  "Queries for the key: rank all queries u by T_ee(u, key).")
        controls.addWidget(self.direction)
        controls.addWidget(QLabel("k"))
        self.k_spin = QSpinBox()
        self.k_spin.setRange(1, 200)
        self.k_spin.setValue(10)
        self.k_spin.setToolTip("How many tokens to rank")
        controls.addWidget(self.k_spin)
        controls.addWidget(SigmaControls(state))
        lay.addLayout(controls)

        split = QSplitter(Qt.Horizontal)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(QLabel("<b>All heads</b> — click a cell to select head and token"))
        self.grid = QTableWidget()
        self.grid.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.grid.setSelectionMode(QAbstractItemView.SingleSelection)
        self.grid.cellClicked.connect(self._grid_clicked)
        ll.addWidget(self.grid)
        split.addWidget(left)

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        self.detail_label = QLabel()
        rl.addWidget(self.detail_label)
        self.detail = QTableWidget(0, 5)
        self.detail.setHorizontalHeaderLabels(["rank", "token", "id", "score", "resulting sequence"])
        self.detail.verticalHeader().hide()
        self.detail.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.detail.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.detail.setSelectionMode(QAbstractItemView.SingleSelection)
        self.detail.horizontalHeader().setStretchLastSection(True)
        self.detail.cellClicked.connect(self._detail_clicked)
        rl.addWidget(self.detail, 1)
        self.frame = PlotFrame("Top-k affinity", self._table)
        self.bars = self.frame.view.addPlot()
        self.bars.invertY(True)
        self.bars.setMenuEnabled(False)
        self.bars.showGrid(x=True, alpha=0.3)
        self.frame.setMinimumHeight(220)
        rl.addWidget(self.frame, 1)
        split.addWidget(right)
        split.setSizes([700, 500])
        lay.addWidget(split, 1)
        self.status = QLabel()
        lay.addWidget(self.status)

        self.direction.currentIndexChanged.connect(self.refresh)
        self.k_spin.valueChanged.connect(self.refresh)
        state.modelChanged.connect(self.refresh)
        state.queryTokenChanged.connect(self._anchor_changed)
        state.keyTokenChanged.connect(self._anchor_changed)
        state.sigmaChanged.connect(self.refresh)
        state.headChanged.connect(self._show_head)
        self.refresh()

    def plot_frames(self):
        return [self.frame]

    @property
    def mode(self) -> str:
        return self.direction.currentData()

    def anchor(self) -> int:
        return self.state.query_token if self.mode == "keys" else self.state.key_token

    # ------------------------------------------------------------------ compute

    @Slot()
    def _anchor_changed(self, *_):
        if self.request is None or self.request[2] != self.anchor():
            self.refresh()

    @Slot()
    def refresh(self, *_) -> None:
        layer = self.layer
        anchor = self.anchor()
        side = "query" if self.mode == "keys" else "key"
        self.anchor_label.setText(
            f"<b>{side.capitalize()}:</b> {self.state.token_text(anchor)}"
            + (f" <span style='color:gray'>(id {anchor})</span>" if anchor >= 0 else "")
        )
        if layer is None or anchor < 0:
            self.request = None
            self.result = None
            self.status.setText("Select a token in the Tokens panel." if layer else "")
            self._fill()
            return
        request = (id(layer), self.mode, anchor, self.k_spin.value(), self.state.sigma)
        if request == self.request and self.result is not None:
            return
        self.request = request
        self.started = time.perf_counter()
        fn = affinity.topk_keys if self.mode == "keys" else affinity.topk_queries
        k, sigma = self.k_spin.value(), self.state.sigma
        self.status.setText("computing…")
        self.jobs.submit(self.job_key(), lambda: fn(layer, anchor, k, sigma),
                         lambda res, req=request: self._done(req, res), label="Top-k affinity")

    def _done(self, request, result) -> None:
        if request != self.request:
            return  # made for an older selection
        self.result = result
        self.status.setText(f"{result.sigma.label()} · {len(result.heads)} heads × "
                            f"{self.layer.n_vocab:,} tokens · {1000 * (time.perf_counter() - self.started):.0f} ms")
        self._fill()

    # ------------------------------------------------------------------ show

    def _fill(self) -> None:
        res = self.result
        self.grid.clear()
        if res is None:
            self.grid.setRowCount(0)
            self.grid.setColumnCount(0)
            self._show_head()
            return
        tok = self.layer.tokenizer
        k = res.ids.shape[1]
        self.grid.setUpdatesEnabled(False)
        self.grid.setRowCount(k)
        self.grid.setColumnCount(len(res.heads))
        self.grid.setHorizontalHeaderLabels([f"head {h}" for h in res.heads])
        self.grid.setVerticalHeaderLabels([str(r + 1) for r in range(k)])
        for c, _h in enumerate(res.heads):
            for r in range(k):
                tid = int(res.ids[c, r])
                item = QTableWidgetItem(self.state.token_text(tid))
                seq = (resulting_sequence(tok, tid, res.anchor) if res.direction == "keys"
                       else resulting_sequence(tok, res.anchor, tid))
                item.setToolTip(f"id {tid}\nscore {float(res.scores[c, r]):.4f}\n{seq!r}")
                self.grid.setItem(r, c, item)
        self.grid.resizeColumnsToContents()
        self.grid.setUpdatesEnabled(True)
        self._show_head()

    @Slot()
    def _show_head(self, *_) -> None:
        res = self.result
        head = self.state.head
        for c in range(self.grid.columnCount()):
            bg = QBrush(QColor("#fff3c4")) if c == head else QBrush()
            for r in range(self.grid.rowCount()):
                item = self.grid.item(r, c)
                if item is not None:
                    item.setBackground(bg)
        self.detail.setRowCount(0)
        self.bars.clear()
        if res is None or head not in res.heads:
            self.detail_label.setText("")
            return
        col = res.heads.index(head)
        tok = self.layer.tokenizer
        ids = res.ids[col].tolist()
        scores = res.scores[col].tolist()
        what = "keys" if res.direction == "keys" else "queries"
        self.detail_label.setText(f"<b>Head {head}</b> — top {len(ids)} {what} by T_ee "
                                  f"({res.sigma.label()})")
        self.detail.setRowCount(len(ids))
        for r, (tid, score) in enumerate(zip(ids, scores)):
            seq = (resulting_sequence(tok, tid, res.anchor) if res.direction == "keys"
                   else resulting_sequence(tok, res.anchor, tid))
            values = (str(r + 1), self.state.token_text(tid), str(tid), f"{score:.4f}", repr(seq))
            for c, v in enumerate(values):
                item = QTableWidgetItem(v)
                if c in (0, 2, 3):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.detail.setItem(r, c, item)
        self.detail.resizeColumnsToContents()
        y = np.arange(len(ids))
        self.bars.addItem(pg.BarGraphItem(x0=0, y=y, height=0.7, width=np.asarray(scores),
                                          brush="#4c72b0"))
        self.bars.getAxis("left").setTicks([[(i, self.state.token_text(t)) for i, t in enumerate(ids)]])
        self.bars.setLabel("bottom", "T_ee score")
        self.bars.setTitle(f"head {head}: top {what} for {self.state.token_text(res.anchor)}")

    def _select(self, tid: int) -> None:
        if self.mode == "keys":
            self.state.set_key_token(tid)
        else:
            self.state.set_query_token(tid)

    @Slot(int, int)
    def _grid_clicked(self, row: int, col: int) -> None:
        if self.result is None:
            return
        self.state.set_head(self.result.heads[col])
        self._select(int(self.result.ids[col, row]))

    @Slot(int, int)
    def _detail_clicked(self, row: int, _col: int) -> None:
        item = self.detail.item(row, 2)
        if item is not None:
            self._select(int(item.text()))

    def _table(self):
        if self.result is None:
            return None
        return topk_table(self.layer, self.result)
