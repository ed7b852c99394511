"""A4 Head statistics ("layer 0 by hand"): for the selected head, every query token u over
all V keys v by T_ee(u, v) — self-rank 1 + #{v != u: T_ee(u, v) > T_ee(u, u)}, the
variance of its key scores, its top-1 key — in a sortable table (or the key→queries
direction: every key over all queries); beside it the sorted score matrix, row r = the
r-th query by decreasing variance, column j = its j-th highest score, as an image of the
top-left corner."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QModelIndex, QRectF, Qt, Slot
from PySide6.QtWidgets import QSplitter, QVBoxLayout

from detokgui.core.base.numbers import num
from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.token_side import vocab_stats as VS
from detokgui.core.token_side.tables import sorted_block_table
from detokgui.core.token_side.vocab_stats import PLURAL, sides
from detokgui.gui.colorbar import ColorBar
from detokgui.gui.controls import bare_column, wrapping_label
from detokgui.gui.head_controls import HeadSpin
from detokgui.gui.option_rows import OptionRow, combo, option, spin
from detokgui.gui.panels.base import Panel, StatusLine
from detokgui.gui.plots import PlotFrame, add_plot, set_title
from detokgui.gui.position import connect_position_clicks
from detokgui.gui.records import Column, RecordsModel, TokenTableView, select_row_token
from detokgui.gui.sigma_controls import SigmaControls

DIRECTIONS = (("keys", "query → keys"), ("queries", "key → queries"))
SORTS = (("variance", "score variance (high first)"), ("self_rank", "self-rank (1 first)"))
TOP1_COLUMN = 4
MAX_ROWS, MAX_COLS = 400, 600  # drawn entries of the sorted matrix (a stride beyond)


@dataclass(frozen=True)
class Options:
    direction: str = option("keys", combo(
        DIRECTIONS, "query → keys: each query token u over all keys v by T_ee(u, v).\n"
                    "key → queries: each key token v over all queries u."))
    sort: str = option("variance", combo(SORTS, label="sort by"))
    rows: int = option(200, spin(  # the sorted matrix's zoom
        2, 1_000_000, "How many rows (tokens by decreasing variance) to show; beyond "
                      f"{MAX_ROWS} every n-th is drawn",
        label="Sorted matrix: first", after="rows ×", tracking=False))
    cols: int = option(400, spin(
        2, 1_000_000, f"How many score ranks to show; beyond {MAX_COLS} every n-th is drawn",
        after="ranks", tracking=False))


@dataclass(frozen=True)
class Request:
    serial: int
    sigma: SigmaChoice
    direction: str
    head: int


@dataclass(frozen=True)
class BlockRequest(Request):
    rows: int
    cols: int


class HeadStatsPanel(Panel):
    title = "Head statistics"
    view_name = "headstats"
    tooltip = ("Every query token of a head over all keys: self-rank, score variance, top "
               "key; and the sorted score matrix (A4)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)
        self.options = OptionRow("headstats", Options, self)
        lay.addLayout(self.options.row(HeadSpin(state), ("direction", "sort"),
                                       SigmaControls(state)))

        split = QSplitter(Qt.Horizontal)
        left, ll = bare_column()
        self.table_label = wrapping_label()
        ll.addWidget(self.table_label)
        self.table = TokenTableView(RecordsModel([], token=int), sortable=True)
        self.table.tokenActivated.connect(self._select)
        self.table.clicked.connect(self._top1_clicked)
        ll.addWidget(self.table, 1)
        split.addWidget(left)

        right, rl = bare_column()
        rl.addLayout(self.options.row(("rows", "cols")))
        self.frame = PlotFrame("Sorted score matrix", self._block_table,
                               analysis="score_matrix")
        self.plot = add_plot(self.frame, controls=False, mouse=False, invert_y=True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.colorbar = ColorBar("viridis")
        self.colorbar.setImageItem(self.image)
        self.frame.view.addItem(self.colorbar)
        rl.addWidget(self.frame, 1)
        self.block_status = StatusLine()
        self.block_status.setWordWrap(True)
        rl.addWidget(self.block_status)
        split.addWidget(right)
        split.setSizes([580, 740])
        lay.addWidget(split, 1)
        lay.addWidget(self.status)

        self.options.changed.connect(self.refresh)
        self.options.changed.connect(self._resort)
        self._sorted = self.options.value.sort
        for signal in (state.queryTokenChanged, state.keyTokenChanged):
            signal.connect(self.when_visible(self._mark_selection))
        self.add_channel("matrix", self._block_request, self._block_compute, self._draw_block,
                         status=self.block_status, label="Sorted score matrix", coalesce=True)
        self.frame.view.scene().sigMouseMoved.connect(self._hover)
        connect_position_clicks(self.frame.view.scene(), self._cell, self._choose_cell)

    # ------------------------------------------------------------------ table

    def request(self):
        o = self.options.value
        return Request(self.serial, self.state.sigma, o.direction, self.state.head)

    @staticmethod
    def compute(layer, req: Request):
        """HeadStats of the head: from the all-heads cache when a pass over every head (an
        AUROC, `export stats`) made one, else one pass over this head."""
        every = list(range(layer.n_heads))
        cached = VS.load_stats(layer, req.sigma, req.direction, VS.DEFAULT_K, every)
        if cached is not None:
            return cached
        return (yield from VS.iter_head_stats(layer, req.sigma, direction=req.direction,
                                              heads=[req.head]))

    def draw(self, st: VS.HeadStats | None) -> None:
        model = self.table.records()
        if st is None:
            model.set_records((), [])
            self.table_label.setText(" ")
            self.status.setText(" ")
            return
        h = self.shown_request.head
        r = st.row(h)
        row_side, col_side = sides(st.direction)
        rank, var = st.self_rank[r], st.variance[r]
        top_id, top_score = st.top_ids[r, :, 0], st.top_scores[r, :, 0]
        text = self.state.token_text
        columns = [
            Column(row_side, lambda u: text(int(u)), tip=f"the {row_side} token"),
            Column("id", lambda u: int(u), num, numeric=True),
            Column("self-rank", lambda u: int(rank[u]), num, numeric=True,
                   tip=f"1 + the number of {PLURAL[col_side]} scoring higher than the token itself"),
            Column("variance", lambda u: float(var[u]), num, numeric=True,
                   tip=f"variance of T_ee over all {PLURAL[col_side]} (population)"),
            Column(f"top-1 {col_side}", lambda u: text(int(top_id[u])),
                   tip=f"the {col_side} with the highest T_ee (a click selects it as the "
                       f"{col_side} token too)"),
            Column("top-1 score", lambda u: float(top_score[u]), num, numeric=True),
        ]
        self.table.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)
        by = self.options.value.sort
        model.set_records(st.order(h, by, descending=(by == "variance")), columns)
        self.table_label.setText(
            f"<b>Head {h}</b> — every {row_side} token over all {num(int(rank.shape[0]))} "
            f"{PLURAL[col_side]} by T_ee ({st.sigma.label()}); click a row to select it")
        self.status.setText(VS.summary(st, h))
        self._mark_selection()

    @Slot(object)
    def _resort(self, o: Options) -> None:
        """The sort option only reorders what is shown."""
        if o.sort != self._sorted:
            self._sorted = o.sort
            self.redraw()

    def _select(self, tid: int, shift: bool) -> None:
        direction = self.shown_request.direction if self.shown_request else "keys"
        select_row_token(self.state, direction == "queries")(tid, shift)

    @Slot(QModelIndex)
    def _top1_clicked(self, index: QModelIndex) -> None:
        """A click on the top-1 cell also selects that token, on its own side."""
        st, req = self.result, self.shown_request
        if st is None or index.column() != TOP1_COLUMN:
            return
        u = self.table.token_at(index.row())
        v = int(st.top_ids[st.row(req.head), u, 0])
        (self.state.set_key_token if req.direction == "keys" else self.state.set_query_token)(v)

    def _mark_selection(self) -> None:
        direction = self.options.value.direction
        self.table.select_token(self.state.query_token if direction == "keys"
                                else self.state.key_token)

    # ------------------------------------------------------------------ sorted matrix

    def _block_request(self):
        o = self.options.value
        V = self.layer.n_vocab
        return BlockRequest(self.serial, self.state.sigma, o.direction, self.state.head,
                            min(o.rows, V), min(o.cols, V))

    @staticmethod
    def _block_compute(layer, req: BlockRequest) -> VS.SortedBlock:
        return VS.sorted_matrix_block(layer, req.head, req.sigma, direction=req.direction,
                                      rows=(0, req.rows), cols=(0, req.cols),
                                      max_rows=MAX_ROWS, max_cols=MAX_COLS)

    def _draw_block(self, b: VS.SortedBlock | None) -> None:
        if b is None:
            self.image.clear()
            set_title(self.plot, " ")
            self.block_status.setText(" ")
            return
        vals, levels = np.asarray(b.values, dtype=np.float32), b.levels()
        self.image.setImage(vals, levels=levels, autoLevels=False)
        nr, nc = vals.shape
        self.image.setRect(QRectF(0, 0, nc * b.col_step, nr * b.row_step))
        self.colorbar.setLevels(levels)
        self.plot.setRange(xRange=(0, nc * b.col_step), yRange=(0, nr * b.row_step), padding=0)
        row_side, col_side = sides(b.direction)
        self.plot.setLabel("bottom", f"rank of the {col_side} (highest T_ee first)")
        self.plot.setLabel("left", f"{PLURAL[row_side]} by decreasing score variance")
        set_title(self.plot, b.title())
        self.block_status.setText(
            f"Row r: the r-th {row_side} by decreasing score variance; column j: its j-th "
            f"highest T_ee over all {PLURAL[col_side]}. Hover to read a score; click to "
            f"select the {row_side} (and the {col_side} under the mouse)")

    def _cell(self, scene_pos):
        b = self.channel("matrix").result
        vb = self.plot.getViewBox()
        if b is None or not vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = vb.mapSceneToView(scene_pos)
        i, j = int(p.y() // b.row_step), int(p.x() // b.col_step)
        if 0 <= i < b.values.shape[0] and 0 <= j < b.values.shape[1]:
            return b, i, j
        return None

    def _hover(self, pos) -> None:
        hit = self._cell(pos)
        if hit is None:
            return
        b, i, j = hit
        self.block_status.setText(b.describe(i, j, self.state.token_text))

    def _choose_cell(self, hit) -> None:
        """The cell's row token and column token become the query and key tokens."""
        b, i, j = hit
        u, v = int(b.row_ids[i]), int(b.key_ids[i, j])
        query, key = (u, v) if b.direction == "keys" else (v, u)
        self.state.set_query_token(query)
        self.state.set_key_token(key)

    def _block_table(self):
        b = self.channel("matrix").result
        return None if b is None else sorted_block_table(self.layer, b)
