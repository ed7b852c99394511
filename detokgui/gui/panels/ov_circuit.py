"""OV circuit: what a head copies. For the query token as the source x, the output tokens y
that e_x W^VO_h most promotes and suppresses through the tied unembedding (after ln_f's
centring and gamma); or the reverse: the source tokens that most promote / suppress the
key token as the output. Whole vocabulary through the rank-d' factors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout

from detokgui.core.base.numbers import num
from detokgui.core.text_side import circuits
from detokgui.core.text_side.tables import ov_table
from detokgui.gui.head_controls import HeadChooser, state_heads
from detokgui.gui.option_rows import OptionRow, combo, custom, option, spin
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame, add_plot, set_title
from detokgui.gui.records import Column, RecordsModel, TokenTableView, select_row_token

DIRECTIONS = (("outputs", "Outputs of the query token (x → y)"),
              ("sources", "Sources of the key token (x → y)"))
UP, DOWN = "#d62728", "#1f77b4"


@dataclass(frozen=True)
class Options:
    direction: str = option("outputs", combo(
        DIRECTIONS,
        "Outputs: the query token is the source x; the tables list the output tokens y\n"
        "that e_x W^VO_h promotes and suppresses most.\n"
        "Sources: the key token is the output y; the tables list the source tokens x\n"
        "that promote and suppress it most."))
    heads: str = option("all", custom(HeadChooser))
    k: int = option(10, spin(1, 200, "How many tokens on each side, per head", label="k"))


@dataclass(frozen=True)
class Request:
    serial: int
    direction: str
    token: int
    heads: tuple[int, ...]
    k: int


class OVCircuitPanel(Panel):
    title = "OV circuit"
    view_name = "ov"
    tooltip = ("What a head copies: the tokens a source token promotes and suppresses through "
               "W^VO and the unembedding, or the sources of an output token")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)
        self.options = OptionRow("ov", Options, self)
        lay.addLayout(self.options.row("direction", "heads", "k"))
        self.options.changed.connect(self.refresh)
        state.headChanged.connect(self.when_visible(self._draw_bars))

        split = QSplitter(Qt.Horizontal)
        self.table = TokenTableView(RecordsModel([
            Column("head", lambda r: r[0], "d"),
            Column("rank", lambda r: r[1], "d"),
            Column("promoted", lambda r: self.state.token_text(r[2]), token=lambda r: r[2],
                   tip="Most promoted (outputs) / most promoting (sources)"),
            Column("score", lambda r: r[3], num, numeric=True),
            Column("suppressed", lambda r: self.state.token_text(r[4]), token=lambda r: r[4],
                   tip="Most suppressed (outputs) / most suppressing (sources)"),
            Column("score ", lambda r: r[5], num, numeric=True),
        ]), stretch=4)
        self.table.tokenActivated.connect(select_row_token(state, False))
        split.addWidget(self.table)
        self.frame = PlotFrame("OV circuit", self._table, analysis="ov")
        self.plot = add_plot(self.frame, controls=False, mouse=False, invert_y=True, grid="x",
                             bottom="score")
        self.bars = [pg.BarGraphItem(x0=[], y=[], height=0.7, width=[], brush=c, pen=None)
                     for c in (UP, DOWN)]
        for b in self.bars:
            self.plot.addItem(b)
        split.addWidget(self.frame)
        split.setSizes([560, 700])
        lay.addWidget(split, 1)
        self.status.setWordWrap(True)
        self.status.setToolTip("Click a token in the table to select it as the query token; "
                               "Shift+click: as the key token")
        lay.addWidget(self.status)

    # ------------------------------------------------------------------ compute

    def request(self):
        o, s = self.options.value, self.state
        token = s.query_token if o.direction == "outputs" else s.key_token
        if token < 0:
            return None
        return Request(self.serial, o.direction, token,
                       tuple(state_heads(o.heads, s)), o.k)

    @staticmethod
    def compute(layer, req: Request) -> circuits.OVTopK:
        return circuits.ov_topk(layer, req.token, req.direction, list(req.heads), req.k)

    # ------------------------------------------------------------------ draw

    def draw(self, res: circuits.OVTopK | None) -> None:
        if res is None:
            self.table.records().set_records(())
            self._draw_bars()
            o = self.options.value
            self.status.setText(" " if self.layer is None else
                                "Select a query token (Tokens panel or any token table)."
                                if o.direction == "outputs" else
                                "Select a key token (Shift+click a token in any table).")
            return
        rows = [(h, k + 1, int(res.top_ids[r, k]), float(res.top_scores[r, k]),
                 int(res.bottom_ids[r, k]), float(res.bottom_scores[r, k]))
                for r, h in enumerate(res.heads) for k in range(res.top_ids.shape[1])]
        self.table.records().set_records(rows)
        self._draw_bars()
        self.status.setText(res.describe(self.state.token_text(res.token)))

    def bar_head(self) -> int | None:
        """The head of the bar chart: the selected head when shown, else the first."""
        res = self.result
        if res is None:
            return None
        return self.state.head if self.state.head in res.heads else res.heads[0]

    def _draw_bars(self) -> None:
        res, h = self.result, self.bar_head()
        if res is None:
            for b in self.bars:
                b.setOpts(x0=[], y=[], width=[])
            self.plot.getAxis("left").setTicks([[]])
            set_title(self.plot, " ")
            return
        r = res.heads.index(h)
        k = res.top_ids.shape[1]
        ids = np.concatenate([res.top_ids[r], res.bottom_ids[r][::-1]])
        scores = np.concatenate([res.top_scores[r], res.bottom_scores[r][::-1]])
        y = np.concatenate([np.arange(k), np.arange(k) + k + 0.5])
        self.bars[0].setOpts(x0=np.zeros(k), y=y[:k], width=scores[:k], height=0.7)
        self.bars[1].setOpts(x0=np.zeros(k), y=y[k:], width=scores[k:], height=0.7)
        text = self.state.token_text
        self.plot.getAxis("left").setTicks([[(float(v), text(int(t))) for v, t in zip(y, ids)]])
        side = "outputs of" if res.direction == "outputs" else "sources of"
        set_title(self.plot, f"head {h}: {side} {text(res.token)} — red: top {k}, "
                           f"blue: bottom {k}")
        self.plot.setYRange(-0.6, 2 * k + 0.1, padding=0)
        lo, hi = float(min(scores.min(), 0)), float(max(scores.max(), 0))
        self.plot.setXRange(lo, hi, padding=0.05)

    def _table(self):
        return ov_table(self.layer, self.result) if self.result is not None else None
