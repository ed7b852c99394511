"""Attention sinks in layer 0 (docs/sinks.md): per head, the attention to key position 0 over
query positions, or its logit advantage over the other keys split into the six terms, over
random token sequences or the corpus; below, per head, the means and the term that makes
position 0 win (a click selects the head)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout

from detokgui.core.base.numbers import num
from detokgui.core.base.plot_axes import data_range, stable_range
from detokgui.core.model.terms import TERM_NAMES
from detokgui.core.text_side import sinks
from detokgui.core.text_side.empirical import TextSource
from detokgui.core.text_side.tables import sink_heads_table, sinks_table
from detokgui.core.text_side.titles import sinks_hover, sinks_title
from detokgui.gui.controls import bare_column
from detokgui.gui.head_controls import HeadChooser
from detokgui.gui.head_table import HeadTable
from detokgui.gui.option_rows import combo, custom, option, spin
from detokgui.gui.panels.corpus_grid import CorpusGridPanel
from detokgui.gui.records import Column
from detokgui.gui.terms import TERM_COLORS, term_legend
from detokgui.gui.text_source import prepend_option, text_source

SOURCES = (("sample", "random token sequences"), ("corpus", "corpus texts"))
SHOWS = (("split", "advantage, six terms"), ("attention", "attention to position 0"))
TOTAL_PEN = pg.mkPen("#000000", width=1.5)
UNIFORM_PEN = pg.mkPen("#7f7f7f", width=1, style=Qt.DashLine)


@dataclass(frozen=True)
class Options:
    heads: str = option("all", custom(HeadChooser))  # which heads are drawn (all computed)
    source: str = option("sample", combo(
        SOURCES, "Random token sequences drawn from a seeded token sample (no corpus needed),\n"
                 "or the windows of the open corpus", label="texts"))
    n_texts: int = option(16, spin(
        1, 1_000_000, "How many texts: random sequences, or the first corpus windows",
        label="how many", tracking=False))
    length: int = option(128, spin(
        2, 1_000_000, "Tokens per random sequence (at most the model's positions)",
        label="length", tracking=False))
    prepend: bool = prepend_option()
    show: str = option("split", combo(
        SHOWS, "advantage: A^X_i = T_X[i,0] − the attention-weighted mean of T_X over the\n"
               "other keys, per term, and their sum A_i (black);\n"
               "attention: the attention to position 0 and 1/(i+1), its uniform share",
        label="show"))


@dataclass(frozen=True)
class Request:
    serial: int
    texts: TextSource | sinks.SampleTexts


def _pale(colour: str) -> str:
    """`colour` (#rrggbb) mixed with three parts white: a cell background."""
    rgb = [int(colour[k:k + 2], 16) for k in (1, 3, 5)]
    return "#" + "".join(f"{(c + 3 * 255) // 4:02x}" for c in rgb)


SUMMARY_COLUMNS = [
    Column("head", lambda r: r["head"], "d", "Head (0-based); click a row to select it"),
    Column("α(i→0)", lambda r: r["attention_to_0"], num,
           "Mean attention to key position 0 over every text and query position i ≥ 1",
           numeric=True),
    Column("uniform", lambda r: r["uniform"], num,
           "Mean of 1/(i+1): the attention to 0 were every key weighted alike", numeric=True),
    Column("A", lambda r: r["advantage"], num,
           "Mean logit advantage A_i of position 0 (the sum of the six terms' advantages)",
           numeric=True),
    *(Column(f"A {t}", lambda r, t=t: r[f"adv_{t}"], num,
             f"Mean advantage of T_{t}: T_{t}[i,0] − its attention-weighted mean over the "
             "other keys", numeric=True) for t in TERM_NAMES),
    Column("sink term", lambda r: r["sink_term"], "",
           "The term with the largest mean advantage: the one that favours position 0 most",
           background=lambda r: _pale(TERM_COLORS[r["sink_term"]])),
]


class SinksPanel(CorpusGridPanel):
    frame_name = "Attention sinks"
    title = "Attention sinks"
    view_name = "sinks"
    x_label = "query position i"
    tooltip = ("How much each head attends to position 0 (or a prepended BOS token), and "
               "which of the six terms makes position 0 win")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)
        self.add_options(lay, "sinks", Options, "heads",
                         ("source", "n_texts", "length", "prepend"), "show")
        self.options.changed.connect(self._enable)
        state.headChanged.connect(self.redraw)  # every head is computed: only redraw
        state.queryPositionChanged.connect(self.redraw)  # the marker

        split = QSplitter(Qt.Vertical)
        top, top_lay = bare_column()
        self.add_grid(top_lay, "Hover over a plot to read every term at that position; click "
                               "to choose the query position")
        split.addWidget(top)
        self.summary_view = HeadTable(SUMMARY_COLUMNS, "Per head, means over every text and "
                                      "query position i ≥ 1; click a row to select the head")
        self.summary = self.summary_view.records()
        self.summary_view.recordActivated.connect(lambda r: state.set_head(int(r["head"])))
        split.addWidget(self.summary_view)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 1)
        split.setSizes([2000, 1000])  # in proportion: the table a third of the height
        lay.addWidget(split, 1)
        self._enable()

    def _enable(self, *_) -> None:
        self.options.widget("length").setEnabled(self.options.value.source == "sample")

    # ------------------------------------------------------------------ compute

    def request(self):
        o = self.options.value
        texts = (text_source(self.state, o.n_texts, o.prepend) if o.source == "corpus" else
                 sinks.SampleTexts(n_texts=o.n_texts, length=o.length, prepend_bos=o.prepend))
        return None if texts is None else Request(self.serial, texts)

    @staticmethod
    def compute(layer, req: Request):
        return sinks.iter_sinks(layer, req.texts)

    # ------------------------------------------------------------------ draw

    def add_series(self, grid) -> None:
        super().add_series(grid)  # the six terms
        grid.add_series("advantage", TOTAL_PEN)
        grid.add_series("uniform", UNIFORM_PEN)
        grid.add_series("attention", pg.mkPen("#1f77b4", width=1.5))

    def draw(self, res: sinks.SinkProfile | None) -> None:
        if res is None:
            self.draw_nothing("average its texts' attention to position 0")
            self.summary.set_records(())
            return
        split = self.options.value.show == "split"
        heads, rows = self.shown_rows(res.heads)
        n = res.n
        x = np.arange(1, n)
        grid = self.grid
        grid.set_heads(heads)
        if split:
            arrays = [res.advantage[rows][:, :, 1:], res.total[rows][:, 1:]]
            y = stable_range(None, *data_range(arrays, 0, n - 1))
        else:
            hi = data_range([res.attention[rows][:, 1:]], 0, n - 1)[1]
            y = stable_range(None, 0.0, max(hi, 0.5), zero_based=True)  # 1/(i+1) at i = 1
        pad = max(0.5, 0.02 * n)
        grid.set_ranges((1 - pad, n - 1 + pad), y)
        grid.set_marker(min(max(self.state.query_position, 1), n - 1))
        for k, t in enumerate(res.terms):
            grid.show_series(t, split)
            grid.set_series(t, x, res.advantage[rows, k, 1:])
        grid.show_series("advantage", split)
        grid.set_series("advantage", x, res.total[rows][:, 1:])
        for name in ("attention", "uniform"):
            grid.show_series(name, not split)
        grid.set_series("attention", x, res.attention[rows][:, 1:])
        grid.set_series("uniform", x, np.broadcast_to(1.0 / (x + 1), (len(heads), n - 1)))
        grid.set_title(sinks_title(res, split, term_legend(res.terms)))
        header, per_head = sink_heads_table(res)
        self.summary.set_records([dict(zip(header, row)) for row in per_head])
        self.summary_view.select_head(self.state.head)
        self.status.setText(f"{res.source} · {res.n_texts} texts · τ = "
                            f"{num(res.temperature)} · hover to read values, click to "
                            "choose i; the table: means per head, click to select one")

    def describe(self, h: int, i: int) -> str:
        return sinks_hover(self.result, h, i)

    def table(self):
        return sinks_table(self.result) if self.result is not None else None

