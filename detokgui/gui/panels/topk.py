"""A2 Top-k affinity (the paper's Table 1): for the selected query token, the k keys with
the highest T_ee over the whole vocabulary, per head — or, reversed, the queries that
score the selected key token highest."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QModelIndex, Qt, Slot
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout

from detokgui.core.model.conventions import INK_COLOUR
from detokgui.core.token_side import affinity
from detokgui.core.token_side.tables import topk_table
from detokgui.gui.controls import bare_column
from detokgui.gui.option_rows import STRETCH, OptionRow, combo, option, spin
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import BarLabels, PlotFrame, add_plot, set_title
from detokgui.gui.records import Column, RecordsModel, TokenTableView
from detokgui.gui.sigma_controls import SigmaControls

DIRECTIONS = (("keys", "Keys for the query token"), ("queries", "Queries for the key token"))
HEAD_BACKGROUND = "#fff3c4"
BAR, SELECTED_BAR = pg.mkBrush("#4c72b0"), pg.mkBrush("#d62728")  # the selected token's bar


@dataclass(frozen=True)
class Options:
    direction: str = option("keys", combo(
        DIRECTIONS, "Keys for the query: rank all keys v by T_ee(query, v).\n"
                    "Queries for the key: rank all queries u by T_ee(u, key)."))
    k: int = option(10, spin(1, 200, "How many tokens to rank", label="k"))


@dataclass(frozen=True)
class Request:
    serial: int
    direction: str
    anchor: int
    k: int
    sigma: affinity.SigmaChoice


class TopKPanel(Panel):
    title = "Top-k affinity"
    view_name = "topk"
    tooltip = "Which key tokens a query token is drawn to, over the whole vocabulary (A2)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)

        self.anchor_label = QLabel()
        self.anchor_label.setTextFormat(Qt.RichText)
        self.options = OptionRow("topk", Options, self)
        lay.addLayout(self.options.row(self.anchor_label, STRETCH,
                                       ("direction", "k", SigmaControls(state))))

        split = QSplitter(Qt.Horizontal)
        left, ll = bare_column()
        ll.addWidget(QLabel("<b>All heads</b> — click a cell to select head and token"))
        self.grid = TokenTableView(RecordsModel([]), stretch=None)
        ll.addWidget(self.grid)
        split.addWidget(left)

        right, rl = bare_column()
        self.detail_label = QLabel()
        rl.addWidget(self.detail_label)
        self.detail = TokenTableView(RecordsModel([
            Column("rank", lambda r: r[0] + 1, "d"),
            Column("token", lambda r: self.state.token_text(r[1])),
            Column("id", lambda r: r[1], "d"),
            Column("score", lambda r: r[2], ".4f"),
            Column("resulting sequence", lambda r: repr(self._sequence(r[1]))),
        ], token=lambda r: r[1]), tip="Click a token to select it")
        rl.addWidget(self.detail, 1)
        self.frame = PlotFrame("Top-k affinity", self._table, analysis="topk")
        self.bars = add_plot(self.frame, invert_y=True, grid="x", alpha=0.3)
        self.bars.setMenuEnabled(False)
        self.bar_labels = BarLabels(self.bars)
        self.frame.setMinimumHeight(220)
        rl.addWidget(self.frame, 1)
        split.addWidget(right)
        split.setSizes([700, 500])
        lay.addWidget(split, 1)
        lay.addWidget(self.status)

        self.options.changed.connect(self.refresh)
        self.grid.tokenActivated.connect(self._select)
        self.grid.clicked.connect(self._grid_clicked)
        self.detail.tokenActivated.connect(self._select)
        state.headChanged.connect(self.when_visible(self._show_head))
        state.keyTokenChanged.connect(self.when_visible(self._show_head))

    @property
    def mode(self) -> str:
        return self.options.value.direction

    def anchor(self) -> int:
        return self.state.query_token if self.mode == "keys" else self.state.key_token

    # ------------------------------------------------------------------ compute

    def request(self):
        anchor = self.anchor()
        if anchor < 0:
            return None
        return Request(self.serial, self.mode, anchor, self.options.value.k, self.state.sigma)

    @staticmethod
    def compute(layer, req: Request) -> affinity.TopK:
        fn = affinity.topk_keys if req.direction == "keys" else affinity.topk_queries
        return fn(layer, req.anchor, req.k, req.sigma)

    # ------------------------------------------------------------------ show

    def draw(self, res: affinity.TopK | None) -> None:
        direction = res.direction if res is not None else self.mode
        anchor = res.anchor if res is not None else self.anchor()
        side = "query" if direction == "keys" else "key"
        self.anchor_label.setText(
            f"<b>{side.capitalize()}:</b> {self.state.token_text(anchor)}"
            + (f" <span style='color:gray'>(id {anchor})</span>" if anchor >= 0 else ""))
        if res is None:
            self.grid.records().set_records(())
            self.status.setText("Select a token in the Tokens panel." if self.layer else "")
        else:
            ids = res.ids.numpy()
            names = {t: self.state.token_text(t) for t in set(ids.ravel().tolist())}
            columns = [Column("rank", lambda r: r + 1, "d")] + [
                Column(f"head {h}", lambda r, c=c: names[int(ids[c, r])],
                       token=lambda r, c=c: int(ids[c, r]),
                       tooltip=lambda r, c=c: self._cell_tip(c, r),
                       background=lambda _r, h=h: HEAD_BACKGROUND if h == self.state.head
                       else None)
                for c, h in enumerate(res.heads)]
            self.grid.records().set_records(range(ids.shape[1]), columns)
            self.status.setText(f"{res.sigma.label()} · {len(res.heads)} heads × "
                                f"{self.layer.n_vocab:,} tokens · "
                                f"{1000 * self.channel().seconds:.0f} ms")
        self._show_head()

    def _cell_tip(self, col: int, rank: int) -> str:
        res = self.result
        tid = int(res.ids[col, rank])
        return (f"id {tid}\nscore {float(res.scores[col, rank]):.4f}\n"
                f"{self._sequence(tid)!r}")

    def _sequence(self, tid: int) -> str:
        if self.result is None:
            return ""
        tok = self.layer.tokenizer if self.layer is not None else None
        return affinity.resulting_sequence(tok, self.result, tid)

    @Slot()
    def _show_head(self, *_) -> None:
        res = self.result
        head = self.state.head
        self.grid.viewport().update()  # the selected head's column is highlighted
        self.bars.clear()
        if res is None or head not in res.heads:
            self.detail.records().set_records(())
            self.detail_label.setText("")
            return
        col = res.heads.index(head)
        ids = res.ids[col].tolist()
        scores = res.scores[col].tolist()
        self.detail.records().set_records(
            [(r, t, s) for r, (t, s) in enumerate(zip(ids, scores))])
        what = "keys" if res.direction == "keys" else "queries"
        self.detail_label.setText(f"<b>Head {head}</b> — top {len(ids)} {what} by T_ee "
                                  f"({res.sigma.label()})")
        y = np.arange(len(ids))
        picked = self.state.key_token if res.direction == "keys" else self.state.query_token
        brushes = [SELECTED_BAR if t == picked else BAR for t in ids]
        self.bars.addItem(pg.BarGraphItem(x0=0, y=y, height=0.7, width=np.asarray(scores),
                                          brushes=brushes, pen=INK_COLOUR))
        self.bar_labels.set([self.state.token_text(t) for t in ids],
                            ids.index(picked) if picked in ids else None)
        self.bars.setLabel("bottom", f"T_ee score ({res.sigma.label()})")
        set_title(self.bars, f"Top {what} for {self.state.token_text(res.anchor)}, head {head} "
                           f"(Table 1, Fig 2-A)")

    @Slot(int, bool)
    def _select(self, tid: int, _as_key: bool = False) -> None:
        """A ranked token becomes the key (keys mode) or the query (queries mode)."""
        queries = self.result is not None and self.result.direction == "queries"
        (self.state.set_query_token if queries else self.state.set_key_token)(tid)

    @Slot(QModelIndex)
    def _grid_clicked(self, index: QModelIndex) -> None:
        if self.result is not None and index.column() > 0:
            self.state.set_head(self.result.heads[index.column() - 1])

    def _table(self):
        return topk_table(self.layer, self.result) if self.result is not None else None
