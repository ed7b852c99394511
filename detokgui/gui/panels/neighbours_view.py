"""A7 Neighbours in the token embedding: the tokens v nearest to the query token u by
cos(e_u, e_v), and the analogy a - b + c (tokens ranked by cos(e_a - e_b + e_c, e_v), the
inputs excluded); optionally mean-centred (mu = mean_v e_v subtracted from every vector)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout

from detokgui.core.base.numbers import num
from detokgui.core.model.conventions import INK_COLOUR
from detokgui.core.model.tokens import layer_token
from detokgui.core.token_side import neighbours as N
from detokgui.core.token_side.tables import neighbours_table
from detokgui.gui.adaptive_splitter import AdaptiveSplitter
from detokgui.gui.controls import bare_column, wrapping_label
from detokgui.gui.option_rows import OptionRow, check, line_edit, option, spin
from detokgui.gui.panels.base import Panel, StatusLine
from detokgui.gui.plots import BarLabels, PlotFrame, add_plot, set_title
from detokgui.gui.records import Column, RecordsModel, TokenTableView, select_row_token

ONE_TOKEN = "One token (a leading space belongs to the token: ' king')"


@dataclass(frozen=True)
class Options:
    k: int = option(20, spin(1, 1000, "How many neighbours", label="k", tracking=False))
    centred: bool = option(False, check(
        "mean-centred", "Subtract the mean token embedding from every vector first "
                        "(removes the direction all tokens share)"))
    a: str = option(" king", line_edit(ONE_TOKEN, max_width=130))
    b: str = option(" man", line_edit(ONE_TOKEN, label="−", max_width=130))
    c: str = option(" woman", line_edit(ONE_TOKEN, label="+", max_width=130))


@dataclass(frozen=True)
class Request:
    serial: int
    query: int
    k: int
    centred: bool


@dataclass(frozen=True)
class AnalogyRequest:
    serial: int
    texts: tuple[str, str, str]
    k: int
    centred: bool


SIDE_BY_SIDE_MIN_WIDTH = 1000  # pixels the panel needs for the plot beside the two tables


class NeighboursPanel(Panel):
    title = "Neighbours"
    view_name = "neighbours"
    tooltip = "Nearest tokens in the token embedding by cosine, and analogies a - b + c (A7)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)
        self.options = OptionRow("neighbours", Options, self)
        lay.addLayout(self.options.row(("k", "centred"), (QLabel("<b>Analogy</b>"), "a", "b", "c"),
                                       gap=24))
        self.options.changed.connect(self.refresh)

        # the tables beside the plot; above it in a narrow panel (beside it, a 1024-pixel
        # window cut the tokens to two letters)
        split = AdaptiveSplitter(SIDE_BY_SIDE_MIN_WIDTH)
        tables = QSplitter(Qt.Horizontal)
        self.near_label, self.near = self._table_box(tables)
        self.analogy_label, self.analogy = self._table_box(tables)
        split.addWidget(tables)
        self.frame = PlotFrame("Nearest tokens by cosine", self._table, analysis="neighbours")
        self.plot = add_plot(self.frame, controls=False, mouse=False, invert_y=True, grid="x",
                             alpha=0.3, bottom="cosine similarity")
        self.bar_labels = BarLabels(self.plot)
        split.addWidget(self.frame)
        split.setSizes([720, 600])
        lay.addWidget(split, 1)
        self.analogy_status = StatusLine()
        lay.addWidget(self.analogy_status)
        lay.addWidget(self.status)
        self.add_channel("analogy", self._analogy_request, self._analogy_compute,
                         self._draw_analogy, status=self.analogy_status, label="Analogy")

    def _table_box(self, split):
        box, bl = bare_column()
        label = wrapping_label()
        bl.addWidget(label)
        table = TokenTableView(RecordsModel([
            Column("rank", lambda r: r[0], num, numeric=True),
            Column("token", lambda r: self.state.token_text(r[1])),
            Column("id", lambda r: r[1], num, numeric=True),
            Column("cosine", lambda r: r[2], num, numeric=True,
                   tip="cosine similarity in the token embedding"),
        ], token=lambda r: r[1]), sortable=True, stretch=1)
        table.horizontalHeader().setSortIndicator(0, Qt.AscendingOrder)
        table.tokenActivated.connect(select_row_token(self.state, False))
        bl.addWidget(table, 1)
        split.addWidget(box)
        return label, table

    # ------------------------------------------------------------------ nearest

    def request(self):
        if self.state.query_token < 0:
            return None
        o = self.options.value
        return Request(self.serial, self.state.query_token, o.k, o.centred)

    @staticmethod
    def compute(layer, req: Request) -> N.Neighbours:
        return N.nearest_tokens(layer, req.query, req.k, req.centred)

    def draw(self, nb: N.Neighbours | None) -> None:
        self.plot.clear()
        if nb is None:
            self.near.records().set_records(())
            self.near_label.setText("Select a query token to see its neighbours"
                                    if self.layer is not None else " ")
            self.bar_labels.set([])
            set_title(self.plot, " ")
            self.status.setText(" ")
            return
        rows = [(r + 1, t, c) for r, (t, c) in enumerate(zip(nb.ids, nb.cosines))]
        self.near.records().set_records(rows)
        centred = "mean-centred " if nb.centred else ""
        word = self.state.token_text(nb.inputs[0])
        self.near_label.setText(f"<b>Nearest to {word!r}</b> by {centred}cosine in E")
        y = np.arange(len(rows))
        self.plot.addItem(pg.BarGraphItem(x0=0, y=y, height=0.7, width=np.asarray(nb.cosines),
                                          brush="#4c72b0", pen=INK_COLOUR))
        self.bar_labels.set([self.state.token_text(t) for t in nb.ids])
        top = max([abs(c) for c in nb.cosines] + [1e-9])
        self.plot.setRange(xRange=(min(0.0, min(nb.cosines)), top * 1.05),
                           yRange=(-0.6, len(rows) - 0.4), padding=0)
        set_title(self.plot, f"Cosine similarity to {word!r} in the token embedding"
                           + (" (mean-centred)" if nb.centred else ""))
        self.status.setText(f"{len(rows)} nearest of {num(self.layer.n_vocab)} tokens · "
                            f"{'mean-centred' if nb.centred else 'raw'} embeddings · click a "
                            "token to select it")

    def _table(self):
        return neighbours_table(self.layer, self.result) if self.result is not None else None

    # ------------------------------------------------------------------ analogy

    def _analogy_request(self):
        o = self.options.value
        if not (o.a and o.b and o.c):
            return None
        return AnalogyRequest(self.serial, (o.a, o.b, o.c), o.k, o.centred)

    @staticmethod
    def _analogy_compute(layer, req: AnalogyRequest) -> N.Neighbours:
        a, b, c = (layer_token(layer, t, f"token {name}") for t, name in zip(req.texts, "abc"))
        return N.analogy(layer, a, b, c, req.k, req.centred)

    def _draw_analogy(self, nb: N.Neighbours | None) -> None:
        if nb is None:
            self.analogy.records().set_records(())
            self.analogy_label.setText("Type three tokens a − b + c above")
            self.analogy_status.setText(" ")
            return
        rows = [(r + 1, t, c) for r, (t, c) in enumerate(zip(nb.ids, nb.cosines))]
        self.analogy.records().set_records(rows)
        a, b, c = (repr(self.state.token_text(t)) for t in nb.inputs)
        centred = "mean-centred " if nb.centred else ""
        self.analogy_label.setText(f"<b>{a} − {b} + {c}</b>: nearest by {centred}cosine, "
                                   "the three inputs excluded")
        self.analogy_status.setText(f"analogy {a} − {b} + {c}: top {len(rows)}")
